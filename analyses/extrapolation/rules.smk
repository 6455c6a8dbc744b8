# Train short, test long. Three stages, so that a change in evaluation or in the report never
# retrains: train one model per (task, encoding, seed) -> evaluate each model -> aggregate (the
# analysis rule rules/analyses.smk builds from spec.py, reading the evaluations listed by its
# `inputs`). The training rule's params hold only what training reads (data, model, optimiser,
# encoding); evaluation settings are params of the evaluation rule alone.
import platform

from posenc import corpora, paths, ruleset

XP = config["extrapolation"]
XP_TASKS = ("lm", "passkey")
TRAIN_SCRIPT = "../../workflow/scripts/train_model.py"
EVALUATE_SCRIPT = "../../workflow/scripts/evaluate_model.py"


# What each task's training reads as data; with the model, optimiser and encoding settings
# below, all a training run depends on, and nothing else (a change here retrains).
XP_DATA = {
    "lm": {
        "corpus": XP["corpus"],
        "val_fraction": XP["val_fraction"],
        "split_block": XP["split_block"],
        "tune_fraction": XP["tune_fraction"],
        "seq_len": XP["lm"]["seq_len"],
    }
    # The standard library is the running interpreter's: another CPython is another text, so
    # its version keys the model (and the shared cache), as a corpus file's content does.
    | ({"python": platform.python_version()} if XP["corpus"] == corpora.STDLIB else {}),
    "passkey": XP["passkey"]["task"],
}
# The corpus file the LM trains on, when one is configured (the built-in texts ship with
# Python and are no file input).
XP_CORPUS = [corpora.corpus_file(XP["corpus"])] if corpora.corpus_file(XP["corpus"]) else []


rule extrapolation_train:
    input:
        corpus=lambda w: XP_CORPUS if w.task == "lm" else [],
    output:
        model=paths.XP_MODEL,
        train_log=paths.XP_TRAIN_LOG,  # what was computed: deterministic
        timing=paths.XP_TIMING,  # how the run went: speed, memory, resumption
    log:
        log_path("extrapolation/train/{task}/{encoding}/seed{seed}"),
    wildcard_constraints:
        task="|".join(XP_TASKS),
    # Trained models are the expensive outputs: with --cache and SNAKEMAKE_OUTPUT_CACHE set,
    # checkouts with the same training settings and code share them. A cached rule may not
    # have a benchmark: directive; the run's wall time and peak memory are in timing.json.
    cache: True
    threads: XP["resources"]["threads"]
    resources:
        mem_mb=XP["resources"]["mem_mb"],
        runtime=XP["resources"]["runtime"],
        gpu=XP["resources"]["gpu"],
    params:
        # All a training run depends on (posenc.ruleset.train_settings).
        settings=lambda w: ruleset.train_settings(config, XP_DATA, w.task, w.encoding),
        # The training code (the script and what it imports) and the model's own plugin: a
        # change of meaning there retrains, and re-keys the shared cache.
        code=code_digest(TRAIN_SCRIPT, with_plugins=False),
        plugin=lambda w: plugin_digest(w.encoding),
        device=config["device"],
        # Not an output: Snakemake would delete it when a job fails, and it must survive a
        # kill so that the rerun resumes. Removed once the model is written.
        resume=lambda w: paths.XP_RESUME.format(**w),
    script:
        TRAIN_SCRIPT


rule extrapolation_evaluate:
    input:
        model=rules.extrapolation_train.output.model,
    output:
        evaluation=paths.XP_EVALUATION,
    log:
        log_path("extrapolation/evaluate/{task}/{encoding}/seed{seed}"),
    benchmark:
        bench_path("extrapolation/evaluate/{task}/{encoding}/seed{seed}")
    wildcard_constraints:
        task="|".join(XP_TASKS),
    threads: XP["resources"]["threads"]
    resources:
        mem_mb=XP["resources"]["mem_mb"],
        runtime=XP["resources"]["runtime"],
        gpu=XP["resources"]["gpu"],
    params:
        settings=lambda w: XP[w.task]["eval"],
        code=code_digest(EVALUATE_SCRIPT, with_plugins=False),
        plugin=lambda w: plugin_digest(w.encoding),
        device=config["device"],
    script:
        EVALUATE_SCRIPT
