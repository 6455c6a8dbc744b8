"""The one evaluator that turns claims (:mod:`posenc.claim_spec`) and a run's evidence into the
ledger (:mod:`posenc.ledger`). :func:`evaluate` renders both the "expected" text and the verdict
from the same check, so each threshold is written once, in the config, and verdict logic lives
nowhere else; how one check's evidence is judged is :mod:`posenc.verdicts`. Torch-free.

Evidence may be an interval ``{"estimate", "low", "high"}`` (see
:func:`posenc.verdicts.interval`): a check on it passes when the whole interval does, fails when
the whole interval fails, and is ``inconclusive`` when the interval straddles the threshold: the
evidence cannot decide it, and a verdict never rests on a point estimate. A claim fails when any
of its judged entries fails, is inconclusive when none fails but one is inconclusive (or too few
are judged), and passes when all pass; an inconclusive claim's reason names the entries, their
intervals and the bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from string import Formatter
from typing import Any

from posenc.claim_spec import Check, Claim, ClaimError
from posenc.ledger import NOT_JUDGED
from posenc.verdicts import (
    MISSING,
    adjusted,
    as_text,
    bound_of,
    combine,
    entry_verdicts,
    expected,
    interval_count,
    is_interval,
    judge,
    lookup,
    minus,
    reference_of,
    shortfalls,
    straddling,
)


class _Facts(dict):
    def __missing__(self, key):
        return "none configured"


def _fill(statement: str, evidence: Mapping[str, Any]) -> str:
    """``statement`` with the evidence it names in braces written out; a dotted name reads
    into a mapping (``{passkey_learned_of.alibi}``)."""
    fields = {f for _, f, _, _ in Formatter().parse(statement) if f}
    # A dotted name becomes one key, so that format_map does not read it as an attribute.
    for name in sorted(fields, key=len, reverse=True):
        if "." in name:
            statement = statement.replace("{" + name, "{" + name.replace(".", "__"))
    found = {}
    for name in fields:
        value = lookup(evidence, name)
        if value is not MISSING or name in evidence:
            found[name.replace(".", "__")] = as_text(evidence[name] if name in evidence else value)
    return statement.format_map(_Facts(found))


def _entries(value: Any) -> list[tuple[str | None, Any]]:
    """The entries a check judges one by one: a mapping's top-level items (an encoding each,
    say), else the value as one entry."""
    if isinstance(value, Mapping) and not is_interval(value):
        return [(str(k), v) for k, v in value.items()]
    return [(None, value)]


@dataclass(frozen=True)
class _Precondition:
    """A precondition as judged: its verdict per key (``{encoding: verdict}`` for a mapping,
    or the last part of a dotted path for a number, ``lm_learned_margin.rope`` -> rope), and
    what a reader is told of it when it does not hold."""

    verdicts: dict[str | None, str]
    mapping: bool
    text: str

    def covers(self, identifiers: set[str], claim_wide: bool) -> list[str]:
        """The verdicts of this precondition that bear on an entry named by
        ``identifiers``: its keys among them; a number without a key bears on every entry; a
        mapping none of whose keys names the entry bears on it as a whole (an entry keyed
        otherwise, by length say, reads every model it covers), and so does a precondition
        whose keys name no entry of the claim at all (``claim_wide``)."""
        if None in self.verdicts or claim_wide:
            return [combine(list(self.verdicts.values()))]
        named = [v for k, v in self.verdicts.items() if k in identifiers]
        if named or not self.mapping:
            return named
        return [combine(list(self.verdicts.values()))]


def _identifiers(check: Check, key: str | None) -> set[str]:
    """What names an entry: the parts of its check's evidence path and its own key (``rope``
    for ``rope 2x``)."""
    names = set(check.evidence.split("."))
    if key is not None:
        names |= {key, key.split(" ")[0]}
    return names


def _precondition(
    check: Check, value: Any, bound: Any, thresholds: Mapping[str, Any], raw: Any, evidence
) -> _Precondition:
    per_key = entry_verdicts(check, value, None, bound)
    if per_key is None:
        parts = check.evidence.split(".")
        per_key = {parts[-1] if len(parts) > 1 else None: judge(check, value, bound)}
    text = (
        f"not met: {expected(check, thresholds, raw, evidence)}; measured "
        f"{', '.join(shortfalls(check, value, bound))}"
    )
    return _Precondition(per_key, isinstance(value, Mapping) and not is_interval(value), text)


def _judged_value(check: Check, value: Any, evidence, thresholds) -> Any:
    return minus(value, reference_of(check, evidence, thresholds)) if check.of else value


def evaluate(
    claims: tuple[Claim, ...] | list[Claim],
    evidence: Mapping[str, Any],
    cfg: Mapping[str, Any],
    section: str,
) -> list[dict[str, Any]]:
    """The ledger of ``claims`` on this run's ``evidence``, with the analysis' config ``cfg``
    (its ``thresholds`` decide the verdicts).

    Each check's evidence is judged entry by entry (an encoding's, say). An entry whose
    preconditions do not all hold is *not judged* (its models did not learn the task, say),
    shown as such with why; the claim is decided on the entries that are judged, and is
    inconclusive only when fewer than ``min_judged`` are. Adding an encoding whose models
    did not learn never changes the verdict of a claim whose entries are keyed by encoding
    (or name it in their evidence path); where they are keyed otherwise (by length, say), an
    unmet precondition sets every entry aside, as the entries cannot say which models they
    read. With m interval entries judged, a fail is judged at the family-wise level
    (Bonferroni, :func:`posenc.verdicts.adjusted`), so that a true claim fails with
    probability at most 1 - level; a pass needs every entry to pass at its own level, which
    bounds a false pass alike without adjustment."""
    thresholds = cfg.get("thresholds", {})
    ledger = []
    for claim in claims:
        names = [("threshold", c.threshold) for c in (*claim.checks, *claim.requires)]
        for what, key in (*names, ("min_judged", claim.min_judged)):
            if key is not None and key not in thresholds:
                raise ClaimError(
                    f"claim {claim.id}: {what} {key!r} is not in the config's "
                    f"{section}.thresholds ({', '.join(thresholds) or 'none'})"
                )
        ledger.append(_evaluate_one(claim, evidence, cfg, section, thresholds))
    return ledger


def _evaluate_one(claim, evidence, cfg, section, thresholds) -> dict[str, Any]:
    values = [lookup(evidence, c.evidence) for c in claim.checks]
    required = [lookup(evidence, c.evidence) for c in claim.requires]
    needed = [(c, p) for c in (*claim.checks, *claim.requires) for p in (c.of, c.scale) if p]
    absent = [
        c.name for c, v in zip((*claim.checks, *claim.requires), values + required) if v is MISSING
    ]
    absent += [
        p.replace("_", " ")
        for c, p in needed
        if lookup(evidence, p) is MISSING and not (p == c.of and p in thresholds)
    ]
    # Preconditions first: one whose evidence is measured and does not hold leaves the entries
    # it bears on unjudged, even where the claim's own evidence is missing (no seed learned,
    # so no accuracy over learners).
    preconditions = [
        _precondition(
            c,
            _judged_value(c, v, evidence, thresholds),
            bound_of(c, thresholds, evidence),
            thresholds,
            v,
            evidence,
        )
        for c, v in zip(claim.requires, required)
        if v is not MISSING and not (c.of and lookup(evidence, c.of) is MISSING)
    ]
    unmet = [p for p in preconditions if any(v != "pass" for v in p.verdicts.values())]
    floor = thresholds[claim.min_judged] if claim.min_judged is not None else 1
    verdict, reason, outcomes, not_judged, family = None, None, {}, [], None
    shown = list(values)
    if claim.unless and cfg.get(claim.unless):
        verdict, reason = "n/a", f"{section}.{claim.unless} is set in the config"
    elif claim.applies and lookup(evidence, claim.applies.evidence) is False:
        verdict, reason = "n/a", f"not applicable to this run: not so that {claim.applies.name}"
    elif absent and not unmet:
        verdict = "n/a"
        reason = f"no {', '.join(absent)} in this run (its encodings are not configured)"
    elif absent:  # a precondition does not hold: too few entries judged, whatever is missing
        verdict, reason = "inconclusive", "; ".join(p.text for p in unmet)
    else:
        # Which entries are judged: those whose every covering precondition holds.
        judged_values = [
            _judged_value(c, v, evidence, thresholds) for c, v in zip(claim.checks, values)
        ]
        judged = []  # (check index, key, judged value, raw value)
        names = set().union(
            *(
                _identifiers(c, k)
                for c, jv in zip(claim.checks, judged_values)
                for k, _ in _entries(jv)
            )
        )
        wide = [not (set(p.verdicts) & names) for p in preconditions]
        for i, (c, jv, raw) in enumerate(zip(claim.checks, judged_values, values)):
            raws = dict(_entries(raw))
            for key, sub in _entries(jv):
                covering = [
                    x
                    for p, w in zip(preconditions, wide)
                    for x in p.covers(_identifiers(c, key), w)
                ]
                if all(x == "pass" for x in covering):
                    judged.append((i, key, sub, raws.get(key)))
                else:
                    not_judged.append(key or c.name)
        # m interval judgements together. A claim passes only when every judged entry
        # passes, so a false pass needs the one false entry to pass at the interval's own
        # level: no adjustment. A claim fails when any entry fails, so a fail is judged at the
        # family-wise level (Bonferroni): a true claim fails with probability at most
        # 1 - level.
        m = sum(interval_count(sub) for _, _, sub, _ in judged)
        if m > 1:
            family = {"entries": m, "level": _family_level(values, m)}
        verdicts, reasons = {}, []
        for i, key, sub, raw in judged:
            c = claim.checks[i]
            bound = bound_of(c, thresholds, evidence)
            own, wide = judge(c, sub, bound), judge(c, adjusted(sub, m), bound)
            verdicts[i, key] = (
                "fail" if wide == "fail" else own if own == "pass" else "inconclusive"
            )
            if verdicts[i, key] == "inconclusive":
                found = straddling(c, sub, bound, raw, key or "")
                at = ""
                if not found:  # it fails at its own level, not at the family's
                    found = straddling(c, adjusted(sub, m), bound, adjusted(raw, m), key or "")
                    at = (
                        f" at the family-wise level {100 * family['level']:.3g} %" if family else ""
                    )
                reasons.append(
                    f"the interval of {c.name}{at} straddles the threshold "
                    f"({expected(c, thresholds, raw, evidence)}): {', '.join(found)}"
                )
        for i, (c, v) in enumerate(zip(claim.checks, values)):
            if isinstance(v, Mapping) and not is_interval(v):
                outcomes[c.evidence] = {
                    key: verdicts.get((i, key), NOT_JUDGED) for key, _ in _entries(v)
                }
        if len(judged) < floor:
            verdict = "inconclusive"
            reason = "; ".join(p.text for p in unmet) or "too few entries judged"
        else:
            verdict = combine(list(verdicts.values()))
            if verdict == "inconclusive":
                reason = "; ".join(reasons)
    present = [(c.name, v) for c, v in zip(claim.checks, shown) if v is not MISSING]
    present += [(c.name, v) for c, v in zip(claim.requires, required) if v is not MISSING]
    present += [
        (path.replace("_", " "), lookup(evidence, path))
        for path in claim.shows
        if lookup(evidence, path) is not MISSING
    ]
    if len(claim.checks) == 1 and not claim.shows and not claim.requires:
        measured = present[0][1] if present else None
    else:
        measured = dict(present)
    # The scale the claim was measured at: its own evidence path, or for an empirical claim
    # the section's ``scope`` (the trained models' size and context), shown beside the papers'.
    scope = MISSING
    if claim.scope or claim.kind == "empirical":
        scope = lookup(evidence, claim.scope or "scope")
    return {
        "id": claim.id,
        "kind": claim.kind,
        "statement": _fill(claim.statement, evidence),
        "measured": measured,
        "expected": "; ".join(
            expected(c, thresholds, v if v is not MISSING else None, evidence)
            for c, v in zip(claim.checks, values)
        ),
        "verdict": verdict,
        "references": list(claim.references),
        "section": section,
        "reason": reason,
        "outcomes": outcomes,
        # Entries left unjudged (their models did not learn, say), and why.
        "not_judged": (
            {"entries": not_judged, "why": "; ".join(p.text for p in unmet)} if not_judged else None
        ),
        # The family-wise adjustment: how many interval judgements decided the claim together,
        # and the level a fail is judged at (None: one judgement, at the interval's own level).
        "family": family,
        "scope": None if scope is MISSING else scope,
    }


def _family_level(values: list[Any], m: int) -> float | None:
    """The level each of m judgements is made at: 1 - (1 - level) / m, the level read from
    the first interval that carries one."""

    def first_level(value):
        if is_interval(value):
            return value.get("level")
        items = value.values() if isinstance(value, Mapping) else value
        if isinstance(value, (Mapping, list, tuple)):
            for v in items:
                if (found := first_level(v)) is not None:
                    return found
        return None

    level = next((x for v in values if (x := first_level(v)) is not None), None)
    return None if level is None else 1.0 - (1.0 - level) / m


def section_thresholds(config: Mapping[str, Any], section: str) -> dict[str, Any]:
    """The thresholds a claim of ``section`` may name: its own section's by key, and any
    section's by ``"<section>.<key>"``, so that a claim reading another section's models
    (the extension reads the extrapolation's) applies that section's threshold, written once."""
    own = dict((config.get(section) or {}).get("thresholds", {}))
    shared = {
        f"{name}.{key}": value
        for name, block in config.items()
        if isinstance(block, Mapping) and isinstance(block.get("thresholds"), Mapping)
        for key, value in block["thresholds"].items()
    }
    return shared | own
