"""Stretching a trained RoPE model's context: Position Interpolation, NTK-aware scaling, dynamic
NTK, YaRN and Llama 3's scaling, applied to the extrapolation section's character LMs without
fine-tuning (zero-shot) and after a short fine-tune at s x L_train. Torch-free: read at parse
time. The fine-tune and evaluation stages are in ``rules.smk``; this spec is the aggregate, its
claims are in ``claims.py`` and its config checks in ``checks.py``.

**The continued-training control.** The base models stopped training at some step; further
steps change their loss wherever they are scored, extension or not (lower it, or at a learning
rate above the one training ended at, raise it: the report says which, measured). So a
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
additive."""

from posenc import paths, variants
from posenc.analyses.extension.checks import check_config, check_registry
from posenc.analyses.extension.claims import CLAIMS
from posenc.analysis import AnalysisSpec, Figure, Resources, Table

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


def stretch_encodings(config: dict) -> list[str]:
    """:func:`posenc.variants.stretched_lms`: the LMs the zero-shot stretches apply to."""
    return variants.stretched_lms(config)


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
            "evaluation length, one panel per encoding; plain, log-n temperature, Llama 4's "
            "temperature (beta = {llama4_beta}) as Llama 4 applies it where a model has its "
            "layout (its NoPE layers, L0 = the RoPE layers' window) and Llama-4-shaped "
            "elsewhere (every layer, L0 = L_train), each on the whole logit, an additive bias "
            "included; dotted, on the additive-bias encodings, the same temperature on the "
            "query alone (a contrast); and, where the frequencies "
            "are rescalable, LongRoPE with {longrope_profile}'s published long factors placed "
            "on our pairs; line: mean over {n_seeds} seeds, band: its {interval_percent}% "
            "interval (Student-t over seeds and fragments of text).",
            placement="appendix",
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
            placement="appendix",
        ),
        "stretch": Table(
            "Zero-shot stretches by encoding and arm (mode b): bits/char at each evaluation "
            "length, mean over seeds [{interval_percent}% interval], and, for each arm, its "
            "difference from the plain model at the longest length (negative: lower loss).",
            csv="stretch_bits",
            placement="appendix",
        ),
        "frequencies": Table(
            "What each method does to RoPE's {pairs} frequency pairs (head width {head_dim}, "
            "base {base}, L_train = {train_len}) at each fine-tuning scale: the smallest and "
            "largest ratio of its inverse frequency to the plain one, and its attention factor. "
            "Every row's inverse frequencies are published in full with the section's results, "
            "as data (the report's data download, under “frequencies”).",
            csv="frequencies",
            placement="appendix",
        ),
        "yarn_rounding": Table(
            "YaRN as its authors' code (and transformers) computes it, a ramp linear in the "
            "pair index with its ends rounded to whole pairs, against the paper's ramp, linear "
            "in the rotations r = L / lambda: the largest relative difference of an inverse "
            "frequency, at which pair, how many pairs differ; and the part the rounding alone "
            "makes (the code's ramp with its ends rounded or not).",
            placement="appendix",
        ),
        "training": Table(
            "Fine-tuning runs, the continued-training control's among them: device, "
            "throughput, wall time (timings).",
            placement="appendix",
        ),
    },
    timing_tables=("training",),
    claims=CLAIMS,
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
