"""The extrapolation section's claims, as data: each with its preconditions (the models it
reads learned the task) and its thresholds' keys; the length claims of the literature are
generated from one table. The spec (``spec.py``) lists them; ``compute.py`` measures the
evidence they read."""

from typing import NamedTuple

from posenc.claims import Check, Claim

# Press et al. (2022) train T5's bias at L_train >= 4x its maximum distance (extrapolation.t5_mild
# follows them): the LM's L_train must be at least this multiple of encoding.t5_bias.max_distance.
T5_TRAIN_RATIO = 4
# Li et al. (2024) train FIRE at 2048 and evaluate up to 8192: extrapolation.fire_best_long is
# judged at this multiple of L_train, theirs, and shows the other lengths beside it.
FIRE_JUDGED_AT = 4


# Preconditions (posenc.claims.Claim.requires): an LM claim reads models that learned the task
# (below the interpolated trigram at L_train), a passkey claim encodings with enough seeds that
# learned it at N. Either missing: the claim is inconclusive, with the numbers.
LEARNED = Check(
    "lm_learned_margin",
    ">",
    "lm_learned_margin_bits",
    label="bits/char below the interpolated trigram at L_train",
)


def learned(*encodings: str) -> tuple[Check, ...]:
    """The LMs of ``encodings`` learned: each below the interpolated trigram at L_train."""
    return tuple(
        Check(
            f"lm_learned_margin.{e}",
            ">",
            "lm_learned_margin_bits",
            label=f"{e} bits/char below the interpolated trigram at L_train",
        )
        for e in encodings
    )


def learners(evidence: str, who: str) -> tuple[Check, ...]:
    """Enough of ``who``'s passkey seeds learned the task at N."""
    return (
        Check(
            evidence,
            ">=",
            "passkey_min_learners",
            label=f"seeds of {who} that learned the task at N",
        ),
    )


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


# What each direction measures on the same scored tokens (mode b), how it is compared with its
# threshold, the check's label, and the losses shown beside it; {e} is the encoding, {other}
# the one it is compared with.
CHANGE_SHOWS = ("bits_at_1x.{e}", "bits_at_longest.{e}")
DIRECTIONS = {
    "degrades": ("far_change.{e}", ">=", "{e} bits/char increase", CHANGE_SHOWS),
    "degrades_mildly": ("far_change.{e}", "<", "{e} bits/char increase", CHANGE_SHOWS),
    "flat": ("far_change.{e}", "<=", "{e} bits/char change", CHANGE_SHOWS),
    "beats_long": (
        "far_lead.{e}.{other}",
        ">",
        "{other} minus {e} bits/char",
        ("bits_at_longest.{e}", "bits_at_longest.{other}"),
    ),
    "degrades_less": (
        "far_change_lead.{e}.{other}",
        ">",
        "{other}'s rise minus {e}'s rise, bits/char",
        ("far_change.{e}", "far_change.{other}"),
    ),
}

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
        "alibi_beats_sinusoidal_long",
        ("alibi", "sinusoidal"),
        "beats_long",
        "beats_margin_bits",
        "At {longest}x L_train ALiBi's loss (mode b) is lower than sinusoidal's (Press et al.: "
        "18.31 vs 406 ppl).",
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
        "xpos_degrades_less",
        ("xpos", "rope"),
        "degrades_less",
        "beats_margin_bits",
        "xPos degrades less than RoPE beyond L_train: its bits/char (mode b) rise less from 1x to "
        "{longest}x L_train than RoPE's (Sun et al. 2022).",
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
        "hybrid_beats_rope_long",
        ("rope_nope_hybrid", "rope"),
        "beats_long",
        "beats_margin_bits",
        "RoPE layers interleaved with NoPE layers extrapolate better than RoPE alone: at "
        "{longest}x L_train the hybrid's loss (mode b) is lower than RoPE's (Yang et al. 2025 "
        "find their RoPE/NoPE hybrid beats full RoPE on long-context tasks; Llama 4 and SmolLM3 "
        "ship it). Here the hybrid has two layers, the second NoPE.",
        ("yang2025", "su2021"),
    ),
    LengthClaim(
        "p_rope_degrades_less",
        ("rope_proportional", "rope"),
        "degrades_less",
        "beats_margin_bits",
        "p-RoPE degrades less than RoPE beyond L_train: its bits/char (mode b) rise less from "
        "1x to {longest}x L_train than RoPE's (Barbero et al. 2024: removing the lowest "
        "frequencies keeps the semantic channels stable over long distances).",
        ("barbero2024", "su2021"),
    ),
)


def length_claim(row: LengthClaim) -> Claim:
    """The claim of one row of :data:`LITERATURE`, on the models that learned the LM task."""
    evidence, op, label, shows = DIRECTIONS[row.direction]
    names = dict(zip(("e", "other"), row.encodings))
    return Claim(
        f"extrapolation.{row.claim}",
        row.statement,
        kind="empirical",
        requires=learned(*row.encodings),
        checks=(Check(evidence.format(**names), op, row.threshold, label=label.format(**names)),),
        shows=tuple(s.format(**names) for s in shows) + row.also_shows,
        references=row.references,
        unless="smoke_test",
    )


# By id: the ledger lists each where it stands among the other claims, in the order it always had.
LENGTH_CLAIMS = {row.claim: length_claim(row) for row in LITERATURE}


# Every claim of the section, in the order the report lists them.
CLAIMS = (
    Claim(
        "extrapolation.in_distribution_parity",
        "At L_train = {train_len}, each of the four encodings Press et al. compared "
        "(sinusoidal, rotary, T5 bias, ALiBi) has a validation loss (mode a) close to the "
        "best one's ({parity_best}, {parity_best_bits} bits/char). Press et al.'s Table 2 "
        "has them within 2 % in word perplexity (19.65-20.07 ppl): 0.03 bits per word, "
        "under 0.01 bits per character at WikiText-103's ~5.6 characters per word; the "
        "margin here, in bits/char, allows for a much smaller model trained far shorter.",
        kind="empirical",
        requires=learned("sinusoidal", "rope", "t5_bias", "alibi"),
        checks=tuple(
            Check(
                f"behind_best.{e}",
                "<=",
                "parity_margin_bits",
                label=f"{e} bits/char behind the best",
            )
            for e in ("sinusoidal", "rope", "t5_bias", "alibi")
        ),
        shows=("parity_best_bits", "behind_best.none", "behind_best.learned"),
        references=("press2022",),
        unless="smoke_test",
    ),
    Claim(
        "extrapolation.learned_undefined_beyond_lmax",
        "A learned table of L_max = L_train rows gives a loss at L_train and reports every "
        "longer length as undefined (no rows beyond L_max), not a crash and not a number.",
        kind="software",
        checks=(
            Check("defined_at_train.learned", value=True, label="learned defined at L_train"),
            Check(
                "defined_beyond_train.learned",
                value=False,
                label="learned defined past L_train",
            ),
        ),
        shows=("bits_at_1x.learned",),
        references=("devlin2019",),
    ),
    LENGTH_CLAIMS["sinusoidal_degrades"],
    LENGTH_CLAIMS["rope_degrades"],
    LENGTH_CLAIMS["alibi_flat"],
    LENGTH_CLAIMS["alibi_beats_sinusoidal_long"],
    LENGTH_CLAIMS["kerple_flat"],
    Claim(
        "extrapolation.fire_best_long",
        f"At {FIRE_JUDGED_AT}x L_train, the longest ratio Li et al. (2024) evaluate (trained "
        "at 2048, tested up to 8192), FIRE's loss (mode b) is at least as good as ALiBi's "
        "and Kerple's and better than RoPE's and T5's (Li et al.: FIRE extrapolates best "
        "among these on long-context language modelling). The same differences at every "
        "other length past L_train are shown beside; they decide nothing.",
        kind="empirical",
        requires=learned("fire", "alibi", "kerple", "rope", "t5_bias"),
        checks=tuple(
            Check(
                f"lead_by_length.{a}.{b}.{FIRE_JUDGED_AT}x",
                op,
                threshold,
                label=f"{b} minus {a} bits/char at {FIRE_JUDGED_AT}x",
            )
            for a, b, op, threshold in (
                ("alibi", "fire", "<=", "match_margin_bits"),
                ("kerple", "fire", "<=", "match_margin_bits"),
                ("fire", "rope", ">", "beats_margin_bits"),
                ("fire", "t5_bias", ">", "beats_margin_bits"),
            )
        ),
        shows=(
            "lead_by_length.alibi.fire",
            "lead_by_length.kerple.fire",
            "lead_by_length.fire.rope",
            "lead_by_length.fire.t5_bias",
        ),
        references=("li2024",),
        unless="smoke_test",
    ),
    LENGTH_CLAIMS["xpos_degrades_less"],
    Claim(
        "extrapolation.ntk_helps_rope",
        "NTK-aware base scaling, applied at evaluation without fine-tuning, lowers RoPE's "
        "loss (mode b) at every length past L_train, not only at 2x.",
        kind="empirical",
        requires=learned("rope"),
        checks=(
            Check(
                "extension_gain.rope.ntk",
                ">",
                "ntk_gain_bits",
                label="rope minus rope+NTK bits/char",
            ),
        ),
        shows=("bits_at_2x.rope", "bits_at_2x.rope+NTK", "bits_at_2x.rope+PI"),
        references=("bloc97_2023", "peng2023"),
        unless="smoke_test",
    ),
    LENGTH_CLAIMS["t5_mild"],
    LENGTH_CLAIMS["nope_flat"],
    LENGTH_CLAIMS["hybrid_beats_rope_long"],
    LENGTH_CLAIMS["p_rope_degrades_less"],
    Claim(
        "extrapolation.alibi_passkey_long",
        "ALiBi's extrapolation carries over to retrieval: its passkey accuracy stays high "
        "at every tested length, up to the longest. Its bias penalises attention linearly "
        "with distance, so a key far from the query may be out of its reach.",
        kind="empirical",
        requires=learners("passkey_learners.alibi", "alibi"),
        checks=(
            Check(
                "passkey_accuracy.alibi",
                ">=",
                "passkey_min_accuracy",
                label="alibi passkey accuracy",
            ),
        ),
        references=("press2022", "mohtashami2023"),
        unless="smoke_test",
    ),
    Claim(
        "extrapolation.synthetic_length_generalization",
        "On passkey retrieval trained on lengths up to N, the best encoding "
        "({passkey_best}) keeps its exact-match accuracy at {passkey_at}N (chance "
        "{passkey_chance}); Kazemnejad et al. find some encodings generalise, and NoPE "
        "competitive.",
        kind="empirical",
        requires=learners("passkey_best_learners", "the best encoding"),
        checks=(
            Check(
                "passkey_best_accuracy",
                ">=",
                "passkey_min_accuracy",
                label="the best accuracy",
            ),
        ),
        # The best encodings' accuracies at passkey_at N are the checked values; every
        # other accuracy up to that length, and chance, are shown beside them.
        shows=("passkey_other_accuracies", "passkey_chance"),
        references=("kazemnejad2023", "mohtashami2023"),
        unless="smoke_test",
    ),
    Claim(
        "extrapolation.randomized_raises_passkey",
        "Randomized positions raise passkey accuracy at {passkey_at}N: an encoding trained "
        "and tested on sorted random positions from [0, L_rand) retrieves the key more often "
        "than the same encoding trained on 0..n-1 (Ruoss et al. 2023: +12 % accuracy on "
        "average over their tasks, for every encoding they tried).",
        kind="empirical",
        requires=learners("randomized_pair_learners", "both models"),
        checks=(
            Check(
                "randomized_gain",
                ">",
                "randomized_gain_min",
                label="accuracy with minus without randomized positions",
            ),
        ),
        shows=("randomized_accuracy",),
        references=("ruoss2023",),
        unless="smoke_test",
    ),
    Claim(
        "extrapolation.no_memorisation",
        "No model memorised its training text: the gap between its validation and training "
        "bits/char at L_train (mode a) grew by little over the passes after the first "
        "(final model minus the same model after one pass over the text, on the same "
        "windows, mean over seeds), for every encoding. The gap itself is shown beside: the "
        "held-out split is drawn from the same text (interleaved whole blocks, with every "
        "stretch that repeats training text removed), but its sampling alone leaves the gap "
        "an interval about as wide as the threshold, while the growth is paired window by "
        "window; extrapolation numbers mean something only if the model generalises.",
        kind="empirical",
        requires=(LEARNED,),
        checks=(
            Check(
                "memorisation_growth",
                "<=",
                "memorisation_gap_bits",
                label="growth of validation minus training bits/char after the first pass",
            ),
        ),
        shows=("memorisation_gap",),
        unless="smoke_test",
    ),
    Claim(
        "extrapolation.entropy_predicts_loss",
        "Attention dilution explains the loss rise past L_train: across the encodings whose "
        "LMs learned, the rise of the attention's normalised entropy from 1x ranks with the "
        "rise of the loss (Spearman's rho), at every length past L_train. The other standard "
        "explanation, attention to relative distances never seen in training, is ranked the "
        "same way beside it (Chiang and Cholak 2022 trace the dilution to softmax over more "
        "keys; log-n scaling is their remedy).",
        kind="empirical",
        requires=(
            Check(
                "mechanism_encoding_count",
                ">=",
                "mechanism_min_encodings",
                label="encodings whose LMs learned, ranked",
            ),
        ),
        checks=(
            Check(
                "entropy_rank_correlation",
                ">=",
                "mechanism_rank_min",
                label="Spearman's rho, entropy rise against bits/char rise",
            ),
        ),
        shows=("far_mass_rank_correlation",),
        references=("chiang2022",),
        unless="smoke_test",
    ),
    Claim(
        "extrapolation.logn_lowers_long_loss",
        "Log-n query scaling (q x log_L_train(n) past L_train, n the keys a query sees; Chiang "
        "and Cholak 2022, Qwen's use_logn_attn) lowers the loss at the longest length, without "
        "training, for every encoding whose LMs learned; it leaves the model unchanged up to "
        "L_train. The share of the entropy rise it removes is shown beside.",
        kind="empirical",
        requires=(LEARNED,),
        checks=(
            Check(
                "logn_gain",
                ">",
                "beats_margin_bits",
                label="plain minus log-n bits/char at the longest length",
            ),
        ),
        shows=("logn_entropy_rise_removed",),
        references=("chiang2022",),
        unless="smoke_test",
    ),
)
