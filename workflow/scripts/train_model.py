"""Train one (task, encoding, seed) model of the extrapolation study.

``compute`` is pure (tests import it): it builds the data and the model from plain dicts, trains
with :func:`posenc.train.train` and returns the model, the metadata a checkpoint needs to rebuild
it, and the training log. ``main`` only unpacks ``snakemake`` and writes the two outputs.
"""

from pathlib import Path
from typing import Any

import torch

from posenc import plugins
from posenc.data import VERBATIM, PasskeyTask, RandomizedPositions, lm_batches, load_corpus
from posenc.device import device_name, resolve_device
from posenc.io import write_json
from posenc.train import (
    RUN_RECORD,
    TrainConfig,
    build_model,
    fingerprint,
    finish_resume,
    save_checkpoint,
    train,
)
from posenc.variants import split_model
from posenc.workflow import setup

TASKS = ("lm", "passkey")


def make_data(task: str, settings: dict[str, Any]) -> tuple[Any, int, int, dict[str, Any]]:
    """(batch function, vocabulary size, training length L_train, data description)."""
    data = settings["data"]
    if task == "lm":
        tune_fraction = data.get("tune_fraction", 0.0)
        corpus = load_corpus(
            data["corpus"], data["val_fraction"], data["split_block"], tune_fraction
        )
        description = {
            "corpus": data["corpus"],
            "val_fraction": data["val_fraction"],
            "split_block": data["split_block"],
            "tune_fraction": tune_fraction,
            "tune_characters": len(corpus.tune),
            "val_blocks": corpus.val_blocks,
            "sha256": corpus.sha256,
            # The tuning span's verbatim repeats of training are not counted: a few per cent
            # of a twentieth of the text, cut and never read.
            "characters": len(corpus.train)
            + len(corpus.val)
            + corpus.val_verbatim_removed
            + len(corpus.tune),
            "train_characters": len(corpus.train),
            "val_characters": len(corpus.val),
            # Validation characters cut because they repeat training text verbatim.
            "val_verbatim_removed": corpus.val_verbatim_removed,
            "verbatim": VERBATIM,
            "seq_len": data["seq_len"],
        }
        if corpus.files:  # split by whole files (python-stdlib): say which, for the report
            description |= {
                "val_blocks": None,
                "files": corpus.files,
                "val_files": corpus.val_files,
                "python": corpus.python,
            }
        seq_len = data["seq_len"]
        return lm_batches(corpus.train, seq_len), corpus.vocab_size, seq_len, description
    if task == "passkey":
        passkey = PasskeyTask(data["num_symbols"], data["key_len"])
        ramp_steps = round(data["curriculum"] * settings["train"]["steps"])
        batches = passkey.batches(data["min_len"], data["max_len"], ramp_steps)
        return batches, passkey.vocab_size, data["max_len"], dict(data)
    raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")


def compute(
    task: str,
    encoding: str,
    seed: int,
    settings: dict[str, Any],
    device: torch.device,
    resume_path: str | None = None,
    progress=None,
    log=print,
) -> tuple[torch.nn.Module, dict[str, Any], dict[str, Any]]:
    """Train one model. ``settings`` = {"data", "model", "train", "encoding"} (see the rule),
    and for a model with randomized positions (``encoding`` = ``<name>+randomized``)
    ``"randomized_positions"``: L_rand.

    Returns (model, checkpoint metadata, training log). The learned table gets exactly
    L_train rows, so it has no position beyond the trained ones; with randomized positions it
    gets L_rand, the positions training draws from.
    """
    batches, vocab_size, train_len, data = make_data(task, settings)
    base, randomized = split_model(encoding)
    max_position = settings.get("randomized_positions") if randomized else None
    if randomized and not max_position:
        raise ValueError(f"model {encoding}: its settings name no randomized_positions (L_rand)")
    if max_position:
        batches = RandomizedPositions(max_position).batches(batches)
    # Its own block of the config's encoding: settings, the only one it reads.
    encoding_cfg = {base: dict(settings["encoding"].get(base, {}))}
    max_len = max_position or train_len
    torch.manual_seed(seed)  # the initial weights
    model = build_model(vocab_size, settings["model"], base, encoding_cfg, max_len=max_len)
    train_keys = set(TrainConfig.__dataclass_fields__)
    cfg = TrainConfig(**{k: v for k, v in settings["train"].items() if k in train_keys})
    label = f"{task}/{encoding}/seed{seed}"
    # A language model is also kept as it was after one pass over its training text: every
    # later drop of its training loss below its validation loss is what repeated passes
    # memorised (extrapolation.memorisation_below_capacity_share compares the two states' gaps).
    first_epoch = (
        -(-data["train_characters"] // (cfg.batch_size * train_len)) if task == "lm" else None
    )
    run_log = train(
        model,
        batches,
        cfg,
        seed=seed,
        device=device,
        label=label,
        resume_path=resume_path,
        fingerprint=fingerprint(task, encoding, seed, settings, device.type),
        progress=progress,
        log=log,
        snapshot_steps=(first_epoch,) if first_epoch and first_epoch < cfg.steps else (),
    )
    meta = {
        "task": task,
        "encoding": base,  # what load_checkpoint builds
        "name": encoding,  # the name it is shown under
        "randomized_positions": max_position,  # L_rand, or None: positions 0..n-1
        "seed": seed,
        "vocab_size": vocab_size,
        "train_len": train_len,
        "model_config": dict(settings["model"]),
        "encoding_config": encoding_cfg,
        "max_len": max_len,  # rows of a learned table
        "data": data,
    }
    snapshots = run_log.pop("snapshots")
    if first_epoch in snapshots:
        meta["first_epoch"] = {"step": first_epoch, "model": snapshots[first_epoch]}
    tail = max(1, len(run_log["losses"]) // 20)  # the last 5 % of steps
    summary = {
        **{k: v for k, v in meta.items() if k != "first_epoch"},
        "first_epoch_step": first_epoch,
        "encoding": encoding,  # the aggregate groups by the shown name
        "device": device_name(device),
        "n_params": sum(p.numel() for p in model.parameters()),
        "final_train_loss_nats": sum(run_log["losses"][-tail:]) / tail,
        "log": run_log,
    }
    return model, meta, summary


def main(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    # A plugin's encoding must be registered in this process too. Read from the config, not
    # from params: params key the output cache, which must not depend on the checkout.
    plugins.load(snakemake.config.get("plugins", []), Path(snakemake.scriptdir).parents[1])
    log = setup(snakemake, f"extrapolation.train.{w.task}.{w.encoding}.seed{w.seed}")
    device = resolve_device(p.device)
    model, meta, summary = compute(
        w.task,
        w.encoding,
        int(w.seed),
        p.settings,
        device,
        resume_path=p.resume,
        log=log.info,
    )
    # How the run went (speed, memory, whether it resumed) differs between identical runs:
    # it goes to timing.json, so train_log.json holds only what was computed.
    run = {key: summary["log"].pop(key) for key in RUN_RECORD}
    save_checkpoint(snakemake.output.model, model, meta)
    write_json(snakemake.output.train_log, summary)
    write_json(snakemake.output.timing, {"label": summary["log"]["label"], **run})
    finish_resume(p.resume)
    log.info(
        "%s: %.0f tokens/s on %s, final loss %.4f nats",
        summary["log"]["label"],
        run["tokens_per_s"],
        summary["device"],
        summary["final_train_loss_nats"],
    )


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
