"""A missing system package is a named skip, and under CI=true a failure: checked by running
the browser test in a fresh pytest with Chromium pointed at a path that does not exist (it
skips in its first fixture, before the workflow would run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sysdeps import summary_line
from workflow_utils import run_watched

from posenc.sysdeps import DEPENDENCIES, install_command, missing

ROOT = Path(__file__).resolve().parents[1]


def browser_test(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "POSENC_STRICT")}
    return run_watched(
        [sys.executable, "-m", "pytest", "tests/test_browser.py", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env={**clean, "POSENC_CHROMIUM": "/nonexistent", **env},
    )


def last_line(proc: subprocess.CompletedProcess) -> str:
    return [line for line in proc.stdout.splitlines() if line.strip()][-1]


def test_missing_chromium_is_a_named_skip():
    proc = browser_test()
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "skipped" in proc.stdout and "passed" not in proc.stdout.split("=====")[-2]
    line = last_line(proc)
    assert line.startswith("NOT CHECKED") and "chromium" in line, line
    assert "POSENC_CHROMIUM=/nonexistent" in line and "apt-get install -y chromium" in line


@pytest.mark.parametrize("variable", ["CI=true", "POSENC_STRICT=1"])
def test_missing_chromium_fails_when_strict(variable):
    name, value = variable.split("=")
    proc = browser_test(**{name: value})
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "missing system dependency: chromium not found" in proc.stdout
    assert "a skip here is a failure" in proc.stdout


def test_an_override_hides_a_dependency(monkeypatch):
    monkeypatch.setenv("POSENC_SLURMCTLD", "/nonexistent")
    assert DEPENDENCIES["slurm"] in missing(("slurm",))
    monkeypatch.setenv("POSENC_CHROMIUM", "/nonexistent")
    assert DEPENDENCIES["chromium"] in missing(("chromium", "slurm"))


def test_the_summary_names_what_was_not_checked_and_how_to_install_it():
    chromium = DEPENDENCIES["chromium"]
    line = summary_line([f"missing system dependency: {chromium.reason()}"])
    assert "real-browser test" in line and install_command([chromium]) in line
    assert summary_line([]) is None


def test_installer_prints_the_command_without_root(monkeypatch, capsys):
    import posenc.sysdeps as sysdeps

    monkeypatch.setattr(sysdeps.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(
        sysdeps, "missing", lambda names: [DEPENDENCIES["chromium"], DEPENDENCIES["slurm"]]
    )
    assert sysdeps.install("test") == 0
    out = capsys.readouterr().out
    assert "sudo apt-get update && sudo apt-get install -y chromium slurm-wlm munge" in out
