"""Aliasing: up to which length do distinct positions keep distinguishable encodings?

Exact arithmetic. For sinusoidal encodings ‖PE(p) − PE(q)‖² = Σ_i 4 sin²(ω_i (p − q) / 2)
depends on the offset only, so the closest pair below L is found by scanning the L − 1 offsets
(O(L·d), :func:`posenc.numerics.min_distance_scan`) instead of all L² pairs.

Floating point. Every configured encoding whose positions become a table of angles p·ω_i (the
registry's :meth:`~posenc.encodings.PositionalEncoding.angle_table`: the sinusoidal table, the
cos/sin table of a rotation, any plugin's) is computed the naive way (positions and angles in
the low dtype, as code that builds positions in the input's dtype does) and the careful way
(angles in float32 or float64, only the final sin/cos cast): how many of L positions keep a
distinct row (counted exactly, by hashing rows in chunks), where the first repeat and the first
non-finite row appear (float16 cannot hold a position past 65504), the angle and encoding error
against float64 as a function of position, and whether each position's encoding still decodes
to itself (nearest row of the exact table).

Learned input tables have no row past L_max: the registry's error is recorded as is.

This module measures; the claims (spec.py) judge. The yes/no facts among the evidence compare
a measurement with what IEEE arithmetic or the table's own size fixes (2^t + 1, the first
integer float16 rounds to infinity, the rounding bound eps·θ, L_max), never with a threshold.
"""

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from posenc.analysis import Context, Measurements
from posenc.device import dtype_from_name
from posenc.encodings import (
    REGISTRY,
    EncodingParams,
    InputEncoding,
    PositionalEncoding,
    PositionOutOfRange,
    QKEncoding,
    build,
    sinusoidal_table,
)
from posenc.numerics import (
    RowsFn,
    distinct_rows_many,
    min_distance_scan,
    nearest_neighbour_decode,
    pairwise_min_distance,
)
from posenc.workflow import Timer

FLOAT16 = "float16"  # the dtype whose overflow the fp16 claim is about


@dataclass(frozen=True)
class Variant:
    """How a table is computed: angles (and positions) in ``angles``, stored in ``store``."""

    angles: str
    store: str

    @property
    def naive(self) -> bool:
        return self.angles == self.store

    @property
    def name(self) -> str:
        return f"naive {self.store}" if self.naive else f"{self.store} from {self.angles} angles"


@dataclass(frozen=True)
class AngleTable:
    """One encoding's table of angles: its module, whose :meth:`angle_table` gives the rows and
    :meth:`frequencies` the ω_i."""

    encoding: str
    module: PositionalEncoding

    @property
    def omega(self) -> Tensor:
        return self.module.frequencies()  # (pairs,) float64

    @property
    def width(self) -> int:
        return 2 * self.omega.numel()

    @property
    def base(self) -> float | None:
        """b of ω_i = b^(-2i/d), read back from the first two frequencies (ω_0 / ω_1 = b^(2/d));
        None with a single pair. To 12 digits: the round trip costs a few ulps."""
        w = self.omega
        if w.numel() < 2:
            return None
        return float(f"{(w[0] / w[1]).item() ** (self.width / 2):.12g}")

    def angles(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        """θ[p, i] = p·ω_i in ``dtype``, as :func:`posenc.encodings.angles` computes them: ω in
        float64, positions and ω cast, one product. Shape (L, pairs)."""
        omega = self.omega.to(device=positions.device, dtype=dtype)
        return positions.to(dtype)[:, None] * omega[None, :]

    def rows_fn(self, variant: Variant) -> RowsFn:
        """Rows for integer positions, through the registry's formula in ``variant``'s dtypes
        (sinusoidal: PE(p) = (sin pω_0, cos pω_0, ...), Vaswani et al. 2017; a rotation: its
        cos/sin table (cos pθ_0, ..., sin pθ_0, ...), Su et al. 2021)."""
        a, s = dtype_from_name(variant.angles), dtype_from_name(variant.store)
        return lambda idx: self.module.angle_table(idx, a).to(s)

    def exact_fn(self) -> RowsFn:
        return self.rows_fn(Variant("float64", "float64"))


def encoding_params(cfg: dict, encoding_cfg: dict, d_model: int) -> EncodingParams:
    """The shared encoding settings with this section's own: its rotary base (Llama 3's, say,
    beside the sinusoidal table's) and its learned table's L_max."""
    shared = {**encoding_cfg, "rope_base": cfg["rope_base"], "max_len": cfg["learned_max_len"]}
    return EncodingParams(**shared, d_model=d_model)


def angle_tables(cfg: dict, encodings: list[str], encoding_cfg: dict) -> dict[str, AngleTable]:
    """Every configured encoding whose positions become a table of angles, in config order.

    An input table is d_model wide; one that acts on queries and keys is one head of
    rope_head_dim (its table is per head).
    """
    tables = {}
    for name in encodings:
        module = build(name, encoding_params(cfg, encoding_cfg, cfg["d_model"]))
        if isinstance(module, QKEncoding):
            module = build(name, encoding_params(cfg, encoding_cfg, cfg["rope_head_dim"]))
        if module.frequencies() is not None:
            tables[name] = AngleTable(name, module)
    return tables


def lengths_grid(cfg: dict) -> list[int]:
    return [2**e for e in range(cfg["min_log2_len"], cfg["max_log2_len"] + 1)]


def significand_bits(dtype: torch.dtype) -> int:
    """t, the significand precision with the implicit bit: eps = 2^(1 - t). Every integer up to
    2^t is exact, and 2^t + 1 is the first that is not (it rounds to 2^t, ties to even)."""
    return 1 - round(math.log2(torch.finfo(dtype).eps))


def first_overflowing_integer(dtype: torch.dtype) -> int:
    """The smallest integer that ``dtype`` rounds to infinity: its largest finite value plus
    half the spacing 2^(e + 1 - t) of the binade [2^e, 2^(e+1)) it lies in; that tie rounds to
    the even neighbour 2^(e+1), which overflows (IEEE 754, round to nearest)."""
    top = int(torch.finfo(dtype).max)
    e = top.bit_length() - 1  # exact for integers of any size
    return top + 2 ** (e + 1 - significand_bits(dtype)) // 2


def exact_min_distances(
    cfg: dict, lengths: list[int], device: torch.device
) -> tuple[list[dict], list[dict]]:
    """The offset scan for every (d, base) (d_model included), and its brute-force check.

    Returns a row per (d, base, L): the closest pair, the closest pair at least 2 apart and
    their ratio to the adjacent distance; and one check row per (d, base).
    """
    ex, chunk = cfg["exact"], cfg["chunk_rows"]
    rows, checks = [], []
    for base in ex["bases"]:
        for d in sorted({*ex["d_values"], cfg["d_model"]}):
            scan = min_distance_scan(lengths, d, base, chunk=4 * chunk, device=device)
            for i, n in enumerate(scan.lengths):
                far = scan.far_min_distance[i]
                rows.append(
                    {
                        "d": d,
                        "base": base,
                        "length": n,
                        "min_distance": scan.min_distance[i],
                        "argmin_offset": scan.argmin_offset[i],
                        "adjacent_distance": scan.adjacent_distance,
                        "far_min_distance": far,
                        "far_argmin_offset": scan.far_argmin_offset[i],
                        "far_to_adjacent": None if far is None else far / scan.adjacent_distance,
                    }
                )
            n = ex["check_len"]
            table = sinusoidal_table(torch.arange(n, device=device), d, base, torch.float64)
            brute, p, q = pairwise_min_distance(table)
            via_scan = min_distance_scan([n], d, base, device=device)
            checks.append(
                {
                    "d": d,
                    "base": base,
                    "length": n,
                    "scan": via_scan.min_distance[0],
                    "scan_offset": via_scan.argmin_offset[0],
                    "brute_force": brute,
                    "brute_force_pair": f"({p}, {q})",
                    "relative_difference": abs(via_scan.min_distance[0] - brute) / brute,
                }
            )
    return rows, checks


def count_distinct(
    tables: dict[str, AngleTable], variants: list[Variant], lengths: list[int], cfg: dict, device
) -> tuple[list[dict], list[dict]]:
    """Exact distinct-row counts per table × variant: a summary row each, and the prefix curve.

    Variants sharing an angle dtype are counted in one pass: the angle table is computed once
    per chunk and cast to each storage dtype.
    """
    summary, curve = [], []
    n = lengths[-1]
    for name, table in tables.items():
        for angle_name in dict.fromkeys(v.angles for v in variants):
            group = [v for v in variants if v.angles == angle_name]
            exact = table.rows_fn(Variant(angle_name, angle_name))
            stores = [dtype_from_name(v.store) for v in group]
            results = distinct_rows_many(
                lambda idx, exact=exact, stores=stores: [exact(idx).to(s) for s in stores],
                len(group),
                n,
                chunk=cfg["chunk_rows"],
                device=device,
            )
            for v, res in zip(group, results):
                summary.append(
                    {
                        "encoding": name,
                        "variant": v.name,
                        "angles": v.angles,
                        "store": v.store,
                        "length": n,
                        "distinct": res.n_distinct,
                        "distinct_fraction": res.n_distinct / n,
                        "first_repeat": res.first_repeat,
                        "first_repeat_of": res.first_repeat_of,
                        "nonfinite_rows": res.n_nonfinite,
                        "first_nonfinite": res.first_nonfinite,
                        "hash_collisions": res.hash_collisions,
                    }
                )
                for length, count in zip(lengths, res.distinct_below(lengths)):
                    curve.append(
                        {
                            "encoding": name,
                            "variant": v.name,
                            "length": length,
                            "distinct": count,
                            "distinct_fraction": count / length,
                        }
                    )
    order = {(t, v.name): i for i, (t, v) in enumerate((t, v) for t in tables for v in variants)}
    summary.sort(key=lambda r: order[(r["encoding"], r["variant"])])
    return summary, curve


def error_positions(max_log2: int, per_octave: int, generator: torch.Generator) -> Tensor:
    """Positions in every octave [2^e, 2^(e+1)), e < max_log2: both ends and ``per_octave``
    uniform draws, sorted and unique. Shape (n,)."""
    out = []
    for e in range(max_log2):
        lo, hi = 2**e, 2 ** (e + 1)
        draws = torch.randint(lo, hi, (per_octave,), generator=generator)
        out.append(torch.cat((torch.tensor([lo, hi - 1]), draws)))
    return torch.cat(out).unique()


def angle_and_encoding_errors(
    tables: dict[str, AngleTable], variants: list[Variant], positions: Tensor, device
) -> list[dict]:
    """Per table, position and dtype: the max angle error max_i |θ̂_i − θ_i| (naive angle dtypes)
    and the max encoding error max_j |roŵ_j − row_j| (every variant), against float64.

    Also the angle error in units of the rounding bound eps·θ_i: fl(fl(p)·fl(ω_i)) is within
    θ_i(2u + u²) ≤ eps·θ_i of θ_i = p·ω_i (u = eps/2) while p is exact in the dtype.
    Non-finite values give an infinite error.
    """
    rows = []
    pos = positions.to(device)
    for name, table in tables.items():
        reference = table.angles(pos, torch.float64)  # (n, pairs)
        exact_rows = table.exact_fn()(pos)
        for angle_name in sorted({v.angles for v in variants} - {"float64"}):
            dt = dtype_from_name(angle_name)
            theta = table.angles(pos, dt).to(torch.float64)
            err = (theta - reference).abs().nan_to_num(nan=math.inf, posinf=math.inf)  # (n, pairs)
            ratio = err / (torch.finfo(dt).eps * reference)
            ratio = ratio.nan_to_num(nan=0.0, posinf=math.inf)  # 0 / 0 at p = 0
            for p, e, r in zip(pos.tolist(), err.amax(-1).tolist(), ratio.amax(-1).tolist()):
                rows.append(
                    {
                        "encoding": name,
                        "quantity": "angle",
                        "variant": f"{angle_name} angles",
                        "position": p,
                        "max_abs_error": e,
                        "error_over_bound": r,
                    }
                )
        for v in variants:
            got = table.rows_fn(v)(pos).to(torch.float64)
            err = (got - exact_rows).abs().nan_to_num(nan=math.inf, posinf=math.inf).amax(-1)
            for p, e in zip(pos.tolist(), err.tolist()):
                rows.append(
                    {
                        "encoding": name,
                        "quantity": "encoding",
                        "variant": v.name,
                        "position": p,
                        "max_abs_error": e,
                        "error_over_bound": None,
                    }
                )
    return rows


def decode_accuracy(
    tables: dict[str, AngleTable],
    variants: list[Variant],
    lengths: list[int],
    cfg: dict,
    generator: torch.Generator,
    device,
) -> list[dict]:
    """Does each encoding decode to its own position among the exact encodings of 0..L-1?

    For every L, ``decode_samples`` positions uniform in [0, L) (with replacement); each is
    encoded by every variant and matched to its nearest row of the exact (float64) table among
    the first L rows. Correct iff that row is the position itself; a non-finite encoding
    decodes to nothing. One chunked pass over the table serves every variant and length.
    """
    n_samples = cfg["decode_samples"]
    positions = torch.cat([torch.randint(0, n, (n_samples,), generator=generator) for n in lengths])
    limits = torch.tensor(lengths).repeat_interleave(n_samples)
    positions, limits = positions.to(device), limits.to(device)
    rows = []
    for name, table in tables.items():
        queries = torch.cat([table.rows_fn(v)(positions).to(torch.float64) for v in variants])
        finite = queries.isfinite().all(-1)
        nearest, _ = nearest_neighbour_decode(
            queries.nan_to_num(),
            limits.repeat(len(variants)),
            table.exact_fn(),
            lengths[-1],
            max_elements=cfg["decode_block_elements"],
        )
        correct = (finite & (nearest == positions.repeat(len(variants)))).view(len(variants), -1)
        for v, ok in zip(variants, correct):
            for i, n in enumerate(lengths):
                hits = ok[i * n_samples : (i + 1) * n_samples]
                rows.append(
                    {
                        "encoding": name,
                        "variant": v.name,
                        "length": n,
                        "samples": n_samples,
                        "accuracy": hits.double().mean().item(),
                    }
                )
    return rows


def out_of_range(module: PositionalEncoding, max_len: int) -> dict[str, Any]:
    """Ask a learned input table for positions 0..L_max-1 (fine) and then L_max."""
    inside = list(module.input_encoding(torch.arange(max_len)).shape)
    found = {"max_len": max_len, "in_range_shape": inside, "raised": False, "error": None}
    try:
        module.input_encoding(torch.arange(max_len + 1))
    except PositionOutOfRange as err:
        return {**found, "raised": True, "error": type(err).__name__, "message": str(err)}
    return {**found, "message": None}


def learned_tables(cfg: dict, encodings: list[str], encoding_cfg: dict) -> list[dict[str, Any]]:
    """Every configured learned input table, L_max = learned_max_len rows, asked past its end."""
    out = []
    for name in encodings:
        if not REGISTRY[name].learned:
            continue
        module = build(name, encoding_params(cfg, encoding_cfg, cfg["d_model"]))
        if isinstance(module, InputEncoding):
            out.append({"encoding": name, **out_of_range(module, cfg["learned_max_len"])})
    return out


def log_log_slope(x: list[float], y: list[float]) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def octave_maxima(rows: list[dict], fit_min: int) -> tuple[list[int], list[float]]:
    """Largest error in each octave [2^e, 2^(e+1)) with 2^e ≥ fit_min: (octave starts, maxima)."""
    best: dict[int, float] = {}
    for r in rows:
        e = 2 ** int(math.log2(r["position"]))
        if e >= fit_min:
            best[e] = max(best.get(e, 0.0), r["max_abs_error"])
    starts = sorted(best)
    return starts, [best[s] for s in starts]


def neighbours_closest_from(min_distance: list[dict], cfg: dict, n: int) -> int | None:
    """The smallest d from which on (every larger d too) the closest pair below the largest L
    is a pair of neighbours for every base; None if there is none."""
    ok = {
        d: all(r["argmin_offset"] == 1 for r in _find(min_distance, d=d, length=n))
        for d in cfg["exact"]["d_values"]
    }
    best = None
    for d in sorted(ok, reverse=True):
        if not ok[d]:
            break
        best = d
    return best


def _find(rows: list[dict], **where) -> list[dict]:
    return [r for r in rows if all(r[k] == v for k, v in where.items())]


def fp32_angle_fits(errors: list[dict], tables, fit_min: int) -> dict[str, dict[str, float]]:
    """Per table with float32 angles: the log-log slope of the largest angle error per octave
    (positions ≥ fit_min), the largest error and the largest error over its bound eps·θ."""
    fits = {}
    for name in tables:
        errs = _find(errors, encoding=name, quantity="angle", variant="float32 angles")
        if not errs:
            continue
        starts, maxima = octave_maxima(errs, fit_min)
        worst = max((r for r in errs if r["position"] >= fit_min), key=lambda r: r["max_abs_error"])
        fits[name] = {
            "slope": log_log_slope(starts, maxima),
            "max_abs_error": worst["max_abs_error"],  # the largest of the octave maxima
            "position": worst["position"],
            "max_error_over_bound": max(r["error_over_bound"] for r in errs),
        }
    return fits


def evidence(
    cfg: dict,
    n: int,
    min_distance: list[dict],
    checks: list[dict],
    distinct: list[dict],
    errors: list[dict],
    decode: list[dict],
    fits: dict[str, dict],
    learned: list[dict],
) -> dict[str, Any]:
    """The named values the claims read; a value whose rows this run lacks is None (n/a)."""
    at_d_model = [r for r in min_distance if r["d"] == cfg["d_model"] and r["length"] == n]
    far = {f"base {r['base']:g}": r["far_to_adjacent"] for r in at_d_model}

    # Naive low precision (narrower than float32): positions themselves round.
    low = [
        s
        for s in distinct
        if s["angles"] == s["store"] and torch.finfo(dtype_from_name(s["store"])).bits < 32
    ]
    label = lambda s: f"{s['encoding']}, {s['store']}"  # noqa: E731

    def repeats_by_bound(s: dict) -> bool:
        """Whether a position at or before 2^t + 1, the first integer the dtype cannot hold,
        repeats an earlier one."""
        return 0 <= s["first_repeat"] <= 2 ** significand_bits(dtype_from_name(s["store"])) + 1

    # float16 overflow, measurable once L passes the first integer float16 rounds to inf.
    overflow_at = first_overflowing_integer(dtype_from_name(FLOAT16))
    fp16 = [s for s in distinct if s["angles"] == FLOAT16 == s["store"]] if n > overflow_at else []

    # Careful: angles in a wider dtype than the one stored, cast at the end.
    careful = [s for s in distinct if s["angles"] != s["store"]]
    acc = {(r["encoding"], r["variant"]): r["accuracy"] for r in decode if r["length"] == n}
    ulps = [
        max(
            r["max_abs_error"]
            for r in _find(
                errors, encoding=s["encoding"], quantity="encoding", variant=s["variant"]
            )
        )
        / torch.finfo(dtype_from_name(s["store"])).eps
        for s in careful
        if s["angles"] == "float64"
    ]
    return {
        # What the statements name.
        "length": n,
        "d_model": cfg["d_model"],
        "learned_max_len": cfg["learned_max_len"],
        "far_to_adjacent": far,
        "adjacent_distance": {f"base {r['base']:g}": r["adjacent_distance"] for r in at_d_model},
        "scan_vs_brute_force": max(c["relative_difference"] for c in checks),
        "collapse_distinct_fraction": {label(s): s["distinct_fraction"] for s in low},
        # Every variant's, for the report card.
        "distinct_at_length": {
            f"{s['encoding']}, {s['variant']}": s["distinct_fraction"] for s in distinct
        },
        "collapse_first_repeat": {label(s): s["first_repeat"] for s in low},
        "collapse_repeats_by_bound": {label(s): repeats_by_bound(s) for s in low},
        "fp16_first_nonfinite": {s["encoding"]: s["first_nonfinite"] for s in fp16},
        "fp16_nonfinite_rows": {s["encoding"]: s["nonfinite_rows"] for s in fp16},
        "fp16_overflow_where_float16_overflows": {
            s["encoding"]: s["first_nonfinite"] == overflow_at for s in fp16
        },
        "fp16_nonfinite_onwards": {
            s["encoding"]: s["first_nonfinite"] >= 0
            and s["nonfinite_rows"] == n - s["first_nonfinite"]
            for s in fp16
        },
        # The claim compares the slope with the exponent the rounding model predicts (the
        # config's angle_error_slope).
        "fp32_angle_slope": {e: f["slope"] for e, f in fits.items()},
        "fp32_angle_max_error": {e: f["max_abs_error"] for e, f in fits.items()},
        "fp32_angle_error_over_bound": {e: f["max_error_over_bound"] for e, f in fits.items()},
        "fp32_angle_within_bound": {e: f["max_error_over_bound"] <= 1.0 for e, f in fits.items()},
        "careful_variants": len(careful) if careful else None,
        "careful_distinct_fraction": min((s["distinct_fraction"] for s in careful), default=None),
        "careful_nonfinite_rows": sum(s["nonfinite_rows"] for s in careful) if careful else None,
        "careful_all_finite": all(s["nonfinite_rows"] == 0 for s in careful) if careful else None,
        "careful_decode_accuracy": min(
            (acc[(s["encoding"], s["variant"])] for s in careful), default=None
        ),
        "careful_float64_error_eps": max(ulps, default=None),
        "learned_raises": {t["encoding"]: t["raised"] for t in learned},
        "learned_error": {t["encoding"]: t["error"] or "nothing" for t in learned},
        "learned_in_range_shape": {t["encoding"]: t["in_range_shape"] for t in learned},
        "learned_rows_returned": {
            t["encoding"]: t["in_range_shape"][0] == t["max_len"] for t in learned
        },
    }


def compute(ctx: Context) -> Measurements:
    """Every number of the analysis. Positions are drawn on the CPU from ``ctx.seed``."""
    cfg, device = ctx.cfg, ctx.device
    lengths = lengths_grid(cfg)
    n = lengths[-1]
    variants = [Variant(v["angles"], v["store"]) for v in cfg["variants"]]
    tables = angle_tables(cfg, ctx.encodings, ctx.encoding)
    g = torch.Generator().manual_seed(ctx.seed)
    timing = {}
    with Timer() as t:
        min_distance, checks = exact_min_distances(cfg, lengths, device)
    timing["exact_scan"] = t.seconds
    with Timer() as t:
        distinct, curve = count_distinct(tables, variants, lengths, cfg, device)
    timing["distinct_rows"] = t.seconds
    with Timer() as t:
        positions = error_positions(cfg["max_log2_len"], cfg["error_samples_per_octave"], g)
        errors = angle_and_encoding_errors(tables, variants, positions, device)
    timing["errors"] = t.seconds
    with Timer() as t:
        decode = decode_accuracy(tables, variants, lengths, cfg, g, device)
    timing["decode"] = t.seconds
    learned = learned_tables(cfg, ctx.encodings, ctx.encoding)
    if ctx.log:
        ctx.log.info("%d angle tables (%s); timings %s", len(tables), ", ".join(tables), timing)
    fits = fp32_angle_fits(errors, tables, cfg["thresholds"]["angle_fit_min_position"])
    overflow_at = first_overflowing_integer(dtype_from_name(FLOAT16))
    careful = [s for s in distinct if s["angles"] != s["store"]]
    return Measurements(
        rows={
            "min_distance": min_distance,
            "distinct": distinct,
            "distinct_curve": curve,
            "errors": errors,
            "decode": decode,
        },
        evidence=evidence(cfg, n, min_distance, checks, distinct, errors, decode, fits, learned),
        summary={
            "lengths": lengths,
            "min_len": lengths[0],
            "max_len": n,
            "d_values": cfg["exact"]["d_values"],
            "check_len": cfg["exact"]["check_len"],
            "tables": [
                {"encoding": e, "width": tab.width, "base": tab.base} for e, tab in tables.items()
            ],
            "variants": [v.name for v in variants],
            "scan_checks": checks,
            "neighbours_closest_from_d": neighbours_closest_from(min_distance, cfg, n),
            "significand_bits": {
                dt: significand_bits(dtype_from_name(dt))
                for dt in ("bfloat16", "float16", "float32")
            },
            "fp16_max": int(torch.finfo(torch.float16).max),
            "fp16_first_overflow": overflow_at,
            "fp32_angle": fits,
            "careful": {
                "variants": len(careful),
                "nonfinite_rows": sum(s["nonfinite_rows"] for s in careful),
            },
            "learned_tables": learned,
        },
        timing=timing,
    )
