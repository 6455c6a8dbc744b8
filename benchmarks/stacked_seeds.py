"""Would training a model's seeds together, parameters stacked, pay on this machine?

The study's models are tiny (d = 64, 2 layers), so one idea is to train all seeds of a model in
one process with their parameters stacked (``torch.func.stack_module_state`` and ``vmap`` over
``grad``), trading many small kernels for fewer wider ones. This script measures it against
the way the study trains (one model after another, the same steps), for the passkey model on
one thread, and prints the time per step of all seeds and the speed-up.

    python benchmarks/stacked_seeds.py [--encodings rope alibi t5_bias] [--seeds 5]

Measured 2026-12-02 on the 2-core CPU machine, with the study's run beside it (medians of 5
interleaved blocks): rope 1.02x, alibi 1.02x; t5_bias cannot be vmapped at all (its attention
with a learned bias is a custom autograd.Function without a vmap rule). At these sizes a
training step is compute-bound, not launch-bound (about 0.3 GFLOP of matrix products a
step), so stacking buys almost nothing on a CPU; the study keeps
one model per job, which also keeps one file, one cache entry and one resume checkpoint per
seed. On a GPU, where launches dominate, the trade differs.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from torch.func import functional_call, grad_and_value, stack_module_state, vmap

from posenc.data import PasskeyTask
from posenc.train import build_model, loss_fn

MODEL = {"n_layers": 2, "d_model": 64, "n_heads": 4, "dropout": 0.0, "scale_embeddings": True}


def one_encoding(encoding: str, n_seeds: int, steps: int, batch_size: int, rounds: int) -> str:
    task = PasskeyTask(16, 1)
    models = []
    for seed in range(n_seeds):
        torch.manual_seed(seed)
        models.append(build_model(task.vocab_size, MODEL, encoding, max_len=64))
    lengths = torch.Generator().manual_seed(99)
    generators = [torch.Generator().manual_seed(s) for s in range(n_seeds)]

    def batches():
        # One length per step for every seed: stacked seeds must share their shapes.
        length = int(torch.randint(8, 65, (1,), generator=lengths))
        return [task.sample(g, batch_size, length) for g in generators]

    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in models]

    def sequential_step():
        for model, optimizer, (x, y) in zip(models, optimizers, batches()):
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

    base = copy.deepcopy(models[0]).to("meta")
    params, buffers = stack_module_state(models)
    params = {k: v.detach() for k, v in params.items()}
    stacked_optimizer = torch.optim.AdamW(list(params.values()), lr=1e-3)

    def loss_of(p, b, x, y):
        return loss_fn(functional_call(base, (p, b), (x,)), y)

    grads_of = vmap(grad_and_value(loss_of), randomness="different")

    def stacked_step():
        xs, ys = zip(*batches())
        grads, _ = grads_of(params, buffers, torch.stack(xs), torch.stack(ys))
        for k, v in params.items():
            v.grad = grads[k]
        stacked_optimizer.step()

    def block(step) -> float:
        began = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - began) / steps

    for _ in range(3):  # warm-up
        sequential_step()
    try:
        for _ in range(3):
            stacked_step()
    except RuntimeError as err:  # no vmap rule for a custom autograd.Function, say
        return f"{encoding}: stacked seeds cannot train: {err}"
    # Interleaved blocks, so that a burst of load on the machine hits both alike.
    times = {"sequential": [], "stacked": []}
    for _ in range(rounds):
        times["sequential"].append(block(sequential_step))
        times["stacked"].append(block(stacked_step))
    sequential, stacked = (statistics.median(times[k]) for k in ("sequential", "stacked"))
    return (
        f"{encoding}: {n_seeds} seeds one after another {sequential * 1e3:.1f} ms a step, "
        f"stacked {stacked * 1e3:.1f} ms: {sequential / stacked:.2f}x (median of {rounds})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encodings", nargs="+", default=["rope", "alibi", "t5_bias"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="steps per timed block")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for encoding in args.encodings:
        print(
            one_encoding(encoding, args.seeds, args.steps, args.batch_size, args.rounds),
            flush=True,
        )


if __name__ == "__main__":
    main()
