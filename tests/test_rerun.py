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
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from workflow_utils import snakemake

from posenc import codegraph

ROOT = Path(__file__).resolve().parents[1]
POSENC = codegraph.package_dir("posenc")
DRY = ("-n", "--configfile", "config/test.yaml")
EDIT = "\n_posenc_test_edit = 1  # a change of meaning\n"


@pytest.fixture(scope="module")
def copy(test_run, tmp_path_factory) -> Path:
    """A copy of the finished run (``cp -a``, as a user would) with its own ``posenc``."""
    dest = tmp_path_factory.mktemp("rerun") / "run"
    subprocess.run(["cp", "-a", str(test_run), str(dest)], check=True)
    shutil.copytree(POSENC, dest / "posenc", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def dry_run(folder: Path) -> dict[str, list[str]]:
    """Each rule the dry-run plans, with the reasons of its jobs."""
    proc = snakemake(folder, *DRY, env={"PYTHONPATH": str(folder)})
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
    assert "analyses.conformance.libraries" in codes["conformance"]["modules"]
    # Every analysis runs the claims evaluator.
    for name in ("aliasing", "complexity", "conformance", "equivariance", "rotation"):
        assert "posenc.claims" in codes[name]["modules"], name


def test_a_change_of_meaning_plans_exactly_the_rules_that_import_it(copy):
    codes = digests(copy)
    graph = codegraph.CodeGraph({"posenc": copy / "posenc", "analyses": copy / "analyses"}, copy)
    groups: dict[frozenset, list[Path]] = defaultdict(list)
    for path in project_files(copy):
        name = label(graph, path)
        groups[frozenset(r for r, c in codes.items() if name in c["modules"])].append(path)
    assert len(groups) > 5  # modules differ in who imports them
    for rules, paths in sorted(groups.items(), key=lambda g: sorted(g[0])):
        # The shortest module of each group: the parse is the same for all.
        path = min(paths, key=lambda p: p.stat().st_size)
        text = path.read_text()
        path.write_text(text + EDIT)
        try:
            planned = dry_run(copy)
        finally:
            path.write_text(text)
        where = (path.relative_to(copy), sorted(rules), planned)
        # Every rule that imports it is planned: for its code, or because an input it reads is
        # remade first (Snakemake then reports that reason alone). No other rule is planned for
        # its code, but the report, whose provenance shows every rule's digest.
        assert set(rules) <= set(planned), where
        assert for_code(planned) <= set(rules) | ({"report"} if rules else set()), where
        if not rules:
            assert planned == {}, path.relative_to(copy)
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
