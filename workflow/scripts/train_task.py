"""Train and evaluate every seed of one (task, model) of the tasks study
(:func:`posenc.analyses.tasks.training.run`); ``main`` only unpacks ``snakemake``."""

from pathlib import Path

from posenc import plugins
from posenc.analyses.tasks.training import run
from posenc.device import device_name, resolve_device
from posenc.io import write_json
from posenc.workflow import setup


def main(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    # A plugin's encoding must be registered in this process too (read from the config: params
    # key the output cache, which must not depend on the checkout).
    plugins.load(snakemake.config.get("plugins", []), Path(snakemake.scriptdir).parents[1])
    log = setup(snakemake, f"tasks.{w.task}.{w.model}")
    device = resolve_device(p.device)
    record = run(w.task, w.model, list(p.seeds), p.settings, device)
    record["device"] = device_name(device)
    timing = {"core_s": [s.pop("core_s") for s in record["seeds"]]}
    timing["train_core_s"] = [s.pop("train_core_s") for s in record["seeds"]]
    write_json(snakemake.output.run, record)
    write_json(snakemake.output.timing, timing)
    log.info("%s %s: %s core-s", w.task, w.model, [round(t, 1) for t in timing["core_s"]])


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
