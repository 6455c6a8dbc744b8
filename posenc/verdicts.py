"""How one check's evidence is judged against its threshold: the comparisons, interval
evidence, a value's verdict (an interval straddling the threshold is inconclusive, a mapping
passes when each entry does), the entries that fall short, and the expected text, rendered from
the same threshold that decides. Torch-free; :mod:`posenc.claim_evaluation` builds the ledger
from these.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from posenc.tdist import half_width, t_quantile

if TYPE_CHECKING:
    from posenc.claim_spec import Check

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
# What an interval may carry beside its bounds: its standard error, degrees of freedom (None:
# normal), level and variance parts ([variance, df] each; posenc.estimates), from which a claim
# judging several entries re-derives wider bounds.
INTERVAL_EXTRA = frozenset({"se", "df", "level", "parts"})


def interval(
    estimate: float,
    low: float,
    high: float,
    se: float | None = None,
    df: float | None = None,
    level: float | None = None,
) -> dict[str, float]:
    """Interval evidence: a point estimate and the bounds of its confidence interval, with
    (optionally) the standard error, degrees of freedom and level it was made from."""
    out = {"estimate": estimate, "low": low, "high": high}
    if se is not None:
        out |= {"se": se, "df": df, "level": level}
    return out


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
    return (
        isinstance(value, Mapping) and INTERVAL_KEYS <= set(value) <= INTERVAL_KEYS | INTERVAL_EXTRA
    )


def adjusted(value: Any, entries: int) -> Any:
    """``value`` with each interval in it widened for a family of ``entries`` judgements
    (Bonferroni): at level 1 - (1 - level) / entries, from its standard error and degrees of
    freedom, so that a claim judging m entries errs on some entry with probability at most
    1 - level. An interval without a standard error is left as it is."""
    if is_interval(value):
        se, level = value.get("se"), value.get("level")
        if entries <= 1 or se is None or level is None or not math.isfinite(se):
            return value
        family = 1.0 - (1.0 - level) / entries
        if value.get("parts"):
            half = half_width(value["parts"], family)
        else:
            half = t_quantile(0.5 + family / 2.0, value.get("df")) * se
        est = value["estimate"]
        return {**value, "low": est - half, "high": est + half, "level": family}
    if isinstance(value, Mapping):
        return {k: adjusted(v, entries) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [adjusted(v, entries) for v in value]
    return value


def interval_count(value: Any) -> int:
    """How many intervals ``value`` holds (each a judgement of its own)."""
    if is_interval(value):
        return 1
    if isinstance(value, Mapping):
        return sum(interval_count(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(interval_count(v) for v in value)
    return 0


def has_interval(value: Any) -> bool:
    """Whether ``value`` is, or holds (in a mapping or list), interval evidence."""
    if is_interval(value):
        return True
    if isinstance(value, Mapping):
        return any(has_interval(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_interval(v) for v in value)
    return False


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


def as_text(value: Any) -> str:
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
        return "; ".join(f"{k}: {as_text(v)}" for k, v in value.items()) or "none configured"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none configured"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def minus(value: Any, reference: Any) -> Any:
    """value − reference, element by element (lists by position, mappings by key; an
    interval's estimate and bounds alike)."""
    if is_interval(value):
        # The bounds move with the estimate; the spread (se, df, level) does not.
        return {k: minus(v, reference) if k in INTERVAL_KEYS else v for k, v in value.items()}
    if isinstance(value, Mapping):
        return {
            k: minus(v, reference[k] if isinstance(reference, Mapping) else reference)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        refs = reference if isinstance(reference, (list, tuple)) else [reference] * len(value)
        if len(refs) != len(value):
            return [math.nan] * len(value)  # a different count never matches
        return [minus(v, r) for v, r in zip(value, refs)]
    if not _number(value) or not _number(reference):
        return math.nan
    return value - reference


def combine(verdicts: list[str]) -> str:
    """The verdict of all of ``verdicts`` together: any fail fails, else any inconclusive is
    inconclusive, else pass."""
    if "fail" in verdicts:
        return "fail"
    return "inconclusive" if "inconclusive" in verdicts else "pass"


def interval_verdict(check: Check, low: Any, high: Any, threshold: Any) -> str:
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


def judge(check: Check, value: Any, threshold: Any) -> str:
    """``"pass"``, ``"fail"`` or ``"inconclusive"`` (an interval straddles the threshold)."""
    if is_interval(value):
        return interval_verdict(check, value["low"], value["high"], threshold)
    if isinstance(value, Mapping):
        return combine([judge(check, v, threshold) for v in value.values()])
    if isinstance(value, (list, tuple)) and check.op != "is":
        if not value:
            return "fail"
        return combine([judge(check, v, threshold) for v in value])
    if check.op == "is":
        return "pass" if value is check.value else "fail"
    if not _number(value) or not math.isfinite(value):
        return "fail"  # NaN (written as null) or inf never satisfies a threshold
    return "pass" if COMPARISONS[check.op][0](value, threshold) else "fail"


def straddling(check: Check, value: Any, threshold: Any, shown: Any, where: str = "") -> list[str]:
    """The intervals in ``value`` (the difference from a reference, for ``of``) that straddle
    the threshold, as text naming each entry and its interval as measured (``shown``)."""
    if is_interval(value):
        if interval_verdict(check, value["low"], value["high"], threshold) != "inconclusive":
            return []
        text = f"[{as_text(shown['low'])}, {as_text(shown['high'])}]"
        return [f"{where} {text}".strip()]
    if isinstance(value, Mapping):
        return [
            s
            for k, v in value.items()
            for s in straddling(check, v, threshold, shown[k], f"{where} {k}".strip())
        ]
    if isinstance(value, (list, tuple)):
        return [s for v, w in zip(value, shown) for s in straddling(check, v, threshold, w, where)]
    return []


def shortfalls(check: Check, value: Any, threshold: Any, where: str = "") -> list[str]:
    """The entries of ``value`` that do not pass, each as its name and measured value."""
    if is_interval(value) or not isinstance(value, (Mapping, list, tuple)):
        if judge(check, value, threshold) == "pass":
            return []
        shown = interval_text(value) if is_interval(value) else as_text(value)
        return [f"{where} {shown}".strip()]
    if isinstance(value, Mapping):
        return [
            s
            for k, v in value.items()
            for s in shortfalls(check, v, threshold, f"{where} {k}".strip())
        ]
    return [s for v in value for s in shortfalls(check, v, threshold, where)]


def entry_verdicts(check: Check, value: Any, reference: Any, bound: Any) -> dict[str, str] | None:
    """Each entry's verdict, when the evidence is a mapping of entries (not an interval): the
    same test as the whole check's, on that entry alone (the whole passes when each does)."""
    if not isinstance(value, Mapping) or is_interval(value):
        return None
    if check.of:
        value = minus(value, reference)
    return {str(k): judge(check, v, bound) for k, v in value.items()}


def reference_of(check: Check, evidence: Mapping[str, Any], thresholds: Mapping[str, Any]) -> Any:
    """What ``of`` names: evidence first, else a threshold (a centre set in the config)."""
    found = lookup(evidence, check.of)
    if found is MISSING and check.of in thresholds:
        return thresholds[check.of]
    return found


def bound_of(check: Check, thresholds: Mapping[str, Any], evidence: Mapping[str, Any]) -> Any:
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
    bound = as_text(thresholds[check.threshold])
    if check.scale is not None:
        total = bound_of(check, thresholds, evidence)
        scale = check.scale.replace("_", " ")
        bound += f" × {scale}" + ("" if total is MISSING else f" = {as_text(total)}")
    text = f"{check.name}{each} {symbol}{sep}{bound}"
    if has_interval(value):
        text += " (the whole interval)"
    if check.of is not None:
        reference = reference_of(check, evidence, thresholds)
        shown = "" if reference is MISSING else f" {as_text(reference)}"
        text += f" of the {check.of.replace('_', ' ')}{shown}"
    return text
