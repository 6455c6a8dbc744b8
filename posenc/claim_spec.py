"""How a claim is declared: a :class:`Claim` says what it asserts, which named evidence it reads
and how, as a tuple of :class:`Check` triples (evidence, comparison, threshold key), and what
kind of evidence its verdict is (:data:`KINDS`). A malformed declaration raises a
:class:`ClaimError` when it is built, or when it is evaluated against a config that lacks a
threshold it names (:mod:`posenc.claim_evaluation`, which judges claims). Torch-free: the specs
that hold claims are read at parse time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from posenc.verdicts import COMPARISONS

# What a claim's verdict can tell a reader, so that "28 of 30 hold" does not mix them:
#   identity  - a mathematical identity checked numerically, to rounding: it can only fail
#               through a bug or a rounding bound that is wrong;
#   analytic  - a property of the formulas, computed exactly for the configured encodings and
#               sizes (no training, no sampling): deterministic, and it may not hold;
#   software  - a check of code behaviour (ours, a library's or a source's snippet as written);
#   empirical - a measured property that could come out either way at this scale.
KINDS = ("identity", "analytic", "software", "empirical")


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
    values are in "measured", beside the checked ones.

    ``min_judged`` names the threshold saying how many entries must be judged (their
    preconditions hold) for the claim to be decided (default 1). ``scope`` is the evidence
    path of the scale the claim was measured at (parameters, heads x width, L_train); an
    empirical claim without one reads its section's ``scope``, so that the report can set
    it beside the cited paper's.

    ``applies`` is a check of evidence that says whether the claim can be put to this run at
    all (the models read their training text more than once, for a claim about what later
    passes memorised): when it does not hold, the claim is ``n/a``, with its label as the
    reason. A precondition is about whether the evidence bears on the claim; this is about
    whether the run has anything the claim speaks of."""

    id: str
    statement: str
    checks: tuple[Check, ...]
    references: tuple[str, ...] = ()
    unless: str | None = None
    shows: tuple[str, ...] = ()
    requires: tuple[Check, ...] = ()
    min_judged: str | None = None
    scope: str | None = None
    applies: Check | None = None
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
