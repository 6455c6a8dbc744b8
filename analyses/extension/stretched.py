"""The zero-shot stretches aggregated (``stretch.py`` scores them): per encoding, arm and
length, the mean bits/char with its interval, each arm's difference from the plain model, and
what the stretch claims read. The stretch evaluations score the windows every extension
evaluation scores, and one design (``posenc.estimates.Design``) keys every seed's and
fragment's contribution alike wherever it is used, so LongRoPE is paired with the zero-shot PI
rows as well."""

from __future__ import annotations

from typing import Any

from .scores import PLAIN, Scores


def arms_in(records: list[dict]) -> dict[str, list[str]]:
    """Each stretched encoding's arms, in the order its evaluation ran them."""
    arms: dict[str, list[str]] = {}
    for ev in records:
        order = arms.setdefault(ev["encoding"], [])
        for r in ev["rows"]:
            if r["method"] not in order:
                order.append(r["method"])
    return arms


def stretch_measure(
    records: list[dict],
    scores: Scores,
    main: Scores,
    cfg: dict[str, Any],
    rope_encodings: list[str],
) -> tuple[list[dict], dict[str, Any]]:
    """(cells, evidence): ``scores`` holds the stretch records, ``main`` the zero-shot ones
    (PI's rows for LongRoPE's lead)."""
    multipliers = cfg["zero_shot"]["multipliers"]
    longest = max(multipliers)
    arms = arms_in(records)

    def key(arm: str, m: int) -> tuple[str, int]:  # a row's (method, scale)
        return arm, m if arm == "longrope" else 1

    def zs(e: str, arm: str, m: int):
        return scores.zs(e, *key(arm, m), m)

    cells = []
    for e, order in arms.items():
        for arm in order:
            for m in multipliers:
                here, plain = zs(e, arm, m), zs(e, PLAIN, m)
                cells.append(
                    {
                        "encoding": e,
                        "arm": arm,
                        "multiplier": m,
                        **(scores.ci(here) or {"defined": False}),
                        "vs_plain": scores.ci(here - plain) if here and plain else None,
                    }
                )

    def gain(e: str, arm: str):  # plain minus the arm at the longest length
        plain, here = zs(e, PLAIN, longest), zs(e, arm, longest)
        return scores.ci(plain - here) if plain and here else None

    low, high = cfg["thresholds"]["longrope_lead_multipliers"]
    rope = [e for e in rope_encodings if "longrope" in arms.get(e, [])]
    ev: dict[str, Any] = {
        "llama4_beta": cfg["stretch"]["llama4_beta"],
        "longrope_low": low,
        "longrope_high": high,
        "longrope_profile": cfg["stretch"]["longrope_profile"],
    }
    for arm in ("logn", "llama4", "longrope"):  # each arm's gain where it ran
        ev[f"{arm}_long_gain"] = {
            e: g for e, order in arms.items() if arm in order and (g := gain(e, arm))
        }
    ev["longrope_zero_shot_lead"] = {
        (f"{m}x" if len(rope) == 1 else f"{e} {m}x"): scores.ci(pi - longrope)
        for e in rope
        for m in multipliers
        if low <= m <= high
        and m > 1
        and (pi := main.zs(e, "pi", m, m))
        and (longrope := zs(e, "longrope", m))
    }
    return cells, ev
