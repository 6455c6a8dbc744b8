"""Claims as data, and the one evaluator that turns them into the ledger.

A :class:`Claim` says what it asserts, which named evidence it reads and how: a tuple of
:class:`Check` triples (evidence, comparison, threshold key). :func:`evaluate` renders both the
"expected" text and the verdict from the same check, so each threshold is written once, in the
config, and verdict logic lives nowhere else. Torch-free: the specs that hold claims are read
at parse time.

Contract (DESIGN.md): each analysis writes ``results/<analysis>/claims.json``, a list of

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

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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

# op -> (test, how the expected text writes it)
COMPARISONS = {
    "<=": (operator.le, "≤"),
    "<": (operator.lt, "<"),
    ">=": (operator.ge, "≥"),
    ">": (operator.gt, ">"),
    "==": (operator.eq, "="),
    "within": (lambda x, t: abs(x) <= t, "within ±"),
    "outside": (lambda x, t: abs(x) > t, "beyond ±"),
}


INTERVAL_KEYS = frozenset({"estimate", "low", "high"})


def interval(estimate: float, low: float, high: float) -> dict[str, float]:
    """Interval evidence: a point estimate and the bounds of its confidence interval."""
    return {"estimate": estimate, "low": low, "high": high}


def interval_text(entry: dict | None, digits: int = 3) -> str:
    """A table cell: the estimate and, when the bounds differ, ``[low, high]``, at ``digits``
    decimals; 'undefined' for no value."""
    if not entry or entry.get("estimate") is None:
        return "undefined"
    text = f"{entry['estimate']:.{digits}f}"
    if entry["low"] != entry["high"]:
        text += f" [{entry['low']:.{digits}f}, {entry['high']:.{digits}f}]"
    return text


def is_interval(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == INTERVAL_KEYS


def has_interval(value: Any) -> bool:
    """Whether ``value`` is, or holds (in a mapping or list), interval evidence."""
    if is_interval(value):
        return True
    if isinstance(value, Mapping):
        return any(has_interval(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_interval(v) for v in value)
    return False


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


class _Missing:
    """Evidence this run did not measure."""


MISSING = _Missing()


def lookup(evidence: Mapping[str, Any], path: str) -> Any:
    value: Any = evidence
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return MISSING
        value = value[part]
    if value is None or (isinstance(value, (Mapping, list, tuple)) and not value):
        return MISSING
    return value


def _text(value: Any) -> str:
    """Evidence as a statement or an expected text names it: a list written out with commas,
    an interval as its estimate and bounds (``5.752 [5.668, 5.824]``, as the report's
    measured column writes one), a mapping entry by entry; never a raw ``{'estimate': ...}``."""
    if is_interval(value):
        est, low, high = (value[k] for k in ("estimate", "low", "high"))
        if not all(_number(x) for x in (est, low, high)):
            return "undefined"
        if low == high:
            return f"{est:.4g}"
        return f"{est:.4g} [{low:.4g}, {high:.4g}]"
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items()) or "none configured"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none configured"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class _Facts(dict):
    def __missing__(self, key):
        return "none configured"


def _fill(statement: str, evidence: Mapping[str, Any]) -> str:
    return statement.format_map(_Facts({k: _text(v) for k, v in evidence.items()}))


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _minus(value: Any, reference: Any) -> Any:
    """value − reference, element by element (lists by position, mappings by key; an
    interval's estimate and bounds alike)."""
    if is_interval(value):
        return {k: _minus(v, reference) for k, v in value.items()}
    if isinstance(value, Mapping):
        return {
            k: _minus(v, reference[k] if isinstance(reference, Mapping) else reference)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        refs = reference if isinstance(reference, (list, tuple)) else [reference] * len(value)
        if len(refs) != len(value):
            return [math.nan] * len(value)  # a different count never matches
        return [_minus(v, r) for v, r in zip(value, refs)]
    if not _number(value) or not _number(reference):
        return math.nan
    return value - reference


def _combine(verdicts: list[str]) -> str:
    """The verdict of all of ``verdicts`` together: any fail fails, else any inconclusive is
    inconclusive, else pass."""
    if "fail" in verdicts:
        return "fail"
    return "inconclusive" if "inconclusive" in verdicts else "pass"


def _interval_verdict(check: Check, low: Any, high: Any, threshold: Any) -> str:
    """An interval [low, high] against a threshold: pass when every value in it passes, fail
    when none does, inconclusive when it straddles the threshold."""
    if not all(_number(x) and math.isfinite(x) for x in (low, high)):
        return "fail"  # a bound that is NaN or infinite never satisfies a threshold
    if check.op in ("within", "outside"):
        inside = abs(low) <= threshold and abs(high) <= threshold
        apart = high < -threshold or low > threshold  # no value of it within ±threshold
        hold, miss = (inside, apart) if check.op == "within" else (apart, inside)
    elif check.op == "==":
        hold, miss = low == high == threshold, not low <= threshold <= high
    else:  # a monotone comparison: its bounds decide
        test = COMPARISONS[check.op][0]
        hold = test(low, threshold) and test(high, threshold)
        miss = not test(low, threshold) and not test(high, threshold)
    return "pass" if hold else "fail" if miss else "inconclusive"


def _verdict(check: Check, value: Any, threshold: Any) -> str:
    """``"pass"``, ``"fail"`` or ``"inconclusive"`` (an interval straddles the threshold)."""
    if is_interval(value):
        return _interval_verdict(check, value["low"], value["high"], threshold)
    if isinstance(value, Mapping):
        return _combine([_verdict(check, v, threshold) for v in value.values()])
    if isinstance(value, (list, tuple)) and check.op != "is":
        if not value:
            return "fail"
        return _combine([_verdict(check, v, threshold) for v in value])
    if check.op == "is":
        return "pass" if value is check.value else "fail"
    if not _number(value) or not math.isfinite(value):
        return "fail"  # NaN (written as null) or inf never satisfies a threshold
    return "pass" if COMPARISONS[check.op][0](value, threshold) else "fail"


def _straddling(check: Check, value: Any, threshold: Any, shown: Any, where: str = "") -> list[str]:
    """The intervals in ``value`` (the difference from a reference, for ``of``) that straddle
    the threshold, as text naming each entry and its interval as measured (``shown``)."""
    if is_interval(value):
        if _interval_verdict(check, value["low"], value["high"], threshold) != "inconclusive":
            return []
        text = f"[{_text(shown['low'])}, {_text(shown['high'])}]"
        return [f"{where} {text}".strip()]
    if isinstance(value, Mapping):
        return [
            s
            for k, v in value.items()
            for s in _straddling(check, v, threshold, shown[k], f"{where} {k}".strip())
        ]
    if isinstance(value, (list, tuple)):
        return [s for v, w in zip(value, shown) for s in _straddling(check, v, threshold, w, where)]
    return []


def _short(check: Check, value: Any, threshold: Any, where: str = "") -> list[str]:
    """The entries of ``value`` that do not pass, each as its name and measured value."""
    if is_interval(value) or not isinstance(value, (Mapping, list, tuple)):
        if _verdict(check, value, threshold) == "pass":
            return []
        shown = interval_text(value) if is_interval(value) else _text(value)
        return [f"{where} {shown}".strip()]
    if isinstance(value, Mapping):
        return [
            s for k, v in value.items() for s in _short(check, v, threshold, f"{where} {k}".strip())
        ]
    return [s for v in value for s in _short(check, v, threshold, where)]


def _outcomes(check: Check, value: Any, reference: Any, bound: Any) -> dict[str, str] | None:
    """Each entry's verdict, when the evidence is a mapping of entries (not an interval): the
    same test as the whole check's, on that entry alone (the whole passes when each does)."""
    if not isinstance(value, Mapping) or is_interval(value):
        return None
    if check.of:
        value = _minus(value, reference)
    return {str(k): _verdict(check, v, bound) for k, v in value.items()}


def _reference(check: Check, evidence: Mapping[str, Any], thresholds: Mapping[str, Any]) -> Any:
    """What ``of`` names: evidence first, else a threshold (a centre set in the config)."""
    found = lookup(evidence, check.of)
    if found is MISSING and check.of in thresholds:
        return thresholds[check.of]
    return found


def _bound(check: Check, thresholds: Mapping[str, Any], evidence: Mapping[str, Any]) -> Any:
    """The threshold a check compares with: the config's value, times ``scale`` if given."""
    threshold = thresholds.get(check.threshold)
    if check.scale is None or threshold is None:
        return threshold
    scale = lookup(evidence, check.scale)
    return MISSING if scale is MISSING else threshold * scale


def expected(
    check: Check,
    thresholds: Mapping[str, Any],
    value: Any = None,
    evidence: Mapping[str, Any] | None = None,
) -> str:
    """The expected text of one check, from the same threshold that decides it."""
    evidence = evidence or {}
    many = isinstance(value, (Mapping, list, tuple)) and len(value) > 1 and not is_interval(value)
    each = " for each" if many else ""
    if check.op == "is":
        return f"{check.name}: {'yes' if check.value else 'no'}{each}"
    symbol = COMPARISONS[check.op][1]
    sep = "" if symbol.endswith("±") else " "
    bound = _text(thresholds[check.threshold])
    if check.scale is not None:
        total = _bound(check, thresholds, evidence)
        scale = check.scale.replace("_", " ")
        bound += f" × {scale}" + ("" if total is MISSING else f" = {_text(total)}")
    text = f"{check.name}{each} {symbol}{sep}{bound}"
    if has_interval(value):
        text += " (the whole interval)"
    if check.of is not None:
        reference = _reference(check, evidence, thresholds)
        shown = "" if reference is MISSING else f" {_text(reference)}"
        text += f" of the {check.of.replace('_', ' ')}{shown}"
    return text


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
    return _combine(prefixed or list(per_key.values()))


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
        per_key = _outcomes(r, v, None, bound)
        per_entry = per_entry and per_key is not None
        for entries in outcomes.values():
            for key in entries:
                if _covering(per_key, key) != "pass":
                    entries[key] = "inconclusive"
    verdict = "inconclusive"
    if per_entry and values:
        verdict = _combine([v for entries in outcomes.values() for v in entries.values()])
    if verdict != "inconclusive":
        return verdict, None
    return "inconclusive", "; ".join(
        f"not met: {expected(c, thresholds, raw, evidence)}; measured "
        f"{', '.join(_short(c, v, bound))}"
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
                _minus(v, _reference(c, evidence, thresholds)) if c.of else v,
                _bound(c, thresholds, evidence),
            )
            for c, v in zip(claim.requires, required)
            if v is not MISSING and not (c.of and lookup(evidence, c.of) is MISSING)
        ]
        unmet = [
            (j, raw)
            for j, raw in zip(judged_required, [r for r in required if r is not MISSING])
            if _verdict(*j) != "pass"
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
                    _minus(v, _reference(c, evidence, thresholds)) if c.of else v,
                    _bound(c, thresholds, evidence),
                )
                for c, v in zip(claim.checks, values)
            ]
            verdict, reason = _combine([_verdict(*j) for j in judged]), None
            if verdict == "inconclusive":
                reason = "; ".join(
                    f"the interval of {c.name} straddles the threshold "
                    f"({expected(c, thresholds, raw, evidence)}): {', '.join(found)}"
                    for (c, v, bound), raw in zip(judged, values)
                    if (found := _straddling(c, v, bound, raw))
                )
        outcomes = {}
        if verdict != "n/a":
            for c, v in zip(claim.checks, values):
                if v is MISSING:
                    continue
                reference = _reference(c, evidence, thresholds) if c.of else None
                entries = _outcomes(c, v, reference, _bound(c, thresholds, evidence))
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
