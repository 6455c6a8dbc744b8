"""The timing claims' verdicts on a busy machine: the complexity job, run N times on the test
config while a CPU-bound process runs beside it.

    python benchmarks/timing_under_load.py [--workdir FOLDER] [--runs N] [--burners K]

FOLDER holds the workflow (a temporary copy of the sources when not given; the complexity job
needs no other job's results). Each run forces the complexity job alone, with K processes
spinning on the CPU meanwhile, and prints its claims' verdicts and their intervals. On a quiet
machine (K = 0) the same runs show what the claims give without load. A verdict that load
flips to "fail" would be a timing that decides nothing; under load a verdict may be
"inconclusive" (an interval straddling the threshold), never a fail that noise made.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from workflow_utils import copy_workflow, snakemake  # noqa: E402


def spin() -> None:
    while True:
        pass


def interval(value) -> str:
    if isinstance(value, dict) and set(value) == {"estimate", "low", "high"}:
        return f"{value['estimate']:.2f} [{value['low']:.2f}, {value['high']:.2f}]"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {interval(v)}" for k, v in value.items())
    return str(value)


def run_once(work: Path) -> list[dict]:
    snakemake(
        work,
        "--cores",
        "2",
        "--configfile",
        "config/test.yaml",
        "--forcerun",
        "complexity",
        "--until",
        "complexity",
    )
    return json.loads((work / "results/complexity/claims.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--burners", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or copy_workflow(Path(tmp) / "wf")
        burners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.burners)]
        for b in burners:
            b.start()
        try:
            for i in range(args.runs):
                for c in run_once(work):
                    if c["verdict"] == "n/a":
                        continue
                    measured = c["measured"]
                    slopes = next(iter(measured.values())) if isinstance(measured, dict) else {}
                    print(f"run {i + 1} | {c['id']} | {c['verdict']} | {interval(slopes)}")
        finally:
            for b in burners:
                b.terminate()


if __name__ == "__main__":
    main()
