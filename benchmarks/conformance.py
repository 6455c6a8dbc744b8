"""Wall time of the conformance section's job, as the workflow runs it.

    python benchmarks/conformance.py [--configfile config/test.yaml] [--repeats N]

Each repeat copies the workflow into a fresh temporary folder and runs snakemake on
results/conformance/metrics.json alone (the analysis job: imports of torch and the three
libraries, the compute, the figure and the tables), so nothing is reused between repeats.
Prints each wall time of the whole snakemake call, and of the job itself as Snakemake's
benchmark file records it. Target at the default config: at most 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from workflow_utils import SNAKEMAKE, copy_workflow  # noqa: E402

TARGET = "results/conformance/metrics.json"


def once(configfile: str | None) -> tuple[float, float]:
    """(snakemake's wall time, the job's own) for one run in a fresh copy, in seconds."""
    with tempfile.TemporaryDirectory(prefix="posenc-conformance-") as tmp:
        work = copy_workflow(Path(tmp) / "wf")
        cmd = [SNAKEMAKE, "--cores", "2", TARGET]
        if configfile:
            cmd += ["--configfile", configfile]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode:
            raise SystemExit(proc.stdout[-3000:] + proc.stderr[-3000:])
        with open(work / "results/benchmarks/conformance.tsv") as f:
            job = float(next(csv.DictReader(f, delimiter="\t"))["s"])
    return wall, job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", help="a config on top of config/config.yaml")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    runs = [once(args.configfile) for _ in range(args.repeats)]
    for i, (wall, job) in enumerate(runs, 1):
        print(f"run {i}: snakemake {wall:.1f} s, conformance job {job:.1f} s")
    wall = statistics.median(w for w, _ in runs)
    job = statistics.median(j for _, j in runs)
    config = args.configfile or "config/config.yaml"
    print(f"conformance ({config}): median wall {wall:.1f} s (job {job:.1f} s) over {len(runs)}")


if __name__ == "__main__":
    main()
