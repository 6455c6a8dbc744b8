"""What a no-op rerun costs against Snakemake's own start-up, as a ratio in one run.

    python benchmarks/parse_cost.py [--workdir FOLDER] [--repeats N]

FOLDER holds a finished run of the test config (made in a temporary copy when not given).
The two commands alternate, N times each, so a busy machine slows both alike; the figure is
the ratio of the medians: `snakemake --cores 1 --configfile config/test.yaml` finding nothing
to do, over `snakemake --version`. Target: at most 1.5 (parsing imports no torch).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from workflow_utils import SNAKEMAKE, copy_workflow, snakemake  # noqa: E402

NOOP = ("--cores", "1", "--configfile", "config/test.yaml")


def seconds(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(proc.stdout[-2000:] + proc.stderr[-2000:])
    if "--version" not in cmd and "Nothing to be done" not in proc.stdout + proc.stderr:
        raise SystemExit("the rerun was not a no-op:\n" + (proc.stdout + proc.stderr)[-2000:])
    return elapsed


def measure(work: Path, repeats: int) -> dict:
    version, noop = [], []
    for _ in range(repeats):
        version.append(seconds([SNAKEMAKE, "--version"], work))
        noop.append(seconds([SNAKEMAKE, *NOOP], work))
    v, n = statistics.median(version), statistics.median(noop)
    return {"version_s": v, "noop_s": n, "ratio": n / v, "repeats": repeats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir
        if work is None:
            work = copy_workflow(Path(tmp) / "wf")
            snakemake(work, "--cores", "2", "--configfile", "config/test.yaml")
        snakemake(work, *NOOP)  # settle: the first rerun may still write caches
        r = measure(work, args.repeats)
    print(
        f"snakemake --version {r['version_s']:.2f} s; no-op rerun of the test config "
        f"{r['noop_s']:.2f} s; ratio {r['ratio']:.2f} (median of {r['repeats']} each)"
    )


if __name__ == "__main__":
    main()
