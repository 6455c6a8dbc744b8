"""What the report shows beside a claim's verdict, generated from its ledger entry and the
bibliography, never typed: the scale it was measured at set beside the scale of each paper it
cites, the entries it set aside (not judged) and why, and the level each of its judgements was
made at when several decided it together. And the ledger-wide counts the claims section's
paragraph on intervals quotes."""

from __future__ import annotations

from typing import Any

from posenc import references
from posenc.claims import is_interval
from posenc.report.filters import plural
from posenc.report.findings import undecided_group

# How a scope's task is named where the seeds are counted.
TASK_WORDS = {"lm": "language model", "passkey": "passkey model"}


def parameters_text(n: int | list[int]) -> str:
    """A parameter count as papers write it: 247M, 1.3B; an exact count below a million with
    thousands separators (106,688); a range as ``125M–1.3B``."""
    if isinstance(n, list):
        return "–".join(parameters_text(x) for x in n)
    for size, suffix in ((10**9, "B"), (10**6, "M")):
        if n >= size:
            return f"{n / size:.3g}{suffix}"
    return f"{n:,}"


def length_text(n: int) -> str:
    """A length in tokens as papers write it: a whole number of millions as 10M, a multiple of
    1024 from 16K up as 128K (2**17), anything else as the number itself."""
    if n >= 10**6 and n % 10**6 == 0:
        return f"{n // 10**6}M"
    if n >= 16 * 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return f"{n:,}" if n >= 10000 else str(n)


def scale_text(scale: dict[str, Any]) -> str | None:
    """A scope (the ledger's) or a paper's scale block as one phrase: ``106,688 parameters,
    2 layers, 4 heads × 16, L_train 128, 3 seeds``; None when it states none of them."""
    parts = []
    if scale.get("parameters"):
        parts.append(f"{parameters_text(scale['parameters'])} parameters")
    if scale.get("layers"):
        parts.append(plural(scale["layers"], "layer"))
    if scale.get("heads"):
        width = f" × {scale['head_width']}" if scale.get("head_width") else ""
        parts.append(f"{plural(scale['heads'], 'head')}{width}")
    if scale.get("train_len"):
        parts.append(f"L_train {length_text(scale['train_len'])}")
    if scale.get("extended_to"):
        parts.append(f"extended to {length_text(scale['extended_to'])}")
    if scale.get("seeds"):
        parts.append(plural(scale["seeds"], "seed"))
    return ", ".join(parts) or None


def scales(claim: dict[str, Any], numbers: dict[str, int]) -> dict[str, Any] | None:
    """The scale ``claim`` was measured at (its ledger ``scope``) and, beside it, each cited
    paper's (its bibliography ``scale``), numbered as the references list numbers them, which
    gives each scale's source. A paper whose sources state none of the numbers says why here
    (its note). None for a claim without a scope: no trained models stand behind it."""
    scope = claim.get("scope")
    if not scope:
        return None
    papers = []
    for key in claim.get("references", []):
        scale = references.scale(key)
        if scale is None:
            continue
        text = scale_text(scale)
        papers.append(
            {
                "label": references.label(key),
                "number": numbers.get(key),
                "text": text or "scale not stated",
                "note": None if text else scale.get("note"),
            }
        )
    return {"measured": scale_text(scope), "papers": papers}


def level_text(level: float) -> str:
    """A confidence level in per cent, to one decimal unless that would read 100 %:
    0.99583 -> ``99.6 %``, 0.99 -> ``99 %``, 0.9995 -> ``99.95 %``."""
    percent = 100 * level
    for digits in (1, 2, 3, 4):
        text = f"{percent:.{digits}f}"
        if float(text) < 100:
            break
    return text.rstrip("0").rstrip(".") + " %"


def family_text(family: dict[str, Any] | None) -> str | None:
    """``a fail needs one of m at 99.6 %``, for a claim m interval judgements decided
    together (a pass needs each at its own level)."""
    if not family:
        return None
    at = f" at {level_text(family['level'])}" if family.get("level") is not None else ""
    return f"a fail needs one of {family['entries']} wholly past it{at}"


def not_judged_text(claim: dict[str, Any]) -> dict[str, str | None] | None:
    """The entries a claim set aside, and why (its preconditions failed for them); the why
    left out where the claim's reason already says it (it is inconclusive for that alone)."""
    found = claim.get("not_judged")
    if not found:
        return None
    why = found.get("why") or None
    return {
        "entries": ", ".join(map(str, found["entries"])),
        "why": None if why == claim.get("reason") else why,
    }


def annotate(claim: dict[str, Any], numbers: dict[str, int]) -> dict[str, Any]:
    """Everything the claims table, the sections' claim boxes and the findings show of a claim
    beside its verdict."""
    return {
        "scales": scales(claim, numbers),
        "not_judged": not_judged_text(claim),
        "family": family_text(claim.get("family")),
    }


def _nominal_levels(ledger: list[dict[str, Any]]) -> list[float]:
    """The level each interval was made at before any family-wise widening: a family's
    level undone (1 - m (1 - level)), or the level of an interval no family widened."""
    found = set()
    for c in ledger:
        family = c.get("family")
        if family and family.get("level") is not None:
            found.add(round(1 - family["entries"] * (1 - family["level"]), 6))
        elif not family:
            found |= {round(v["level"], 6) for v in _intervals(c.get("measured")) if v.get("level")}
    return sorted(found)


def _intervals(value: Any) -> list[dict]:
    if is_interval(value):
        return [value]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _intervals(v)]
    if isinstance(value, list):
        return [i for v in value for i in _intervals(v)]
    return []


def interval_summary(ledger: list[dict[str, Any]]) -> dict[str, Any]:
    """What the claims section says of its intervals, counted from the ledger: the level they
    are made at, the seeds behind them per task, how many claims judged several entries
    together, how many set entries aside, and why the inconclusive ones are so: for want of
    evidence (an interval straddles its threshold), for want of learning (too few entries'
    models beat a trigram, or learned the passkey task), or for another precondition."""
    seeds = sorted(
        {
            (c["scope"].get("task", ""), c["scope"]["seeds"])
            for c in ledger
            if c.get("scope") and c["scope"].get("seeds")
        }
    )
    why = [undecided_group(c.get("reason")) for c in ledger if c["verdict"] == "inconclusive"]
    levels = _nominal_levels(ledger)
    return {
        "shown": bool(seeds or levels),
        "levels": " and ".join(level_text(x) for x in levels) or None,
        "seeds": " and ".join(
            f"{plural(n, 'seed')} of each {TASK_WORDS.get(task, task or 'model')}"
            for task, n in seeds
        )
        or None,
        "fewest_seeds": min((n for _, n in seeds), default=None),
        "family_claims": sum(bool(c.get("family")) for c in ledger),
        "set_aside_claims": sum(bool(c.get("not_judged")) for c in ledger),
        "inconclusive": {
            "evidence": why.count("straddles"),
            "learning": why.count("not-learned"),
            "precondition": why.count("precondition"),
            "other": why.count("other"),
        },
    }
