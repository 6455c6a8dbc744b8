"""Exact arithmetic: the closest pair of sinusoidal encodings below every L, by the offset scan
(O(L·d), :func:`posenc.numerics.min_distance_scan`), checked against all pairs at one L."""

import torch

from posenc.encodings import sinusoidal_table
from posenc.numerics import min_distance_scan, pairwise_min_distance

from .rows import _find


def lengths_grid(cfg: dict) -> list[int]:
    return [2**e for e in range(cfg["min_log2_len"], cfg["max_log2_len"] + 1)]


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
