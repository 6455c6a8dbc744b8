"""The conformance analysis' evidence (what the claims read), and the dynamic NTK ratchet the
section shows, from its rows."""

from __future__ import annotations

from typing import Any

from posenc.analyses.conformance.traps import TRAPS


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


def ratchet(rows: list[dict], lengths: list[int], rtol: float) -> list[dict]:
    """Where a dynamic module called at ``lengths`` in order uses other frequencies than a
    fresh module at the same length (effective scales more than ``rtol`` apart, relative):
    the length, the longest before it, both scales."""
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
        if abs(r["effective_scale"] - fresh["effective_scale"]) > rtol * fresh["effective_scale"]:
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
