"""Pilots of the algorithmic tasks (analyses/tasks/generators.py): the cheapest recipe under
which the extrapolation model (config extrapolation.model) learns a task at its training
lengths for most encodings, on a seed the study does not score.

For each recipe (task, N, steps, batch, lr) and each encoding (the config's list, then the
encodings named by --randomized trained on randomized positions, Ruoss et al. 2023): train on
one length per batch, uniform in [1, N] (Ruoss et al.'s uniform curriculum), then score 256
fresh sequences at input length N, 2N, 4N and 8N: exact match (every answer token's
teacher-forced argmax right: greedy decoding's exact match) and per-token accuracy. A model's
cost is the core-seconds (time.process_time, one thread) of its training and its evaluation.

A learned table has rows for the training positions only (as in the extrapolation section):
past them it has no encoding and its score is missing, not zero. A model with randomized
positions draws them from [0, L_rand) in training and at evaluation, L_rand the longest
evaluated sequence (input and answer) at 8N times --rand-factor.

Every model's row is appended to --out (JSON lines) as soon as it is scored, so an
interrupted run keeps what it did; ``--table FILE`` prints the table of such a file.

    python benchmarks/task_pilots.py --recipes reverse_string:16:1000:32:0.006 --out p.jsonl
    python benchmarks/task_pilots.py --table p.jsonl
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

from posenc.analyses.tasks import generators as g  # noqa: E402
from posenc.batches import RandomizedPositions  # noqa: E402
from posenc.cli import merged  # noqa: E402
from posenc.encodings import PositionOutOfRange  # noqa: E402
from posenc.train import TrainConfig, build_model, train  # noqa: E402

CPU = torch.device("cpu")
MULTIPLIERS = (1, 2, 4, 8)
STUDY_SEEDS = {0, 1, 2}
EVAL_SEED = 7_100  # test sequences: a generator apart from training's (--seed)
POSITION_SEED = 7_200  # randomized positions at evaluation


def parse_recipe(text: str) -> dict:
    task, n, steps, batch, lr = text.split(":")
    g.task_of(task)
    return {"task": task, "N": int(n), "steps": int(steps), "batch": int(batch), "lr": float(lr)}


def score(model, task: str, length: int, sequences: int, positions_of) -> dict:
    """Exact match and token accuracy at input ``length`` on ``sequences`` fresh sequences
    (seeded per task and length, so every model meets the same ones)."""
    generator = torch.Generator().manual_seed(EVAL_SEED * 1000 + length)
    inputs, targets = g.batch(task, generator, sequences, length)
    exact, tokens = [], []
    try:
        with torch.no_grad():
            for x, t in zip(inputs.split(128), targets.split(128), strict=True):
                at = positions_of(x.shape[1]) if positions_of else None
                logits = model(x, at) if at is not None else model(x)
                exact.append(g.exact_match(logits, t))
                tokens.append(g.token_accuracy(logits, t))
    except PositionOutOfRange:
        return {"exact": None, "token": None}
    return {"exact": float(torch.cat(exact).mean()), "token": float(torch.cat(tokens).mean())}


def pilot_model(config: dict, recipe: dict, encoding: str, args) -> dict:
    """Train and score one model; its row."""
    task, n = recipe["task"], recipe["N"]
    randomized = encoding.endswith("+randomized")
    base = encoding.removesuffix("+randomized")
    train_len = g.sequence_length(task, n)
    longest = g.sequence_length(task, MULTIPLIERS[-1] * n)
    l_rand = math.ceil(longest * args.rand_factor) if randomized else None
    xp = config["extrapolation"]
    cfg = TrainConfig(
        steps=recipe["steps"],
        batch_size=recipe["batch"],
        lr=recipe["lr"],
        weight_decay=args.weight_decay,
        warmup_steps=min(args.warmup, recipe["steps"] // 10),
        min_lr_ratio=0.1,
        grad_clip=1.0,
        max_loss=xp["training"]["max_loss"],
        progress_interval_s=1e9,
    )
    batches = g.batches(task, n)
    if randomized:
        batches = RandomizedPositions(l_rand).batches(batches)
    began = time.process_time()
    torch.manual_seed(args.seed)  # the initial weights
    model = build_model(
        g.vocab_size(task), xp["model"], base, config["encoding"], max_len=l_rand or train_len
    )
    log = train(
        model, batches, cfg, seed=args.seed, device=CPU, label=f"{task}/{encoding}",
        progress=io.StringIO(), log=lambda *a: None,
    )  # fmt: skip
    trained_s = time.process_time() - began
    model.eval()
    sampler = RandomizedPositions(l_rand).sampler(POSITION_SEED) if randomized else None
    scores = {
        m: score(model, task, m * n, args.sequences, sampler) for m in MULTIPLIERS
    }  # fmt: skip
    return {
        **recipe,
        "encoding": encoding,
        "l_rand": l_rand,
        "seed": args.seed,
        "final_loss": sum(log["losses"][-20:]) / len(log["losses"][-20:]),
        "train_core_s": trained_s,
        "core_s": time.process_time() - began,
        **{f"exact_{m}N": s["exact"] for m, s in scores.items()},
        **{f"token_{m}N": s["token"] for m, s in scores.items()},
    }


def fmt(value) -> str:
    return "  -  " if value is None else f"{value:5.2f}"


def table(rows: list[dict]) -> str:
    """One line per model, grouped by recipe, with the count of encodings at >= 0.9 at N."""
    out, recipes = [], {}
    for r in rows:
        recipes.setdefault((r["task"], r["N"], r["steps"], r["batch"], r["lr"]), []).append(r)
    head = "encoding              EM@N  EM@2N EM@4N EM@8N | tok@N tok2N tok4N tok8N | loss   core-s"
    for (task, n, steps, batch, lr), group in recipes.items():
        plain = [r for r in group if not r["encoding"].endswith("+randomized")]
        good = sum((r["exact_1N"] or 0) >= 0.9 for r in plain)
        out.append(
            f"\n{task}  N={n}  steps={steps}  batch={batch}  lr={lr}: "
            f"{good}/{len(plain)} plain encodings >= 0.9 exact match at N"
        )
        out.append(head)
        for r in group:
            ems = " ".join(fmt(r[f"exact_{m}N"]) for m in MULTIPLIERS)
            toks = " ".join(fmt(r[f"token_{m}N"]) for m in MULTIPLIERS)
            out.append(
                f"{r['encoding']:<20} {ems} | {toks} | {r['final_loss']:.3f} {r['core_s']:6.1f}"
            )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="+", type=parse_recipe, default=[],
                        help="task:N:steps:batch:lr, run in order")  # fmt: skip
    parser.add_argument("--configs", nargs="+", default=[str(ROOT / "config" / "config.yaml")])
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--encodings", nargs="+", default=None, help="default: the config's")
    parser.add_argument(
        "--randomized", nargs="*", default=["sinusoidal", "rope", "alibi", "learned"]
    )
    parser.add_argument("--rand-factor", type=float, default=1.0)
    parser.add_argument("--sequences", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--out", default=None, help="JSON lines, one per model, appended")
    parser.add_argument("--table", default=None, help="print the table of this JSON lines file")
    args = parser.parse_args()
    if args.table:
        rows = [json.loads(line) for line in Path(args.table).read_text().splitlines() if line]
        print(table(rows))
        return
    if args.seed in STUDY_SEEDS:
        sys.exit(f"--seed {args.seed} is a study seed: pilots use another")
    torch.set_num_threads(1)
    config = merged([Path(c) for c in args.configs])
    encodings = (args.encodings or config["encodings"]) + [
        f"{e}+randomized" for e in args.randomized
    ]
    rows = []
    for recipe in args.recipes:
        for encoding in encodings:
            row = pilot_model(config, recipe, encoding, args)
            rows.append(row)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(row) + "\n")
            print(table([row]).splitlines()[-1], flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
