"""What the report opens with, read from the merged ledger: the verdicts counted by claim kind,
and at most ten findings, ranked, each claim's opening sentence with the number that decides
it (its headline); the claims not testable here, grouped by why; the properties of artefacts
the study did not build, listed in full; and, from the sections' summaries, the models the
shared training recipe left short of the bar their claims set (failing to learn is an outcome
too)."""

from __future__ import annotations

import math
import re
from typing import Any

from posenc.claims import COMPARISONS, KINDS, VERDICTS, is_interval
from posenc.report.filters import first_sentence, fmt_measured, fmt_number, slug

# How the headline names each claim kind (posenc.claims.KINDS), in the order it lists them.
KIND_LABELS = {
    "identity": "Identities",
    "analytic": "Analytic properties",
    "software": "Software checks",
    "empirical": "Empirical claims",
}


def counts_by_kind(ledger: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Verdict counts per claim kind, in :data:`KINDS` order, for the kinds this ledger has:
    a verdict on an identity says something else than one on an empirical claim."""
    return [
        {
            "kind": kind,
            "label": KIND_LABELS[kind],
            "total": sum(c["kind"] == kind for c in ledger),
            **{v: sum(c["kind"] == kind and c["verdict"] == v for c in ledger) for v in VERDICTS},
        }
        for kind in KINDS
        if any(c["kind"] == kind for c in ledger)
    ]


# The comparisons as the ledger's expected text writes them (posenc.claims.COMPARISONS),
# longest first, each after a space: "weakest model's largest error for each > 0.0001".
_COMPARATOR = re.compile(
    " ("
    + "|".join(re.escape(s) for _, s in sorted(COMPARISONS.values(), key=lambda c: -len(c[1])))
    + ")"
)
# Toward failure, per comparison: the entry that decides a mapping of entries is the one
# nearest to failing it (the largest under a bound from above, the smallest under one from
# below). "=" and yes/no facts have no such entry.
_WORST = {"≤": max, "<": max, "within ±": max, "≥": min, ">": min, "beyond ±": min}
_WORST_WORD = {max: "highest", min: "lowest"}
# A quantity named longer than this is left to the claims table (its expected column).
_LABEL_CHARS = 80


def _entries(value: Any, name: str = "") -> list[tuple[str, Any]]:
    """A measured value as (entry, value) pairs: nested mappings name their entries by their
    keys joined with spaces; an interval or a list is one value."""
    if isinstance(value, dict) and not is_interval(value):
        return [e for k, v in value.items() for e in _entries(v, f"{name} {k}".strip())]
    return [(name, value)]


def _primary(claim: dict) -> tuple[str, Any, str]:
    """The quantity a claim's first check reads: its name, its measured value and the
    check's expected text. With several checks (or context beside them) the ledger's
    measured value maps each check's name to its value, in the checks' order; with one it is
    the value itself."""
    expected, measured = claim["expected"], claim["measured"]
    segments = expected.split("; ")
    # A claim that fails (or cannot be decided) is quoted by the first check that does: with
    # several checks, the first one may hold, and quoting it would say nothing of the verdict.
    index = _deciding_check(claim, len(segments))
    segment = segments[index]
    if isinstance(measured, dict) and measured and not is_interval(measured):
        name = list(measured)[index] if index < len(measured) else next(iter(measured))
        rest = segment.removeprefix(name).removeprefix(" for each")
        if rest != segment and (rest.startswith(":") or _COMPARATOR.match(rest)):
            return name, measured[name], segment
    found = _comparator(segment)
    name = segment[: found.start()] if found else segment.split(":")[0]
    return name.removesuffix(" for each"), measured, segment


def _deciding_check(claim: dict, n_segments: int) -> int:
    """The index of the first check whose outcomes include the claim's own verdict, for a
    fail or an inconclusive; 0 otherwise, or where the outcomes do not line up with the
    expected text's segments (one per check, in order)."""
    outcomes = claim.get("outcomes") or {}
    if claim.get("verdict") not in ("fail", "inconclusive") or len(outcomes) != n_segments:
        return 0
    for i, per_entry in enumerate(outcomes.values()):
        found = per_entry.values() if isinstance(per_entry, dict) else [per_entry]
        if claim["verdict"] in found:
            return i
    return 0


def _comparator(text: str) -> re.Match | None:
    """The comparison in an expected text: the first one, but an "=" only where there is no
    other (a scaled bound goes on "= 4.5e-13")."""
    found = list(_COMPARATOR.finditer(text))
    other = [m for m in found if m.group(1) != "="]
    return other[0] if other else (found[-1] if found else None)


def _position(value: Any, worst) -> float | None:
    """Where a value stands toward failure: an interval by its bound on the failing side."""
    if is_interval(value):
        value = value["high"] if worst is max else value["low"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def headline(claim: dict) -> dict[str, str | None]:
    """The number a finding quotes: the value of the claim's first check, reduced to the
    entry that decides it (the one nearest to failing, of many), and the threshold it is
    held to, both as text. Reads only the ledger entry."""
    name, value, segment = _primary(claim)
    found = _comparator(segment[len(name) :])
    op = found.group(1) if found else None
    threshold = segment[len(name) + found.start() + 1 :] if found else None
    # "within ±t of the printed values": the entries are not the differences it bounds.
    relative = threshold is not None and " of the " in threshold
    entries = _entries(value)
    # An angle is quoted as the rotation it amounts to, as the shipped properties are.
    show = angle_text if _RAD.search(name) else fmt_measured
    text = None
    if value is None or (isinstance(value, (dict, list)) and not value):
        pass  # nothing measured
    elif len(entries) == 1:
        entry, v = entries[0]
        shown = ("yes" if v else "no") if isinstance(v, bool) else show(v)
        text = f"{shown} for {entry}" if entry else shown
    elif all(isinstance(v, bool) for _, v in entries):
        yes = [e for e, v in entries if v]
        text = (
            f"yes for all {len(entries)}"
            if len(yes) == len(entries)
            else f"yes for {len(yes)} of {len(entries)} (no: "
            + ", ".join(e for e, v in entries if not v)
            + ")"
        )
    elif op in _WORST and not relative:
        worst = _WORST[op]
        placed = [(p, e, v) for e, v in entries if (p := _position(v, worst)) is not None]
        if placed:
            _, entry, v = worst(placed, key=lambda t: t[0])
            if len(placed) == len(entries) and all(e[2] == v for e in placed):
                text = f"{show(v)} for all {len(entries)}"
            else:
                word = _WORST_WORD[worst]
                text = f"{show(v)} for {entry}, the {word} of {len(entries)}"
    if text is None and len(entries) > 1:
        if len(entries) <= 4:
            text = "; ".join(f"{show(v)} for {e}" if e else show(v) for e, v in entries)
        else:
            numbers = [(p, e) for e, v in entries if (p := _position(v, max)) is not None]
            if numbers:
                (lo, lo_e), (hi, hi_e) = min(numbers), max(numbers)
                text = (
                    f"from {fmt_number(lo)} ({lo_e}) to {fmt_number(hi)} ({hi_e}), "
                    f"{len(entries)} values"
                )
    name = name.strip().rstrip(",")
    # "Measured measured behaviour": the reader's sentence already says measured.
    name = name.removeprefix("measured ")
    label = name if len(name) <= _LABEL_CHARS else None
    return {"label": label, "text": text, "threshold": threshold if text else None}


# Why a claim could not be decided, read from the reason posenc.claims generates. A
# precondition that names learning (a model below the interpolated trigram, seeds that learned
# the passkey task) means the models behind the claim never learned what it is about.
_LEARNING = ("learned the task", "interpolated trigram")


def undecided_group(reason: str | None) -> str:
    """Why an inconclusive claim was not decided, from its reason: "not-learned" (its models
    did not learn the task), "precondition" (another precondition), "straddles" (an interval
    straddles its threshold) or "other"."""
    reason = reason or ""
    if reason.startswith("not met:"):
        return "not-learned" if any(w in reason for w in _LEARNING) else "precondition"
    return "straddles" if "straddles the threshold" in reason else "other"


_SWITCH = re.compile(r"(?P<section>[\w-]+)\.(?P<flag>\w+) is set in the config")


def untested_group(reason: str | None, titles: dict[str, str]) -> tuple[str, str, bool]:
    """The group of an n/a claim, from its reason: its key, its heading, and whether each
    claim's own reason says more than the heading (it names what was missing)."""
    reason = reason or ""
    switch = _SWITCH.fullmatch(reason)
    if switch:
        section, flag = switch["section"], switch["flag"]
        title = titles.get(section, section)
        if flag == "smoke_test":
            heading = (
                f"The section “{title}” ran as a smoke test, too small a run for its "
                "claims to be judged"
            )
        else:
            heading = (
                f"The section “{title}” has its {flag.replace('_', ' ')} setting on, which "
                "leaves these claims untested"
            )
        return f"switch-{section}-{flag}", heading, False
    if reason.startswith("no ") and "not configured" in reason:
        return "absent", "What the claim measures is not in this run", True
    return f"other-{reason}", _sentence(reason) or "No reason was given", False


def _sentence(text: str | None) -> str | None:
    """A generated reason as a sentence of its own: capitalised, with a full stop."""
    if not text:
        return None
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def finding(claim: dict) -> dict[str, Any]:
    """One claim as the findings show it: the opening of its statement, its headline number,
    the reason it is undecided, and where its row and its evidence are."""
    return {
        "id": claim["id"],
        "kind": claim["kind"],
        "verdict": claim["verdict"],
        "statement": first_sentence(claim["statement"]),
        # The report's claims carry theirs (posenc.report.context); a bare ledger entry not.
        "headline": claim.get("headline") or headline(claim),
        "why": _sentence(claim.get("reason")),
        # Entries it set aside (their models did not beat a trigram, say): a verdict on the
        # rest, which the reader must see beside it.
        "set_aside": (claim.get("notes") or {}).get("not_judged"),
        "anchor": f"claim-{slug(claim['id'])}",
        "section_anchor": claim["section_anchor"],
        "section_number": claim["section_number"],
        "section_title": claim["section_title"],
    }


# The findings the report opens with: at most this many, ranked by :data:`RANK`; the rest are
# counted beneath them and read in the claims ledger.
TOP = 10


def rank(claim: dict) -> int | None:
    """Where a claim stands among the findings the report opens with, lower first: what fails
    of the empirical claims (what the study is for), then what the evidence could not decide,
    then other failures, then the empirical and analytic claims that hold. None: not a finding
    to open with (a check of the formulas or the code that holds, a claim not testable)."""
    verdict, kind = claim["verdict"], claim["kind"]
    if verdict == "fail":
        return 0 if kind == "empirical" else 2
    if verdict == "inconclusive":
        return 1
    if verdict == "pass" and kind in ("empirical", "analytic"):
        return 3 if kind == "empirical" else 4
    return None


# An angle error beyond π is one that went round: what it does to attention is what the
# wrapped angle does (its distance from the nearest full turn), with the unwrapped one beside.
_RAD = re.compile(r"\(rad\b")


def wrapped_angle(value: float) -> float:
    """``value`` radians as the rotation it amounts to, in [0, π]."""
    turn = math.fmod(abs(value), 2 * math.pi)
    return min(turn, 2 * math.pi - turn)


def angle_text(value: Any) -> str:
    """An angle in radians, wrapped to [0, π], with the unwrapped angle beside where they
    differ."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return fmt_measured(value)
    wrapped = wrapped_angle(value)
    text = f"{fmt_number(wrapped, 3)} rad"
    if abs(value) > math.pi:
        text += f" ({fmt_number(value, 3)} rad unwrapped)"
    return text


def property_finding(claim: dict) -> dict[str, Any]:
    """A property of an artefact outside the study (a shipped model's configuration) as the
    report lists it in full: the claim's opening sentence, its verdict, and every entry's
    value in its unit, angles wrapped (:func:`angle_text`), with the threshold."""
    name, value, segment = _primary(claim)
    found = _comparator(segment[len(name) :])
    threshold = segment[len(name) + found.start() + 1 :] if found else None
    angles = bool(_RAD.search(name))
    entries = [
        {"entry": entry, "text": angle_text(v) if angles else fmt_measured(v)}
        for entry, v in _entries(value)
    ]
    unit = " rad" if angles and threshold and "rad" not in threshold else ""
    name = name.strip().rstrip(",")
    return {
        **finding(claim),
        # What the numbers are, where the statement does not say it in as many words.
        "quantity": name[:1].upper() + name[1:] if name else None,
        "entries": entries,
        "threshold": f"{threshold}{unit}" if threshold else None,
    }


def findings(
    claims: list[dict[str, Any]],
    titles: dict[str, str],
    sections: list[dict[str, Any]] = (),
    config: dict[str, Any] | None = None,
    properties_of: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The report's opening, from the ledger alone: the study's verdicts counted (``study_*``);
    its findings, ranked (``top``), and the rest counted (``rest``); which models the shared
    recipe did not train to the bar its claims set (``shortfalls``, from the sections'
    summaries, see :func:`training_shortfalls`); what this run could not test, and why
    (``untested``); and the properties of what the study did not build (``properties``).

    ``claims`` are the report's claims (each with its section's number, title and anchor);
    ``titles`` maps section ids to titles, for the reasons that name a section; ``sections``
    are the loaded sections and ``config`` the run's config, whose training recipes the
    shortfalls quote. ``properties_of`` maps a section to what its claims are properties of,
    where that is not the encodings (``AnalysisSpec.properties_of``): its claims are listed
    apart, in full (``properties``), and neither open the findings nor count in ``rest``.

    ``top``: the first :data:`TOP` claims by :func:`rank`, in that order (by section within a
    rank); ``rest``: the study's other claims, counted by verdict."""
    properties_of = properties_of or {}
    study = [c for c in claims if c["section"] not in properties_of]
    ranked = sorted(
        (c for c in study if rank(c) is not None), key=lambda c: (rank(c), c["section_number"])
    )
    top = ranked[:TOP]
    shown = {c["id"] for c in top}
    rest = {v: sum(c["verdict"] == v and c["id"] not in shown for c in study) for v in VERDICTS}
    properties = [
        {
            "section": section,
            "of": what,
            "section_anchor": next((c["section_anchor"] for c in group), None),
            "counts": {v: sum(c["verdict"] == v for c in group) for v in VERDICTS},
            "total": len(group),
            "claims": [property_finding(c) for c in group],
        }
        for section, what in properties_of.items()
        if (group := [c for c in claims if c["section"] == section])
    ]

    untested: dict[str, dict] = {}
    for c in study:
        if c["verdict"] == "n/a":
            key, heading, own = untested_group(c.get("reason"), titles)
            group = untested.setdefault(
                key, {"key": key, "heading": heading, "show_reason": own, "claims": []}
            )
            group["claims"].append(finding(c))
    for group in untested.values():
        group["count"] = len(group["claims"])
    return {
        "top": [finding(c) for c in top],
        "top_count": len(top),
        "rest": rest,
        "rest_total": sum(rest.values()),
        "study_counts": {v: sum(c["verdict"] == v for c in study) for v in VERDICTS},
        "study_total": len(study),
        "study_counts_by_kind": counts_by_kind(study),
        "properties": properties,
        "shortfalls": training_shortfalls(sections, config or {}),
        "untested": list(untested.values()),
    }


def _recipe(steps: Any, train: dict[str, Any]) -> str | None:
    """A task's shared training recipe in words: steps, batch and learning rate, the training
    logs' step count first (what ran), the config's where the summary has none."""
    steps = steps if steps is not None else train.get("steps")
    parts = []
    if steps is not None:
        parts.append(f"{fmt_number(steps)} steps")
    if train.get("batch_size") is not None:
        parts.append(f"batch {fmt_number(train['batch_size'])}")
    if train.get("lr") is not None:
        parts.append(f"learning rate {fmt_number(train['lr'])}")
    return ", ".join(parts) or None


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def training_shortfalls(sections: list[dict[str, Any]], config: dict[str, Any]) -> list[dict]:
    """A finding per encoding whose models the shared recipe did not train to the bar its
    claims set: language models that did not beat a trigram (a section summary's
    ``lm_status``: per model its bits/char at L_train, the interpolated trigram's and whether
    it beat it) and passkey models of which fewer seeds learned the task at N than the claims
    need (``passkey_learned_seeds`` against ``passkey_min_learners``). Not learning is an
    outcome of the recipe: the claims set these entries aside rather than judge them. Every
    number is read from the summary or the config, with the recipe each task trained under."""
    found = []
    for sec in sections:
        summary = sec["m"].get("summary", {})
        own = config.get(sec["id"]) or {}
        steps = summary.get("training_steps") or {}
        seeds = summary.get("seeds") or {}
        place = {
            "section_anchor": sec["anchor"],
            "section_number": sec["number"],
            "section_title": sec["title"],
            "table_anchor": (sec.get("tables", {}).get("learned") or {}).get("anchor"),
        }
        margin = (own.get("thresholds") or {}).get("lm_learned_margin_bits")
        by_encoding: dict[str, list[dict]] = {}
        for row in summary.get("lm_status") or []:
            by_encoding.setdefault(row["encoding"], []).append(row)
        for encoding, rows in by_encoding.items():
            short = [r for r in rows if r.get("learned") is False]
            if not short:
                continue
            bits = _and([f"{fmt_number(r['bits'])} (seed {r['seed']})" for r in short])
            reference = short[0].get("reference")
            text = (
                f"its language models did not beat a trigram under the shared recipe in "
                f"{len(short)} of {len(rows)} seeds: bits/char at L_train {bits}, against the "
                f"interpolated trigram's {fmt_number(reference)}"
            )
            if margin:
                text += f" (beating it takes more than {fmt_number(margin)} bits/char below it)"
            recipe = _recipe(steps.get("lm"), (own.get("lm") or {}).get("train") or {})
            bar = f"below the interpolated trigram's {fmt_number(reference)}"
            if margin:
                bar += f" by more than {fmt_number(margin)}"
            found.append(
                {
                    "task": "lm",
                    "encoding": encoding,
                    "text": text,
                    "recipe": recipe,
                    # The same, as a table row: how many seeds, what they measured, the bar.
                    "short": f"{len(short)} of {len(rows)}",
                    "measured": f"{bits} bits/char at L_train",
                    "bar": bar,
                    **place,
                }
            )
        need = summary.get("passkey_min_learners")
        for encoding, learners in (summary.get("passkey_learned_seeds") or {}).items():
            if need is None or len(learners) >= need:
                continue
            total = len(seeds.get("passkey") or []) or None
            of = f" of {total}" if total else ""
            at = summary.get("passkey_learned_at")
            bar = f" (exact match at least {fmt_number(at)})" if at is not None else ""
            text = (
                f"its passkey models learned the task at N{bar} in {len(learners)}{of} seeds, "
                f"fewer than the {need} its claims need"
            )
            recipe = _recipe(steps.get("passkey"), (own.get("passkey") or {}).get("train") or {})
            found.append(
                {
                    "task": "passkey",
                    "encoding": encoding,
                    "text": text,
                    "recipe": recipe,
                    "short": f"{total - len(learners)} of {total}" if total else "—",
                    "measured": f"learned at N in {len(learners)}{of} seeds",
                    "bar": f"learned at N{bar} in {need} seeds",
                    **place,
                }
            )
    return found
