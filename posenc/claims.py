"""Claims as data, and the one evaluator that turns them into the ledger: the names analyses,
the report and the tests import, each defined in the module of its concern.

* :mod:`posenc.claim_spec`: how a claim is declared (:class:`Claim`, :class:`Check`, the
  :data:`KINDS` of evidence, :class:`ClaimError`);
* :mod:`posenc.claim_evaluation`: :func:`evaluate`, which judges each claim's evidence entry by
  entry and writes its ledger entry, and :func:`section_thresholds`;
* :mod:`posenc.ledger`: the ledger's contract (``results/<analysis>/claims.json``, kept across
  versions), its :data:`VERDICTS` and :func:`check_ledger`;
* :mod:`posenc.verdicts`: how one check's evidence is judged against its threshold, interval
  evidence (:func:`interval`) included.

Torch-free: the specs that hold claims are read at parse time.
"""

from __future__ import annotations

from posenc.claim_evaluation import evaluate, section_thresholds
from posenc.claim_spec import KINDS, Check, Claim, ClaimError
from posenc.ledger import NOT_JUDGED, REQUIRED, VERDICTS, check_ledger
from posenc.verdicts import COMPARISONS, interval, interval_text, is_interval

# What other modules read from here.
__all__ = [
    "COMPARISONS",
    "KINDS",
    "NOT_JUDGED",
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
    "section_thresholds",
]
