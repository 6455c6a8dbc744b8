"""A code change reruns exactly what it changed, end to end: dry-runs of a copy of the finished
test-config run, with a copy of ``posenc`` that the copy imports (``PYTHONPATH``), so that
editing a module there edits what the copy's parse and jobs would run.

For each group of project modules that the same rules import, one module of the group is
changed in meaning, and the dry-run must plan every rule whose digest covers it, and plan no
other rule for its code (a params change): others may be planned only because an input they
read is remade.
Every module of every group is covered by the digests' own test (test_codegraph.py)."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from workflow_utils import copy_run, snakemake

from posenc import codegraph

ROOT = Path(__file__).resolve().parents[1]
DRY = ("-n", "--configfile", "config/test.yaml")
EDIT = "\n_posenc_test_edit = 1  # a change of meaning\n"


@pytest.fixture
def copy(run_copy) -> Path:
    return run_copy


def dry_run(folder: Path) -> dict[str, list[str]]:
    """Each rule the dry-run plans, with the reasons of its jobs."""
    proc = snakemake(folder, *DRY)  # its own posenc: PYTHONPATH=folder
    if "Nothing to be done" in proc.stdout:
        return {}
    planned: dict[str, list[str]] = defaultdict(list)
    rule = None
    for line in proc.stdout.splitlines():
        if m := re.match(r"^(?:local)?rule (\w+):", line):
            rule = m.group(1)
        elif m := re.match(r"^\s+reason: (.*)", line):
            planned[rule].append(m.group(1))
    return dict(planned)


def for_code(planned: dict[str, list[str]]) -> set[str]:
    """The rules planned because their params (their code digest) changed."""
    return {
        rule
        for rule, reasons in planned.items()
        if any("Params have changed" in r for r in reasons)
    }


def digests(folder: Path) -> dict[str, dict]:
    """Each rule's code digest, roots and modules, as the run recorded them."""
    return json.loads((folder / "results/report/data.json").read_text())["code_digests"]


def project_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for base in ("posenc", "analyses", "workflow/scripts")
        for p in (folder / base).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def label(graph: codegraph.CodeGraph, path: Path) -> str:
    return graph.label(graph.entry(path))


def test_the_run_records_what_each_rule_digest_covers(copy):
    codes = digests(copy)
    assert {"extrapolation_train", "extrapolation_evaluate", "extension_finetune", "report"} <= set(
        codes
    )
    train = codes["extrapolation_train"]["modules"]
    assert "posenc.train" in train and "posenc.evaluate" not in train
    assert "posenc.evaluate" in codes["extrapolation_evaluate"]["modules"]
    # The fine-tunes do not import the evaluation code (scoring.py apart from stages.py).
    assert "posenc.evaluate" not in codes["extension_finetune"]["modules"]
    assert "posenc.analyses.conformance.libraries" in codes["conformance"]["modules"]
    # Every analysis runs the claims evaluator.
    for name in ("aliasing", "complexity", "conformance", "equivariance", "rotation"):
        assert "posenc.claims" in codes[name]["modules"], name


def test_a_change_of_meaning_plans_exactly_the_rules_that_import_it(copy, tmp_path):
    codes = digests(copy)
    packages = {"posenc": copy / "posenc", "posenc.analyses": copy / "analyses"}
    graph = codegraph.CodeGraph(packages, copy)
    groups: dict[frozenset, list[Path]] = defaultdict(list)
    for path in project_files(copy):
        name = label(graph, path)
        groups[frozenset(r for r, c in codes.items() if name in c["modules"])].append(path)
    assert len(groups) > 5  # modules differ in who imports them
    # Two copies, one per core, each editing its share of the groups in turn: dry-runs are
    # parses, one core each.
    copies = [copy, copy_run(copy, tmp_path / "second")]
    work = sorted(groups.items(), key=lambda g: sorted(g[0]))

    def check(folder: Path, share: list) -> list[tuple]:
        failures = []
        for rules, paths in share:
            # The shortest module of each group: the parse is the same for all.
            path = min(paths, key=lambda p: p.stat().st_size).relative_to(copy)
            target = folder / path
            text = target.read_text()
            target.write_text(text + EDIT)
            try:
                planned = dry_run(folder)
            finally:
                target.write_text(text)
            # Every rule that imports it is planned: for its code, or because an input it
            # reads is remade first (Snakemake then reports that reason alone). No other rule
            # is planned for its code, but the report, whose provenance shows every digest.
            allowed = set(rules) | ({"report"} if rules else set())
            if not set(rules) <= set(planned) or not for_code(planned) <= allowed:
                failures.append((path, sorted(rules), planned))
            elif not rules and planned:
                failures.append((path, [], planned))
        return failures

    with ThreadPoolExecutor(len(copies)) as pool:
        found = pool.map(check, copies, [work[i :: len(copies)] for i in range(len(copies))])
    assert [f for failures in found for f in failures] == []
    assert dry_run(copy) == {}  # every edit undone: nothing to do


def test_comments_docstrings_and_formatting_plan_nothing(copy):
    """Every project module at once: a new comment, a reworded module docstring and a new
    bare string statement. Not one job is planned."""
    originals = {p: p.read_text() for p in project_files(copy)}
    try:
        for path, text in originals.items():
            reworded = text.replace('"""', '"""Reworded: ', 1) if text.startswith('"""') else text
            path.write_text(
                "# a new comment\n" + reworded + '\n"""A closing note, as a docstring is."""\n'
            )
        assert dry_run(copy) == {}
    finally:
        for path, text in originals.items():
            path.write_text(text)


def test_a_moved_run_plans_nothing(copy, tmp_path):
    moved = tmp_path / "moved"
    shutil.move(copy, moved)
    try:
        assert dry_run(moved) == {}
    finally:
        shutil.move(moved, copy)
