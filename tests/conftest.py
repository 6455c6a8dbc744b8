"""Shared fixtures. ``test_run`` runs the whole workflow on config/test.yaml once per test
session, so every test that needs results (end to end, browser, PDF) shares one run; it, the
second run and the platform test's card start in the background (:mod:`background`)."""

from __future__ import annotations

import os
from pathlib import Path

import background
import pytest
from sysdeps import DEPENDENCIES, SKIP_PREFIX, require, summary_line


@pytest.fixture
def registered():
    """``registered(spec, ...)`` adds encodings to the registry through the public
    :func:`~posenc.encodings.register`, as a plugin would, for one test, and removes them after
    it; returns their names, in order."""
    from posenc.encodings import REGISTRY, register

    names: list[str] = []

    def add(*specs) -> list[str]:
        for spec in specs:
            names.append(register(spec).name)
        return [spec.name for spec in specs]

    yield add
    for name in names:
        REGISTRY.pop(name, None)


@pytest.fixture(scope="session")
def test_run(tmp_path_factory) -> Path:
    """The folder holding ``results/`` of a finished run of ``rule all`` on the test config,
    in a fresh copy of the sources (the checkout's own results/ are never touched), started in
    the background when the session was collected (:mod:`background`).

    ``POSENC_TEST_RUN=<folder>`` reuses a finished run there instead, as it is: nothing is
    copied or run. For iterating on tests, or for checking a report CI has just built.
    """
    reuse = os.environ.get("POSENC_TEST_RUN")
    if reuse:
        folder = Path(reuse).resolve()
        if not (folder / "results/report/index.html").is_file():
            pytest.fail(f"POSENC_TEST_RUN={reuse}: no results/report/index.html there")
        return folder
    require("pango")  # the workflow renders a PDF
    return _awaited("test_run", tmp_path_factory)


@pytest.fixture(scope="session")
def run_copy(test_run, tmp_path_factory) -> Path:
    """One copy of the finished test run with its own ``posenc`` (``workflow_utils.copy_run``),
    shared by the tests that dry-run a change there (a code edit, a setting): each undoes its
    edit, so the copy stays the finished run. A dry-run of a copy costs a parse; a fresh run of
    the jobs a test needs cost it a minute of training."""
    from workflow_utils import copy_run

    return copy_run(test_run, tmp_path_factory.mktemp("rerun") / "run")


@pytest.fixture(scope="session")
def second_run(tmp_path_factory) -> dict:
    """A second, independent run of the test config (:mod:`background`)."""
    return _awaited("second_run", tmp_path_factory)


def _awaited(name: str, tmp_path_factory):
    run = background.RUNS[name]
    if run.thread is None:
        run.start(tmp_path_factory.mktemp(name))
    return run.result()


def pytest_collection_modifyitems(session, config, items):
    """Tests that read an end-to-end run go last, in their order: by then their runs, started
    in the background at collection, have had the rest of the suite's time to finish, rather
    than the first of them holding every later test up while it waits."""
    items.sort(
        key=lambda item: any(n in getattr(item, "fixturenames", ()) for n in background.RUNS)
    )


def pytest_collection_finish(session):
    """Start each end-to-end run in the background when a selected test needs it (after ``-m``
    and ``-k`` have deselected theirs), so that the rest of the suite fills its waits."""
    config = session.config
    if config.option.collectonly:
        return
    for name, run in background.RUNS.items():
        if run.thread is not None or not any(
            name in getattr(item, "fixturenames", ()) for item in session.items
        ):
            continue
        if name == "test_run" and (
            os.environ.get("POSENC_TEST_RUN") or DEPENDENCIES["pango"].where() is None
        ):
            continue  # reused as it is, or skipped by its fixture
        run.start(config._tmp_path_factory.mktemp(name))
        _one_thread()


def _one_thread() -> None:
    """With runs in the background the cores are taken: this process's torch computes on one
    thread. Two OpenMP threads on a loaded machine wait for each other at every parallel
    region (a 3 s test took 240 s beside three runs); one thread is never slower there."""
    import torch

    torch.set_num_threads(1)


def pytest_sessionfinish(session):
    """Runs still going when the session ends (interrupted, or stopped at a first failure) are
    stopped, and a SLURM cluster shut down, before pytest exits."""
    background.stop()


def _skip_reasons(terminalreporter) -> list[str]:
    """The messages of skips for a missing system dependency, in the order they happened."""
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        message = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        message = message.removeprefix("Skipped: ")
        if message.startswith(SKIP_PREFIX) and message not in reasons:
            reasons.append(message)
    return reasons


def pytest_terminal_summary(terminalreporter):
    """Show the claims that tests compute about the report (``report.self_contained``,
    ``report.pdf_complete``, recorded with ``record_property``) at the end of the run, where
    CI's log shows them. They are test output, not part of the workflow's ledger."""
    claims = sorted(
        {
            (key, str(value))
            for reports in terminalreporter.stats.values()
            for report in reports
            for key, value in getattr(report, "user_properties", ())
            if key.startswith("report.")
        }
    )
    if claims:
        terminalreporter.section("claims checked by the tests")
        for key, value in claims:
            terminalreporter.write_line(f"{key}: {value}")


def pytest_unconfigure(config):
    """After pytest's closing "N passed" line, one more: what this run could not check."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    line = reporter and summary_line(_skip_reasons(reporter))
    if line:
        reporter.write_line(line, yellow=True, bold=True)


@pytest.fixture
def toy_plugin():
    """The toy encodings of toy_encodings.py (one of them with heads that differ) registered
    as a plugin registers them, for one test, and removed after it; yields the module."""
    import importlib
    import sys

    from posenc.encodings import REGISTRY

    before = set(REGISTRY)
    sys.modules.pop("toy_encodings", None)
    module = importlib.import_module("toy_encodings")
    yield module
    for name in set(REGISTRY) - before:
        REGISTRY.pop(name)
    sys.modules.pop("toy_encodings", None)
