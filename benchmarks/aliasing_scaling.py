"""Aliasing scaling: time and peak memory of the aliasing analysis versus L.

`python benchmarks/aliasing_scaling.py [--min-log2 16] [--max-log2 22] [--repeats 3]`

Each L runs `posenc.analyses.aliasing.compute` with the default config's aliasing section (only the
largest length changed) in a fresh process, so its peak RSS is its own. Targets: time linear in
L, peak memory flat once chunking starts.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, time
import torch, yaml
import logging
from posenc.analyses.aliasing.compute import compute
from posenc.analysis import Context
config = yaml.safe_load(open({config!r}))
cfg = config["aliasing"]
cfg["max_log2_len"] = {log2}
torch.set_num_threads({threads})
ctx = Context(cfg=cfg, seed=config["seed"], encodings=config["encodings"],
              encoding=config["encoding"], device=torch.device("cpu"),
              log=logging.getLogger("aliasing"))
start = time.perf_counter()
compute(ctx)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": seconds, "peak_rss_mb": peak}}))
"""


def measure(log2: int, threads: int, config: Path) -> dict:
    code = CHILD.format(config=str(config), log2=log2, threads=threads)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(
    repeats: int = 3,
    min_log2: int = 16,
    max_log2: int = 22,
    threads: int = 2,
    config: Path = ROOT / "config" / "config.yaml",
) -> dict:
    rows = []
    for log2 in range(min_log2, max_log2 + 1):
        samples = [measure(log2, threads, config) for _ in range(repeats)]
        rows.append(
            {
                "log2_L": log2,
                "seconds": statistics.median(s["seconds"] for s in samples),
                "peak_rss_mb": statistics.median(s["peak_rss_mb"] for s in samples),
            }
        )
        print(
            f"L = 2^{log2}: {rows[-1]['seconds']:.2f} s, {rows[-1]['peak_rss_mb']:.0f} MB",
            file=sys.stderr,
        )
    # Slope of log time against log L over the upper half: ~1 means linear.
    upper = rows[len(rows) // 2 :]
    xs = [r["log2_L"] * math.log(2) for r in upper]
    ys = [math.log(r["seconds"]) for r in upper]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return {"threads": threads, "repeats": repeats, "rows": rows, "time_slope_upper": slope}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-log2", type=int, default=16)
    parser.add_argument("--max-log2", type=int, default=22)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(run(args.repeats, args.min_log2, args.max_log2, args.threads), indent=2))


if __name__ == "__main__":
    main()
