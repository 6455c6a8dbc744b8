"""Stretching a trained RoPE model's context: Position Interpolation, NTK-aware scaling, dynamic
NTK, YaRN and Llama 3's scaling, applied to the extrapolation section's character LMs without
fine-tuning (zero-shot) and after a short fine-tune at s x L_train. Torch-free: read at parse
time. The fine-tune and evaluation stages are in ``rules.smk``; this spec is the aggregate."""

from posenc.analysis import AnalysisSpec, Figure, Resources, Table
from posenc.claims import Check, Claim
from posenc.rope_scaling import METHODS


def _finetunes(config: dict) -> list[tuple[str, str, int, int]]:
    ext = config["extension"]
    return [
        (e, method, scale, seed)
        for e in ext["encodings"]
        for method in ext["methods"]
        for scale in ext["finetune"]["scales"]
        for seed in config["extrapolation"]["lm"]["seeds"]
    ]


def inputs(config: dict) -> dict[str, list[str]]:
    """Every base model's zero-shot evaluation, every fine-tune's evaluation, training log and
    timings (the outputs of the stages in ``rules.smk``)."""
    ext, seeds = config["extension"], config["extrapolation"]["lm"]["seeds"]
    tuned = "results/extension/finetune/{}/{}/s{}/seed{}"
    return {
        "zero_shot": [
            f"results/extension/eval/zero_shot/{e}/seed{s}.json"
            for e in ext["encodings"]
            for s in seeds
        ],
        "finetune_evals": [
            f"results/extension/eval/finetune/{e}/{m}/s{x}/seed{s}.json"
            for e, m, x, s in _finetunes(config)
        ],
        "train_logs": [f"{tuned.format(*run)}/train_log.json" for run in _finetunes(config)],
        "timings": [f"{tuned.format(*run)}/timing.json" for run in _finetunes(config)],
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


def check_registry(config: dict, encodings: dict[str, dict]) -> list[str]:
    """The methods rescale RoPE's frequencies: each stretched encoding must be RoPE-family."""
    ext = config.get("extension")
    if not ext:
        return []
    other = [e for e in ext["encodings"] if e in encodings and not encodings[e].get("rotary")]
    if not other:
        return []
    rotary = [e for e, meta in encodings.items() if meta.get("rotary")]
    return [
        f"config key extension.encodings = {ext['encodings']}: {', '.join(other)} is not "
        f"RoPE-family ({', '.join(rotary)} are), so {', '.join(ext['methods'])} have no "
        "frequencies to rescale"
    ]


SPEC = AnalysisSpec(
    id="extension",
    title="Context extension: stretching a trained RoPE model",
    csvs=("frequencies", "zero_shot_bits", "finetune_bits"),
    inputs=inputs,
    uses=("seed", "device", "encodings", "encoding", "extrapolation"),
    figures={
        "zero_shot": Figure(
            "Validation bits/char (mode b: the same final segment of every window) against "
            "evaluation length for the RoPE models trained at L_train = {train_len} (dashed "
            "grey line), each method applied without fine-tuning at scale s = L / L_train; "
            "line: mean over {n_seeds} seeds, band: its {interval_percent}% interval "
            "(bootstrap over seeds and windows)."
        ),
        "finetune": Figure(
            "Validation bits/char (mode b) at s x L_train against fine-tuning steps at s x "
            "L_train, one panel per scale s, one line per method; step 0 is the method "
            "without fine-tuning. Grey dashed line: the plain model at L_train, where it was "
            "trained; band: {interval_percent}% interval over seeds and windows."
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
            "fine-tuning step: mean over seeds [{interval_percent}% interval].",
            csv="finetune_bits",
        ),
        "frequencies": Table(
            "What each method does to RoPE's {pairs} frequency pairs (head width {head_dim}, "
            "base {base}, L_train = {train_len}) at each fine-tuning scale: the smallest and "
            "largest ratio of its inverse frequency to the plain one, and its attention factor. "
            "Every row's frequencies are in metrics.json.",
            csv="frequencies",
        ),
        "yarn_rounding": Table(
            "YaRN as its authors' code (and transformers) computes it, a ramp linear in the "
            "pair index with its ends rounded to whole pairs, against the paper's ramp, linear "
            "in the rotations r = L / lambda: the largest relative difference of an inverse "
            "frequency, at which pair, how many pairs differ; and the part the rounding alone "
            "makes (the code's ramp with its ends rounded or not)."
        ),
        "training": Table("Fine-tuning runs: device, throughput, wall time (timings)."),
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
            "extension.pi_recovers_with_finetuning",
            "Position Interpolation without fine-tuning is worse than with it, and a short "
            "fine-tune at s x L_train brings the loss back to about the plain model's at "
            "L_train (Chen et al. 2023: within 1000 steps; the perplexity is recovered "
            "within about 200).",
            kind="empirical",
            checks=(
                Check(
                    "pi_finetune_gain",
                    ">",
                    "finetune_gain_bits",
                    label="PI bits/char before minus after fine-tuning",
                ),
                Check(
                    "pi_recovery_gap",
                    "<=",
                    "recover_margin_bits",
                    label="fine-tuned PI at s x L_train minus plain at L_train",
                ),
            ),
            references=("chen2023",),
            unless="smoke_test",
        ),
        Claim(
            "extension.yarn_zero_shot_beats_pi_and_ntk",
            "Without fine-tuning, YaRN's loss is lower than PI's and NTK-aware scaling's at "
            "2x-4x L_train (Peng et al. 2023, Table 1 and Figure 1).",
            kind="empirical",
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
            "extension.yarn_finetunes_faster",
            "YaRN reaches a given loss in fewer fine-tuning steps than PI: after the first "
            "{first_snapshot} steps at s x L_train its loss is already lower (Peng et al. "
            "2023: 10x fewer tokens and 2.5x fewer steps than earlier methods).",
            kind="empirical",
            checks=(
                Check(
                    "yarn_finetune_lead",
                    ">",
                    "beats_margin_bits",
                    label="PI minus YaRN bits/char after the first fine-tuning steps",
                ),
            ),
            shows=("steps_to_plain",),
            references=("peng2023", "chen2023"),
            unless="smoke_test",
        ),
    ),
    references=("chen2023", "bloc97_2023", "peng2023", "dubey2024", "su2021", "davison1997"),
    resources=Resources(threads=1, mem_mb=2000, runtime=10),
    checks=(check_config,),
    registry_checks=(check_registry,),
    encodings_of=lambda config: list(config["extension"]["encodings"]),
)
