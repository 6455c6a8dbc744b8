# Stretching the extrapolation section's trained RoPE-family LMs. Two stages before the
# aggregate (rules/analyses.smk): a short fine-tune per (encoding, method, scale, seed), its own
# cached and resumable output, and evaluations, which read models and never train: changing an
# evaluation setting re-evaluates only, changing a fine-tune setting fine-tunes only.
# The continued-training control is one more arm of the same rules: method "plain" (no scaling,
# as stages.method_rope reads it) at s = 1, i.e. the base model trained on with the same recipe
# on windows of L_train (the aggregate asks for it: spec.CONTROL).
# A third evaluation stretches every trained LM zero-shot with what applies to it whatever its
# encoding: query temperature, and LongRoPE where its frequencies are rescalable.
from posenc import paths, ruleset
from posenc.analyses.extension.longrope import published_profile

EXT = config["extension"]
EXT_ARMS = [*EXT["methods"], "plain"]
EXT_LM = config["extrapolation"]["lm"]
EXT_RESOURCES = config["extrapolation"]["resources"]
# The extrapolation section's trained LMs (its rules.smk), by encoding and seed.
EXT_BASE_MODEL = expand(paths.XP_MODEL, task="lm", allow_missing=True)[0]
# The stage scripts sit beside this file and import its stages.py as
# posenc.analyses.extension.stages.
FINETUNE_SCRIPT = "finetune.py"
EXT_EVALUATE_SCRIPT = "evaluate.py"
# Both evaluation rules run that script: one digest of its code.
EXT_EVALUATE_CODE = code_digest(EXT_EVALUATE_SCRIPT, with_plugins=False)


wildcard_constraints:
    method="|".join(EXT_ARMS),
    scale=r"\d+",


rule extension_finetune:
    input:
        model=EXT_BASE_MODEL,
    output:
        snapshots=paths.EXT_SNAPSHOTS,
        train_log=paths.EXT_TRAIN_LOG,  # what was computed: deterministic
        timing=paths.EXT_TIMING,  # how the run went
    log:
        log_path(f"extension/finetune/{{encoding}}/{{method}}/s{{scale}}/seed{{seed}}"),
    cache: True
    threads: EXT_RESOURCES["threads"]
    resources:
        mem_mb=EXT_RESOURCES["mem_mb"],
        runtime=EXT_RESOURCES["runtime"],
        gpu=EXT_RESOURCES["gpu"],
    params:
        # What a fine-tune reads (posenc.ruleset.finetune_settings).
        settings=lambda w: ruleset.finetune_settings(config, w.method, int(w.scale)),
        code=code_digest(FINETUNE_SCRIPT, with_plugins=False),
        plugin=lambda w: plugin_digest(w.encoding),
        device=config["device"],
        # Not an output (Snakemake deletes a failed job's outputs); removed once written.
        resume=lambda w: paths.EXT_RESUME.format(**w),
    script:
        FINETUNE_SCRIPT


# The evaluation settings every extension evaluation shares: the LM's windows and tokens, and
# the longest length any of them scores (the segment windows end at the same places in all).
EXT_EVAL = EXT_LM["eval"] | {
    "zero_shot_multipliers": EXT["zero_shot"]["multipliers"],
    "finetune_multipliers": EXT["finetune"]["eval_multipliers"],
    "longest": max(EXT["zero_shot"]["multipliers"] + EXT["finetune"]["eval_multipliers"]),
}


rule extension_zero_shot:
    input:
        model=EXT_BASE_MODEL,
    output:
        evaluation=paths.EXT_ZERO_SHOT,
    log:
        log_path("extension/zero_shot/{encoding}/seed{seed}"),
    benchmark:
        bench_path("extension/zero_shot/{encoding}/seed{seed}")
    threads: EXT_RESOURCES["threads"]
    resources:
        mem_mb=EXT_RESOURCES["mem_mb"],
        runtime=EXT_RESOURCES["runtime"],
    params:
        settings=EXT_EVAL
        | {
            "methods": EXT["methods"],
            "params": EXT["params"],
            "finetune_scales": EXT["finetune"]["scales"],
        },
        code=EXT_EVALUATE_CODE,
        plugin=lambda w: plugin_digest(w.encoding),
        device=config["device"],
    script:
        EXT_EVALUATE_SCRIPT


rule extension_evaluate:
    input:
        model=EXT_BASE_MODEL,
        snapshots=rules.extension_finetune.output.snapshots,
    output:
        evaluation=paths.EXT_EVALUATION,
    log:
        log_path("extension/evaluate/{encoding}/{method}/s{scale}/seed{seed}"),
    benchmark:
        bench_path("extension/evaluate/{encoding}/{method}/s{scale}/seed{seed}")
    threads: EXT_RESOURCES["threads"]
    resources:
        mem_mb=EXT_RESOURCES["mem_mb"],
        runtime=EXT_RESOURCES["runtime"],
    params:
        settings=EXT_EVAL,
        code=EXT_EVALUATE_CODE,
        plugin=lambda w: plugin_digest(w.encoding),
        device=config["device"],
    script:
        EXT_EVALUATE_SCRIPT


rule extension_stretch:
    input:
        model=EXT_BASE_MODEL,
    output:
        stretch=paths.EXT_STRETCH,
    log:
        log_path("extension/stretch/{encoding}/seed{seed}"),
    benchmark:
        bench_path("extension/stretch/{encoding}/seed{seed}")
    threads: EXT_RESOURCES["threads"]
    resources:
        mem_mb=EXT_RESOURCES["mem_mb"],
        runtime=EXT_RESOURCES["runtime"],
    params:
        # The published profile's factors travel in the settings: editing its zoo file
        # re-evaluates.
        settings=EXT_EVAL
        | {
            "temperatures": EXT["stretch"]["temperatures"],
            "llama4_beta": EXT["stretch"]["llama4_beta"],
            "query_only_temperatures": EXT["stretch"]["query_only_temperatures"],
            "longrope": published_profile(EXT["stretch"]["longrope_profile"]),
        },
        code=EXT_EVALUATE_CODE,
        plugin=lambda w: plugin_digest(w.encoding),
        device=config["device"],
    script:
        EXT_EVALUATE_SCRIPT
