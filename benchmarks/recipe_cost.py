"""What the training recipe costs against the study's earlier one, measured in one run.

The trained models of the default config are trained with ``config/config.yaml``'s recipe; the
earlier study trained its language models for 1250 steps of 8 windows and its passkey models
on a key of 3 symbols for 2000 steps of 16, all lengths from the first step. This script trains
one model of each task under both recipes, interleaved over ``--rounds`` (so that a burst of
load hits both alike), on one thread, and prints the median wall time of each and their ratio,
with the whole study's training time ratio implied by its model counts.

    python benchmarks/recipe_cost.py [--encoding rope] [--rounds 2]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
import train_model  # noqa: E402

from posenc.cli import merged  # noqa: E402

# The earlier study's recipe (main before the rigour work), as its config held it.
EARLIER = {
    "lm": {"train": {"batch_size": 8, "steps": 1250}},
    "passkey": {"task": {"key_len": 3, "curriculum": 0.0}, "train": {"batch_size": 16}},
}


def settings(config: dict, task: str, earlier: bool) -> dict:
    xp = config["extrapolation"]
    data = (
        {
            "corpus": xp["corpus"],
            "val_fraction": xp["val_fraction"],
            "split_block": xp["split_block"],
            "seq_len": xp["lm"]["seq_len"],
        }
        if task == "lm"
        else dict(xp["passkey"]["task"])
    )
    train = dict(xp[task]["train"]) | xp["training"] | {"checkpoint_every": 0}
    if earlier:
        train |= EARLIER[task].get("train", {})
        data |= EARLIER[task].get("task", {})
    return {"data": data, "model": xp["model"], "train": train, "encoding": config["encoding"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoding", default="rope")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = merged([ROOT / "config" / "config.yaml"])
    times: dict[tuple[str, bool], list[float]] = {}
    for r in range(args.rounds):
        order = [(t, e) for t in ("lm", "passkey") for e in (False, True)]
        for task, earlier in order if r % 2 == 0 else order[::-1]:
            began = time.perf_counter()
            train_model.compute(
                task,
                args.encoding,
                0,
                settings(config, task, earlier),
                torch.device("cpu"),
                progress=io.StringIO(),
                log=lambda *a: None,
            )
            times.setdefault((task, earlier), []).append(time.perf_counter() - began)
    xp = config["extrapolation"]
    randomized = xp["randomized_positions"]["encodings"]
    n_models = {
        task: len(xp[task]["seeds"]) * (len(config["encodings"]) + len(randomized[task]))
        for task in ("lm", "passkey")
    }
    total = {earlier: 0.0 for earlier in (False, True)}
    for task in ("lm", "passkey"):
        now, before = (statistics.median(times[(task, e)]) for e in (False, True))
        total[False] += n_models[task] * now
        total[True] += n_models[task] * before
        print(
            f"{task}: {now:.1f} s a model against {before:.1f} s earlier: "
            f"{now / before:.2f}x ({n_models[task]} models)"
        )
    print(
        f"study's training, one thread: {total[False] / 60:.1f} min against "
        f"{total[True] / 60:.1f} min earlier: {total[False] / total[True]:.2f}x"
    )


if __name__ == "__main__":
    main()
