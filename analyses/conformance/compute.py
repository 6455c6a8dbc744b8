"""Conformance of positional code across libraries: the measurement.

Each implementation (libraries.py: transformers, x-transformers, rotary-embedding-torch, and
ours) is compared with a float64 reference written from the papers' formulas (reference.py),
and ours with each of them:

* RoPE (Su et al. 2021): pair c of a head turns by the angle p·ω_c, ω_c = base^(−2c/d). The
  rotated queries and keys of each library, in float32, are brought to one layout (the
  interleaved pairs (2c, 2c+1); half-split libraries pair (c, c + d/2)) and compared element by
  element with the float64 rotation; so are the scores q·k at random position pairs and their
  change when both positions move by a shift (the scores are relative-only). Each is held to a
  rounding bound: an angle error δ turns pair c by at most |δ|·‖x_c‖, and a float32 angle
  p·ω_c is off by at most a few eps·p·ω_c (the rounding of ω_c, of the product, and for some
  libraries of the exponent 2c/d in base^(2c/d)), plus a few storage roundings:

      |R̂(p) x − R(p) x|_pair c ≤ ‖x_c‖ (angle_ulps·eps·p·ω_c + ulps·(eps + eps_angles)).

* Sinusoidal (Vaswani et al. 2017): x-transformers' table, [sin | cos] concatenated, permuted
  to the interleaved (sin, cos) pairs and held to the same bound.
* RoPE scaling: transformers' ROPE_INIT_FUNCTIONS against posenc.rope_scaling (inverse
  frequencies and attention factors, relative differences in float32 ulps), and the dynamic
  NTK update and the libraries' fixed NTK rescaling as effective NTK scales.
* ALiBi slopes (Press et al. 2022) against the paper's published get_slopes, and T5 buckets
  (Raffel et al. 2020) against the Mesh TensorFlow formula in float64.
* Precision traps: the angle each RoPE actually applied, recovered from its output (unit
  vectors rotated, atan2 per pair in float64, wrapped to (−π, π]) against p·ω_c in float64,
  along a float32 path and four ways of running it in bfloat16.

A library that is not installed gives n/a rows with the reason, never an error. Each
comparison has its module (rope.py, sinusoidal.py, scaling.py, biases.py, traps.py; what the
claims read in evidence.py); this one gathers them. The modules measure; the claims (spec.py)
judge, against the behaviour the config says each library's pinned source implies.
"""

from __future__ import annotations

import importlib.metadata

import torch

from posenc.analyses.conformance.biases import alibi_conformance, t5_conformance
from posenc.analyses.conformance.evidence import evidence, ratchet
from posenc.analyses.conformance.libraries import LIBRARIES, Library
from posenc.analyses.conformance.reference import EPS32
from posenc.analyses.conformance.rope import rope_conformance
from posenc.analyses.conformance.scaling import scaling_conformance
from posenc.analyses.conformance.sinusoidal import sinusoidal_conformance
from posenc.analyses.conformance.traps import PATHS, TRAPS, trap_measurements
from posenc.analysis import Context, Measurements


def versions(libraries: tuple[Library, ...]) -> dict[str, str | None]:
    """Each library's installed version (importlib.metadata), ours as the posenc package's,
    torch's too; None where it is not installed."""
    names = {lib.name: lib.distribution or "posenc" for lib in libraries}
    names["torch"] = "torch"
    out = {}
    for name, dist in names.items():
        try:
            out[name] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def compute(ctx: Context, libraries: tuple[Library, ...] = LIBRARIES) -> Measurements:
    """Every comparison on the config's sizes; ``libraries`` (ours first) may be replaced in
    tests by fakes."""
    cfg = ctx.cfg
    generator = torch.Generator().manual_seed(ctx.seed)
    result = {
        "rope": rope_conformance(cfg, libraries, generator),
        "sinusoidal": sinusoidal_conformance(cfg, libraries),
        **scaling_conformance(cfg, libraries),
        "alibi": alibi_conformance(cfg, libraries),
        "t5": t5_conformance(cfg, libraries),
    }
    result["traps"], curve = trap_measurements(cfg, libraries)
    installed = versions(libraries)
    absent = {
        r["library"]: r["reason"] for rows in result.values() for r in rows if r["status"] == "n/a"
    }
    ours_all = [lib.name for lib in libraries if lib.distribution is None]
    ev = evidence(result, cfg, libraries[0].name, ours_all)
    summary = {
        "versions": installed,
        "rope_max_abs_error": max(ev["rope_max_abs_error"].values(), default=None),
        "bf16_exact_integers": 2 / torch.finfo(torch.bfloat16).eps,
        "dynamic_ratchet": ratchet(
            result["dynamic"],
            cfg["scaling"]["dynamic_lengths"],
            cfg["thresholds"]["ratchet_rtol"],
        ),
        "missing": absent,
        "head_dim": cfg["head_dim"],
        "base": cfg["base"],
        "max_position": cfg["max_position"],
        "n_vectors": cfg["n_vectors"],
        "n_pairs": cfg["n_pairs"],
        "shifts": cfg["shifts"],
        "sinusoidal_d": cfg["sinusoidal"]["d"],
        "scaling": {
            k: cfg["scaling"][k] for k in ("head_dim", "base", "original_length", "factors")
        },
        "scaling_methods": cfg["scaling"]["methods"],
        "dynamic_lengths": cfg["scaling"]["dynamic_lengths"],
        "alibi_max_heads": cfg["alibi_max_heads"],
        "t5": cfg["t5"],
        "thresholds": cfg["thresholds"],
        "traps": list(TRAPS),
        "paths": list(PATHS),
        "trap_rows": result["traps"],
        "eps32": EPS32,
    }
    if ctx.log:
        ctx.log.info("versions %s; missing %s", installed, absent or "none")
    return Measurements(
        rows={**result, "trap_curve": curve},
        evidence=ev,
        summary=summary,
    )
