"""Benchmarks, run on demand (not timed tests): `python benchmarks/run.py [--repeats N]`.

Writes results/benchmarks.json and rewrites the table between the benchmark markers in
README.md. Each figure is a median over repeats, with the machine it ran on.

1. Workflow: a cold run of the test config, a second (no-op) run, and a run after touching
   only a report template (target: only the report rules rerun).
2. Training throughput of our transformer per encoding against a plain torch reference
   (benchmarks/throughput.py).
3. Aliasing scaling: time and peak memory of the aliasing computations versus L
   (benchmarks/aliasing_scaling.py), each L in a fresh process so peak RSS is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from workflow_utils import copy_workflow, snakemake  # noqa: E402 -- after the path setup

MARK_START, MARK_END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"


def machine() -> dict:
    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def jobs_run(stdout: str) -> list[str]:
    """Rule names of the jobs Snakemake started, from its log."""
    return re.findall(r"^(?:local)?rule (\w+):", stdout, flags=re.MULTILINE)


def timed_snakemake(work: Path, *args: str) -> tuple[float, list[str]]:
    start = time.perf_counter()
    proc = snakemake(work, *args)
    return time.perf_counter() - start, jobs_run(proc.stdout)


def workflow_benchmarks(cores: int, repeats: int) -> dict:
    args = ("--cores", str(cores), "--configfile", "config/test.yaml")
    cold, noop, touched = [], [], []
    noop_jobs, touched_jobs = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            work = copy_workflow(Path(tmp) / "wf")
            cold.append(timed_snakemake(work, *args)[0])
            seconds, noop_jobs = timed_snakemake(work, *args)
            noop.append(seconds)
            # An edit, not a bare touch: Snakemake 9 sees through a new mtime on unchanged
            # content (measured: a touch reruns nothing).
            template = work / "report_templates" / "index.html.j2"
            template.write_text(template.read_text() + "{# benchmark edit #}\n")
            seconds, touched_jobs = timed_snakemake(work, *args)
            touched.append(seconds)
    return {
        "cores": cores,
        "repeats": repeats,
        "cold_run_s": statistics.median(cold),
        "noop_run_s": statistics.median(noop),
        "noop_jobs": len(noop_jobs),
        "touch_template_run_s": statistics.median(touched),
        "touch_template_rules": sorted(set(touched_jobs) - {"all"}),  # `all` is the target
    }


def commit() -> str:
    """The checkout's commit, "+changes" where the work tree differs from it: the README
    names what each figure was measured at."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def run(repeats: int, cores: int, skip: set[str]) -> dict:
    results = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "commit": commit(),
    }
    if "workflow" not in skip:
        results["workflow"] = workflow_benchmarks(cores, repeats)
    if "throughput" not in skip:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "throughput.json"
            subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "benchmarks/throughput.py"),
                    "--repeats",
                    str(max(5, repeats)),
                    "--out",
                    str(out),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            results["throughput"] = json.loads(out.read_text())
    if "aliasing" not in skip:
        import aliasing_scaling

        results["aliasing"] = aliasing_scaling.run(repeats=repeats)
    return results


def markdown(results: dict) -> str:
    m = results["machine"]
    at = f" at commit {results['commit']}" if results.get("commit") else ""
    lines = [
        f"Measured {results['date']}{at} on {m['processor']}, {m['cpus']} CPUs, "
        f"torch {m['torch']}"
        + (f", {m['cuda']}" if m["cuda"] else "")
        + " (`python benchmarks/run.py`).",
        "",
        "| benchmark | measured | target |",
        "|---|---|---|",
    ]
    w = results.get("workflow")
    if w:
        lines += [
            f"| cold run, test config, {w['cores']} cores | {w['cold_run_s']:.1f} s | — |",
            f"| no-op second run | {w['noop_run_s']:.2f} s, {w['noop_jobs']} jobs "
            "| 0 jobs, < 3 s |",
            f"| after editing a report template | {w['touch_template_run_s']:.1f} s, reran "
            f"{', '.join(w['touch_template_rules']) or 'nothing'} | report rules only |",
        ]
    for row in results.get("throughput", {}).get("rows", []):
        lines.append(
            f"| training throughput, {row['encoding']} (1 thread) | "
            f"{row['tokens_per_s']:,.0f} tok/s, {row['ratio']:.2f}× reference "
            f"({row['reference_tokens_per_s']:,.0f}) | ≥ {row['target']:.2f}× |"
        )
    for row in results.get("aliasing", {}).get("rows", []):
        lines.append(
            f"| aliasing, L = 2^{row['log2_L']} | {row['seconds']:.2f} s, "
            f"{row['peak_rss_mb']:.0f} MB peak | linear time, flat memory |"
        )
    return "\n".join(lines)


def update_readme(table: str) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    if MARK_START not in text:
        return
    head, rest = text.split(MARK_START, 1)
    _, tail = rest.split(MARK_END, 1)
    readme.write_text(f"{head}{MARK_START}\n{table}\n{MARK_END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["workflow", "throughput", "aliasing"]
    )
    parser.add_argument("--output", default=str(ROOT / "results" / "benchmarks.json"))
    args = parser.parse_args()
    results = run(args.repeats, args.cores, set(args.skip))
    output = Path(args.output)
    if args.skip and output.exists():  # a partial rerun keeps the parts it skipped
        results = {**json.loads(output.read_text()), **results}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")
    table = markdown(results)
    update_readme(table)
    print(table)


if __name__ == "__main__":
    main()
