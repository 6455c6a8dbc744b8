"""How close the study's training runs to this core's arithmetic peak, measured in one run.

Stacking a model's seeds into one process (``benchmarks/stacked_seeds.py``) gained 1.02x on
one CPU thread: where does a training step's time go, if not to idle width? This script trains
one model of the default recipe for ``--steps`` steps, counts its floating-point operations
with torch's FLOP counter (matrix products and attention, which are nearly all of them), times
the same run unprofiled, and sets the achieved rate beside the rate of one large float32
matrix product and of the model's own feed-forward product, all on one thread:

    python benchmarks/train_utilisation.py [--task lm] [--encoding rope] [--steps 100]

Far below the large product's rate, the step's time goes to what is not a large product: the
small element-wise kernels (GELU, LayerNorm, softmax, the optimizer's updates) and each
operator's fixed cost, which a model of d = 64 has in proportion to its arithmetic.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import recipe_cost  # noqa: E402
import train_model  # noqa: E402

from posenc.cli import merged  # noqa: E402


def product_rate(m: int, k: int, n: int, repeats: int = 5) -> float:
    """GFLOP/s of an (m x k) @ (k x n) float32 product, the median of ``repeats`` timings."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    inner = max(1, int(2e9 / (2 * m * k * n)))  # about 2 GFLOP a timing
    rates = []
    for _ in range(repeats):
        began = time.perf_counter()
        for _ in range(inner):
            a @ b
        rates.append(2 * m * k * n * inner / (time.perf_counter() - began) / 1e9)
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="lm", choices=("lm", "passkey"))
    parser.add_argument("--encoding", default="rope")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = merged([ROOT / "config" / "config.yaml"])
    settings = recipe_cost.settings(config, args.task, earlier=False)
    settings["train"] |= {"steps": args.steps, "warmup_steps": min(10, args.steps)}

    def run() -> None:
        train_model.compute(
            args.task,
            args.encoding,
            0,
            settings,
            torch.device("cpu"),
            progress=io.StringIO(),
            log=lambda *a: None,
        )

    counter = FlopCounterMode(display=False)
    with counter:
        run()
    flops = counter.get_total_flops()
    began = time.perf_counter()
    run()
    seconds = time.perf_counter() - began
    achieved = flops / seconds / 1e9
    model = settings["model"]
    tokens = settings["train"]["batch_size"] * (
        settings["data"].get("seq_len") or settings["data"]["max_len"]
    )
    ffn = product_rate(tokens, model["d_model"], 4 * model["d_model"])
    large = product_rate(1024, 1024, 1024)
    print(
        f"{args.task} {args.encoding}, {args.steps} steps: {flops / 1e9:.1f} GFLOP in "
        f"{seconds:.1f} s = {achieved:.1f} GFLOP/s on one thread"
    )
    print(
        f"its feed-forward product ({tokens} x {model['d_model']} x {4 * model['d_model']}): "
        f"{ffn:.1f} GFLOP/s; a 1024^3 product: {large:.1f} GFLOP/s"
    )
    print(
        f"training runs at {achieved / large:.0%} of the large product's rate "
        f"and {achieved / ffn:.0%} of its own feed-forward product's"
    )


if __name__ == "__main__":
    main()
