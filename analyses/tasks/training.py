"""One job of the tasks study: every seed of one (task, model) trained on lengths 1..N and
evaluated at N·k for each configured k, exact match and per-token accuracy per length.

Training and evaluation share a job, unlike the language models': a task model trains in a few
core-seconds, less than a second job's start (Snakemake, Python, torch) would cost, so a change
of evaluation settings retrains these models, and nothing else (the rule's params say which).

Train and test are disjoint: lengths above N never occur in training, and the sequences scored
at N are drawn from their own generator with every sequence the training run drew at length N
removed (the run's batches are replayed from its seed; they are cheap to draw).

Pure: plain dicts in, a JSON-ready record out (tests import it).
"""

from __future__ import annotations

import time
from typing import Any

import torch

from posenc.analyses.tasks import generators
from posenc.analyses.tasks.catalogue import MAX_DRAWS
from posenc.batches import RandomizedPositions
from posenc.train import TrainConfig, build_model, train
from posenc.variants import split_model

# Test sequences are drawn from generators seeded apart from every training seed.
TEST_SEED = 1_000_003
POSITION_SEED = 2_000_003


def train_batches(task: str, n: int, max_position: int | None):
    batches = generators.batches(task, n)
    return RandomizedPositions(max_position).batches(batches) if max_position else batches


def seen_at(task: str, n: int, cfg: TrainConfig, seed: int, max_position: int | None) -> set:
    """Every training sequence of input length ``n`` the run with ``seed`` drew: the training
    loop draws batch ``step`` (and, randomized, its positions after it) from one generator
    seeded with ``seed``, replayed here."""
    generator = torch.Generator().manual_seed(seed)
    draw = train_batches(task, n, max_position)
    fed = generators.sequence_length(task, n)
    seen: set[bytes] = set()
    for step in range(cfg.steps):
        inputs = draw(generator, cfg.batch_size, step)[0]
        if inputs.shape[1] == fed:
            seen.update(row.numpy().tobytes() for row in inputs)
    return seen


@torch.no_grad()
def evaluate(model, task: str, length: int, count: int, max_position, exclude, device) -> dict:
    """Exact match and per-token accuracy over ``count`` fresh sequences of input ``length``
    (those in ``exclude`` dropped), in batches; randomized positions drawn fresh per batch."""
    model.eval()
    generator = torch.Generator().manual_seed(TEST_SEED + length)
    sampler = None
    if max_position:
        sampler = RandomizedPositions(max_position).sampler(POSITION_SEED + length)
    exact, token, drawn = [], [], 0
    batch = 64
    # At a short training length training may have drawn most sequences there: the unseen
    # ones are scored, as many as turn up in a bounded number of draws (recorded).
    for _ in range(MAX_DRAWS * -(-count // batch)):
        if drawn >= count:
            break
        inputs, targets = generators.batch(task, generator, batch, length)
        if exclude:
            keep = torch.tensor([row.numpy().tobytes() not in exclude for row in inputs])
            inputs, targets = inputs[keep], targets[keep]
        inputs, targets = inputs[: count - drawn], targets[: count - drawn]
        if len(inputs) == 0:
            continue
        positions = sampler(inputs.shape[1]).to(device) if sampler else None
        logits = model(inputs.to(device), positions)
        exact.append(generators.exact_match(logits, targets.to(device)).cpu())
        token.append(generators.token_accuracy(logits, targets.to(device)).cpu())
        drawn += len(inputs)
    if not exact:
        raise ValueError(
            f"{task} at length {length}: every sequence drawn was seen in training; raise "
            "tasks.train_length (the training length's sequences are too few to test unseen)"
        )
    exact, token = torch.cat(exact), torch.cat(token)
    return {
        "length": length,
        "sequences": len(exact),
        "exact_match": float(exact.mean()),
        "token_accuracy": float(token.mean()),
    }


def run(task: str, model_name: str, seeds: list[int], settings: dict[str, Any], device) -> dict:
    """Train and evaluate every seed; ``settings``: {"model", "train", "encoding", "n",
    "multipliers", "sequences", "max_position" (randomized models only)}."""
    base, randomized = split_model(model_name)
    n = settings["n"]
    lengths = [n * k for k in settings["multipliers"]]
    max_position = settings.get("max_position") if randomized else None
    vocab = generators.vocab_size(task)
    longest = generators.sequence_length(task, max(lengths))
    # A learned table has a row for every position a test reads (rows past training stay as
    # initialised, as in Ruoss et al.'s learned encoding); randomized positions: L_rand rows.
    max_len = max_position or longest
    encoding_cfg = {base: dict(settings["encoding"].get(base, {}))}
    keys = set(TrainConfig.__dataclass_fields__)
    cfg = TrainConfig(**{k: v for k, v in settings["train"].items() if k in keys})
    out = []
    for seed in seeds:
        start = time.process_time()
        torch.manual_seed(seed)
        model = build_model(vocab, settings["model"], base, encoding_cfg, max_len=max_len)
        log = train(
            model,
            train_batches(task, n, max_position),
            cfg,
            seed=seed,
            device=device,
            label=f"tasks/{task}/{model_name}/seed{seed}",
            log=lambda *a, **k: None,
        )
        train_s = time.process_time() - start
        exclude = seen_at(task, n, cfg, seed, max_position)
        by_length = [
            evaluate(model, task, length, settings["sequences"], max_position,
                     exclude if length == n else None, device)
            for length in lengths
        ]  # fmt: skip
        out.append(
            {
                "seed": seed,
                "final_loss": sum(log["losses"][-20:]) / len(log["losses"][-20:]),
                "by_length": by_length,
                "excluded_at_n": len(exclude),
                "train_core_s": train_s,
                "core_s": time.process_time() - start,
            }
        )
    return {
        "task": task,
        "model": model_name,
        "encoding": base,
        "randomized": bool(randomized),
        "max_position": max_position,
        "n": n,
        "lengths": lengths,
        "sequence_length_at_max": longest,
        "n_params": sum(p.numel() for p in model.parameters()),
        "seeds": out,
    }
