"""The filters the templates format numbers, words and identifiers with (``num``,
``measured``, ``breakable``, ``slug``, ``plural``, ``verdict_counts``): the only formatting a
template does."""

from __future__ import annotations

import math
import re
from typing import Any

from markupsafe import Markup, escape

from posenc.claims import is_interval


def fmt_number(x: Any, digits: int = 4) -> str:
    """Significant digits for floats, as-is for everything else; None is shown as a dash."""
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 10000 else str(x)
    if x == 0 or not math.isfinite(x):
        return str(x)
    if abs(x) < 1e-3 or abs(x) >= 1e6:
        return f"{x:.{max(digits - 1, 1)}e}"
    if abs(x) >= 10**digits:  # 1253.1 at 3 digits: "1,253", not "1.25e+03"
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def fmt_measured(x: Any) -> str:
    if is_interval(x):  # the estimate, then its confidence interval
        return f"{fmt_number(x['estimate'])} [{fmt_number(x['low'])}, {fmt_number(x['high'])}]"
    if isinstance(x, dict):
        return "; ".join(f"{k}: {fmt_measured(v)}" for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt_measured(v) for v in x) + "]"
    return fmt_number(x)


def breakable(text: Any) -> Markup:
    """Escaped text that may wrap after dots and underscores: long identifiers
    (``extrapolation.alibi_beats_sinusoidal_uncollapsed``) wrap at their joints, not mid-word."""
    return Markup(re.sub(r"([._])", r"\1<wbr>", str(escape(text))))


def slug(text: str) -> str:
    """An HTML id fragment from a section or figure id (ids may hold dots or spaces)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"


def plural(n: Any, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, plural where ``n`` is not 1: "1 thread", "4 threads"; ``many`` for an
    irregular plural ("1 claim does", "3 claims do" take two calls)."""
    return f"{fmt_number(n)} {word if n == 1 else (many or word + 's')}"


# A verdict's count as a clause, in the verdicts' order: "7 hold, 1 does not, 2 inconclusive".
_VERDICT_WORDS = {
    "pass": ("holds", "hold"),
    "fail": ("does not hold", "do not hold"),
    "inconclusive": ("inconclusive", "inconclusive"),
    "n/a": ("not testable here", "not testable here"),
}


def verdict_counts(counts: dict[str, int]) -> str:
    """Verdict counts in words, leaving out the verdicts no claim has."""
    return ", ".join(
        f"{n} {_VERDICT_WORDS[v][0 if n == 1 else 1]}"
        for v, n in counts.items()
        if n and v in _VERDICT_WORDS
    )


# A sentence ends at . ! ? before a capital, but not after these abbreviations.
_SENTENCE_END = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bal\.)(?<!\bvs\.)(?<!\bFig\.)(?<=[.!?])\s+(?=[A-Z“(])"
)


def first_sentence(text: Any) -> str:
    """The opening sentence of a text (a claim's statement, a caption): a finding or a pointer
    quotes it, the full text is where it points."""
    return _SENTENCE_END.split(str(text).strip(), maxsplit=1)[0]


def lower_first(text: Any) -> str:
    """A heading continued inside a sentence: its first letter lower-cased (and its final
    full stop left to the sentence)."""
    text = str(text).rstrip(".")
    return text[:1].lower() + text[1:]


# By the names the templates use.
FILTERS = {
    "num": fmt_number,
    "measured": fmt_measured,
    "slug": slug,
    "breakable": breakable,
    "plural": plural,
    "verdict_counts": verdict_counts,
    "lower_first": lower_first,
    "first_sentence": first_sentence,
}
