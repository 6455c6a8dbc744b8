"""Two runs of the test config on the CPU give byte-identical results (the second one through
SLURM where a cluster can start: one run serves both tests).

Timings and provenance live in files of their own (the complexity section, whose numbers are
timings; training-speed and benchmark files; the report page with its provenance block), so
everything else must match byte for byte.
"""

import json

import pytest

pytestmark = pytest.mark.slow

TIMING_PARTS = ("complexity", "benchmarks", "report", "logs", "timing")


def result_files(run):
    """Every JSON/CSV result but the timing files, the merged ledger and the report card
    (compared apart)."""
    files = {}
    for path in sorted((run / "results").rglob("*")):
        rel = str(path.relative_to(run / "results"))
        if (
            path.is_file()
            and path.suffix in (".json", ".csv")
            and rel not in ("claims.json", "card/card.json")
            and not any(part in rel for part in TIMING_PARTS)
        ):
            files[rel] = path.read_bytes()
    return files


def stable_card(run):
    """The report card without its timed columns (the complexity section's)."""
    card = json.loads((run / "results/card/card.json").read_text())
    keep = [i for i, c in enumerate(card["columns"]) if c["section"] not in TIMING_PARTS]
    return [c for i, c in enumerate(card["columns"]) if i in keep], [
        [r["encoding"], [r["cells"][i] for i in keep]] for r in card["rows"]
    ]


def stable_ledger(run):
    ledger = json.loads((run / "results/claims.json").read_text())
    return [c for c in ledger if c["section"] != "complexity"]


def test_two_cpu_runs_are_byte_identical(test_run, second_run):
    """The second run is independent (a fresh copy, trained again), and through SLURM where
    the cluster can start: the same bytes either way."""
    again = second_run["folder"]
    first, second = result_files(test_run), result_files(again)
    assert any(name.endswith("metrics.json") for name in first)
    assert set(first) == set(second)
    differing = [name for name in first if first[name] != second[name]]
    assert not differing, differing
    assert stable_ledger(test_run) == stable_ledger(again)
    assert stable_card(test_run) == stable_card(again)
