"""Fine-tune one trained RoPE-family LM with one context-extension method at one scale
(``stages.finetune``); this script only unpacks ``snakemake`` and writes the outputs."""

from pathlib import Path

import torch

from posenc import plugins
from posenc.analyses.extension import stages
from posenc.device import device_name, resolve_device
from posenc.io import atomic_path, write_json
from posenc.train import RUN_RECORD, fingerprint, finish_resume, load_checkpoint
from posenc.workflow import setup


def main(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    plugins.load(snakemake.config.get("plugins", []), Path(snakemake.scriptdir).parents[1])
    label = f"extension/{w.encoding}/{w.method}/s{w.scale}/seed{w.seed}"
    log = setup(snakemake, label.replace("/", "."))
    device = resolve_device(p.device)
    model, meta = load_checkpoint(snakemake.input.model, device)
    snapshots, run_log = stages.finetune(
        model,
        meta,
        p.settings,
        seed=int(w.seed),
        device=device,
        label=label,
        resume_path=p.resume,
        fingerprint=fingerprint(label, p.settings, device.type),
        log=log.info,
    )
    run = {key: run_log.pop(key) for key in RUN_RECORD}
    with atomic_path(snakemake.output.snapshots) as tmp:
        torch.save({"snapshots": snapshots, "finetune": p.settings}, tmp)
    summary = {
        "encoding": w.encoding,
        "method": w.method,
        "scale": int(w.scale),
        "seed": int(w.seed),
        "train_len": meta["train_len"],
        "device": device_name(device),
        "log": run_log,
    }
    write_json(snakemake.output.train_log, summary)
    write_json(snakemake.output.timing, {"label": label, **run})
    finish_resume(p.resume)
    log.info(
        "%s: %.0f tokens/s, final loss %.4f nats", label, run["tokens_per_s"], run_log["losses"][-1]
    )


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
