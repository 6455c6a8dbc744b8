"""What the training logs say: each model's throughput and memory, its loss curve, how much
the loss still fell late in training, and how many passes over the text it made."""

import math
from collections import defaultdict
from typing import Any

from .rows import _encoding_index

LN2 = math.log(2)


def training_table(train_logs: list[dict]) -> list[dict[str, Any]]:
    """Per model: device, throughput, wall time, peak memory, final loss (timings)."""
    rows = []
    for t in sorted(
        train_logs, key=lambda t: (t["task"], _encoding_index(t["encoding"]), t["seed"])
    ):
        log = t["log"]
        rows.append(
            {
                "task": t["task"],
                "encoding": t["encoding"],
                "seed": t["seed"],
                "device": t["device"],
                "params": t["n_params"],
                "steps": log["steps"],
                "tokens_per_s": log["tokens_per_s"],
                "wall_s": log["wall_s"],
                "peak_memory_mb": log["peak_memory_mb"],
                "peak_memory_kind": log["peak_memory_kind"],
                "resumed_from_step": log["resumed_from_step"],
                "final_train_loss_bits": t["final_train_loss_nats"] / LN2,
            }
        )
    return rows


def smooth(values: list[float], window: int) -> list[float]:
    """Trailing moving average over ``window`` steps (fewer at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def training_curves(train_logs: list[dict]) -> list[dict[str, Any]]:
    """Per task and encoding: the per-step training loss averaged over seeds, in bits (per
    character for the LM, per answer token for passkey: one unit throughout the report), and
    its moving average over a 50th of the run, one row per step."""
    runs: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    for t in train_logs:
        runs[(t["task"], t["encoding"])].append([x / LN2 for x in t["log"]["losses"]])
    rows = []
    for (task, enc), losses in sorted(
        runs.items(), key=lambda kv: (kv[0][0], _encoding_index(kv[0][1]))
    ):
        mean = [sum(v) / len(v) for v in zip(*losses)]
        smoothed = smooth(mean, max(1, len(mean) // 50))
        rows += [
            {"task": task, "encoding": enc, "step": i, "loss": x, "smoothed": s}
            for i, (x, s) in enumerate(zip(mean, smoothed), start=1)
        ]
    return rows


def late_change(train_logs: list[dict], fraction: float = 0.1) -> dict[str, dict[str, float]]:
    """Per task and encoding: the mean training loss (bits, mean over seeds) over the last
    ``fraction`` of the steps minus that over the ``fraction`` before it. Near zero: the curve
    has flattened; clearly negative: the models were still improving when training stopped."""
    runs: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    for t in train_logs:
        runs[(t["task"], t["encoding"])].append([x / LN2 for x in t["log"]["losses"]])
    out: dict[str, dict[str, float]] = {}
    for (task, enc), losses in sorted(runs.items(), key=lambda kv: _encoding_index(kv[0][1])):
        change = tenth_change([sum(v) / len(v) for v in zip(*losses)], fraction)
        if change is not None:
            out.setdefault(task, {})[enc] = change
    return out


def tenth_change(losses: list[float], fraction: float = 0.1) -> float | None:
    """The mean of the last ``fraction`` of ``losses`` minus that of the ``fraction`` before
    it (negative: still falling); None for a curve too short to have both."""
    n = max(1, int(len(losses) * fraction))
    if len(losses) < 2 * n:
        return None
    return sum(losses[-n:]) / n - sum(losses[-2 * n : -n]) / n


def file_split(corpus: dict, lm_log: dict) -> dict[str, Any]:
    """A corpus split by whole files (``corpus``: a training log's data description): how many
    files, how many of them and what share of the characters validate, the CPython version
    whose library it is, and how many passes over the training text a model made."""
    train = lm_log["log"]["config"]
    tokens = lm_log["log"]["steps"] * train["batch_size"] * corpus["seq_len"]
    return {
        "files": corpus["files"],
        "val_files": corpus["val_files"],
        "val_characters": corpus["val_characters"],
        "val_characters_percent": round(100 * corpus["val_characters"] / corpus["characters"], 1),
        "python": corpus["python"],
        "training_passes": tokens / corpus["train_characters"],
    }
