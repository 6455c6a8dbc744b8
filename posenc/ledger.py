"""The ledger: what an analysis writes of its claims, and its validation (:func:`check_ledger`).

A contract, kept across versions (claim ids and this file's name never change: the report,
the report card and ``benchmarks/compare_claims.py`` read it, the last comparing two runs):
each analysis writes ``results/<analysis>/claims.json``, a list of

    {"id", "kind", "statement", "measured", "expected",
     "verdict": "pass" | "fail" | "inconclusive" | "n/a", "references", "section", "reason"}

``reason`` says why a claim is n/a or inconclusive (generated, never hand-written).
``outcomes`` holds, for each check whose evidence is a mapping (``{encoding: value}``, say),
the verdict of each of its entries, ``{evidence: {key: "pass" | "fail" | "inconclusive" |
"not judged"}}``: the report card colours one encoding's cell by it, rather than judging
anything itself. ``not_judged`` (or None) lists the entries whose preconditions did not hold
and why; ``family`` (or None) how many interval judgements decided the claim together and the
level each was made at; ``scope`` (or None) the scale an empirical claim was measured at.
``kind`` is one of :data:`posenc.claim_spec.KINDS`, so the report can count identities,
software checks and empirical claims apart.
The report merges them. :func:`posenc.claim_evaluation.evaluate` writes the entries.
"""

from __future__ import annotations

from typing import Any

from posenc.claim_spec import KINDS

VERDICTS = ("pass", "fail", "inconclusive", "n/a")
# An entry of a claim whose preconditions do not hold (its models did not learn the task): it
# decides nothing, and the ledger's outcomes say so.
NOT_JUDGED = "not judged"
REQUIRED = ("id", "kind", "statement", "measured", "expected", "verdict", "references", "section")


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
