"""Coverage of the study's intervals and the claims' family-wise error, by simulation on
tables shaped like a default run's (posenc.coverage; the shapes in
tests/fixtures/variance_components.json, written by benchmarks/variance_components.py):

    python benchmarks/coverage.py [--trials 2000] [--ledgers 1000]

Prints, for every encoding and quantity of the default run, the share of intervals that hold
the true mean at 3 and at 5 seeds (nominal 0.95), then the share of claims that fail with
every entry exactly at its threshold, by the number of entries a claim judges. The test suite
runs the same functions with fewer trials (tests/test_estimates.py).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from posenc.coverage import COMPONENTS, coverage, family_error

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "variance_components.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--ledgers", type=int, default=1000)
    args = parser.parse_args()
    fixture = json.loads(FIXTURE.read_text())
    fragments = fixture["fragments"]
    shapes = {
        f"{e} {q}": {k: c[k] for k in COMPONENTS}
        for e, quantities in fixture["components"].items()
        for q, c in quantities.items()
    }
    print(f"{'shape':32s} {'seed':>9s} {'fragment':>9s} {'window':>9s} {'resid.':>9s}  S=3    S=5")
    found = {3: [], 5: []}
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        row = [coverage(shape, fragments, s, args.trials, seed=i) for s in (3, 5)]
        for s, c in zip((3, 5), row):
            found[s].append(c)
        parts = " ".join(f"{shape[k]:9.2e}" for k in COMPONENTS)
        print(f"{name:32s} {parts}  {row[0]:.3f}  {row[1]:.3f}")
    for s, values in found.items():
        print(f"S = {s}: mean coverage {np.mean(values):.3f}, lowest {min(values):.3f}")
    family = family_error(
        [shapes[n] for n in sorted(shapes)], fragments, 3, [1, 2, 4, 8, 12], args.ledgers
    )
    print(f"claims failing at the least favourable point ({args.ledgers} ledgers): {family}")


if __name__ == "__main__":
    main()
