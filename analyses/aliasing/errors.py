"""Floating point, how far it is off: the angle and encoding error of each variant against
float64 as a function of position, and the slope of float32's angle error."""

import math

import numpy as np
import torch
from torch import Tensor

from posenc.device import dtype_from_name

from .rows import _find
from .tables import AngleTable, Variant


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
