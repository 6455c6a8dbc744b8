"""The aliasing analysis' evidence: the named values the claims read, from its rows."""

from typing import Any

import torch

from posenc.device import dtype_from_name
from posenc.rounding import first_overflowing_integer, significand_bits

from .rows import _find

FLOAT16 = "float16"  # the dtype whose overflow the fp16 claim is about


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
        "fp32_angle_within_bound": {
            e: f["max_error_over_bound"] <= cfg["thresholds"]["angle_max_over_bound"]
            for e, f in fits.items()
        },
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
