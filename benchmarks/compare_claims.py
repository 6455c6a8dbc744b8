"""Compare two claims ledgers: the same ids, verdicts and measured numbers?

    python benchmarks/compare_claims.py BEFORE.json AFTER.json [--section S ...]

Measured values are compared as multisets of numbers (labels may differ between the two),
to a relative tolerance of 1e-9. Timing-based sections (complexity) differ between any two
runs and are compared by id and presence only. Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

TIMING_SECTIONS = {"complexity"}


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


def compare(before: list[dict], after: list[dict], sections=None) -> list[str]:
    b = {c["id"]: c for c in before if not sections or c["section"] in sections}
    a = {c["id"]: c for c in after if not sections or c["section"] in sections}
    problems = [f"only before: {i}" for i in sorted(set(b) - set(a))]
    problems += [f"only after: {i}" for i in sorted(set(a) - set(b))]
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
    problems = compare(load(args.before), load(args.after), args.section)
    for p in problems:
        print(p)
    n = len([c for c in load(args.after) if not args.section or c["section"] in args.section])
    print(f"{n} claims compared: {'identical' if not problems else f'{len(problems)} differences'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
