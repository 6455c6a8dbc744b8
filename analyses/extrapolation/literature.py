"""The literature's claims on how a model's loss moves beyond L_train, as one table: each row
an encoding (and the one it is compared with), a direction, a threshold key and the paper's
numbers or words; :func:`length_claim` makes each a claim on the models that beat a trigram.

A comparison is judged at the longest length at which its comparator is alive (its bits/char
interval wholly below the unigram's there and at every shorter length,
``preconditions.COLLAPSE_REFERENCE``): beating a
model that predicts worse than character frequencies can hardly fail. Where the comparator has
collapsed at every length past L_train the claim is inconclusive, naming the collapse."""

from typing import NamedTuple

from posenc.analyses.extrapolation.preconditions import (
    T5_TRAIN_RATIO,
    beats_trigram,
    not_collapsed,
)
from posenc.claims import Check, Claim


class LengthClaim(NamedTuple):
    """One of the literature's claims on how a model's loss moves beyond L_train, as the
    claims below judge it: what the paper reports, and the direction and threshold that
    decide it."""

    claim: str  # the id, after "extrapolation."
    encodings: tuple[str, ...]  # the encoding, and the one it is compared with (if any)
    direction: str  # a key of DIRECTIONS
    threshold: str
    statement: str  # with the paper's numbers, or its words
    references: tuple[str, ...]
    also_shows: tuple[str, ...] = ()  # shown beside the direction's own context
    also_requires: tuple[Check, ...] = ()  # what makes the claim a test at all


# What each direction measures on the same scored tokens (mode b), how it is compared with its
# threshold, the check's label, and the losses shown beside it; {e} is the encoding, {other}
# the one it is compared with. A comparison's evidence is keyed by the length it is judged at
# (the longest where {other} is alive), so the ledger names it; the same comparison at
# the longest length, and the lengths where each collapsed, are shown beside and decide nothing.
CHANGE_SHOWS = ("bits_at_1x.{e}", "bits_at_longest.{e}")
COLLAPSE_SHOWS = ("collapsed_at.{e}", "collapsed_at.{other}")
DIRECTIONS = {
    "degrades": ("far_change.{e}", ">=", "{e} bits/char increase", CHANGE_SHOWS),
    "degrades_mildly": ("far_change.{e}", "<", "{e} bits/char increase", CHANGE_SHOWS),
    "flat": ("far_change.{e}", "<=", "{e} bits/char change", CHANGE_SHOWS),
    "beats_uncollapsed": (
        "uncollapsed_lead.{e}.{other}",
        ">",
        "{other} minus {e} bits/char where {other} is alive",
        ("far_lead.{e}.{other}", "bits_at_longest.{e}", "bits_at_longest.{other}", *COLLAPSE_SHOWS),
    ),
    "degrades_less_uncollapsed": (
        "uncollapsed_change_lead.{e}.{other}",
        ">",
        "{other}'s rise minus {e}'s rise, bits/char, where {other} is alive",
        ("far_change_lead.{e}.{other}", "far_change.{e}", "far_change.{other}", *COLLAPSE_SHOWS),
    ),
}
# The directions that compare with another encoding: judged where it is alive.
COMPARISONS = ("beats_uncollapsed", "degrades_less_uncollapsed")
# Shown for every encoding a length claim reads, deciding nothing: how much of its context the
# model uses (the shortest context within the margin of the full one's loss) and how far its
# full-context loss is from the 5-gram's on the same characters, so that a reader can tell a
# model that uses far context from one that reads a few characters and ignores position.
CONTEXT_SHOWS = ("effective_context_chars.{e}", "full_context_minus_5gram.{e}")


def context_shows(*encodings: str) -> tuple[str, ...]:
    """:data:`CONTEXT_SHOWS` for each of ``encodings``."""
    return tuple(s.format(e=e) for e in encodings for s in CONTEXT_SHOWS)


LITERATURE = (
    LengthClaim(
        "sinusoidal_degrades",
        ("sinusoidal",),
        "degrades",
        "degrade_min_bits",
        "Sinusoidal degrades beyond L_train: its bits/char on the same scored tokens (mode b) rise "
        "from 1x to {longest}x L_train (Press et al.: 20.05 -> 406 ppl at 30x).",
        ("press2022",),
    ),
    LengthClaim(
        "rope_degrades",
        ("rope",),
        "degrades",
        "degrade_min_bits",
        "RoPE degrades beyond L_train: its bits/char on the same scored tokens (mode b) rise from "
        "1x to {longest}x L_train (Press et al.: 20.07 -> 79.3 ppl).",
        ("press2022",),
    ),
    LengthClaim(
        "alibi_flat",
        ("alibi",),
        "flat",
        "flat_margin_bits",
        "ALiBi's loss stays flat (or falls) beyond L_train: its bits/char on the same scored "
        "tokens (mode b) at {longest}x L_train are about those at 1x. Flat says the longer context "
        "does no harm, not that the model uses it: Press et al. attribute the flat loss to ALiBi's "
        "recency bias, which down-weights distant tokens, and trace its gain in non-overlapping "
        "windows (19.73 -> 18.31 ppl) to their early tokens getting more context (App. B). Mode "
        "a's change, where that effect is, is shown beside mode b's.",
        ("press2022",),
        also_shows=("far_change_all.alibi",),
    ),
    LengthClaim(
        "alibi_beats_sinusoidal_uncollapsed",
        ("alibi", "sinusoidal"),
        "beats_uncollapsed",
        "beats_margin_bits",
        "ALiBi's loss (mode b) is lower than sinusoidal's at the longest length past L_train at "
        "which sinusoidal is alive (its bits/char interval wholly below the "
        "{collapse_reference}'s there and at every shorter length; inconclusive if it is at "
        "none), the length the ledger names (Press et al.: 18.31 vs 406 ppl at 30x).",
        ("press2022",),
    ),
    LengthClaim(
        "kerple_flat",
        ("kerple",),
        "flat",
        "flat_margin_bits",
        "Kerple's logarithmic bias stays flat beyond L_train, like ALiBi: its bits/char (mode b) "
        "at {longest}x L_train are about those at 1x (Chi et al. 2022 report perplexity flat or "
        "falling to 16x the training length).",
        ("chi2022",),
    ),
    LengthClaim(
        "xpos_degrades_less_uncollapsed",
        ("xpos", "rope"),
        "degrades_less_uncollapsed",
        "beats_margin_bits",
        "xPos degrades less than RoPE beyond L_train: its bits/char (mode b) rise less from 1x to "
        "the longest length at which RoPE is alive (its bits/char interval wholly below the "
        "{collapse_reference}'s there and at every shorter length; inconclusive if it is at "
        "none), the length the ledger names, than RoPE's (Sun et al. 2022).",
        ("sun2022", "su2021"),
    ),
    LengthClaim(
        "t5_mild",
        ("t5_bias",),
        "degrades_mildly",
        "degrade_min_bits",
        "T5's bucketed relative bias, trained as Press et al. train it (L_train at least "
        f"{T5_TRAIN_RATIO}x its maximum distance, checked before any run, so that its last "
        "bucket, shared by every "
        "distance from about the maximum on, is trained), degrades only mildly beyond L_train: its "
        "bits/char (mode b) rise from 1x to {longest}x L_train by less than what counts as "
        "degrading (Press et al.: 19.65 -> 22.9 ppl at 30x, where sinusoidal reaches 406).",
        ("press2022", "raffel2020"),
    ),
    LengthClaim(
        "nope_flat",
        ("none",),
        "flat",
        "flat_margin_bits",
        "A causal model without positional encoding extrapolates: NoPE's bits/char (mode b) at "
        "{longest}x L_train are about those at 1x (Kazemnejad et al. find NoPE generalises in "
        "length; Haviv et al. that causal attention infers position).",
        ("kazemnejad2023", "haviv2022"),
    ),
    LengthClaim(
        "hybrid_beats_rope_uncollapsed",
        ("rope_nope_hybrid", "rope"),
        "beats_uncollapsed",
        "beats_margin_bits",
        "RoPE layers interleaved with NoPE layers extrapolate better than RoPE alone: the "
        "hybrid's loss (mode b) is lower than RoPE's at the longest length past L_train at which "
        "RoPE is alive (its bits/char interval wholly below the {collapse_reference}'s there "
        "and at every shorter length; inconclusive if it is at none), the "
        "length the ledger names (Yang et al. 2025 find their RoPE/NoPE hybrid beats full RoPE on "
        "long-context tasks; Llama 4 and SmolLM3 ship it). Here the hybrid has two layers, the "
        "second NoPE with full attention and the first RoPE in a sliding window shorter than "
        "L_train, Yang et al.'s RNoPE-SWA design: RoPE never sees a distance training did not "
        "show, and only the NoPE layer reads far context.",
        ("yang2025", "su2021"),
    ),
    LengthClaim(
        "p_rope_degrades_less_uncollapsed",
        ("rope_proportional", "rope"),
        "degrades_less_uncollapsed",
        "beats_margin_bits",
        "p-RoPE degrades less than RoPE beyond L_train: its bits/char (mode b) rise less from "
        "1x to the longest length at which RoPE is alive (its bits/char interval wholly below "
        "the {collapse_reference}'s there and at every shorter length; inconclusive if it is "
        "at none), the length the ledger names, than RoPE's "
        "(Barbero et al. 2024: removing the lowest frequencies keeps the semantic channels "
        "stable over long distances). It is a test only where p-RoPE's slowest turning pair "
        "(here every {slowest_turning_wavelength.rope_proportional} positions) is slower "
        "than L_train, so that some of its pairs ({pairs_slower_than_train.rope_proportional} "
        "here, against {pairs_slower_than_train.rope} of RoPE's) meet angles past L_train "
        "that training never showed; where none does, it is inconclusive. Barbero et al.'s "
        "own evidence is perplexity within the training length, at 8k context; this is the "
        "project's prediction from their argument.",
        ("barbero2024", "su2021"),
        also_requires=(
            Check(
                "meets_unseen_angles.rope_proportional",
                value=True,
                label="some turning pair of p-RoPE is slower than L_train (else it meets no "
                "unseen angle, and degrading less than RoPE holds by construction)",
            ),
        ),
    ),
)


def length_claim(row: LengthClaim) -> Claim:
    """The claim of one row of :data:`LITERATURE`, on the models that beat a trigram, and for
    a comparison, where its comparator is alive."""
    evidence, op, label, shows = DIRECTIONS[row.direction]
    names = dict(zip(("e", "other"), row.encodings))
    alive = (not_collapsed(names["other"]),) if row.direction in COMPARISONS else ()
    return Claim(
        f"extrapolation.{row.claim}",
        row.statement,
        kind="empirical",
        requires=beats_trigram(*row.encodings) + alive + row.also_requires,
        min_judged="min_judged_entries",
        checks=(Check(evidence.format(**names), op, row.threshold, label=label.format(**names)),),
        shows=tuple(s.format(**names) for s in shows)
        + row.also_shows
        + context_shows(*row.encodings),
        references=row.references,
        unless="smoke_test",
    )


# By id: the ledger lists each where it stands among the other claims, in the order it always had.
LENGTH_CLAIMS = {row.claim: length_claim(row) for row in LITERATURE}
