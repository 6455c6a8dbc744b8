"""What reading the attention out costs beside ordinary scoring, measured in one run, and what
the default study's readout costs at that rate.

One LM of the default size (random weights: the cost does not depend on them), scored as the
extrapolation section scores it at every multiplier (both modes, no extensions), then read out
as the mechanism table reads it (``extrapolation.lm.eval.mechanism``; ``posenc.readout``: 1x
and the longest length plainly, the longest under log-n scaling), on one thread. The study's
estimate is that model's readout time times the LMs read out (every encoding x the config's
mechanism seeds): an upper bound, since a learned table is read at 1x only.

    python benchmarks/readout_cost.py [--encoding rope] [--tokens 16384] [--no-scoring]
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
from posenc.readout import readout_multipliers, readouts
from posenc.train import build_model

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoding", default="rope")
    parser.add_argument("--tokens", type=int, default=None, help="default: the config's")
    parser.add_argument(
        "--no-scoring", action="store_true", help="time the readout alone (no comparison)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = merged([ROOT / "config" / "config.yaml"])
    xp = config["extrapolation"]
    lm, settings = xp["lm"], xp["lm"]["eval"]
    mechanism = settings["mechanism"]
    tokens = args.tokens or mechanism["tokens"]
    corpus = load_corpus(xp["corpus"], xp["val_fraction"], xp["split_block"])
    model = build_model(corpus.vocab_size, xp["model"], args.encoding, {}, max_len=lm["seq_len"])
    model.eval()
    scoring = None
    if not args.no_scoring:
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
        tokens_scored=tokens,
        batch_tokens=settings["batch_tokens"],
    )
    readout = time.perf_counter() - began
    lengths = "x, ".join(map(str, readout_multipliers(settings["multipliers"])))
    longest = max(settings["multipliers"]) * lm["seq_len"]
    models = len(config["encodings"]) * len(mechanism["seeds"])
    print(
        f"{args.encoding}: readout at {lengths}x of {tokens} tokens "
        f"({tokens // longest} windows at the longest): {readout:.1f} s"
        + ("" if scoring is None else f", {readout / scoring:.2f}x of scoring ({scoring:.1f} s)")
    )
    print(
        f"default study: {models} LMs ({len(config['encodings'])} encodings x seeds "
        f"{mechanism['seeds']}) x {readout:.1f} s = {models * readout:.0f} core-s at most"
    )


if __name__ == "__main__":
    sys.exit(main())
