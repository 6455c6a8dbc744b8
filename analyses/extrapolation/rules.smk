# Train short, test long. Three stages, so that a change in evaluation or in the report never
# retrains: train one model per (task, encoding, seed) -> evaluate each model -> aggregate (the
# analysis rule rules/analyses.smk builds from spec.py, reading the evaluations listed by its
# `inputs`). The training rule's params hold only what training reads (data, model, optimiser,
# encoding); evaluation settings are params of the evaluation rule alone.
import platform

from posenc import corpora

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
        "seq_len": XP["lm"]["seq_len"],
    }
    # The standard library is the running interpreter's: another CPython is another text, so
    # its version keys the model (and the shared cache), as a corpus file's content does.
    | ({"python": platform.python_version()} if XP["corpus"] == corpora.STDLIB else {}),
    "passkey": XP["passkey"]["task"],
}


rule extrapolation_train:
    input:
        corpus=lambda w: (
            [corpora.corpus_file(XP["corpus"])]
            if w.task == "lm" and corpora.corpus_file(XP["corpus"])
            else []
        ),
    output:
        model="results/extrapolation/models/{task}/{encoding}/seed{seed}/model.pt",
        train_log="results/extrapolation/models/{task}/{encoding}/seed{seed}/train_log.json",  # what was computed: deterministic
        timing="results/extrapolation/models/{task}/{encoding}/seed{seed}/timing.json",  # how the run went: speed, memory, resumption
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
        # A model with randomized positions (<encoding>+randomized) also trains on L_rand;
        # a plain model's settings do not name it, so changing L_rand retrains only those.
        settings=lambda w: {
            "data": XP_DATA[w.task],
            "model": XP["model"],
            "train": XP[w.task]["train"] | XP["training"],
            "encoding": config["encoding"],
        }
        | (
            {"randomized_positions": L_rand}
            if (L_rand := variants.randomized_max_position(config, w.encoding))
            else {}
        ),
        # The training code (the script and what it imports) and the model's own plugin: a
        # change of meaning there retrains, and re-keys the shared cache.
        code=code_digest(TRAIN_SCRIPT, with_plugins=False),
        plugin=lambda w: plugin_digest(w.encoding),
        device=config["device"],
        # Not an output: Snakemake would delete it when a job fails, and it must survive a
        # kill so that the rerun resumes. Removed once the model is written.
        resume=lambda w: f"results/extrapolation/resume/{w.task}/{w.encoding}/seed{w.seed}.pt",
    script:
        TRAIN_SCRIPT


rule extrapolation_evaluate:
    input:
        model="results/extrapolation/models/{task}/{encoding}/seed{seed}/model.pt",
    output:
        evaluation="results/extrapolation/eval/{task}/{encoding}/seed{seed}.json",
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
