"""What a study's run spent, job by job, from Snakemake's own log, and the share of it that a
set of jobs added: the cold-time ratio of a study against the same study without them,
measured in one run on one machine.

Each job's time is from its start to its finish as the log stamps them (1 s resolution); with
several cores the jobs overlap, so the sum is core-time, not wall time. Jobs are "added" when
their rule is one of ``--rules`` or their ``encoding`` wildcard one of ``--encodings``; the
attention readout's time inside the LM evaluations (their job logs say it) is added too, with
``--readout``. The ratio is total / (total - added): what the study costs against what it cost
before those jobs existed, other things equal.

    python benchmarks/study_cost.py RUN_DIR [--log FILE] \\
        --encodings rope_proportional rope_nope_hybrid --rules extension_stretch --readout
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")
READOUT = re.compile(r"attention readout: ([\d.]+) s")


def jobs(log: Path) -> list[dict]:
    """Every job the log started and finished: rule, wildcards, seconds."""
    now = None
    started: dict[int, dict] = {}
    pending: dict | None = None
    done = []
    for line in log.read_text().splitlines():
        if m := STAMP.match(line):
            now = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := RULE.match(line):
            pending = {"rule": m.group(1), "start": now, "wildcards": {}}
        elif (m := JOBID.match(line)) and pending is not None:
            started[int(m.group(1))] = pending
        elif (m := WILDCARDS.match(line)) and pending is not None:
            pending["wildcards"] = dict(kv.split("=", 1) for kv in m.group(1).split(", "))
        elif (m := FINISHED.match(line)) and int(m.group(1)) in started:
            job = started.pop(int(m.group(1)))
            job["seconds"] = (now - job["start"]).total_seconds()
            done.append(job)
    return done


def readout_seconds(run: Path) -> float:
    """The attention readout's seconds over every LM evaluation's job log."""
    total = 0.0
    for path in (run / "results/logs/extrapolation/evaluate/lm").rglob("*.log"):
        total += sum(float(x) for x in READOUT.findall(path.read_text()))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the workflow's folder")
    parser.add_argument("--log", type=Path, help="Snakemake's log (default: the newest)")
    parser.add_argument("--encodings", nargs="*", default=[])
    parser.add_argument("--rules", nargs="*", default=[])
    parser.add_argument("--readout", action="store_true")
    args = parser.parse_args()
    log = args.log or max((args.run / ".snakemake/log").glob("*.snakemake.log"))
    done = jobs(log)
    by_rule: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    total = added = 0.0
    for job in done:
        new = job["rule"] in args.rules or job["wildcards"].get("encoding") in args.encodings
        row = by_rule[job["rule"]]
        row[0] += 1
        row[1] += job["seconds"]
        row[2] += job["seconds"] if new else 0.0
        total += job["seconds"]
        added += job["seconds"] if new else 0.0
    readout = readout_seconds(args.run) if args.readout else 0.0
    stamps = [j["start"] for j in done]
    wall = (max(j["start"] for j in done) - min(stamps)).total_seconds() if stamps else 0.0
    print(f"log: {log}")
    print(f"{'rule':28} {'jobs':>5} {'core-s':>9} {'added':>9}")
    for rule, (n, seconds, new) in sorted(by_rule.items(), key=lambda kv: -kv[1][1]):
        print(f"{rule:28} {n:5d} {seconds:9.0f} {new:9.0f}")
    print(f"jobs {len(done)}, core-seconds {total:.0f}, wall from first to last start {wall:.0f} s")
    print(f"added: jobs {added:.0f} s, attention readout {readout:.0f} s")
    before = total - added - readout
    print(f"cold-time ratio, total / (total - added): {total / before:.3f}")


if __name__ == "__main__":
    main()
