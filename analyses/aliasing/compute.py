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

The tables measured are in tables.py, the exact scan in exact.py, distinct rows and decoding in
distinct.py, the errors in errors.py, what the claims read in evidence.py; this module gathers
them. The modules measure; the claims (spec.py) judge. The yes/no facts among the evidence compare
a measurement with what IEEE arithmetic or the table's own size fixes (2^t + 1, the first
integer float16 rounds to infinity, the rounding bound eps·θ, L_max), never with a threshold
chosen for the data (the bound's factor, thresholds.angle_max_over_bound, is 1: the bound
itself).
"""

import torch

from posenc.analysis import Context, Measurements
from posenc.device import dtype_from_name
from posenc.numerics import error_positions
from posenc.rounding import first_overflowing_integer, significand_bits
from posenc.workflow import Timer

from .distinct import count_distinct, decode_accuracy
from .errors import angle_and_encoding_errors, fp32_angle_fits
from .evidence import FLOAT16, evidence
from .exact import exact_min_distances, lengths_grid, neighbours_closest_from
from .rows import _find as _find  # present.py reads it from here
from .tables import Variant, angle_tables, learned_tables, not_measured, spectra


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
            "spectra": spectra(tables),
            "rope_head_dim": cfg["rope_head_dim"],
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
            "not_measured": not_measured(ctx.encodings),
        },
        timing=timing,
    )
