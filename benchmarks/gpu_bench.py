"""The parts of benchmarks/gpu.sh that are Python: the machine, the throughput of the config's
model, and the summary of a finished (or partly finished) study.

    python benchmarks/gpu_bench.py env --out DIR
    python benchmarks/gpu_bench.py throughput --configfile config/gpu.yaml --out DIR
    python benchmarks/gpu_bench.py summary --out DIR [--results results]

``summary`` reads what the study left behind and writes ``DIR/summary.json`` and
``DIR/summary.md``:

* per-rule wall times. Snakemake writes one benchmark file per job, at
  ``results/benchmarks/<name>.tsv`` (``bench_path`` in rules/common.smk); an analysis' rule is
  ``<analysis>.tsv`` and a stage's ``<analysis>/<stage>/<wildcards...>.tsv``, so the rule is
  the file's name or its first two folders joined by ``_`` (``extrapolation_evaluate``). The
  two cached rules, which may not have a benchmark, time themselves in a ``timing.json``
  (``TIMED_RULES``): their seconds are the training loop's, without the process' start;
* the study's wall time, the sum of every ``gpu.sh study`` command's (``study_runs.jsonl``);
* training tokens/s and peak GPU memory per encoding as the study's models trained;
* the throughput benchmark (``throughput.json``): tokens/s with bf16 autocast against the SDPA
  reference of the same size, as a ratio;

and checks each against the issue's targets (``TARGETS``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

# The targets on one H200: the whole study in 10 minutes, and on the config's model at
# least 1.5M training tokens/s per encoding (the per-encoding ratio targets against the
# reference are throughput.TARGETS).
STUDY_TARGET_S = 600.0
TOKENS_PER_S_TARGET = 1.5e6

# Rules whose jobs time themselves (cached rules may not have a benchmark file): their timing
# files, relative to the results folder.
TIMED_RULES = {
    "extrapolation_train": "extrapolation/models/*/*/seed*/timing.json",
    "extension_finetune": "extension/finetune/*/*/s*/seed*/timing.json",
}


def load_config(configfiles: list[str]) -> dict:
    """config/config.yaml with each file merged over it, dicts recursively (as Snakemake's
    --configfile does)."""
    import yaml

    def merge(base: dict, over: dict) -> dict:
        out = dict(base)
        for key, value in over.items():
            both = isinstance(value, dict) and isinstance(out.get(key), dict)
            out[key] = merge(out[key], value) if both else value
        return out

    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    for name in configfiles:
        config = merge(config, yaml.safe_load(Path(name).read_text()) or {})
    return config


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- env


def environment() -> dict:
    import torch

    info = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["git_commit"] = None
    try:
        smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        info["nvidia_smi"] = smi.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        info["nvidia_smi"] = None
    return info


# ----------------------------------------------------------------------------- throughput


def throughput_args(config: dict, device: str, out: Path, steps: int, repeats: int) -> list[str]:
    """benchmarks/throughput.py's arguments for the config's language model: its size,
    training length and batch, its corpus' vocabulary, every configured encoding, with bf16
    autocast (as the config trains, when it does) against the SDPA reference."""
    from posenc.data import load_corpus

    xp = config["extrapolation"]
    model, lm = xp["model"], xp["lm"]
    vocab = load_corpus(xp["corpus"], xp["val_fraction"], xp["split_block"]).vocab_size
    args = [
        *("--device", device, "--reference", "sdpa", "--vocab", str(vocab)),
        *("--d-model", str(model["d_model"]), "--heads", str(model["n_heads"])),
        *("--layers", str(model["n_layers"]), "--seq-len", str(lm["seq_len"])),
        *("--batch", str(lm["train"]["batch_size"]), "--threads", str(xp["resources"]["threads"])),
        *("--steps", str(steps), "--repeats", str(repeats), "--out", str(out)),
        "--encodings",
        *config["encodings"],
    ]
    return args + (["--bf16"] if xp["training"]["bf16"] else [])


def run_throughput(args) -> None:
    import throughput

    config = load_config(args.configfile)
    argv = throughput_args(
        config, args.device, args.out / "throughput.json", args.steps, args.repeats
    )
    sys.argv = ["throughput.py", *argv]
    throughput.main()
    result = json.loads((args.out / "throughput.json").read_text())
    write(args.out / "throughput.md", throughput.markdown(result) + "\n")


# ----------------------------------------------------------------------------- summary


def rule_of_benchmark(relative: str) -> str:
    """The rule behind a benchmark file, from its path under results/benchmarks (without
    .tsv): ``aliasing`` -> aliasing, ``extrapolation/evaluate/lm/rope/seed0`` ->
    extrapolation_evaluate."""
    parts = relative.split("/")
    return parts[0] if len(parts) == 1 else "_".join(parts[:2])


def job_times(results: Path) -> list[dict]:
    """One row per job: its rule, seconds and peak RSS (MB), and where the numbers come from."""
    rows = []
    bench = results / "benchmarks"
    for path in sorted(bench.glob("**/*.tsv")):
        with open(path, newline="") as f:
            records = list(csv.DictReader(f, delimiter="\t"))
        if not records:
            continue
        seconds = [float(r["s"]) for r in records]
        rss = [float(r["max_rss"]) for r in records if r.get("max_rss") not in (None, "", "NA")]
        rows.append(
            {
                "rule": rule_of_benchmark(path.relative_to(bench).with_suffix("").as_posix()),
                "seconds": sum(seconds) / len(seconds),
                "max_rss_mb": max(rss) if rss else None,
                "source": "benchmark",
            }
        )
    for rule, pattern in TIMED_RULES.items():
        for path in sorted(results.glob(pattern)):
            record = json.loads(path.read_text())
            cpu = record.get("peak_memory_kind") == "cpu_max_rss"
            rows.append(
                {
                    "rule": rule,
                    "seconds": record.get("wall_s"),
                    "max_rss_mb": record.get("peak_memory_mb") if cpu else None,
                    "source": "timing file (training loop only)",
                }
            )
    return rows


def per_rule(rows: list[dict]) -> list[dict]:
    """Jobs, total, mean and longest seconds per rule, the longest total first."""
    out = []
    for rule in dict.fromkeys(r["rule"] for r in rows):
        mine = [r for r in rows if r["rule"] == rule]
        seconds = [r["seconds"] for r in mine if r["seconds"] is not None]
        rss = [r["max_rss_mb"] for r in mine if r["max_rss_mb"] is not None]
        out.append(
            {
                "rule": rule,
                "jobs": len(mine),
                "total_s": sum(seconds),
                "mean_s": statistics.mean(seconds) if seconds else None,
                "max_s": max(seconds, default=None),
                "max_rss_mb": max(rss, default=None),
                "source": mine[0]["source"],
            }
        )
    return sorted(out, key=lambda r: -r["total_s"])


def training(results: Path) -> list[dict]:
    """Per task and encoding, as the study trained: mean tokens/s over seeds, the largest peak
    GPU memory (MiB, the CUDA allocator's; None on the CPU) and the device."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for path in sorted(results.glob(TIMED_RULES["extrapolation_train"])):
        timing = json.loads(path.read_text())
        log = json.loads((path.parent / "train_log.json").read_text())
        groups.setdefault((log["task"], log["encoding"]), []).append(
            timing | {"device": log["device"]}
        )
    out = []
    for (task, encoding), runs in sorted(groups.items()):
        speeds = [r["tokens_per_s"] for r in runs if r.get("tokens_per_s")]
        gpu = [
            r["peak_memory_mb"] for r in runs if r.get("peak_memory_kind") == "cuda_max_allocated"
        ]
        out.append(
            {
                "task": task,
                "encoding": encoding,
                "models": len(runs),
                "tokens_per_s": statistics.mean(speeds) if speeds else None,
                "peak_gpu_memory_mb": max(gpu, default=None),
                "devices": sorted({r["device"] for r in runs}),
            }
        )
    return out


def read_json(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def study_runs(out: Path) -> list[dict]:
    path = out / "study_runs.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarise(out: Path, results: Path) -> dict:
    runs = study_runs(out)
    study_s = sum(r["seconds"] for r in runs)
    done = (out / "study.done").is_file()
    rules = per_rule(job_times(results))
    trained = training(results)
    bench = read_json(out / "throughput.json")
    targets = [
        {
            "target": "whole GPU study",
            "measured": study_s if done else None,
            "expected": f"<= {STUDY_TARGET_S:.0f} s",
            "met": (study_s <= STUDY_TARGET_S) if done else None,
            "note": f"{len(runs)} study command(s)" + ("" if done else ", not finished"),
        }
    ]
    for row in (bench or {}).get("rows", []):
        targets.append(
            {
                "target": f"training {row['encoding']}, ratio to the SDPA reference",
                "measured": row["ratio"],
                "expected": f">= {row['target']}",
                "met": row["meets_target"],
                "note": (
                    f"{row['tokens_per_s']:,.0f} vs {row['reference_tokens_per_s']:,.0f} tokens/s"
                ),
            }
        )
        targets.append(
            {
                "target": f"training {row['encoding']}, tokens/s",
                "measured": row["tokens_per_s"],
                "expected": f">= {TOKENS_PER_S_TARGET:,.0f}",
                "met": row["tokens_per_s"] >= TOKENS_PER_S_TARGET,
                "note": (
                    f"peak GPU memory {row['peak_memory_mb']:,.0f} MiB"
                    if "peak_memory_mb" in row
                    else "no GPU memory (not on CUDA)"
                ),
            }
        )
    pdf = read_json(out / "pdf.json")
    if pdf is not None and not pdf["rendered"]:
        targets.append(
            {
                "target": "the report's PDF",
                "measured": None,
                "expected": "rendered",
                "met": None,
                "note": f"skipped: {pdf['reason']}",
            }
        )
    return {
        "machine": read_json(out / "env.json"),
        "pdf": pdf,
        "study": {"done": done, "seconds": study_s, "runs": runs},
        "targets": targets,
        "rules": rules,
        "training": trained,
        "throughput": bench,
    }


def _cell(x, digits: int = 1) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return str(x)


def markdown(summary: dict) -> str:
    machine = summary["machine"] or {}
    head = (
        f"Measured {machine.get('date', '?')} on {machine.get('gpu') or 'no GPU'}, "
        f"torch {machine.get('torch', '?')} (`benchmarks/gpu.sh`)."
    )
    lines = [head, "", "| target | measured | expected | met | note |", "|---|---:|---|---|---|"]
    for t in summary["targets"]:
        met = {True: "yes", False: "**no**", None: "—"}[t["met"]]
        digits = 2 if "ratio" in t["target"] else 0
        lines.append(
            f"| {t['target']} | {_cell(t['measured'], digits)} | {t['expected']} | {met} | "
            f"{t['note']} |"
        )
    lines += ["", "| rule | jobs | total (s) | mean (s) | longest (s) | peak RSS (MB) | timed by |"]
    lines.append("|---|---:|---:|---:|---:|---:|---|")
    for r in summary["rules"]:
        lines.append(
            f"| {r['rule']} | {r['jobs']} | {_cell(r['total_s'])} | {_cell(r['mean_s'])} | "
            f"{_cell(r['max_s'])} | {_cell(r['max_rss_mb'], 0)} | {r['source']} |"
        )
    lines += ["", "| task | encoding | models | tokens/s (mean) | peak GPU memory (MiB) | device |"]
    lines.append("|---|---|---:|---:|---:|---|")
    for r in summary["training"]:
        lines.append(
            f"| {r['task']} | {r['encoding']} | {r['models']} | {_cell(r['tokens_per_s'], 0)} | "
            f"{_cell(r['peak_gpu_memory_mb'], 0)} | {', '.join(r['devices'])} |"
        )
    return "\n".join(lines) + "\n"


def run_summary(args) -> None:
    summary = summarise(args.out, args.results)
    write(args.out / "summary.json", json.dumps(summary, indent=2) + "\n")
    text = markdown(summary)
    write(args.out / "summary.md", text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    env = sub.add_parser("env", help="the machine, to DIR/env.json")
    env.add_argument("--out", type=Path, required=True)
    tp = sub.add_parser("throughput", help="the config's model, to DIR/throughput.json")
    tp.add_argument("--configfile", nargs="+", default=["config/gpu.yaml"])
    tp.add_argument("--device", default="auto")
    tp.add_argument("--steps", type=int, default=20)
    tp.add_argument("--repeats", type=int, default=5)
    tp.add_argument("--out", type=Path, required=True)
    sm = sub.add_parser("summary", help="DIR/summary.json and DIR/summary.md")
    sm.add_argument("--out", type=Path, required=True)
    sm.add_argument("--results", type=Path, default=Path("results"))
    args = parser.parse_args()
    if args.part == "env":
        info = environment()
        write(args.out / "env.json", json.dumps(info, indent=2) + "\n")
        print(json.dumps(info))
    elif args.part == "throughput":
        run_throughput(args)
    else:
        run_summary(args)


if __name__ == "__main__":
    main()
