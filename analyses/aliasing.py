"""Aliasing: up to which length do distinct positions keep distinguishable encodings?

Exact arithmetic. For sinusoidal encodings ‖PE(p) − PE(q)‖² = Σ_i 4 sin²(ω_i (p − q) / 2)
depends on the offset only, so the closest pair below L is found by scanning the L − 1 offsets
(O(L·d), :func:`posenc.numerics.min_distance_scan`) instead of all L² pairs.

Floating point. The same tables computed the naive way (positions and angles in the low dtype,
as code that builds positions in the input's dtype does) and the careful way (angles in float32
or float64, only the final sin/cos cast), for the sinusoidal table and RoPE's cos/sin table:
how many of L positions keep a distinct row (counted exactly, by hashing rows in chunks),
where the first repeat and the first non-finite row appear (float16 cannot hold a position past
65504), the angle and encoding error against float64 as a function of position, and whether
each position's encoding still decodes to itself (nearest row of the exact table).

Learned tables have no row past L_max: the registry's error is shown as is.
"""

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from posenc.claims import claim
from posenc.device import device_name, dtype_from_name, resolve_device
from posenc.encodings import (
    EncodingParams,
    PositionOutOfRange,
    angles,
    build,
    rope_cos_sin,
    sinusoidal_table,
)
from posenc.io import save_figure, write_csv
from posenc.numerics import (
    RowsFn,
    distinct_rows_many,
    min_distance_scan,
    nearest_neighbour_decode,
    pairwise_min_distance,
)
from posenc.workflow import Timer, setup, write_section

SECTION = "aliasing"
TABLES = ("sinusoidal", "rope")
ERROR_FLOOR = 1e-12  # exact zeros are drawn here on log axes, below every rounding error shown


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
class Table:
    """One positional table: its kind (``TABLES``), width and base."""

    kind: str
    d: int
    base: float

    def rows_fn(self, variant: Variant) -> RowsFn:
        """Rows for integer positions, through the registry's formulas in ``variant``'s dtypes.

        sinusoidal: PE(p) = (sin pω_0, cos pω_0, sin pω_1, ...) (Vaswani et al. 2017);
        rope: the cos/sin table (cos pθ_0, ..., cos pθ_{d/2-1}, sin pθ_0, ...) (Su et al. 2021).
        """
        a, s = dtype_from_name(variant.angles), dtype_from_name(variant.store)
        if self.kind == "sinusoidal":
            return lambda idx: sinusoidal_table(idx, self.d, self.base, a).to(s)
        return lambda idx: torch.cat(rope_cos_sin(idx, self.d, self.base, a), -1).to(s)

    def exact_fn(self) -> RowsFn:
        return self.rows_fn(Variant("float64", "float64"))


def lengths_grid(cfg: dict) -> list[int]:
    return [2**e for e in range(cfg["min_log2_len"], cfg["max_log2_len"] + 1)]


def significand_bits(dtype: torch.dtype) -> int:
    """t, the significand precision with the implicit bit: eps = 2^(1 - t). Every integer up to
    2^t is exact, and 2^t + 1 is the first that is not (it rounds to 2^t, ties to even)."""
    return 1 - round(math.log2(torch.finfo(dtype).eps))


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
    tables: dict[str, Table], variants: list[Variant], lengths: list[int], cfg: dict, device
) -> tuple[list[dict], list[dict]]:
    """Exact distinct-row counts per table × variant: a summary row each, and the prefix curve.

    Variants sharing an angle dtype are counted in one pass: the angle table is computed once
    per chunk and cast to each storage dtype.
    """
    summary, curve = [], []
    n = lengths[-1]
    for kind, table in tables.items():
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
                        "table": kind,
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
                            "table": kind,
                            "variant": v.name,
                            "length": length,
                            "distinct": count,
                            "distinct_fraction": count / length,
                        }
                    )
    order = {(t, v.name): i for i, (t, v) in enumerate((t, v) for t in tables for v in variants)}
    summary.sort(key=lambda r: order[(r["table"], r["variant"])])
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
    tables: dict[str, Table], variants: list[Variant], positions: Tensor, device
) -> list[dict]:
    """Per table, position and dtype: the max angle error max_i |θ̂_i − θ_i| (naive angle dtypes)
    and the max encoding error max_j |roŵ_j − row_j| (every variant), against float64.

    Also the angle error in units of the rounding bound eps·θ_i: fl(fl(p)·fl(ω_i)) is within
    θ_i(2u + u²) ≤ eps·θ_i of θ_i = p·ω_i (u = eps/2) while p is exact in the dtype.
    Non-finite values give an infinite error.
    """
    rows = []
    pos = positions.to(device)
    for kind, table in tables.items():
        reference = angles(pos, table.d, table.base, torch.float64)  # (n, d/2)
        exact_rows = table.exact_fn()(pos)
        for name in sorted({v.angles for v in variants} - {"float64"}):
            dt = dtype_from_name(name)
            theta = angles(pos, table.d, table.base, dt).to(torch.float64)
            err = (theta - reference).abs().nan_to_num(nan=math.inf, posinf=math.inf)  # (n, d/2)
            ratio = err / (torch.finfo(dt).eps * reference)
            ratio = ratio.nan_to_num(nan=0.0, posinf=math.inf)  # 0 / 0 at p = 0
            for p, e, r in zip(pos.tolist(), err.amax(-1).tolist(), ratio.amax(-1).tolist()):
                rows.append(
                    {
                        "table": kind,
                        "quantity": "angle",
                        "variant": f"{name} angles",
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
                        "table": kind,
                        "quantity": "encoding",
                        "variant": v.name,
                        "position": p,
                        "max_abs_error": e,
                        "error_over_bound": None,
                    }
                )
    return rows


def decode_accuracy(
    tables: dict[str, Table],
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
    for kind, table in tables.items():
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
                        "table": kind,
                        "variant": v.name,
                        "length": n,
                        "samples": n_samples,
                        "accuracy": hits.double().mean().item(),
                    }
                )
    return rows


def learned_out_of_range(d: int, max_len: int) -> dict[str, Any]:
    """Ask the registry's learned table for positions 0..L_max-1 (fine) and then L_max."""
    table = build("learned", EncodingParams(d_model=d, max_len=max_len))
    inside = tuple(table.input_encoding(torch.arange(max_len)).shape)
    try:
        table.input_encoding(torch.arange(max_len + 1))
    except PositionOutOfRange as err:
        return {
            "max_len": max_len,
            "in_range_shape": list(inside),
            "raised": True,
            "error": type(err).__name__,
            "message": str(err),
        }
    return {
        "max_len": max_len,
        "in_range_shape": list(inside),
        "raised": False,
        "error": None,
        "message": None,
    }


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


def neighbours_closest_from(result: dict, cfg: dict) -> int | None:
    """The smallest d from which on (every larger d too) the closest pair below the largest L
    is a pair of neighbours for every base; None if there is none."""
    n = result["lengths"][-1]
    ok = {
        d: all(r["argmin_offset"] == 1 for r in _find(result["min_distance"], d=d, length=n))
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


def make_claims(result: dict, cfg: dict) -> list[dict]:
    th = cfg["thresholds"]
    n = result["lengths"][-1]
    claims = []

    # Exact arithmetic: the offset scan is right, and far pairs never beat neighbours at d_model.
    far_at_max = [r for r in result["far"] if r["length"] == n]
    worst_check = max(c["relative_difference"] for c in result["checks"])
    claims.append(
        claim(
            "aliasing.exact_min_distance",
            f"In exact arithmetic, d = {cfg['d_model']} sinusoidal encodings of L = {n} positions "
            "stay apart: no two positions come closer than neighbours do, for every base; the "
            "O(L·d) offset scan that shows it agrees with brute force over all pairs.",
            {
                **{f"base {r['base']:g}: far/adjacent": r["far_to_adjacent"] for r in far_at_max},
                **{
                    f"base {r['base']:g}: adjacent distance": r["adjacent_distance"]
                    for r in far_at_max
                },
                "scan vs brute force (max rel. diff.)": worst_check,
            },
            f"min over offsets ≥ 2 ≥ {th['min_far_to_adjacent']:g} × the adjacent distance; "
            f"scan = brute force within rtol {th['scan_rtol']:g} at "
            f"L = {cfg['exact']['check_len']}",
            all(r["far_to_adjacent"] >= th["min_far_to_adjacent"] for r in far_at_max)
            and worst_check <= th["scan_rtol"],
            "seed article (003), 'correctness in the sense of injectivity'",
            SECTION,
        )
    )

    # Naive low precision: positions themselves round, so encodings repeat.
    low = [
        s
        for s in result["distinct"]
        if s["angles"] == s["store"] and s["store"] != "float32" and s["store"] != "float64"
    ]
    measured, ok = {}, bool(low)
    for s in low:
        t = significand_bits(dtype_from_name(s["store"]))
        measured[f"{s['table']} {s['store']}: distinct fraction"] = s["distinct_fraction"]
        measured[f"{s['table']} {s['store']}: first repeat"] = s["first_repeat"]
        ok &= s["distinct_fraction"] <= th["collapse_max_distinct_fraction"]
        ok &= 0 <= s["first_repeat"] <= 2**t + 1
    claims.append(
        claim(
            "aliasing.low_precision_collapse",
            f"Computed naively in bfloat16 or float16 (positions and angles in that dtype), most "
            f"of L = {n} positions share their encoding with another: a position stops being "
            "representable at 2^t + 1 (t = significand bits), and from there on positions merge.",
            measured if low else "no naive bfloat16/float16 variant configured",
            f"distinct fraction ≤ {th['collapse_max_distinct_fraction']:g}; first repeat at or "
            "before 2^t + 1 (257 in bfloat16, 2049 in float16)",
            ok if low else None,
            "issue 3; lucidrains/rotary-embedding-torch positions in the input dtype",
            SECTION,
        )
    )

    # float16 overflow: the largest finite float16 is 65504.
    fp16 = [s for s in result["distinct"] if s["angles"] == "float16" == s["store"]]
    limit = th["fp16_max_position"]
    half_spacing = 2 ** (math.floor(math.log2(limit)) + 1 - significand_bits(torch.float16)) / 2
    measured = {}
    ok = bool(fp16) and n > limit + half_spacing
    for s in fp16:
        measured[f"{s['table']}: first non-finite position"] = s["first_nonfinite"]
        measured[f"{s['table']}: non-finite rows"] = s["nonfinite_rows"]
        ok &= limit < s["first_nonfinite"] <= limit + half_spacing
        ok &= s["nonfinite_rows"] == n - s["first_nonfinite"]  # every later position too
    claims.append(
        claim(
            "aliasing.fp16_overflow",
            f"A position above the largest float16, {limit:g}, becomes inf when cast to float16 "
            "(from the first integer that rounds up to 2^16), so its angles are inf and its "
            "sin/cos NaN: every encoding from there on is NaN.",
            measured if fp16 else "no naive float16 variant configured",
            f"first non-finite position in ({limit:g}, {limit + half_spacing:g}] (half a float16 "
            f"spacing above {limit:g}) and every later position non-finite",
            ok if fp16 and n > limit + half_spacing else None,
            "issue 3; IEEE 754 binary16",
            SECTION,
        )
    )

    # float32 angles: error grows linearly with the position.
    fit_min = th["angle_fit_min_position"]
    measured, ok = {}, True
    for kind in TABLES:
        errs = _find(result["errors"], table=kind, quantity="angle", variant="float32 angles")
        if not errs:
            continue
        starts, maxima = octave_maxima(errs, fit_min)
        slope = log_log_slope(starts, maxima)
        ratio = max(r["error_over_bound"] for r in errs)
        measured[f"{kind}: slope"] = slope
        measured[f"{kind}: max error (rad)"] = max(maxima)
        measured[f"{kind}: max error / (eps·θ)"] = ratio
        ok &= abs(slope - th["angle_error_slope"]) <= th["angle_error_slope_tol"]
        ok &= ratio <= 1.0
    claims.append(
        claim(
            "aliasing.fp32_angle_error_growth",
            "Angles p·ω_i computed in float32 err by up to eps·p·ω_i, so the angle error grows "
            "linearly with the position: the log-log slope of the largest error per octave is 1.",
            measured or "no float32-angle variant configured",
            f"slope {th['angle_error_slope']:g} ± {th['angle_error_slope_tol']:g} over positions "
            f"≥ {fit_min}, and every error within the rounding bound eps·θ",
            ok if measured else None,
            "issue 3; Higham 2002, §2.2 (rounding model)",
            SECTION,
        )
    )

    # Careful computation: float32/float64 angles, cast at the end.
    careful = [s for s in result["distinct"] if s["angles"] != s["store"]]
    acc_at_max = {
        (r["table"], r["variant"]): r["accuracy"] for r in result["decode"] if r["length"] == n
    }
    fractions, nonfinite, accuracies, ulps = [], 0, [], []
    for s in careful:
        fractions.append(s["distinct_fraction"])
        nonfinite += s["nonfinite_rows"]
        if (s["table"], s["variant"]) in acc_at_max:
            accuracies.append(acc_at_max[(s["table"], s["variant"])])
        if s["angles"] == "float64":
            errs = _find(
                result["errors"], table=s["table"], quantity="encoding", variant=s["variant"]
            )
            eps = torch.finfo(dtype_from_name(s["store"])).eps
            ulps.append(max(r["max_abs_error"] for r in errs) / eps)
    measured = {
        "variants": len(careful),
        "smallest distinct fraction": min(fractions, default=None),
        "non-finite rows": nonfinite,
        "lowest decode accuracy": min(accuracies, default=None),
        "float64 angles: largest error (eps)": max(ulps, default=None),
    }
    ok = (
        bool(careful)
        and min(fractions) >= th["careful_min_distinct_fraction"]
        and nonfinite == 0
        and all(a >= th["careful_min_decode_accuracy"] for a in accuracies)
        and all(u <= th["careful_error_ulps"] for u in ulps)
    )
    claims.append(
        claim(
            "aliasing.careful_computation_fix",
            "Computing positions and angles in float32 or float64 and casting only the final "
            f"sin/cos to the low dtype keeps all L = {n} encodings distinct, finite and "
            "decodable; with float64 angles each value is the correctly rounded one.",
            measured if careful else "no careful variant configured",
            f"for every careful variant (both tables): distinct fraction ≥ "
            f"{th['careful_min_distinct_fraction']:g}, no non-finite row, decode accuracy ≥ "
            f"{th['careful_min_decode_accuracy']:g}; float64 angles: error ≤ "
            f"{th['careful_error_ulps']:g} eps(dtype)",
            ok if careful else None,
            "issue 3",
            SECTION,
        )
    )

    learned = result["learned"]
    claims.append(
        claim(
            "aliasing.learned_out_of_range",
            f"A learned table of L_max = {learned['max_len']} rows has no encoding for position "
            "L_max: the registry raises a clear error instead of wrapping around.",
            {"raised": learned["error"] or "nothing", "in-range shape": learned["in_range_shape"]},
            f"PositionOutOfRange for position {learned['max_len']}; rows 0..L_max−1 returned",
            learned["raised"] and learned["in_range_shape"][0] == learned["max_len"],
            "seed article (003); Devlin et al. 2019",
            SECTION,
        )
    )
    return claims


def compute(cfg: dict, seed: int, encoding_cfg: dict, device: torch.device) -> dict[str, Any]:
    """Every number of the analysis. Positions are drawn on the CPU from ``seed``."""
    lengths = lengths_grid(cfg)
    variants = [Variant(v["angles"], v["store"]) for v in cfg["variants"]]
    tables = {
        "sinusoidal": Table("sinusoidal", cfg["d_model"], encoding_cfg["base"]),
        "rope": Table("rope", cfg["rope_head_dim"], cfg["rope_base"]),
    }
    g = torch.Generator().manual_seed(seed)
    timings = {}
    with Timer() as t:
        rows, checks = exact_min_distances(cfg, lengths, device)
    timings["exact_scan"] = t.seconds
    with Timer() as t:
        distinct, curve = count_distinct(tables, variants, lengths, cfg, device)
    timings["distinct_rows"] = t.seconds
    with Timer() as t:
        positions = error_positions(cfg["max_log2_len"], cfg["error_samples_per_octave"], g)
        errors = angle_and_encoding_errors(tables, variants, positions, device)
    timings["errors"] = t.seconds
    with Timer() as t:
        decode = decode_accuracy(tables, variants, lengths, cfg, g, device)
    timings["decode"] = t.seconds
    result = {
        "lengths": lengths,
        "tables": {k: {"d": t.d, "base": t.base} for k, t in tables.items()},
        "variants": [v.name for v in variants],
        "min_distance": rows,
        "checks": checks,
        "far": [r for r in rows if r["d"] == cfg["d_model"]],
        "distinct": distinct,
        "distinct_curve": curve,
        "errors": errors,
        "decode": decode,
        "learned": learned_out_of_range(cfg["d_model"], cfg["learned_max_len"]),
        "timings": timings,
    }
    result["claims"] = make_claims(result, cfg)
    return result


def _styles(variants: list[str]) -> dict[str, dict]:
    """One colour per stored dtype, one line style per way of computing."""
    colors = {
        "bfloat16": "tab:red",
        "float16": "tab:orange",
        "float32": "tab:blue",
        "float64": "tab:green",
    }
    out = {}
    for name in variants:
        store = name.split()[1] if name.startswith("naive") else name.split()[0]
        dashes = "-" if name.startswith("naive") else ("--" if "float32 angles" in name else ":")
        out[name] = {"color": colors.get(store, "black"), "ls": dashes}
    return out


def plot(result: dict, cfg: dict):
    """Four figures: exact min distance, distinct rows, errors versus position, decoding."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bases = cfg["exact"]["bases"]
    fig_min, axes = plt.subplots(
        1,
        len(bases),
        figsize=(5.2 * len(bases), 3.8),
        sharey=True,
        layout="constrained",
        squeeze=False,
    )
    cmap = plt.get_cmap("viridis")
    ds = cfg["exact"]["d_values"]
    for ax, base in zip(axes[0], bases):
        for j, d in enumerate(ds):
            rows = _find(result["min_distance"], d=d, base=base)
            ax.plot(
                [r["length"] for r in rows],
                [r["min_distance"] for r in rows],
                marker="o",
                ms=3,
                color=cmap(j / max(1, len(ds) - 1)),
                label=f"d = {d}",
            )
        ax.set(xscale="log", yscale="log", xlabel="L (positions 0..L−1)", title=f"base {base:g}")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("min ‖PE(p) − PE(q)‖ over p ≠ q < L")
    axes[0][-1].legend(fontsize=7)

    styles = _styles(result["variants"])
    fig_distinct, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True, layout="constrained")
    for ax, kind in zip(axes, TABLES):
        for name in result["variants"]:
            rows = _find(result["distinct_curve"], table=kind, variant=name)
            ax.plot(
                [r["length"] for r in rows],
                [r["distinct_fraction"] for r in rows],
                label=name,
                **styles[name],
            )
        t = result["tables"][kind]
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="L",
            title=f"{kind} (d = {t['d']}, base {t['base']:g})",
        )
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("distinct encodings / L")
    fig_distinct.legend(*axes[0].get_legend_handles_labels(), fontsize=7, loc="outside right upper")

    def drawable(errors: list[float], floor: float) -> list[float]:
        """Log axes: exact zeros at ``floor``, non-finite errors left out (NaN)."""
        return [max(e, floor) if e is not None and math.isfinite(e) else math.nan for e in errors]

    fig_err, axes = plt.subplots(1, 3, figsize=(15, 3.8), layout="constrained")
    angle_names = sorted({r["variant"] for r in result["errors"] if r["quantity"] == "angle"})
    angle_colors = {
        "bfloat16 angles": "tab:red",
        "float16 angles": "tab:orange",
        "float32 angles": "tab:blue",
    }
    for kind, ls in zip(TABLES, ("-", "--")):
        for name in angle_names:
            rows = _find(result["errors"], table=kind, quantity="angle", variant=name)
            axes[0].plot(
                [r["position"] for r in rows],
                drawable([r["max_abs_error"] for r in rows], ERROR_FLOOR),
                ls=ls,
                lw=1,
                color=angle_colors.get(name, "black"),
                label=f"{kind}, {name}",
            )
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="position p",
        ylabel="max_i |θ̂_i − θ_i| (rad)",
        title="angle error (naive dtypes)",
    )
    axes[0].legend(fontsize=6)
    for ax, kind in zip(axes[1:], TABLES):
        for name in result["variants"]:
            rows = _find(result["errors"], table=kind, quantity="encoding", variant=name)
            ax.plot(
                [r["position"] for r in rows],
                drawable([r["max_abs_error"] for r in rows], ERROR_FLOOR),
                lw=1,
                label=name,
                **styles[name],
            )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="position p",
            ylabel="max |row − exact row|",
            title=f"{kind} encoding error",
        )
    axes[2].legend(fontsize=6)
    for ax in axes:
        ax.grid(alpha=0.3, which="both")

    fig_decode, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True, layout="constrained")
    for ax, kind in zip(axes, TABLES):
        for name in result["variants"]:
            rows = _find(result["decode"], table=kind, variant=name)
            ax.plot(
                [r["length"] for r in rows],
                [r["accuracy"] for r in rows],
                marker=".",
                label=name,
                **styles[name],
            )
        ax.set(xscale="log", xlabel="L", title=kind, ylim=(-0.03, 1.03))
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("decoded to itself (fraction)")
    fig_decode.legend(*axes[0].get_legend_handles_labels(), fontsize=7, loc="outside right upper")
    return fig_min, fig_distinct, fig_err, fig_decode


def tables(result: dict, cfg: dict, csv: dict[str, str]) -> list[dict]:
    """The report's tables; the CSVs hold every length, position and sample."""
    n = result["lengths"][-1]
    far = {(r["base"], r["length"]): r for r in result["far"]}
    minimum = [r for r in result["min_distance"] if r["length"] == n]
    checks = {(c["d"], c["base"]): c for c in result["checks"]}
    errs: dict[tuple, float] = {}
    for r in result["errors"]:
        if r["quantity"] == "encoding":
            key = (r["table"], r["variant"])
            errs[key] = max(errs.get(key, 0.0), r["max_abs_error"])
    acc = {(r["table"], r["variant"]): r["accuracy"] for r in result["decode"] if r["length"] == n}
    learned = result["learned"]
    return [
        {
            "id": "min_distance",
            "title": f"Exact minimum distance between the sinusoidal encodings of two positions "
            f"below L = {n}, the offset where it occurs, the distance of neighbours, and the "
            "brute-force check over all pairs at the check length.",
            "csv": csv["min_distance"],
            "columns": [
                "d",
                "base",
                "min distance",
                "at offset",
                "adjacent distance",
                "check L",
                "scan vs brute force (rel.)",
            ],
            "rows": [
                [
                    r["d"],
                    r["base"],
                    r["min_distance"],
                    r["argmin_offset"],
                    r["adjacent_distance"],
                    checks[(r["d"], r["base"])]["length"],
                    checks[(r["d"], r["base"])]["relative_difference"],
                ]
                for r in minimum
            ],
        },
        {
            "id": "far_pairs",
            "title": f"d = {cfg['d_model']}: the closest pair among positions at least 2 apart, "
            "against the distance of neighbours.",
            "csv": csv["min_distance"],
            "columns": ["base", "L", "min distance (offset ≥ 2)", "at offset", "ratio to adjacent"],
            "rows": [
                [b, length, r["far_min_distance"], r["far_argmin_offset"], r["far_to_adjacent"]]
                for (b, length), r in sorted(far.items())
                if length
                in (result["lengths"][1], result["lengths"][len(result["lengths"]) // 2], n)
            ],
        },
        {
            "id": "floating_point",
            "title": f"L = {n} positions in floating point: distinct rows (exact count), the first "
            "position repeating an earlier one (and which), the first non-finite row, the "
            "largest error against float64 (—: non-finite), and the decoding accuracy at L "
            "(−1: none).",
            "csv": csv["distinct"],
            "columns": [
                "table",
                "variant",
                "distinct",
                "fraction",
                "first repeat",
                "repeats",
                "first non-finite",
                "non-finite rows",
                "max error",
                "decoded",
            ],
            "rows": [
                [
                    s["table"],
                    s["variant"],
                    s["distinct"],
                    s["distinct_fraction"],
                    s["first_repeat"],
                    s["first_repeat_of"],
                    s["first_nonfinite"],
                    s["nonfinite_rows"],
                    errs.get((s["table"], s["variant"])),
                    acc.get((s["table"], s["variant"])),
                ]
                for s in result["distinct"]
            ],
        },
        {
            "id": "learned",
            "title": "The registry's learned table asked for one position past its last row.",
            "csv": None,
            "columns": ["L_max", "rows 0..L_max−1", "position L_max raises", "message"],
            "rows": [
                [
                    learned["max_len"],
                    "x".join(map(str, learned["in_range_shape"])),
                    learned["error"] or "nothing",
                    learned["message"] or "—",
                ]
            ],
        },
    ]


def main(snakemake) -> None:
    log = setup(snakemake, SECTION)
    p, out = snakemake.params, snakemake.output
    device = resolve_device(p.device)
    log.info("device %s", device)
    with Timer() as timer:
        result = compute(p.cfg, p.seed, dict(p.encoding), device)
    log.info("computed in %.1f s: %s", timer.seconds, result["timings"])
    write_csv(out.min_distance_csv, result["min_distance"])
    write_csv(out.distinct_csv, result["distinct"] + result["distinct_curve"])
    write_csv(out.errors_csv, result["errors"])
    write_csv(out.decode_csv, result["decode"])
    figs = plot(result, p.cfg)
    names = ("min_distance", "distinct", "errors", "decode")
    for fig, name in zip(figs, names):
        save_figure(fig, out[f"{name}_png"], out[f"{name}_svg"])
    cfg, n = p.cfg, result["lengths"][-1]
    sin, rope = result["tables"]["sinusoidal"], result["tables"]["rope"]
    captions = {
        "min_distance": f"Exact minimum distance between the sinusoidal encodings of two "
        f"positions below L, from the O(L·d) offset scan, for d in {cfg['exact']['d_values']} "
        "and each base. Flat lines: the closest pair is a pair of neighbours; drops: two "
        "distant positions come close (near-collisions).",
        "distinct": f"Distinct encodings among positions 0..L−1 as a fraction of L (exact count), "
        f"for the sinusoidal table (d = {sin['d']}) and RoPE's cos/sin table (head width "
        f"{rope['d']}). Solid: naive (positions and angles in the dtype); dashed: float32 angles, "
        "cast at the end; dotted: float64 angles, cast at the end.",
        "errors": f"Left: largest angle error against float64 at each sampled position, for "
        f"angles computed in each dtype (sinusoidal solid, RoPE dashed); "
        f"{cfg['error_samples_per_octave']} random positions per octave. Middle and right: "
        "largest error of the encoding itself, per way of computing (line styles as in the "
        f"distinct-count figure). Exact zeros are drawn at {ERROR_FLOOR:g}; non-finite errors "
        "(float16 positions past its largest value) are left out.",
        "decode": f"Fraction of {cfg['decode_samples']} random positions below L whose encoding, "
        "computed each way, has its own exact (float64) encoding as nearest neighbour among the "
        "first L.",
    }
    figures = [
        {
            "id": name,
            "png": out[f"{name}_png"],
            "svg": out[f"{name}_svg"],
            "caption": captions[name],
        }
        for name in names
    ]
    csv = {"min_distance": out.min_distance_csv, "distinct": out.distinct_csv}
    lengths = result["lengths"]
    metrics = {
        "device": device_name(device),
        "max_len": n,
        "lengths": [lengths[0], n],
        "d_model": cfg["d_model"],
        "rope_head_dim": cfg["rope_head_dim"],
        "check_len": cfg["exact"]["check_len"],
        "table_bases": {k: v["base"] for k, v in result["tables"].items()},
        "variants": result["variants"],
        "significand_bits": {
            dt: significand_bits(dtype_from_name(dt)) for dt in ("bfloat16", "float16", "float32")
        },
        "fp16_max": int(torch.finfo(torch.float16).max),
        "neighbours_closest_from_d": neighbours_closest_from(result, cfg),
        "fp32_angle_error": max(
            _find(result["errors"], table="sinusoidal", quantity="angle", variant="float32 angles")
            or [{"max_abs_error": None, "position": None}],
            key=lambda r: r["max_abs_error"] or 0.0,
        ),
        "learned": result["learned"],
        "checks": result["checks"],
        "distinct": result["distinct"],
        "figures": figures,
        "tables": tables(result, cfg, csv),
    }
    write_section(out, metrics, result["claims"], log)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
