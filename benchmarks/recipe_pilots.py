"""The recipe pilots: the training recipes the study uses, chosen on a seed it does not report
and on text it does not score.

Two pilots, each judged on the tuning span (``extrapolation.tune_fraction``: whole files held
out of training and never scored; ``posenc.data.tuning_units``) and trained with a seed outside
every seed list of the study (``--seed``, 100):

* ``lm``: the character LM of ``extrapolation.lm`` for each encoding and learning rate asked
  for, bits/char on the tuning span at L_train (every token of non-overlapping windows). The
  recipe's learning rate is kept unless another beats it (by more than 0.02 bits/char) for
  every encoding tried: the script prints the numbers, the reader applies the rule.
* ``passkey``: the passkey model of ``extrapolation.passkey`` for each encoding, at the
  configured recipe: exact match at N on fresh sequences (a test seed outside the study's
  evaluation seed). The data are synthetic and unlimited, so only the seed is held out.
* ``finetune``: the continued-training control of the extension section (the base RoPE LM of
  the ``lm`` pilot at its configured learning rate, trained on at L_train with the fine-tune
  recipe and no scaling) for each fine-tune learning rate and batch asked for: its bits/char
  on the tuning span at step 0 and every snapshot step. A fine-tune recipe that damages what
  it extends shows as a rise above step 0.

Prints a table per pilot and writes every number to ``--out`` (JSON); the seconds each pilot
took, on one thread, are in it too: the pilots' cost is reported apart from the study's.

    python benchmarks/recipe_pilots.py lm --encodings rope learned alibi --lrs 0.001 0.003 0.006
    python benchmarks/recipe_pilots.py passkey --encodings sinusoidal learned t5_bias
    python benchmarks/recipe_pilots.py finetune --lrs 0.001 0.0003 0.0001 --batches 4 16
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
import train_model  # noqa: E402

from posenc.analyses.extension import stages  # noqa: E402
from posenc.cli import merged  # noqa: E402
from posenc.data import PasskeyTask, load_corpus  # noqa: E402
from posenc.evaluate import bits_per_char, passkey_accuracy  # noqa: E402

CPU = torch.device("cpu")


def lm_settings(config: dict, lr: float | None = None) -> dict:
    """The study's LM training settings (the training rule's params), at learning rate ``lr``."""
    xp = config["extrapolation"]
    data = {
        "corpus": xp["corpus"],
        "val_fraction": xp["val_fraction"],
        "split_block": xp["split_block"],
        "tune_fraction": xp["tune_fraction"],
        "seq_len": xp["lm"]["seq_len"],
    }
    train = dict(xp["lm"]["train"]) | xp["training"] | {"checkpoint_every": 0}
    if lr is not None:
        train["lr"] = lr
    return {"data": data, "model": xp["model"], "train": train, "encoding": config["encoding"]}


def tuning_bits(model, tune: torch.Tensor, length: int, tokens: int) -> float:
    """Bits/char of ``model`` on the tuning span: every token of non-overlapping windows."""
    model.eval()
    out = bits_per_char(
        model, tune, length, "all", tokens_scored=tokens, segment=0, segment_ends=None
    )
    return out["bits_per_char"]


def train_lm(config: dict, encoding: str, seed: int, lr: float | None):
    """(model, checkpoint metadata) of one pilot LM."""
    model, meta, _ = train_model.compute(
        "lm",
        encoding,
        seed,
        lm_settings(config, lr),
        CPU,
        progress=io.StringIO(),
        log=lambda *a: None,
    )
    return model, meta


def lm_pilot(config: dict, args) -> dict:
    xp = config["extrapolation"]
    corpus = load_corpus(xp["corpus"], xp["val_fraction"], xp["split_block"], xp["tune_fraction"])
    train_len = xp["lm"]["seq_len"]
    rows = []
    for encoding in args.encodings:
        for lr in args.lrs:
            began = time.perf_counter()
            model, _ = train_lm(config, encoding, args.seed, lr)
            bits = tuning_bits(model, corpus.tune, train_len, args.tokens)
            rows.append(
                {"encoding": encoding, "lr": lr, "bits": bits, "s": time.perf_counter() - began}
            )
            print(f"lm {encoding:<12} lr {lr:<8g} {bits:.4f} bits/char  ({rows[-1]['s']:.0f} s)")
    return {"tune_characters": len(corpus.tune), "rows": rows}


def passkey_pilot(config: dict, args) -> dict:
    xp = config["extrapolation"]
    pk = xp["passkey"]
    settings = {
        "data": dict(pk["task"]),
        "model": xp["model"],
        "train": dict(pk["train"]) | xp["training"] | {"checkpoint_every": 0},
        "encoding": config["encoding"],
    }
    task = PasskeyTask(pk["task"]["num_symbols"], pk["task"]["key_len"])
    # Test sequences from a generator seed of their own, not the study's evaluation seed.
    test_seed = pk["eval"]["seed"] + args.seed
    rows = []
    for encoding in args.encodings:
        began = time.perf_counter()
        model, _, _ = train_model.compute(
            "passkey",
            encoding,
            args.seed,
            settings,
            CPU,
            progress=io.StringIO(),
            log=lambda *a: None,
        )
        model.eval()
        with torch.no_grad():
            out = passkey_accuracy(
                model, task, pk["task"]["max_len"], args.sequences, test_seed, 128, CPU
            )
        rows.append(
            {"encoding": encoding, "accuracy": out["accuracy"], "s": time.perf_counter() - began}
        )
        print(
            f"passkey {encoding:<12} exact match at N {out['accuracy']:.3f}"
            f"  ({rows[-1]['s']:.0f} s)"
        )
    return {"rows": rows, "test_seed": test_seed}


def finetune_pilot(config: dict, args) -> dict:
    xp, ext = config["extrapolation"], config["extension"]
    train_len = xp["lm"]["seq_len"]
    began = time.perf_counter()
    base, meta = train_lm(config, "rope", args.seed, None)
    base_s = time.perf_counter() - began
    corpus = stages.corpus_of(meta)
    start = tuning_bits(base, corpus.tune, train_len, args.tokens)
    print(f"base rope seed {args.seed}: {start:.4f} bits/char on the tuning span ({base_s:.0f} s)")
    rows = []
    for lr in args.lrs:
        for batch in args.batches:
            began = time.perf_counter()
            model = copy.deepcopy(base)
            train = dict(ext["finetune"]["train"]) | {"lr": lr, "batch_size": batch}
            settings = {
                "method": "plain",
                "scale": 1,
                "params": {},
                "train": train | {"checkpoint_every": 0},
                "snapshots": ext["finetune"]["snapshots"],
            }
            snapshots, _ = stages.finetune(
                model,
                meta,
                settings,
                seed=args.seed,
                device=CPU,
                label=f"pilot/plain/lr{lr:g}/b{batch}",
                progress=io.StringIO(),
                log=lambda *a: None,
            )
            curve = {0: start}
            for step, weights in sorted(snapshots.items()):
                model.load_state_dict(weights)
                curve[step] = tuning_bits(model, corpus.tune, train_len, args.tokens)
            rows.append(
                {"lr": lr, "batch_size": batch, "bits": curve, "s": time.perf_counter() - began}
            )
            steps = "  ".join(f"{s}: {b:.4f}" for s, b in curve.items())
            print(f"finetune lr {lr:<8g} batch {batch:<3} {steps}  ({rows[-1]['s']:.0f} s)")
    return {"base_s": base_s, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pilot", choices=["lm", "passkey", "finetune"])
    parser.add_argument(
        "--configs",
        nargs="+",
        default=[str(ROOT / "config" / "config.yaml")],
        help="config files, merged in order (as snakemake --configfile)",
    )
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--encodings", nargs="+", default=["rope", "learned", "alibi"])
    parser.add_argument("--lrs", nargs="+", type=float, default=[0.001, 0.003, 0.006])
    parser.add_argument("--batches", nargs="+", type=int, default=[4, 16])
    parser.add_argument("--tokens", type=int, default=65536, help="tuning tokens scored")
    parser.add_argument("--sequences", type=int, default=256, help="passkey test sequences")
    parser.add_argument("--out", default=None, help="JSON file for every number")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = merged([Path(c) for c in args.configs])
    seeds = set(config["extrapolation"]["lm"]["seeds"]) | set(
        config["extrapolation"]["passkey"]["seeds"]
    )
    if args.seed in seeds:
        sys.exit(f"--seed {args.seed} is a study seed ({sorted(seeds)}): pilots use another")
    if not config["extrapolation"]["tune_fraction"]:
        sys.exit("config key extrapolation.tune_fraction is 0: no tuning span to judge pilots on")
    began = time.perf_counter()
    pilot = {"lm": lm_pilot, "passkey": passkey_pilot, "finetune": finetune_pilot}[args.pilot]
    result = pilot(config, args)
    result |= {"pilot": args.pilot, "seed": args.seed, "seconds": time.perf_counter() - began}
    print(f"{args.pilot} pilot: {result['seconds']:.0f} s on one thread")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
