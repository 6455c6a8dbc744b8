"""The filters the templates format numbers and identifiers with (``num``, ``measured``,
``breakable``, ``slug``): the only formatting a template does."""

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


# By the names the templates use.
FILTERS = {"num": fmt_number, "measured": fmt_measured, "slug": slug, "breakable": breakable}
