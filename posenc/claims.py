"""The claims ledger: every claim is a measured number with a verdict from a config threshold.

Contract (DESIGN.md): each analysis writes ``results/<analysis>/claims.json``, a list of

    {"id", "statement", "measured", "expected", "verdict": "pass" | "fail" | "n/a", "source"}

plus ``section`` (the report section that shows the evidence). The report merges them.
"""

from __future__ import annotations

from typing import Any

VERDICTS = ("pass", "fail", "n/a")
REQUIRED = ("id", "statement", "measured", "expected", "verdict", "source", "section")


def claim(
    id: str,
    statement: str,
    measured: Any,
    expected: str,
    passed: bool | None,
    source: str,
    section: str,
) -> dict[str, Any]:
    """One ledger entry. ``passed`` comes from comparing ``measured`` with a config threshold;
    None means the claim could not be tested in this run (verdict "n/a")."""
    verdict = "n/a" if passed is None else ("pass" if passed else "fail")
    return {
        "id": id,
        "statement": statement,
        "measured": measured,
        "expected": expected,
        "verdict": verdict,
        "source": source,
        "section": section,
    }


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
        if c["verdict"] not in VERDICTS:
            raise ValueError(f"{origin}: claim {c['id']!r} has verdict {c['verdict']!r}")
        if c["id"] in seen:
            raise ValueError(f"{origin}: claim id {c['id']!r} appears twice")
        seen.add(c["id"])
    return claims
