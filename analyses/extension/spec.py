"""Stretching a trained RoPE model's context: Position Interpolation, NTK-aware scaling, dynamic
NTK, YaRN and Llama 3's scaling, applied to the extrapolation section's character LMs without
fine-tuning (zero-shot) and after a short fine-tune at s x L_train. Torch-free: read at parse
time. The fine-tune and evaluation stages are in ``rules.smk``; this spec is the aggregate.

**The continued-training control.** The base models stopped training at some step; any
further steps lower their loss a little wherever they are scored, extension or not. So a
fine-tuned method is compared with the same base model fine-tuned with the same recipe (steps,
learning rate, batches, snapshots, seed) without any scaling, on windows of L_train
(:data:`CONTROL`: the "plain" method at s = 1, one per base model, whatever the scales),
evaluated as the methods are. Every claim that a fine-tuned method gains, recovers or lands
below the plain model compares it with this control after the same number of steps: what
continued training alone gives is not the method's. The control is scored at L_train, where it
trains: there it measures what the extra steps are worth. At s x L_train it is plain RoPE past
its training length (the extrapolation section measures how far its loss rises there): it is
shown, but no claim is judged against it, since beating a model where it was never trained says
little of what a method adds. What a fine-tune at s x L_train adds is judged instead
against YaRN there without fine-tuning (``finetuned_beats_zero_shot_yarn``), a stretch built
for that length and the zero-shot method Peng et al. find best, less the control's fall at
L_train over as many steps: what the extra steps alone would have given it, were the two
additive.

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

from posenc import paths
from posenc.analyses.extension.longrope import published_profile
from posenc.analysis import AnalysisSpec, Figure, Resources, Table
from posenc.claims import Check, Claim
from posenc.rope_scaling import METHODS

# The continued-training control: (method, scale) of the fine-tune rules. "plain" is no scaling
# to every stage (stages.method_rope), s = 1 fine-tunes on windows of L_train.
CONTROL = ("plain", 1)


def _finetunes(config: dict) -> list[tuple[str, str, int, int]]:
    """(encoding, method, scale, seed) of every fine-tune: each method at each scale, and the
    continued-training control once per base model."""
    ext, seeds = config["extension"], config["extrapolation"]["lm"]["seeds"]
    methods = [
        (e, method, scale, seed)
        for e in ext["encodings"]
        for method in ext["methods"]
        for scale in ext["finetune"]["scales"]
        for seed in seeds
    ]
    return methods + [(e, *CONTROL, seed) for e in ext["encodings"] for seed in seeds]


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


def stretch_encodings(config: dict) -> list[str]:
    """The trained LMs the zero-shot stretches (temperature, LongRoPE) apply to: every encoding
    the extrapolation section trains, or the ones ``extension.stretch.encodings`` lists."""
    chosen = config["extension"]["stretch"]["encodings"]
    return list(config["encodings"]) if chosen == "all" else list(chosen)


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


def inputs(config: dict) -> dict[str, list[str]]:
    """Every base model's zero-shot evaluation, every fine-tune's evaluation, training log and
    timings (the outputs of the stages in ``rules.smk``)."""
    ext, seeds = config["extension"], config["extrapolation"]["lm"]["seeds"]
    runs = [dict(zip(("encoding", "method", "scale", "seed"), r)) for r in _finetunes(config)]
    return {
        "zero_shot": [
            paths.EXT_ZERO_SHOT.format(encoding=e, seed=s) for e in ext["encodings"] for s in seeds
        ],
        "finetune_evals": [paths.EXT_EVALUATION.format(**run) for run in runs],
        "train_logs": [paths.EXT_TRAIN_LOG.format(**run) for run in runs],
        "timings": [paths.EXT_TIMING.format(**run) for run in runs],
        "stretch": [
            paths.EXT_STRETCH.format(encoding=e, seed=s)
            for e in stretch_encodings(config)
            for s in seeds
        ],
        # The base models' learned status, as the extrapolation section judged it.
        "base_evidence": [paths.METRICS.format(analysis="extrapolation")],
    }


def check_config(config: dict) -> list[str]:
    """Cross-field rules of the extension section (the schema checks each field alone)."""
    ext = config.get("extension")
    if not ext:
        return []
    if "extrapolation" not in config:
        return ["config key extension: needs the extrapolation section, whose models it stretches"]
    problems = []
    unknown = [m for m in ext["methods"] if m not in METHODS]
    if unknown:
        problems.append(
            f"config key extension.methods = {ext['methods']}: unknown {', '.join(unknown)} "
            f"(known: {', '.join(METHODS)})"
        )
    for method in ext["params"]:
        if method not in METHODS:
            problems.append(
                f"config key extension.params.{method}: not a method (known: {', '.join(METHODS)})"
            )
    untrained = [e for e in ext["encodings"] if e not in config["encodings"]]
    if untrained:
        problems.append(
            f"config key extension.encodings = {ext['encodings']}: {', '.join(untrained)} not in "
            "encodings, so the extrapolation section trains no such model to stretch"
        )
    for key, multipliers in (
        ("zero_shot.multipliers", ext["zero_shot"]["multipliers"]),
        ("finetune.eval_multipliers", ext["finetune"]["eval_multipliers"]),
    ):
        if 1 not in multipliers and key.startswith("zero_shot"):
            problems.append(
                f"config key extension.{key} = {multipliers}: must include 1 (at s = 1 every "
                "method must be plain RoPE)"
            )
    problems += _check_stretch(config, ext)
    finetune = ext["finetune"]
    for scale in finetune["scales"]:
        if scale not in finetune["eval_multipliers"]:
            problems.append(
                f"config key extension.finetune.scales = {finetune['scales']}: {scale} is not in "
                f"extension.finetune.eval_multipliers = {finetune['eval_multipliers']} (a model "
                "fine-tuned at s x L_train is evaluated there)"
            )
    steps = finetune["train"]["steps"]
    if max(finetune["snapshots"]) != steps:
        problems.append(
            f"config key extension.finetune.snapshots = {finetune['snapshots']}: the last must be "
            f"extension.finetune.train.steps = {steps} (the fine-tune's end)"
        )
    return problems


def _check_stretch(config: dict, ext: dict) -> list[str]:
    problems = []
    stretch = ext["stretch"]
    if stretch["encodings"] != "all":
        untrained = [e for e in stretch["encodings"] if e not in config["encodings"]]
        if untrained:
            problems.append(
                f"config key extension.stretch.encodings = {stretch['encodings']}: "
                f"{', '.join(untrained)} not in encodings (no trained LM to stretch)"
            )
    try:
        published_profile(stretch["longrope_profile"])
    except (ValueError, KeyError) as err:
        problems.append(f"config key extension.stretch.longrope_profile: {err}")
    low, high = ext["thresholds"]["longrope_lead_multipliers"]
    if low > high:
        problems.append(
            f"config key extension.thresholds.longrope_lead_multipliers = [{low}, {high}]: "
            "the first must not exceed the second"
        )
    return problems


def check_registry(config: dict, encodings: dict[str, dict]) -> list[str]:
    """The methods rescale RoPE's frequencies: each stretched encoding must declare its
    frequencies rescalable (``EncodingSpec.rescalable``)."""
    ext = config.get("extension")
    if not ext:
        return []
    other = [e for e in ext["encodings"] if e in encodings and not encodings[e]["rescalable"]]
    if not other:
        return []
    rescalable = [e for e, meta in encodings.items() if meta["rescalable"]]
    return [
        f"config key extension.encodings = {ext['encodings']}: {', '.join(other)} declares no "
        f"rescalable frequencies ({', '.join(rescalable)} do), so "
        f"{', '.join(ext['methods'])} have nothing to rescale"
    ]


SPEC = AnalysisSpec(
    id="extension",
    title="Context extension: stretching trained models",
    csvs=("frequencies", "zero_shot_bits", "finetune_bits", "stretch_bits"),
    inputs=inputs,
    uses=("seed", "device", "encodings", "encoding", "extrapolation"),
    figures={
        "zero_shot": Figure(
            "Validation bits/char (mode b: the same final segment of every window) against "
            "evaluation length for the RoPE models trained at L_train = {train_len} (dashed "
            "grey line), each method applied without fine-tuning at scale s = L / L_train; "
            "line: mean over {n_seeds} seeds, band: its {interval_percent}% interval "
            "(Student-t over seeds and fragments of text)."
        ),
        "stretch": Figure(
            "Zero-shot stretches of every trained LM: validation bits/char (mode b) against "
            "evaluation length, one panel per encoding; plain, log-n query scaling, Llama 4's "
            "query temperature (beta = {llama4_beta}, L0 = L_train) and, where the frequencies "
            "are rescalable, LongRoPE with {longrope_profile}'s published long factors placed "
            "on our pairs; line: mean over {n_seeds} seeds, band: its {interval_percent}% "
            "interval (Student-t over seeds and fragments of text)."
        ),
        "finetune": Figure(
            "Validation bits/char (mode b) at s x L_train against fine-tuning steps at s x "
            "L_train, one panel per scale s, one line per method; step 0 is the method "
            "without fine-tuning. Grey line: continued training, no scaling: the plain model "
            "fine-tuned with the same recipe on windows of L_train, scored at L_train (its "
            "step 0 is the plain model where it was trained); band: {interval_percent}% "
            "interval over seeds and windows."
        ),
    },
    tables={
        "zero_shot": Table(
            "Zero-shot bits/char (mode b) by evaluation length, each method at s = L / "
            "L_train: mean over seeds [{interval_percent}% interval].",
            csv="zero_shot_bits",
        ),
        "finetune": Table(
            "Fine-tuned bits/char (mode b) at s x L_train and beyond, by method, scale and "
            "fine-tuning step, and the control, continued training with no scaling (s = 1: "
            "the same fine-tune on windows of L_train), at L_train and beyond: mean over seeds "
            "[{interval_percent}% interval].",
            csv="finetune_bits",
        ),
        "stretch": Table(
            "Zero-shot stretches by encoding and arm (mode b): bits/char at each evaluation "
            "length, mean over seeds [{interval_percent}% interval], and, for each arm, its "
            "difference from the plain model at the longest length (negative: lower loss).",
            csv="stretch_bits",
        ),
        "frequencies": Table(
            "What each method does to RoPE's {pairs} frequency pairs (head width {head_dim}, "
            "base {base}, L_train = {train_len}) at each fine-tuning scale: the smallest and "
            "largest ratio of its inverse frequency to the plain one, and its attention factor. "
            "Every row's inverse frequencies are published in full with the section's results, "
            "as data (the report's data download, under “frequencies”).",
            csv="frequencies",
        ),
        "yarn_rounding": Table(
            "YaRN as its authors' code (and transformers) computes it, a ramp linear in the "
            "pair index with its ends rounded to whole pairs, against the paper's ramp, linear "
            "in the rotations r = L / lambda: the largest relative difference of an inverse "
            "frequency, at which pair, how many pairs differ; and the part the rounding alone "
            "makes (the code's ramp with its ends rounded or not)."
        ),
        "training": Table(
            "Fine-tuning runs, the continued-training control's among them: device, "
            "throughput, wall time (timings)."
        ),
    },
    timing_tables=("training",),
    claims=(
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
            "extension.longrope_beats_pi_zero_shot",
            "Without fine-tuning, LongRoPE's per-pair rescaling (a published profile, "
            "{longrope_profile}'s long factors, placed on our pairs; the search itself does not "
            "run at this scale) has a lower loss than Position Interpolation at "
            "{longrope_low}x-{longrope_high}x L_train (Ding et al. 2024: the non-uniform "
            "rescaling alone extends 8x without fine-tuning).",
            kind="empirical",
            requires=BASE_LEARNED,
            checks=(
                Check(
                    "longrope_zero_shot_lead",
                    ">",
                    "beats_margin_bits",
                    label="PI minus LongRoPE bits/char",
                ),
            ),
            references=("ding2024", "chen2023"),
            unless="smoke_test",
        ),
        Claim(
            "extension.llama4_temperature_lowers_long_loss",
            "Llama 4's query temperature, q x (1 + {llama4_beta} ln(floor((p + 1) / L0) + 1)) "
            "with L0 = "
            "L_train, lowers the loss at the longest length without training, for every "
            "encoding, each judged only where its LMs learned (Meta ships it in Llama 4 for "
            "length generalisation, on its NoPE layers; here on every layer).",
            kind="empirical",
            requires=STRETCH_LEARNED,
            checks=(
                Check(
                    "llama4_long_gain",
                    ">",
                    "beats_margin_bits",
                    label="plain minus Llama 4 temperature, bits/char at the longest length",
                ),
            ),
            shows=("logn_long_gain",),
            references=("meta2025llama4",),
            unless="smoke_test",
        ),
    ),
    references=(
        "chen2023",
        "bloc97_2023",
        "peng2023",
        "dubey2024",
        "su2021",
        "davison1997",
        "ding2024",
        "chiang2022",
        "meta2025llama4",
    ),
    resources=Resources(threads=1, mem_mb=2000, runtime=10),
    checks=(check_config,),
    registry_checks=(check_registry,),
    encodings_of=lambda config: list(
        dict.fromkeys([*config["extension"]["encodings"], *stretch_encodings(config)])
    ),
)
