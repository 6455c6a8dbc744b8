"""Evaluate one trained model of the extrapolation study at and beyond its training length.

Language models: bits per character on the validation text at every evaluation length, in both
scoring modes, plus the RoPE model's context extensions, plus the training text at L_train (the
train/validation gap). Passkey models: exact-match accuracy at every evaluation length. The
evaluation settings are this rule's parameters only, so changing them never retrains.
"""

from pathlib import Path
from typing import Any

import torch

from posenc import plugins
from posenc.data import PasskeyTask, RandomizedPositions, trained_corpus
from posenc.device import device_name, resolve_device
from posenc.effective_context import context_bits
from posenc.encodings import REGISTRY
from posenc.evaluate import POSITION_SEED, evaluate_lm, evaluate_passkey, gap_rows
from posenc.io import write_json
from posenc.readout import readouts
from posenc.seeding import keyed_seed
from posenc.train import build_model, load_checkpoint
from posenc.workflow import Timer, setup


def compute(
    model: torch.nn.Module,
    meta: dict[str, Any],
    settings: dict[str, Any],
    device: torch.device,
    log=None,
) -> dict[str, Any]:
    """The evaluation record of one model; ``meta`` is its checkpoint metadata. ``log`` hears
    what the readout cost (the job log, not the record, which is deterministic)."""
    record = {k: meta[k] for k in ("task", "encoding", "seed", "train_len")}
    # A model trained with randomized positions is shown (and aggregated) under its own name.
    record["encoding"] = meta.get("name", meta["encoding"])
    max_position = meta.get("randomized_positions")
    randomized = RandomizedPositions(max_position) if max_position else None
    record["randomized_positions"] = max_position
    record["device"] = device_name(device)
    record["settings"] = dict(settings)
    if meta["task"] == "lm":
        corpus = trained_corpus(meta["data"])
        record["rows"] = evaluate_lm(
            model,
            corpus.val,
            corpus.train,
            train_len=meta["train_len"],
            multipliers=settings["multipliers"],
            tokens=settings["tokens"],
            segment=settings["segment"],
            segment_windows=settings["segment_windows"],
            batch_tokens=settings["batch_tokens"],
            device=device,
            # Context extensions (PI, NTK) as the registry declares them for the encoding.
            extensions=REGISTRY[meta["encoding"]].extensions,
            randomized=randomized,
        )
        context = settings.get("context")
        if context:
            # How much of its context the model uses: the same validation characters, each
            # predicted from exactly k characters before it, for every k configured.
            record["context"] = context_bits(
                model,
                corpus.val,
                lengths=context["lengths"],
                targets=context["targets"],
                batch_tokens=settings["batch_tokens"],
                device=device,
                positions_of=(
                    # Each length's positions from a generator of its own, keyed apart from
                    # the scoring lengths' seeds.
                    (lambda k: randomized.sampler(keyed_seed(POSITION_SEED, "context", k)))
                    if randomized is not None
                    else None
                ),
            )
        mechanism = settings.get("mechanism") or {}
        if meta["seed"] in mechanism.get("seeds", []) and randomized is None:
            # The attention read out, for the mechanism table (posenc.readout): on the seeds
            # the config names only, as it costs more than scoring.
            with Timer() as t:
                record["readout"] = readouts(
                    model,
                    corpus.val,
                    meta["train_len"],
                    settings["multipliers"],
                    tokens_scored=mechanism["tokens"],
                    batch_tokens=settings["batch_tokens"],
                    device=device,
                )
            if log:
                log.info("attention readout: %.2f s", t.seconds)
        if "first_epoch" in meta:  # the model after one pass over its training text
            snapshot = build_model(
                meta["vocab_size"],
                meta["model_config"],
                meta["encoding"],
                meta["encoding_config"],
                max_len=meta["max_len"],
            )
            snapshot.load_state_dict(meta["first_epoch"]["model"])
            record["first_epoch_step"] = meta["first_epoch"]["step"]
            record["rows"] += gap_rows(
                snapshot.to(device),
                corpus.val,
                corpus.train,
                method="first_epoch",
                train_len=meta["train_len"],
                tokens=settings["tokens"],
                segment=settings["segment"],
                batch_tokens=settings["batch_tokens"],
                device=device,
                randomized=randomized,
            )
    elif meta["task"] == "passkey":
        data = meta["data"]
        task = PasskeyTask(data["num_symbols"], data["key_len"])
        record["chance"] = task.chance  # exact match of a uniform guess: V^-key_len
        record["rows"] = evaluate_passkey(
            model,
            task,
            train_len=meta["train_len"],
            multipliers=settings["multipliers"],
            sequences=settings["sequences"],
            seed=settings["seed"],
            batch_size=settings["batch_size"],
            device=device,
            randomized=randomized,
        )
    else:
        raise ValueError(f"unknown task {meta['task']!r}")
    return record


def main(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    # A plugin's encoding must be registered in this process too. Read from the config, not
    # from params: params key the output cache, which must not depend on the checkout.
    plugins.load(snakemake.config.get("plugins", []), Path(snakemake.scriptdir).parents[1])
    log = setup(snakemake, f"extrapolation.evaluate.{w.task}.{w.encoding}.seed{w.seed}")
    device = resolve_device(p.device)
    model, meta = load_checkpoint(snakemake.input.model, device)
    record = compute(model, meta, p.settings, device, log)
    write_json(snakemake.output.evaluation, record)
    undefined = sum(not r["defined"] for r in record["rows"])
    log.info("%d rows (%d undefined) on %s", len(record["rows"]), undefined, record["device"])


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
