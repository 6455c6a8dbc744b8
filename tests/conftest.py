"""Shared fixtures. ``test_run`` runs the whole workflow on config/test.yaml once per test
session, so every test that needs results (end to end, browser, PDF) shares one run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import second_run as second
from sysdeps import SKIP_PREFIX, require, summary_line
from workflow_utils import copy_workflow, snakemake


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
    in a fresh copy of the sources (the checkout's own results/ are never touched).

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
    workdir = copy_workflow(tmp_path_factory.mktemp("test_run"))
    snakemake(workdir, "--cores", "2", "--configfile", "config/test.yaml")
    return workdir


@pytest.fixture(scope="session")
def second_run(tmp_path_factory) -> dict:
    """A second, independent run of the test config (:mod:`second_run`), started as soon as
    the session knew it would need it (:func:`pytest_collection_modifyitems`), awaited here."""
    if second.STARTED is None:
        second.start(tmp_path_factory.mktemp("second_run"))
    return second.result()


def pytest_collection_finish(session):
    """Start the second run in the background when a selected test needs it (after ``-m`` and
    ``-k`` have deselected theirs): through SLURM it spends most of its wall time waiting on
    the scheduler, which the rest of the suite fills (it is a hang guard's business, never a
    deadline's, how long either takes)."""
    config = session.config
    if config.option.collectonly or second.STARTED is not None:
        return
    if any("second_run" in getattr(item, "fixturenames", ()) for item in session.items):
        second.start(config._tmp_path_factory.mktemp("second_run"))


def pytest_sessionfinish(session):
    """A run still going when the session ends (interrupted, or stopped at a first failure) is
    stopped, and its SLURM cluster shut down, before pytest exits."""
    second.stop()


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
