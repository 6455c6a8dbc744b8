"""What reading the attention out costs beside ordinary scoring, measured in one run.

One LM of the default size (random weights: the cost does not depend on them), scored as the
extrapolation section scores it at 1x-16x (both modes, no extensions), then read out as the
mechanism table reads it (``extrapolation.lm.eval.mechanism``: every length, plainly and under
log-n scaling), on one thread:

    python benchmarks/readout_cost.py [--encoding rope] [--tokens 4096]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from posenc.cli import merged
from posenc.data import load_corpus
from posenc.evaluate import evaluate_lm
from posenc.readout import readouts
from posenc.train import build_model

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoding", default="rope")
    parser.add_argument("--tokens", type=int, default=None, help="default: the config's")
    args = parser.parse_args()
    torch.set_num_threads(1)
    xp = merged([ROOT / "config" / "config.yaml"])["extrapolation"]
    lm, settings = xp["lm"], xp["lm"]["eval"]
    corpus = load_corpus(xp["corpus"], xp["val_fraction"], xp["split_block"])
    model = build_model(corpus.vocab_size, xp["model"], args.encoding, {}, max_len=lm["seq_len"])
    model.eval()
    began = time.perf_counter()
    evaluate_lm(
        model,
        corpus.val,
        corpus.train,
        train_len=lm["seq_len"],
        multipliers=settings["multipliers"],
        tokens=settings["tokens"],
        segment=settings["segment"],
        segment_windows=settings["segment_windows"],
        batch_tokens=settings["batch_tokens"],
        device=torch.device("cpu"),
        extensions=(),
    )
    scoring = time.perf_counter() - began
    began = time.perf_counter()
    readouts(
        model,
        corpus.val,
        lm["seq_len"],
        settings["multipliers"],
        tokens_scored=args.tokens or settings["mechanism"]["tokens"],
        batch_tokens=settings["batch_tokens"],
    )
    readout = time.perf_counter() - began
    print(
        f"{args.encoding}: scoring {scoring:.1f} s, readout {readout:.1f} s: "
        f"{readout / scoring:.2f}x of a plain evaluation"
    )


if __name__ == "__main__":
    sys.exit(main())
