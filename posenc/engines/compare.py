"""An engine's answer for one config, held against transformers and the float64 formula: the
request a runner reads (built from what ``posenc.shipped.model`` measures), and one row per
engine and layer type with the largest differences and whether they are confirmed.

Frequencies are compared in float32 ulps (``posenc.shipped.frequencies.ulps``), angles in
radians modulo a turn (``posenc.shipped.precision.wrapped``), at the precision analysis's
sampled positions up to the context a run is measured at. transformers' angles are its
forward's float32 product p·inv_freq, the inv_freq a run of that length uses
(``posenc.shipped.model.at_context``: LongRoPE's long factors past L).

A difference is *confirmed* when the engine's rotary forward, applied to unit vectors, turns
each pair by the angles its tables gave, to float32's resolution of each angle: the numbers
held against transformers are what the engine's forward applies, not an artefact of how the
runner read its tables. Where a runner builds the rotation from the same tables (LitGPT), that
reading is a check of the layout only; the note of each difference names its cause in the
engine's source.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from posenc.shipped.frequencies import LayerType, ulps
from posenc.shipped.model import at_context
from posenc.shipped.precision import wrapped
from posenc.shipped.reading import ZOO_KEYS

# The forward and the tables read the same engine: they may differ by the float32 rounding of
# one angle (a few ulps of p·ω, under 1e-6 rad below 2^16 and growing with p), never by more.
SAME_ANGLE_ULPS = 8


def kind(layer_type: str) -> str:
    """transformers names a sliding-window layer type "sliding_attention" (Gemma 3, gpt-oss)."""
    return "sliding" if "sliding" in layer_type else "full"


def request(name: str, entry: dict, lts: list[LayerType], context: int, positions) -> dict:
    """The model's part of a runner's request (``runners/_protocol.py``)."""
    return {
        "name": name,
        "config": {k: v for k, v in entry.items() if k not in ZOO_KEYS},
        "context": int(context),
        "positions": [int(p) for p in positions],
        "layer_types": [{"name": lt.name, "kind": kind(lt.name)} for lt in lts],
    }


def _max_wrapped(a: np.ndarray, b: np.ndarray) -> float:
    return float(wrapped(torch.as_tensor(a, dtype=torch.float64) - torch.as_tensor(b)).max())


def _same_angles(table: np.ndarray, forward: np.ndarray, magnitude: np.ndarray) -> bool:
    """Whether the forward turned each pair by the table's angle, to float32's resolution of
    that angle: a few ulps of its unwrapped size p·ω (``magnitude``, positions × pairs)."""
    tolerance = SAME_ANGLE_ULPS * np.ldexp(1.0, -23) * np.maximum(magnitude, 1.0)
    delta = wrapped(torch.as_tensor(table - forward)).numpy()
    return bool((delta <= np.maximum(tolerance, 1e-6)).all())


def compare_layer(
    config, lt: LayerType, got: dict, context: int, positions, thresholds: dict
) -> dict[str, Any]:
    """One layer type's row for one engine's ``ok`` answer (see :func:`rows`)."""
    omega64, w32 = at_context(config, lt, context)
    p = torch.as_tensor(np.asarray(positions), dtype=torch.long)
    tf_angles = (p.float()[:, None] * torch.as_tensor(w32, dtype=torch.float32)[None, :]).double()
    exact = p.double()[:, None] * torch.as_tensor(omega64, dtype=torch.float64)[None, :]
    row: dict[str, Any] = {"layer_type": lt.name}
    differences: list[str] = []
    freq = got.get("inv_freq")
    if freq is not None:
        freq = np.asarray(freq, float)
        if freq.shape != np.shape(w32):
            differences.append(
                f"{freq.size} frequencies where transformers has {np.size(w32)} (rotated width)"
            )
        else:
            row["freq_ulps_transformers"] = ulps(freq, w32)
            row["freq_ulps_formula"] = ulps(freq, omega64)
            if row["freq_ulps_transformers"] > thresholds["agree_ulps"]:
                worst = int(np.argmax(np.abs(freq - w32)))
                differences.append(
                    f"inverse frequencies up to {row['freq_ulps_transformers']:.3g} float32 ulps "
                    f"from transformers' (pair {worst}: {freq[worst]:.9g} against {w32[worst]:.9g})"
                )
    factor, tf_factor = got.get("attention_factor"), lt.transformers_factor
    row["attention_factor"], row["transformers_factor"] = factor, tf_factor
    if factor is not None and tf_factor is not None:
        row["factor_ulps"] = ulps(np.array([factor]), np.array([tf_factor]))
        if row["factor_ulps"] > thresholds["agree_ulps"]:
            differences.append(
                f"attention factor {factor:.6g} where transformers applies {tf_factor:.6g}"
            )
    angles = got.get("angles")
    if angles is not None:
        angles = np.asarray(angles, float)
        if angles.shape != tuple(tf_angles.shape):
            differences.append(f"angles of shape {angles.shape} where {tuple(tf_angles.shape)}")
            angles = None
    if angles is not None:
        row["angle_rad_transformers"] = _max_wrapped(angles, tf_angles.numpy())
        row["angle_rad_formula"] = _max_wrapped(angles, exact.numpy())
        if row["angle_rad_transformers"] > thresholds["angle_rad"]:
            delta = wrapped(torch.as_tensor(angles) - tf_angles)
            at = int(p[int(delta.max(dim=1).values.argmax())])
            differences.append(
                f"angles up to {row['angle_rad_transformers']:.3g} rad from transformers' "
                f"at the context {context} (first largest at position {at})"
            )
    forward = got.get("forward_angles")
    if forward is not None and angles is not None:
        forward = np.asarray(forward, float)
        # The angles' unwrapped size: the larger of the engine's and transformers' p·ω.
        omega = (
            np.maximum(np.abs(freq), w32)
            if freq is not None and np.shape(freq) == np.shape(w32)
            else w32
        )
        magnitude = np.asarray(positions, float)[:, None] * np.asarray(omega, float)[None, :]
        row["forward_matches_tables"] = forward.shape == angles.shape and _same_angles(
            angles, forward, magnitude
        )
    else:
        row["forward_matches_tables"] = None
    row["differences"] = differences
    # Stated only once the engine's forward turns the pairs as its tables say.
    row["confirmed"] = bool(differences) and row["forward_matches_tables"] is True
    row["agrees"] = (not differences) if angles is not None else None
    for key in ("source", "how", "notes"):
        row[key] = got.get(key)
    return row


def rows(
    engine: str, answer: dict, name: str, config, lts: list[LayerType], context, positions, thr
) -> list[dict[str, Any]]:
    """One engine's rows for one model: a row per layer type when the engine could express
    the config, else one row with its status (``cannot_express``, ``error``, ``unavailable``)
    and reason."""
    base = {"engine": engine, "version": answer.get("version"), "model": name}
    got = answer["models"].get(name) or {"status": "error", "reason": "no answer", "layers": {}}
    if got["status"] != "ok":
        return [base | {"status": got["status"], "reason": got["reason"], "agrees": None}]
    out = []
    for lt in lts:
        layer = got["layers"].get(lt.name)
        if layer is None:
            out.append(
                base
                | {
                    "status": "cannot_express",
                    "layer_type": lt.name,
                    "reason": f"no rotary code for layer type {lt.name}",
                    "agrees": None,
                }
            )
            continue
        row = compare_layer(config, lt, layer, context, positions, thr)
        out.append(base | {"status": "ok", "reason": ""} | row)
    return out
