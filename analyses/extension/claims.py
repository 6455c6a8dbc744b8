"""The extension section's claims, as data: each with its precondition (its base models
learned the language) and its thresholds' keys. The spec (``spec.py``) lists them;
``compute.py`` measures the evidence they read. Every claim on a fine-tuned method compares it
with the continued-training control (the spec's ``CONTROL``; its docstring says why).

**How fast a method fine-tunes** (``yarn_reaches_control_sooner``). Peng et al. 2023 call YaRN
efficient in the sense of fewer steps (and tokens) to the same perplexity, from each method's
own start, the zero-shot head start included: a method that needs no steps needs none. So the
speed here is the number of steps a method needs at s x L_train to reach the continued-training
control's loss at L_train after as many steps (the loss it would ideally keep), within
``recover_margin_bits``, the margin that also says PI has recovered: one meaning of "at the
control's loss" for both claims. A step counts as reached when the whole interval of the gap is
within the margin (the evidence ``steps_to_control``). YaRN reaches it sooner when, at the first
step at which it has reached it, PI had not at that step nor at any before (the whole interval
of each of PI's gaps above the margin). Chosen over the alternatives: the fall of each loss from
its own start, judged before, could hardly pass (a method that starts near the control, as YaRN
can zero-shot, has almost nothing left to fall); the losses after the first snapshot compared
directly say where the methods stand, not how soon they reach a level; a fixed loss level typed
into the config would mean nothing on another corpus. A claim on the steps themselves would
interpolate between a few snapshots; here the snapshots are the resolution, and two methods that
reach the control at the same snapshot are not told apart (the claim fails: sooner is not
shown)."""

from posenc.claims import Check, Claim

# Precondition of every claim about trained models: their base models learned the language
# (below the interpolated trigram at L_train), with the extrapolation section's threshold, so
# that it is written once; else the claim is inconclusive, not a finding either way.
BASE_LEARNED = (
    Check(
        "base_learned_margin",
        ">",
        "extrapolation.lm_learned_margin_bits",
        label="base model bits/char below the interpolated trigram at L_train",
    ),
)

# Precondition of the stretch claims, per encoding: the same test as BASE_LEARNED, on every
# stretched LM (BASE_LEARNED covers the RoPE-family models of the other claims only).
STRETCH_LEARNED = (
    Check(
        "stretch_learned_margin",
        ">",
        "extrapolation.lm_learned_margin_bits",
        label="base model bits/char below the interpolated trigram at L_train",
    ),
)

# Every claim of the section, in the order the report lists them.
CLAIMS = (
    Claim(
        "extension.scale_one_is_plain",
        "At s = 1 every method is plain RoPE: the same inverse frequencies, an attention "
        "factor of 1, and the same bits/char at L_train.",
        kind="software",
        checks=(
            Check(
                "scale_one_frequency_gap",
                "<=",
                "identity_rtol",
                label="largest relative change of a frequency or the attention factor",
            ),
            Check(
                "scale_one_bits_gap",
                "<=",
                "identity_tol_bits",
                label="largest change of a window's bits/char",
            ),
        ),
        references=("chen2023", "peng2023"),
    ),
    Claim(
        "extension.dynamic_plain_within_train",
        "Dynamic NTK scaling leaves RoPE unchanged up to L_train: with a factor s > 1, "
        "its frequencies and bits/char at L_train are plain RoPE's (transformers' "
        "'dynamic' rescales the base only past the original length).",
        kind="software",
        checks=(
            Check(
                "dynamic_frequency_gap",
                "<=",
                "identity_rtol",
                label="largest relative change of a frequency",
            ),
            Check(
                "dynamic_bits_gap",
                "<=",
                "identity_tol_bits",
                label="largest change of a window's bits/char",
            ),
        ),
        references=("bloc97_2023", "peng2023"),
    ),
    Claim(
        "extension.pi_recovers_to_control",
        "A short fine-tune at s x L_train brings Position Interpolation's loss there back "
        "to about that of the plain model trained on for the same steps at L_train, or "
        "below it (Chen et al. 2023: within 1000 steps; the perplexity is recovered within "
        "about 200).",
        kind="empirical",
        requires=BASE_LEARNED,
        checks=(
            Check(
                "pi_recovery_gap",
                "<=",
                "recover_margin_bits",
                label="fine-tuned PI at s x L_train minus the continued-training control at "
                "L_train, after the same steps",
            ),
        ),
        shows=("pi_start_gap", "control_gain"),
        references=("chen2023",),
        unless="smoke_test",
    ),
    Claim(
        "extension.yarn_zero_shot_beats_pi_and_ntk",
        "Without fine-tuning, YaRN's loss is lower than PI's and NTK-aware scaling's at "
        "2x-4x L_train (Peng et al. 2023, Table 1 and Figure 1).",
        kind="empirical",
        requires=BASE_LEARNED,
        checks=(
            Check(
                "yarn_zero_shot_lead.pi",
                ">",
                "beats_margin_bits",
                label="PI minus YaRN bits/char",
            ),
            Check(
                "yarn_zero_shot_lead.ntk",
                ">",
                "beats_margin_bits",
                label="NTK minus YaRN bits/char",
            ),
        ),
        references=("peng2023",),
        unless="smoke_test",
    ),
    Claim(
        "extension.yarn_reaches_control_sooner",
        "Fine-tuned at s x L_train, YaRN reaches the loss of the plain model trained on for "
        "as many steps at L_train in fewer steps than PI: at the first fine-tuning step at "
        "which YaRN is there, PI is not, nor was it at any step before (Peng et al. 2023: "
        "the same perplexity with 10x fewer tokens and 2.5x fewer steps than earlier "
        "methods; its zero-shot head start counts, as a step it does not need).",
        kind="empirical",
        requires=BASE_LEARNED,
        checks=(
            Check(
                "yarn_reach_gap",
                "<=",
                "recover_margin_bits",
                label="fine-tuned YaRN at s x L_train minus the continued-training control "
                "at L_train, at the first step it reaches it (else the last)",
            ),
            Check(
                "pi_gap_until_yarn_reaches",
                ">",
                "recover_margin_bits",
                label="fine-tuned PI at s x L_train minus the continued-training control at "
                "L_train, at that step and every one before",
            ),
        ),
        shows=("steps_to_control", "yarn_head_start", "control_gain"),
        references=("peng2023", "chen2023"),
        unless="smoke_test",
    ),
    Claim(
        "extension.finetuned_beats_zero_shot_yarn",
        "At s x L_train, each method fine-tuned there ends below YaRN without fine-tuning "
        "(the zero-shot method Peng et al. 2023 find best), by more than continued training "
        "alone lowers the plain model's loss at L_train over the same steps: fine-tuning at "
        "the longer length adds more than a training-free stretch and the extra steps.",
        kind="empirical",
        requires=BASE_LEARNED,
        checks=(
            Check(
                "finetuned_lead_over_zero_shot_yarn",
                ">",
                "beats_margin_bits",
                label="zero-shot YaRN minus the fine-tuned method, bits/char at s x L_train, "
                "less the continued-training control's fall at L_train",
            ),
        ),
        shows=("control_gain",),
        references=("peng2023", "chen2023"),
        unless="smoke_test",
    ),
    Claim(
        "extension.yarn_finetuned_below_continued_training",
        "Fine-tuned YaRN at s x L_train has a lower loss than the plain model trained on "
        "for the same steps at L_train: once fine-tuned, the longer context is worth more "
        "than the extra steps alone (Peng et al. 2023: the perplexity of fine-tuned YaRN "
        "models falls as the context grows).",
        kind="empirical",
        requires=BASE_LEARNED,
        checks=(
            Check(
                "yarn_continued_gap",
                ">",
                "beats_margin_bits",
                label="continued-training control at L_train minus fine-tuned YaRN at s x "
                "L_train, after the same steps",
            ),
        ),
        shows=("control_gain",),
        references=("peng2023",),
        unless="smoke_test",
    ),
    Claim(
        "extension.llama4_temperature_lowers_long_loss",
        "Llama 4's query temperature, t = 1 + {llama4_beta} ln(floor((p + 1) / L0) + 1) on "
        "the logits, lowers the loss at the longest length without training, for every "
        "encoding, each judged only where its LMs learned. Where a model has Llama 4's layout "
        "(layers without position beside RoPE layers that attend within a window: the RNoPE "
        "hybrid) it is applied as Llama 4 applies it, to the NoPE layers only with L0 = the "
        "window, as Llama 4's L0 is the chunk its RoPE layers attend within; on every other "
        "encoding it is Llama-4-shaped: every layer, L0 = L_train, out of the setting Meta "
        "ships it in (Llama 4 trains with it on; here it is applied zero-shot).",
        kind="empirical",
        requires=STRETCH_LEARNED,
        checks=(
            Check(
                "llama4_long_gain",
                ">",
                "beats_margin_bits",
                label="plain minus Llama 4's (or the Llama-4-shaped) temperature, bits/char at "
                "the longest length",
            ),
        ),
        shows=("logn_long_gain",),
        references=("meta2025llama4", "yang2025"),
        unless="smoke_test",
    ),
    Claim(
        "extension.whole_logit_temperature_beats_query_only",
        "On an encoding whose scores are q.k + b(i - j), a content logit plus a distance bias "
        "(ALiBi, T5's bias, KERPLE, FIRE), a query temperature t that scales the whole logit, "
        "t (q.k + b), has a lower loss at the longest length than the same t on the query "
        "alone, t q.k + b. Log-n scaling is argued for as a softmax temperature (Chiang and "
        "Cholak 2022, 'Overcoming a Theoretical Limitation of Self-Attention'; Su 2021's "
        "entropy-invariance argument for the scale of attention), a factor on every logit; on "
        "q alone it sharpens the "
        "content while the bias stays, so the distance penalty falls by 1/t against the "
        "content and attention leaks to far keys: the recency these encodings rely on is "
        "undone.",
        kind="empirical",
        requires=STRETCH_LEARNED,
        checks=(
            Check(
                "query_only_deficit",
                ">",
                "beats_margin_bits",
                label="the temperature on q alone minus on the whole logit, bits/char at the "
                "longest length",
            ),
        ),
        references=("chiang2022", "press2022"),
        unless="smoke_test",
    ),
)
