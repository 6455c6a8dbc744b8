# Algorithmic tasks: one job per (task, model) trains and evaluates every seed of it (a task
# model costs seconds, less than a second job's start would), then the analysis rule
# (rules/analyses.smk, from spec.py) aggregates the runs its `inputs` lists.
from posenc import paths
from posenc.analyses.tasks import spec as tasks_spec

TASK_SCRIPT = "../../workflow/scripts/train_task.py"


rule tasks_train:
    output:
        run=paths.TASK_RUN,  # what was computed: deterministic
        timing=paths.TASK_TIMING,  # how long it took
    log:
        log_path("tasks/{task}/{model}"),
    wildcard_constraints:
        task="|".join(config["tasks"]["tasks"]),
    # With --cache and SNAKEMAKE_OUTPUT_CACHE set, checkouts with the same settings and code
    # share the runs, as they share the language models.
    cache: True
    threads: config["tasks"]["resources"]["threads"]
    resources:
        mem_mb=config["tasks"]["resources"]["mem_mb"],
        runtime=config["tasks"]["resources"]["runtime"],
        gpu=config["tasks"]["resources"]["gpu"],
    params:
        # All a run depends on (spec.run_settings): the task's lengths, the model, the
        # optimiser, the encoding's own settings, L_rand for a randomized model.
        settings=lambda w: tasks_spec.run_settings(config, w.model),
        seeds=lambda w: tasks_spec.seeds_of(config, w.model),
        code=code_digest(TASK_SCRIPT, with_plugins=False),
        plugin=lambda w: plugin_digest(w.model),
        device=config["device"],
    script:
        TASK_SCRIPT
