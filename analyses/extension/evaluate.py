"""Evaluate a trained RoPE-family LM with every context-extension method (zero-shot), one
fine-tune's snapshots (``scoring``), or any trained LM with the stretches that apply to it
(``stretch``: query temperature, LongRoPE); this script only unpacks ``snakemake``."""

from pathlib import Path

import torch

from posenc import plugins
from posenc.analyses.extension import scoring, stages, stretch
from posenc.device import device_name, resolve_device
from posenc.io import write_json
from posenc.train import load_checkpoint
from posenc.workflow import setup


def main(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    plugins.load(snakemake.config.get("plugins", []), Path(snakemake.scriptdir).parents[1])
    tuned = "snapshots" in snakemake.input.keys()
    stretched = "stretch" in snakemake.output.keys()
    name = (
        f"{w.encoding}/{w.method}/s{w.scale}"
        if tuned
        else f"{w.encoding}/{'stretch' if stretched else 'zero_shot'}"
    )
    log = setup(snakemake, f"extension.evaluate.{name.replace('/', '.')}.seed{w.seed}")
    device = resolve_device(p.device)
    model, meta = load_checkpoint(snakemake.input.model, device)
    record = {
        "encoding": w.encoding,
        "seed": int(w.seed),
        "train_len": meta["train_len"],
        "device": device_name(device),
        "settings": dict(p.settings),
    }
    if stretched:
        record["rows"] = stretch.stretch(model, meta, p.settings, device)
        write_json(snakemake.output.stretch, record)
        log.info("%s seed %s: %d rows on %s", name, w.seed, len(record["rows"]), record["device"])
        return
    # What the methods rescale: the rotated width, the base and the original length.
    record["model"] = {
        "rotated_width": stages.rotary(model).rotated_width,
        "base": stages.rotary(model).base,
        "train_len": meta["train_len"],
    }
    if tuned:
        saved = torch.load(snakemake.input.snapshots, map_location=device, weights_only=True)
        finetune = saved["finetune"]
        record |= {"method": finetune["method"], "scale": finetune["scale"]}
        record["rows"] = scoring.evaluate_finetuned(
            model, meta, saved["snapshots"], finetune, p.settings, device
        )
    else:
        record["rows"] = scoring.zero_shot(model, meta, p.settings, device)
    write_json(snakemake.output.evaluation, record)
    log.info("%s seed %s: %d rows on %s", name, w.seed, len(record["rows"]), record["device"])


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
