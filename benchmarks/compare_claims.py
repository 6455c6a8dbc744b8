"""Compare two claims ledgers: the same ids, verdicts and measured numbers?

    python benchmarks/compare_claims.py BEFORE.json AFTER.json [--section S ...]

Measured values are compared as multisets of numbers (labels may differ between the two),
to a relative tolerance of 1e-9. Timing-based sections (complexity) differ between any two
runs and are compared by id and presence only. An id in BEFORE only that
``posenc/retired_claims.yaml`` lists as retired is no difference, nor is the id that replaced
it in AFTER: its assertion changed on purpose, so there is nothing to compare it with. It is
reported as retired, with the id that replaced it, whether AFTER has that, and why. Exit
status 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import yaml

TIMING_SECTIONS = {"complexity"}
RETIRED = Path(__file__).resolve().parents[1] / "posenc" / "retired_claims.yaml"


def load_retired(path: Path = RETIRED) -> dict[str, dict]:
    """{old id: {"replaced_by", "since", "reason"}} from the retired claims' map."""
    return yaml.safe_load(path.read_text()) or {}


def numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in numbers(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in numbers(v)]
    return []


def same(a: list[float], b: list[float]) -> bool:
    a, b = sorted(a), sorted(b)
    return len(a) == len(b) and all(
        math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a, b)
    )


def retirements(before: list[dict], after: list[dict], retired: dict[str, dict]) -> list[str]:
    """One line for each retired id in ``before`` that ``after`` no longer has: not a
    difference, but said, so that a reader sees which claim took its place."""
    after_ids = {c["id"] for c in after}
    lines = []
    for cid in sorted({c["id"] for c in before} - after_ids):
        if cid not in retired:
            continue
        entry = retired[cid] or {}
        new = entry.get("replaced_by")
        where = "" if new is None else ", in after" if new in after_ids else ", not in after"
        lines.append(f"retired: {cid} -> {new or 'none'}{where} ({entry.get('reason', '')})")
    return lines


def compare(
    before: list[dict], after: list[dict], sections=None, retired: dict[str, dict] | None = None
) -> list[str]:
    """The differences between two ledgers. An id ``retired`` lists that only ``before`` has
    is none, nor is the id that replaced it in ``after``: :func:`retirements` says both."""
    retired = retired or {}
    b = {c["id"]: c for c in before if not sections or c["section"] in sections}
    a = {c["id"]: c for c in after if not sections or c["section"] in sections}
    gone = [i for i in set(b) - set(a) if i in retired]
    successors = {(retired[i] or {}).get("replaced_by") for i in gone}
    problems = [f"only before: {i}" for i in sorted(set(b) - set(a) - set(gone))]
    problems += [f"only after: {i}" for i in sorted(set(a) - set(b) - successors)]
    for cid in sorted(set(a) & set(b)):
        if b[cid]["section"] in TIMING_SECTIONS:
            continue
        if a[cid]["verdict"] != b[cid]["verdict"]:
            problems.append(f"{cid}: verdict {b[cid]['verdict']} -> {a[cid]['verdict']}")
        if not same(numbers(b[cid]["measured"]), numbers(a[cid]["measured"])):
            problems.append(f"{cid}: measured {b[cid]['measured']} -> {a[cid]['measured']}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--section", action="append")
    args = parser.parse_args()
    load = lambda p: json.load(open(p))  # noqa: E731
    before, after = (
        [c for c in load(path) if not args.section or c["section"] in args.section]
        for path in (args.before, args.after)
    )
    retired = load_retired()
    for line in retirements(before, after, retired):
        print(line)
    problems = compare(before, after, retired=retired)
    for p in problems:
        print(p)
    n = len(after)
    print(f"{n} claims compared: {'identical' if not problems else f'{len(problems)} differences'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
