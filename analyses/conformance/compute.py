"""Conformance of positional code across libraries: the measurement.

Each implementation (libraries.py: transformers, x-transformers, rotary-embedding-torch, and
ours) is compared with a float64 reference written here from the papers' formulas, and ours
with each of them:

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

A library that is not installed gives n/a rows with the reason, never an error. This module
measures; the claims (spec.py) judge, against the behaviour the config says each library's
pinned source implies.
"""

from __future__ import annotations

import importlib.metadata
import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch import Tensor

from analyses.conformance.libraries import (
    HALF,
    LIBRARIES,
    TRANSFORMERS_METHODS,
    Library,
    paper_alibi_slopes,
    paper_t5_bucket,
)
from posenc.analysis import Context, Measurements
from posenc.rope_scaling import scaled_rope

TRAPS = ("bf16_inputs", "module_cast", "autocast", "cached_angles")
PATHS = ("float32", *TRAPS)  # the float32 path is the baseline every trap departs from
EPS32 = torch.finfo(torch.float32).eps
EPS64 = torch.finfo(torch.float64).eps
CURVE_BINS = 64  # log-spaced position bins of the trap figure (the largest error in each)


def missing(error: ImportError) -> str:
    """The reason a library's rows are n/a."""
    return f"not installed ({type(error).__name__}: {error})"


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


# ----------------------------------------------------------------------------- references


def inverse_frequencies(d: int, base: float) -> Tensor:
    """ω_c = base^(−2c/d), c = 0 .. d/2 − 1, in float64 (Su et al. 2021; Vaswani et al.)."""
    return torch.tensor([base ** (-2 * c / d) for c in range(d // 2)], dtype=torch.float64)


def reference_angles(length: int, d: int, base: float) -> Tensor:
    """θ[p, c] = p·ω_c for p = 0 .. length − 1, in float64. Shape (L, d/2)."""
    return torch.arange(length, dtype=torch.float64)[:, None] * inverse_frequencies(d, base)


def reference_rotation(x: Tensor, theta: Tensor) -> Tensor:
    """Su et al.'s rotation of each interleaved pair (x_2c, x_2c+1) by θ[p, c], in float64:
    (x cos θ − y sin θ, x sin θ + y cos θ). x (..., L, d), θ (L, d/2)."""
    x = x.double()
    a, b = x[..., 0::2], x[..., 1::2]
    cos, sin = theta.cos(), theta.sin()
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def reference_table(length: int, d: int, base: float) -> Tensor:
    """Vaswani et al.'s PE(p, 2c) = sin p·ω_c, PE(p, 2c+1) = cos p·ω_c, float64. (L, d)."""
    theta = reference_angles(length, d, base)
    return torch.stack((theta.sin(), theta.cos()), dim=-1).flatten(-2)


def to_half(d: int) -> Tensor:
    """Indices that put interleaved pair c (2c, 2c+1) at (c, c + d/2): x_half = x[..., idx]."""
    return torch.cat((torch.arange(0, d, 2), torch.arange(1, d, 2)))


def to_layout(x: Tensor, layout: str) -> Tensor:
    """``x`` in the interleaved layout, moved to ``layout``."""
    return x[..., to_half(x.shape[-1])] if layout == HALF else x


def from_layout(x: Tensor, layout: str) -> Tensor:
    """``x`` in ``layout``, moved to the interleaved layout."""
    return x[..., torch.argsort(to_half(x.shape[-1]))] if layout == HALF else x


def wrap(angle: Tensor) -> Tensor:
    """``angle`` wrapped to (−π, π]."""
    wrapped = torch.remainder(angle + math.pi, 2 * math.pi) - math.pi
    return torch.where(wrapped == -math.pi, math.pi, wrapped)


def pair_norms(x: Tensor) -> Tensor:
    """‖(x_2c, x_2c+1)‖ per interleaved pair, (..., d) -> (..., d/2), float64."""
    x = x.double()
    return (x[..., 0::2] ** 2 + x[..., 1::2] ** 2).sqrt()


# ----------------------------------------------------------------------------- RoPE


def rope_rotations(
    lib: Library, q: Tensor, k: Tensor, head_dim: int, base: float
) -> tuple[Tensor, Tensor, str]:
    """``lib``'s float32 rotation of the interleaved ``q``, ``k`` (n, 1, L, d) at positions
    0..L−1, brought back to the interleaved layout, float64; and the layout it rotates in."""
    rope = lib.rope(head_dim, base, q.shape[-2])
    with torch.no_grad():
        rq, rk = rope.rotate(to_layout(q, rope.layout), to_layout(k, rope.layout))
    back = from_layout(rq, rope.layout).double(), from_layout(rk, rope.layout).double()
    return *back, rope.layout


def rotation_tolerance(x: Tensor, omega: Tensor, thresholds: dict, eps: float) -> Tensor:
    """The bound on each element of the rotated ``x`` (n, 1, L, d), per pair and position:
    ‖x_c‖ (angle_ulps·eps·p·ω_c + ulps·2·eps) (float32 storage and angles). Shape of x."""
    length = x.shape[-2]
    p = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    per_pair = thresholds["rope_angle_ulps"] * eps * p * omega + thresholds["rope_ulps"] * 2 * eps
    tol = pair_norms(x) * per_pair  # (n, 1, L, d/2)
    return tol.repeat_interleave(2, dim=-1)


def score_tolerance(
    q: Tensor, k: Tensor, omega: Tensor, angle_sum: Tensor, storage: float, thresholds: dict
) -> Tensor:
    """The bound on a score error, Σ_c ‖q_c‖‖k_c‖ (angle_ulps·eps·ω_c·Σp + storage·ulps·2·eps)
    + d·eps64·‖q‖‖k‖, with Σp (m,) the positions whose angles enter (two per score) and
    ``storage`` the rotated vectors involved. q, k (n, d); returns (n, m)."""
    w = pair_norms(q) * pair_norms(k)  # (n, d/2)
    per_pair = (
        thresholds["rope_angle_ulps"] * EPS32 * angle_sum[:, None] * omega[None, :]
        + storage * thresholds["rope_ulps"] * 2 * EPS32
    )  # (m, d/2)
    norms = (q.double().norm(dim=-1) * k.double().norm(dim=-1))[:, None]
    return w @ per_pair.T + q.shape[-1] * EPS64 * norms


def scores(rq: Tensor, rk: Tensor, pq: Tensor, pk: Tensor) -> Tensor:
    """⟨R(pq_j) q_i, R(pk_j) k_i⟩ from rotated (n, 1, L, d), float64 products. (n, m)."""
    return (rq[:, 0, pq, :] * rk[:, 0, pk, :]).sum(-1)


def rope_conformance(cfg: dict, libraries: tuple[Library, ...], generator: torch.Generator):
    """Rotated q and k, scores and shifted scores of every RoPE library against the float64
    reference and against ours; rows per library (n/a with the reason where missing)."""
    d, base, th = cfg["head_dim"], float(cfg["base"]), cfg["thresholds"]
    length = cfg["max_position"] + 1
    n = cfg["n_vectors"]
    q64 = torch.randn(n, d, generator=generator, dtype=torch.float64)
    k64 = torch.randn(n, d, generator=generator, dtype=torch.float64)
    widest = max(cfg["shifts"])
    pq = torch.randint(0, length - widest, (cfg["n_pairs"],), generator=generator)
    pk = torch.randint(0, length - widest, (cfg["n_pairs"],), generator=generator)
    # The float32 inputs, the same vector at every position: (n, 1, L, d).
    q = q64.float()[:, None, None, :].expand(n, 1, length, d).contiguous()
    k = k64.float()[:, None, None, :].expand(n, 1, length, d).contiguous()
    omega = inverse_frequencies(d, base)
    theta = reference_angles(length, d, base)
    ref_q, ref_k = reference_rotation(q, theta), reference_rotation(k, theta)
    tol_q = rotation_tolerance(q, omega, th, EPS32)
    tol_k = rotation_tolerance(k, omega, th, EPS32)
    ref_scores = scores(ref_q, ref_k, pq, pk)
    score_tol = score_tolerance(q64.float(), k64.float(), omega, (pq + pk).double(), 2, th)
    rotated: dict[str, tuple[Tensor, Tensor]] = {}
    rows = []
    for lib in libraries:
        if lib.rope is None:
            continue
        row: dict[str, Any] = {"library": lib.name, "status": "measured", "reason": None}
        try:
            rq, rk, layout = rope_rotations(lib, q, k, d, base)
        except ImportError as error:
            rows.append({**row, "status": "n/a", "reason": missing(error)})
            continue
        rotated[lib.name] = (rq, rk)
        err = torch.maximum((rq - ref_q).abs() / tol_q, (rk - ref_k).abs() / tol_k)
        s = scores(rq, rk, pq, pk)
        row |= {
            "layout": layout,
            "max_abs_error": max((rq - ref_q).abs().max().item(), (rk - ref_k).abs().max().item()),
            "error_over_bound": err.max().item(),
            "score_error": (s - ref_scores).abs().max().item(),
            "score_over_bound": ((s - ref_scores).abs() / score_tol).max().item(),
        }
        for t in cfg["shifts"]:
            moved = scores(rq, rk, pq + t, pk + t)
            angle_sum = (2 * (pq + pk) + 2 * t).double()
            tol = score_tolerance(q64.float(), k64.float(), omega, angle_sum, 4, th)
            row[f"shift_{t}_over_bound"] = ((moved - s).abs() / tol).max().item()
        rows.append(row)
    # Ours against each library: each within its bound of the reference, so within twice it
    # of one another.
    ours = rotated.get(libraries[0].name)
    for row in rows:
        if row["status"] != "measured" or ours is None:
            row["ours_over_bound"] = None
            continue
        rq, rk = rotated[row["library"]]
        gap = torch.maximum((rq - ours[0]).abs() / tol_q, (rk - ours[1]).abs() / tol_k)
        row["ours_over_bound"] = (gap / 2).max().item()
    return rows


# ----------------------------------------------------------------------------- sinusoidal


def sinusoidal_conformance(cfg: dict, libraries: tuple[Library, ...]) -> list[dict]:
    """Each library's sinusoidal table, in the interleaved layout, against Vaswani et al.'s
    formula in float64, held to angle_ulps·eps·p·ω_c + ulps·2·eps per element; and against
    ours, to twice that."""
    d, base, th = cfg["sinusoidal"]["d"], float(cfg["base"]), cfg["thresholds"]
    length = cfg["max_position"] + 1
    positions = torch.arange(length)
    reference = reference_table(length, d, base)
    p = positions.double()[:, None]
    tol = (
        th["rope_angle_ulps"] * EPS32 * p * inverse_frequencies(d, base)
        + th["rope_ulps"] * 2 * EPS32
    ).repeat_interleave(2, dim=-1)  # (L, d)
    tables, rows = {}, []
    for lib in libraries:
        if lib.sinusoidal is None:
            continue
        row: dict[str, Any] = {"library": lib.name, "status": "measured", "reason": None}
        try:
            table = lib.sinusoidal(positions, d, base)
        except ImportError as error:
            rows.append({**row, "status": "n/a", "reason": missing(error)})
            continue
        if lib.sinusoidal_layout == "concatenated":  # [sin_0 .. sin_{d/2-1} | cos_0 ..]
            table = table[..., torch.argsort(to_half(d))]
        tables[lib.name] = table
        row |= {
            "layout": lib.sinusoidal_layout,
            "max_abs_error": (table - reference).abs().max().item(),
            "error_over_bound": ((table - reference).abs() / tol).max().item(),
        }
        rows.append(row)
    ours = tables.get(libraries[0].name)
    for row in rows:
        measured = row["status"] == "measured" and ours is not None
        row["ours_over_bound"] = (
            ((tables[row["library"]] - ours).abs() / (2 * tol)).max().item() if measured else None
        )
    return rows


# ----------------------------------------------------------------------------- scaling


def relative_ulps(got: list[float], want: tuple[float, ...] | list[float]) -> float:
    """max_c |got_c − want_c| / |want_c|, in float32 epsilons."""
    return max(abs(g - w) / abs(w) for g, w in zip(got, want, strict=True)) / EPS32


def effective_ntk_scale(inv_freq: list[float], head_dim: int, base: float) -> float:
    """The NTK-aware scale s whose base·s^(d/(d−2)) gives these frequencies: the slowest pair
    is base^(−(d−2)/d) / s under NTK-aware scaling, so s = that over the measured one."""
    return base ** (-(head_dim - 2) / head_dim) / inv_freq[-1]


def scaling_conformance(cfg: dict, libraries: tuple[Library, ...]) -> dict[str, list[dict]]:
    """transformers' ROPE_INIT_FUNCTIONS against ours per method and factor; every library's
    dynamic and fixed NTK as effective NTK scales, next to ours."""
    sc = cfg["scaling"]
    d, base, L = sc["head_dim"], float(sc["base"]), sc["original_length"]
    methods, params = sc["methods"], sc["params"]
    rows, dynamic = [], []
    for lib in libraries:
        if lib.scaling is not None:
            for method in methods:
                for factor in sc["factors"]:
                    ours = scaled_rope(method, d, base, factor, L, params.get(method))
                    row: dict[str, Any] = {
                        "library": lib.name,
                        "method": method,
                        "their_method": TRANSFORMERS_METHODS[method],
                        "factor": factor,
                        "status": "measured",
                        "reason": None,
                    }
                    try:
                        inv_freq, attention = lib.scaling(
                            TRANSFORMERS_METHODS[method], d, base, factor, L, params.get(method, {})
                        )
                    except ImportError as error:
                        rows.append({**row, "status": "n/a", "reason": missing(error)})
                        continue
                    row |= {
                        "inv_freq_ulps": relative_ulps(inv_freq, ours.inv_freq),
                        "attention_factor": attention,
                        "ours_attention_factor": ours.attention_factor,
                        "attention_ulps": abs(attention - ours.attention_factor)
                        / ours.attention_factor
                        / EPS32,
                    }
                    rows.append(row)
        for factor in sc["factors"]:
            dynamic += _dynamic_rows(lib, sc, d, base, L, factor)
    return {"scaling": rows, "dynamic": dynamic}


def _dynamic_rows(lib: Library, sc: dict, d: int, base: float, L: int, factor: float) -> list:
    """What ``lib``'s dynamic NTK (each length on a fresh module, and the lengths in their
    order on one module) and fixed NTK rescaling do with ``factor``, as effective NTK scales;
    beside them ours: dynamic's s·l/L − (s − 1) (1 at l ≤ L), and the fixed NTK's s."""
    lengths = sc["dynamic_lengths"]
    rows = []
    base_row = {"library": lib.name, "factor": factor, "status": "measured", "reason": None}
    if lib.dynamic is not None:
        try:
            fresh = [lib.dynamic(d, base, factor, L, [length])[0] for length in lengths]
            in_order = lib.dynamic(d, base, factor, L, lengths)
        except ImportError as error:
            fresh = in_order = None
            reason = missing(error)
        for i, length in enumerate(lengths):
            formula = max(1.0, factor * length / L - (factor - 1))
            ours = scaled_rope("ntk", d, base, formula, L).inv_freq
            for option, seen in (("dynamic, fresh module", fresh), ("dynamic, in order", in_order)):
                row = {
                    **base_row,
                    "option": option,
                    "call": i,
                    "length": length,
                    "ours_scale": formula,
                }
                if seen is None:
                    rows.append({**row, "status": "n/a", "reason": reason})
                    continue
                rows.append(
                    {
                        **row,
                        "effective_scale": effective_ntk_scale(seen[i], d, base),
                        "ntk_ulps": relative_ulps(seen[i], ours),
                    }
                )
    if lib.fixed_ntk is not None:
        row = {**base_row, "option": "fixed NTK", "call": None, "length": None}
        row["ours_scale"] = factor
        try:
            inv_freq = lib.fixed_ntk(d, base, factor)
        except ImportError as error:
            return [*rows, {**row, "status": "n/a", "reason": missing(error)}]
        ours = scaled_rope("ntk", d, base, factor, L).inv_freq
        rows.append(
            {
                **row,
                "effective_scale": effective_ntk_scale(inv_freq, d, base),
                "ntk_ulps": relative_ulps(inv_freq, ours),
            }
        )
    return rows


# ----------------------------------------------------------------------------- ALiBi, T5


def alibi_conformance(cfg: dict, libraries: tuple[Library, ...]) -> list[dict]:
    """Slopes for H = 1 .. max_heads against Press et al.'s get_slopes, in ulps of float64
    (ours) or float32 (a library's float32 buffer: its rounding alone is half an ulp)."""
    rows = []
    for lib in libraries:
        if lib.alibi is None:
            continue
        for h in range(1, cfg["alibi_max_heads"] + 1):
            row: dict[str, Any] = {
                "library": lib.name,
                "heads": h,
                "power_of_two": h & (h - 1) == 0,
            }
            try:
                got = lib.alibi(h)
            except ImportError as error:
                rows.append({**row, "status": "n/a", "reason": missing(error), "max_ulps": None})
                break  # one row says it: the library is missing
            want = paper_alibi_slopes(h)
            eps = EPS64 if lib.distribution is None else EPS32
            rel = max(abs(g - w) / w for g, w in zip(got, want, strict=True))
            rows.append({**row, "status": "measured", "reason": None, "max_ulps": rel / eps})
    return rows


def t5_conformance(cfg: dict, libraries: tuple[Library, ...]) -> list[dict]:
    """Buckets of key − query over −max_relative .. max_relative against Raffel et al.'s
    formula in float64, both directions, per (num_buckets, max_distance); and against ours."""
    span = cfg["t5"]["max_relative"]
    rel = torch.arange(-span, span + 1)
    rows = []
    for num_buckets, max_distance in cfg["t5"]["cases"]:
        for bidirectional in (True, False):
            want = torch.tensor(
                [paper_t5_bucket(r, bidirectional, num_buckets, max_distance) for r in rel.tolist()]
            )
            ours = None
            for lib in libraries:
                if lib.t5 is None:
                    continue
                row: dict[str, Any] = {
                    "library": lib.name,
                    "num_buckets": num_buckets,
                    "max_distance": max_distance,
                    "direction": "bidirectional" if bidirectional else "causal",
                }
                try:
                    got = lib.t5(rel, bidirectional, num_buckets, max_distance).long()
                except ImportError as error:
                    rows.append({**row, "status": "n/a", "reason": missing(error)})
                    continue
                ours = got if ours is None else ours
                wrong = rel[got != want].tolist()
                rows.append(
                    {
                        **row,
                        "status": "measured",
                        "reason": None,
                        "mismatches": len(wrong),
                        "first_mismatch": wrong[0] if wrong else None,
                        "ours_mismatches": int((got != ours).sum()),
                    }
                )
    return rows


# ----------------------------------------------------------------------------- traps


def unit_probe(length: int, d: int, layout: str, dtype: torch.dtype) -> Tensor:
    """(1, 1, L, d): 1 in the first coordinate of every pair, 0 in its partner, so pair c of
    the rotated probe is (cos θ_c, sin θ_c) exactly as the library stored them."""
    probe = torch.zeros(d, dtype=torch.float64)
    probe[0::2] = 1.0
    return to_layout(probe, layout).to(dtype)[None, None, None, :].expand(1, 1, length, d)


def applied_angles(rotated: Tensor, layout: str) -> Tensor:
    """The angle each pair was turned by, read off the rotated unit probe in float64. (L, d/2)."""
    out = from_layout(rotated[0, 0].double(), layout)
    return torch.atan2(out[..., 1::2], out[..., 0::2])


def run_path(make: Callable[[], Any], path: str, length: int, d: int) -> Tensor:
    """The angles a freshly built RoPE applies along ``path`` to positions 0..L−1:

    * ``float32``: float32 inputs, float32 module (the baseline);
    * ``bf16_inputs``: bfloat16 queries and keys, the module as built;
    * ``module_cast``: the module cast with ``.to(torch.bfloat16)``, float32 inputs (so the
      cast alone is measured);
    * ``autocast``: float32 inputs and module under CPU bfloat16 autocast;
    * ``cached_angles``: one bfloat16 call, then the float32 call measured, on one module.
    """
    rope = make()
    probe32 = unit_probe(length, d, rope.layout, torch.float32)
    probe16 = unit_probe(length, d, rope.layout, torch.bfloat16)
    with torch.no_grad():
        if path == "float32":
            out, _ = rope.rotate(probe32, probe32)
        elif path == "bf16_inputs":
            out, _ = rope.rotate(probe16, probe16)
        elif path == "module_cast":
            rope.module.to(torch.bfloat16)
            out, _ = rope.rotate(probe32, probe32)
        elif path == "autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out, _ = rope.rotate(probe32, probe32)
        elif path == "cached_angles":
            rope.rotate(probe16, probe16)
            out, _ = rope.rotate(probe32, probe32)
        else:
            raise ValueError(f"unknown path {path!r}; paths are {', '.join(PATHS)}")
    return applied_angles(out, rope.layout)


def log_bins(length: int) -> list[tuple[int, int]]:
    """[start, end) position bins, log-spaced from 1 to ``length``, none empty."""
    edges = sorted({round(length ** (i / CURVE_BINS)) for i in range(CURVE_BINS + 1)} | {1, length})
    return list(zip(edges[:-1], edges[1:]))


def trap_measurements(cfg: dict, libraries: tuple[Library, ...]) -> tuple[list, list]:
    """Largest angle error and the first position past the threshold per library and path
    (rows), and the error curve in log bins (curve rows)."""
    d, base = cfg["head_dim"], float(cfg["base"])
    length = cfg["max_position"] + 1
    threshold = cfg["thresholds"]["trap_angle_rad"]
    exact = reference_angles(length, d, base)
    expected = cfg["expected"]
    rows, curve = [], []
    for lib in libraries:
        if lib.rope is None:
            continue
        for path in PATHS:
            row: dict[str, Any] = {
                "library": lib.name,
                "path": path,
                "expected": expected.get(lib.name, {}).get(path) if path in TRAPS else None,
            }
            try:
                applied = run_path(partial(lib.rope, d, base, length), path, length, d)
            except ImportError as error:
                rows.append({**row, "status": "n/a", "reason": missing(error)})
                continue
            error = wrap(applied - exact).abs().amax(-1)  # (L,): the worst pair per position
            over = (error > threshold).nonzero().flatten()
            lossy = bool(over.numel())
            rows.append(
                {
                    **row,
                    "status": "measured",
                    "reason": None,
                    "max_angle_error": error.max().item(),
                    "at_position": int(error.argmax()),
                    "first_over_threshold": int(over[0]) if lossy else None,
                    "measured": "lossy" if lossy else "exact",
                    "as_expected": None
                    if row["expected"] is None
                    else row["expected"] == ("lossy" if lossy else "exact"),
                }
            )
            for start, end in log_bins(length):
                curve.append(
                    {
                        "library": lib.name,
                        "path": path,
                        "position": end - 1,
                        "max_angle_error": error[start:end].max().item(),
                    }
                )
    return rows, curve


# ----------------------------------------------------------------------------- evidence


def _measured(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] == "measured"]


def _by_library(rows: list[dict], key: str, pick=max) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in _measured(rows):
        if r.get(key) is not None:
            out[r["library"]] = pick(out.get(r["library"], r[key]), r[key])
    return out


def _expectation_text(expected: dict, trap: str) -> str:
    """'lossy: a, b; exact: c' for one trap, from the config's expectations."""
    groups = {
        kind: [lib for lib, by in expected.items() if by.get(trap) == kind]
        for kind in ("lossy", "exact")
    }
    return "; ".join(f"{kind}: {', '.join(libs)}" for kind, libs in groups.items() if libs)


def evidence(result: dict, cfg: dict, ours: str, ours_all: list[str]) -> dict[str, Any]:
    """The named values the claims read, and the context their ledger entries show."""
    rope, traps = result["rope"], result["traps"]
    others = [r for r in _measured(rope) if r["library"] != ours]
    shifts = {
        f"shift {t}": max(r[f"shift_{t}_over_bound"] for r in _measured(rope))
        for t in cfg["shifts"]
        if _measured(rope)
    }
    scaling = _measured(result["scaling"])
    dynamic = [r for r in _measured(result["dynamic"]) if r["option"] == "dynamic, fresh module"]
    fixed = [r for r in _measured(result["dynamic"]) if r["option"] == "fixed NTK"]
    measured_traps = [r for r in _measured(traps) if r["path"] in TRAPS]
    out: dict[str, Any] = {
        "rope_over_bound": _by_library(rope, "error_over_bound"),
        "rope_score_over_bound": _by_library(rope, "score_over_bound"),
        "rope_ours_over_bound": {r["library"]: r["ours_over_bound"] for r in others},
        "rope_shift_over_bound": shifts,
        "rope_max_abs_error": _by_library(rope, "max_abs_error"),
        "sinusoidal_over_bound": _by_library(result["sinusoidal"], "error_over_bound"),
        "sinusoidal_ours_over_bound": {
            r["library"]: r["ours_over_bound"]
            for r in _measured(result["sinusoidal"])
            if r["library"] != ours
        },
        "scaling_inv_freq_ulps": {
            f"{r['library']} {r['their_method']} (ours {r['method']})": r["inv_freq_ulps"]
            for r in _worst_per(scaling, ("library", "method"), "inv_freq_ulps")
        },
        "scaling_attention_ulps": {
            f"{r['library']} {r['their_method']}": r["attention_ulps"]
            for r in _worst_per(scaling, ("library", "method"), "attention_ulps")
        },
        "fixed_ntk_ulps": {
            r["library"]: r["ntk_ulps"] for r in _worst_per(fixed, ("library",), "ntk_ulps")
        },
        "dynamic_ntk_ulps": {
            r["library"]: r["ntk_ulps"] for r in _worst_per(dynamic, ("library",), "ntk_ulps")
        },
        "alibi_max_ulps": _by_library(result["alibi"], "max_ulps"),
        "alibi_max_heads": cfg["alibi_max_heads"],
        "t5_mismatches": {
            r["library"]: sum(
                x["mismatches"] for x in _measured(result["t5"]) if x["library"] == r["library"]
            )
            for r in _measured(result["t5"])
        },
        "t5_ours_mismatches": _by_library(result["t5"], "ours_mismatches"),
        "t5_cases": [f"({nb}, {md})" for nb, md in cfg["t5"]["cases"]],
        "t5_max_relative": cfg["t5"]["max_relative"],
        "rope_libraries": [r["library"] for r in _measured(rope)],
        "max_position": cfg["max_position"],
        "shifts": cfg["shifts"],
        "trap_threshold": cfg["thresholds"]["trap_angle_rad"],
        "ours_trap_max_error": {
            f"{r['library']} {r['path']}": r["max_angle_error"]
            for r in _measured(traps)
            if r["library"] in ours_all
        },
    }
    for trap in TRAPS:
        here = [r for r in measured_traps if r["path"] == trap and r["as_expected"] is not None]
        out[f"trap_as_expected_{trap}"] = {r["library"]: r["as_expected"] for r in here}
        out[f"trap_max_error_{trap}"] = {r["library"]: r["max_angle_error"] for r in here}
        out[f"trap_first_over_{trap}"] = {
            r["library"]: r["first_over_threshold"] for r in here if r["measured"] == "lossy"
        }
        out[f"trap_expectation_{trap}"] = _expectation_text(cfg["expected"], trap)
    return out


def _worst_per(rows: list[dict], group: tuple[str, ...], key: str) -> list[dict]:
    """The row of largest ``key`` per value of the ``group`` columns, in first-seen order."""
    best: dict[tuple, dict] = {}
    for r in rows:
        g = tuple(r[c] for c in group)
        if g not in best or r[key] > best[g][key]:
            best[g] = r
    return list(best.values())


def ratchet(rows: list[dict], lengths: list[int]) -> list[dict]:
    """Where a dynamic module called at ``lengths`` in order uses other frequencies than a
    fresh module at the same length: the length, the longest before it, both scales."""
    out = []
    for r in _measured(rows):
        if r["option"] != "dynamic, in order":
            continue
        fresh = next(
            x
            for x in _measured(rows)
            if x["option"] == "dynamic, fresh module"
            and (x["library"], x["factor"], x["length"]) == (r["library"], r["factor"], r["length"])
        )
        if abs(r["effective_scale"] - fresh["effective_scale"]) > 1e-3 * fresh["effective_scale"]:
            out.append(
                {
                    "library": r["library"],
                    "factor": r["factor"],
                    "length": r["length"],
                    "longest": max(lengths[: r["call"] + 1]),
                    "effective_scale": r["effective_scale"],
                    "fresh_scale": fresh["effective_scale"],
                }
            )
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
        "dynamic_ratchet": ratchet(result["dynamic"], cfg["scaling"]["dynamic_lengths"]),
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
