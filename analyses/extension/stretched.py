"""The zero-shot stretches aggregated (``stretch.py`` scores them): per encoding, arm and
length, the mean bits/char with its interval, each arm's difference from the plain model, and
what the stretch claims read. The stretch evaluations score the windows every extension
evaluation scores, and one design (``posenc.estimates.Design``) keys every seed's and
fragment's contribution alike wherever it is used, so LongRoPE is paired with the zero-shot PI
rows as well."""

from __future__ import annotations

from typing import Any

from .scores import PLAIN, Scores

# The arms' names that the stretch (stretch.py) and the aggregate share. Llama 4's schedule out
# of Llama 4's setting, every layer with L0 = L_train, is its own arm: "Llama-4-shaped".
LLAMA4_SHAPED = "llama4_shaped"
# The suffix of a contrast arm: the temperature on the query alone, leaving the bias unscaled.
QUERY_ONLY = "_q_only"


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
    """(cells, evidence): ``scores`` holds the stretch records. ``main`` (the zero-shot
    records) and ``rope_encodings`` are unused since LongRoPE's transplant decides no claim;
    kept so that the aggregate's call reads as before."""
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

    ev: dict[str, Any] = {
        "llama4_beta": cfg["stretch"]["llama4_beta"],
        "longrope_profile": cfg["stretch"]["longrope_profile"],
    }
    for arm in ("logn", "llama4", "longrope"):  # each arm's gain where it ran
        # Llama 4's schedule: as Llama 4 applies it where it can, Llama-4-shaped elsewhere;
        # one of the two per encoding (stretch.py), judged alike.
        named = (arm, LLAMA4_SHAPED) if arm == "llama4" else (arm,)
        ev[f"{arm}_long_gain"] = {
            e: g for e, order in arms.items() for a in named if a in order and (g := gain(e, a))
        }
    # Each query-only contrast (additive-bias encodings): its bits/char minus its temperature's
    # on the whole logit at the longest length, positive where scaling q alone costs more.
    contrasts = [(e, a) for e, order in arms.items() for a in order if a.endswith(QUERY_ONLY)]
    several = len({a for _, a in contrasts}) > 1
    ev["query_only_deficit"] = {
        (f"{e} {whole}" if several else e): scores.ci(q - w)
        for e, a in contrasts
        if (whole := a.removesuffix(QUERY_ONLY)) in arms[e]
        and (q := zs(e, a, longest))
        and (w := zs(e, whole, longest))
    }
    return cells, ev
