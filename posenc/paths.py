"""Where the workflow writes the files that more than one place names, each pattern once.

A pattern holds Snakemake wildcards in braces: a rule declares it as its output (or input) as
is, and a spec lists its jobs' files with ``pattern.format(...)``. A stage's rules and the
aggregates that read its files (analyses/<id>/rules.smk and spec.py) both take their paths
from here, so the two cannot drift apart. Torch-free: read at parse time.
"""

LOGS = "results/logs"
BENCHMARKS = "results/benchmarks"

# Each analysis' rule (rules/analyses.smk) writes its evidence, figures and tables (metrics.json)
# and its ledger in a folder of its own, with its CSVs, figures and timings beside them.
ANALYSIS_DIR = "results/{analysis}"
METRICS = f"{ANALYSIS_DIR}/metrics.json"
CLAIMS = f"{ANALYSIS_DIR}/claims.json"

# The extrapolation section's stages: a trained model per (task, encoding, seed), its folder
# holding the model, its training log and its timings; then each model's evaluation. The
# resume file sits apart, as no rule's output, so that a killed job keeps it.
XP_MODEL_DIR = "results/extrapolation/models/{task}/{encoding}/seed{seed}"
XP_MODEL = f"{XP_MODEL_DIR}/model.pt"
XP_TRAIN_LOG = f"{XP_MODEL_DIR}/train_log.json"
XP_TIMING = f"{XP_MODEL_DIR}/timing.json"
XP_RESUME = "results/extrapolation/resume/{task}/{encoding}/seed{seed}.pt"
XP_EVALUATION = "results/extrapolation/eval/{task}/{encoding}/seed{seed}.json"

# The extension section's stages: a fine-tune per (encoding, method, scale, seed) of an
# extrapolation LM, and the evaluations, of the base model (zero-shot) and of each fine-tune.
EXT_FINETUNE_DIR = "results/extension/finetune/{encoding}/{method}/s{scale}/seed{seed}"
EXT_SNAPSHOTS = f"{EXT_FINETUNE_DIR}/snapshots.pt"
EXT_TRAIN_LOG = f"{EXT_FINETUNE_DIR}/train_log.json"
EXT_TIMING = f"{EXT_FINETUNE_DIR}/timing.json"
EXT_RESUME = "results/extension/resume/{encoding}/{method}/s{scale}/seed{seed}.pt"
EXT_ZERO_SHOT = "results/extension/eval/zero_shot/{encoding}/seed{seed}.json"
EXT_EVALUATION = "results/extension/eval/finetune/{encoding}/{method}/s{scale}/seed{seed}.json"
EXT_STRETCH = "results/extension/eval/stretch/{encoding}/seed{seed}.json"

# The report's page, which `posenc card` names when it is done.
# The tasks study: one job per (task, model) trains and evaluates all its seeds.
TASK_RUN = "results/tasks/runs/{task}/{model}.json"
TASK_TIMING = "results/tasks/runs/{task}/{model}.timing.json"

REPORT_PAGE = "results/report/index.html"
