"""Claims as data, and the one evaluator that turns them into the ledger.

A :class:`Claim` says what it asserts, which named evidence it reads and how: a tuple of
:class:`Check` triples (evidence, comparison, threshold key). :func:`evaluate` renders both the
"expected" text and the verdict from the same check, so each threshold is written once, in the
config, and verdict logic lives nowhere else. Torch-free: the specs that hold claims are read
at parse time.

A contract, kept across versions (claim ids and this file's name never change: the report,
the report card and ``benchmarks/compare_claims.py`` read it, the last comparing two runs):
each analysis writes ``results/<analysis>/claims.json``, a list of

    {"id", "kind", "statement", "measured", "expected",
     "verdict": "pass" | "fail" | "inconclusive" | "n/a", "references", "section", "reason"}

``reason`` says why a claim is n/a or inconclusive (generated, never hand-written).
``outcomes`` holds, for each check whose evidence is a mapping (``{encoding: value}``, say),
the verdict of each of its entries, ``{evidence: {key: "pass" | "fail" | "inconclusive"}}``:
the report card colours one encoding's cell by it, rather than judging anything itself.
``kind`` is one of :data:`KINDS`, so the report can count identities, software checks and
empirical claims apart.
The report merges them.

Evidence may be an interval ``{"estimate", "low", "high"}`` (see :func:`interval`): a check on
it passes when the whole interval does, fails when the whole interval fails, and is
``inconclusive`` when the interval straddles the threshold: the evidence cannot decide it, and
a verdict never rests on a point estimate. A claim fails when any of its checks (or any entry
of a mapping) fails, is inconclusive when none fails but one is inconclusive, and passes when
all pass; an inconclusive claim's reason names the entries, their intervals and the bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from posenc.verdicts import (
    COMPARISONS,
    MISSING,
    as_text,
    bound_of,
    combine,
    entry_verdicts,
    expected,
    interval,
    interval_text,
    is_interval,
    judge,
    lookup,
    minus,
    reference_of,
    shortfalls,
    straddling,
)

# What other modules read from here, the verdict machinery's public names included.
__all__ = [
    "COMPARISONS",
    "KINDS",
    "REQUIRED",
    "VERDICTS",
    "Check",
    "Claim",
    "ClaimError",
    "check_ledger",
    "evaluate",
    "interval",
    "interval_text",
    "is_interval",
]

VERDICTS = ("pass", "fail", "inconclusive", "n/a")
# What a claim's verdict can tell a reader, so that "28 of 30 hold" does not mix them:
#   identity  - a mathematical identity checked numerically, to rounding: it can only fail
#               through a bug or a rounding bound that is wrong;
#   analytic  - a property of the formulas, computed exactly for the configured encodings and
#               sizes (no training, no sampling): deterministic, and it may not hold;
#   software  - a check of code behaviour (ours, a library's or a source's snippet as written);
#   empirical - a measured property that could come out either way at this scale.
KINDS = ("identity", "analytic", "software", "empirical")
REQUIRED = ("id", "kind", "statement", "measured", "expected", "verdict", "references", "section")


class ClaimError(ValueError):
    """A claim that cannot be evaluated as declared (an unknown threshold key, say)."""


@dataclass(frozen=True)
class Check:
    """``evidence`` (a name in the analysis' evidence; ``a.b`` reads ``evidence["a"]["b"]``)
    compared by ``op`` with the config threshold ``threshold`` (a key of the analysis'
    ``thresholds``), or, for a yes/no fact, with the literal ``value`` (True or False).

    Evidence that is a mapping ``{label: number}`` passes when every value does.
    ``label`` names the quantity in the expected text; by default the evidence name.

    ``of`` (an evidence path, or else a threshold key) compares the difference from a
    reference instead: ``within`` with ``of="printed"`` means |value − printed| ≤ threshold,
    element by element for lists and mappings; ``of="expected_slope"`` with a threshold of that
    name is "within a tolerance of a centre the config sets". ``scale`` (an evidence path to a
    number) multiplies the threshold: a tolerance of ``ulps`` machine epsilons × N is
    ``threshold="ulps", scale="eps_times_n"``. Both keep the measured value itself in the ledger.
    """

    evidence: str
    op: str = "is"
    threshold: str | None = None
    value: bool | None = None
    label: str | None = None
    of: str | None = None
    scale: str | None = None

    def __post_init__(self):
        if self.op == "is":
            if self.value is None or self.threshold is not None:
                raise ClaimError(f"check on {self.evidence}: 'is' takes value=True/False only")
        elif self.op not in COMPARISONS or self.threshold is None:
            raise ClaimError(
                f"check on {self.evidence}: op {self.op!r} needs a threshold key; ops are "
                f"'is', {', '.join(map(repr, COMPARISONS))}"
            )

    @property
    def name(self) -> str:
        return self.label or self.evidence.replace("_", " ")


@dataclass(frozen=True)
class Claim:
    """One claim. ``statement`` may name evidence in braces (``{relative}``): a list is
    written out with commas. ``unless`` names a config flag of the analysis (``smoke_test``)
    that, when true, makes the claim n/a; evidence that is missing or empty does too. The
    reason is generated from the name in both cases. ``shows`` names evidence the ledger's
    "measured" carries beside the checked values, as context a reader needs (the losses behind
    a difference, say); it decides nothing. ``kind`` (keyword, required) is one of
    :data:`KINDS`: what kind of evidence the verdict is.

    ``requires`` are preconditions, checks written like the others (thresholds in the config):
    what must hold for the evidence to bear on the claim at all (the models learned the task
    at L_train, say). One that does not hold, or whose interval straddles its threshold, makes
    the claim ``inconclusive``, with a reason that names the entries and numbers that fell
    short: a claim whose models never learned the task is not a finding either way. Their
    values are in "measured", beside the checked ones."""

    id: str
    statement: str
    checks: tuple[Check, ...]
    references: tuple[str, ...] = ()
    unless: str | None = None
    shows: tuple[str, ...] = ()
    requires: tuple[Check, ...] = ()
    kind: str = field(kw_only=True)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ClaimError(
                f"claim {self.id}: kind {self.kind!r} is not one of {', '.join(map(repr, KINDS))}"
            )
        if not self.checks:
            raise ClaimError(f"claim {self.id}: no checks (a claim that cannot fail)")
        if isinstance(self.references, str):
            object.__setattr__(self, "references", (self.references,))


class _Facts(dict):
    def __missing__(self, key):
        return "none configured"


def _fill(statement: str, evidence: Mapping[str, Any]) -> str:
    return statement.format_map(_Facts({k: as_text(v) for k, v in evidence.items()}))


def _covering(per_key: dict[str, str] | None, entry: str) -> str:
    """A precondition's verdict for one entry of a claim: its own where the precondition has
    the entry's key, or the key the entry starts with (``rope`` for ``rope 2x``); else, and
    for a precondition that is not per entry, the precondition's as a whole (an entry keyed
    otherwise, by scale say, reads every model the precondition covers)."""
    if per_key is None:
        return "inconclusive"
    if entry in per_key:
        return per_key[entry]
    prefixed = [v for k, v in per_key.items() if entry.startswith(f"{k} ")]
    return combine(prefixed or list(per_key.values()))


def _unmet_verdict(
    claim: Claim,
    values: list[Any],
    unmet: list,
    outcomes: dict[str, dict[str, str]],
    thresholds: Mapping[str, Any],
    evidence: Mapping[str, Any],
) -> tuple[str, str | None]:
    """The verdict of a claim some of whose preconditions do not hold, and its reason.

    Each entry whose precondition is not met becomes inconclusive, whatever its own test
    says: by key where the precondition is per entry (``{encoding: seeds that learned}``),
    else every entry. Where every check is per entry and every unmet precondition is too, the
    entries that met theirs still decide: one that fails fails the claim (its models learned
    and the claim does not hold). Otherwise the claim is inconclusive."""
    per_entry = all(c.evidence in outcomes for c in claim.checks)
    for (r, v, bound), _ in unmet:
        per_key = entry_verdicts(r, v, None, bound)
        per_entry = per_entry and per_key is not None
        for entries in outcomes.values():
            for key in entries:
                if _covering(per_key, key) != "pass":
                    entries[key] = "inconclusive"
    verdict = "inconclusive"
    if per_entry and values:
        verdict = combine([v for entries in outcomes.values() for v in entries.values()])
    if verdict != "inconclusive":
        return verdict, None
    return "inconclusive", "; ".join(
        f"not met: {expected(c, thresholds, raw, evidence)}; measured "
        f"{', '.join(shortfalls(c, v, bound))}"
        for (c, v, bound), raw in unmet
    )


def evaluate(
    claims: tuple[Claim, ...] | list[Claim],
    evidence: Mapping[str, Any],
    cfg: Mapping[str, Any],
    section: str,
) -> list[dict[str, Any]]:
    """The ledger of ``claims`` on this run's ``evidence``, with the analysis' config ``cfg``
    (its ``thresholds`` decide the verdicts)."""
    thresholds = cfg.get("thresholds", {})
    ledger = []
    for claim in claims:
        for check in (*claim.checks, *claim.requires):
            if check.threshold is not None and check.threshold not in thresholds:
                raise ClaimError(
                    f"claim {claim.id}: threshold {check.threshold!r} is not in the config's "
                    f"{section}.thresholds ({', '.join(thresholds) or 'none'})"
                )
        values = [lookup(evidence, c.evidence) for c in claim.checks]
        required = [lookup(evidence, c.evidence) for c in claim.requires]
        needed = [(c, p) for c in (*claim.checks, *claim.requires) for p in (c.of, c.scale) if p]
        absent = [
            c.name
            for c, v in zip((*claim.checks, *claim.requires), values + required)
            if v is MISSING
        ]
        absent += [
            p.replace("_", " ")
            for c, p in needed
            if lookup(evidence, p) is MISSING and not (p == c.of and p in thresholds)
        ]
        # Preconditions first: one whose evidence is measured and does not hold makes the
        # claim inconclusive even where the claim's own evidence is missing (no seed learned,
        # so no accuracy over learners).
        judged_required = [
            (
                c,
                minus(v, reference_of(c, evidence, thresholds)) if c.of else v,
                bound_of(c, thresholds, evidence),
            )
            for c, v in zip(claim.requires, required)
            if v is not MISSING and not (c.of and lookup(evidence, c.of) is MISSING)
        ]
        unmet = [
            (j, raw)
            for j, raw in zip(judged_required, [r for r in required if r is not MISSING])
            if judge(*j) != "pass"
        ]
        if claim.unless and cfg.get(claim.unless):
            verdict, reason, unmet = "n/a", f"{section}.{claim.unless} is set in the config", []
        elif absent and not unmet:
            verdict = "n/a"
            reason = f"no {', '.join(absent)} in this run (its encodings are not configured)"
        elif absent:  # a precondition fails: decided below, whatever is missing
            verdict, reason = "inconclusive", None
        else:
            judged = [
                (
                    c,
                    minus(v, reference_of(c, evidence, thresholds)) if c.of else v,
                    bound_of(c, thresholds, evidence),
                )
                for c, v in zip(claim.checks, values)
            ]
            verdict, reason = combine([judge(*j) for j in judged]), None
            if verdict == "inconclusive":
                reason = "; ".join(
                    f"the interval of {c.name} straddles the threshold "
                    f"({expected(c, thresholds, raw, evidence)}): {', '.join(found)}"
                    for (c, v, bound), raw in zip(judged, values)
                    if (found := straddling(c, v, bound, raw))
                )
        outcomes = {}
        if verdict != "n/a":
            for c, v in zip(claim.checks, values):
                if v is MISSING:
                    continue
                reference = reference_of(c, evidence, thresholds) if c.of else None
                entries = entry_verdicts(c, v, reference, bound_of(c, thresholds, evidence))
                if entries is not None:
                    outcomes[c.evidence] = entries
        if unmet:
            verdict, reason = _unmet_verdict(claim, values, unmet, outcomes, thresholds, evidence)
        present = [(c.name, v) for c, v in zip(claim.checks, values) if v is not MISSING]
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
        ledger.append(
            {
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
            }
        )
    return ledger


def check_ledger(claims: Any, origin: str = "claims") -> list[dict[str, Any]]:
    """Validate a ledger; a malformed one is an error naming ``origin`` (the file)."""
    if not isinstance(claims, list):
        raise ValueError(f"{origin}: a claims file must hold a list, got {type(claims).__name__}")
    seen = set()
    for i, c in enumerate(claims):
        if not isinstance(c, dict):
            raise ValueError(f"{origin}: entry {i} is not an object")
        missing = [k for k in REQUIRED if k not in c]
        if missing:
            raise ValueError(f"{origin}: claim {c.get('id', i)!r} lacks {', '.join(missing)}")
        if c["kind"] not in KINDS:
            raise ValueError(f"{origin}: claim {c['id']!r} has kind {c['kind']!r}")
        if c["verdict"] not in VERDICTS:
            raise ValueError(f"{origin}: claim {c['id']!r} has verdict {c['verdict']!r}")
        if c["id"] in seen:
            raise ValueError(f"{origin}: claim id {c['id']!r} appears twice")
        seen.add(c["id"])
    return claims


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
