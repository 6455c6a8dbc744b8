"""Formatting and lint are checked, not hoped for: ruff (lint and format) over the Python, and
snakefmt over the Snakefile and every .smk, configured in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


@pytest.mark.parametrize(
    "command",
    [("ruff", "check", "."), ("ruff", "format", "--check", ".")],
    ids=["ruff-check", "ruff-format"],
)
def test_python_is_ruff_clean(command):
    proc = run(str(BIN / command[0]), *command[1:])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_snakemake_files_are_snakefmt_clean():
    files = ["Snakefile", *map(str, sorted(ROOT.glob("**/*.smk")))]
    files = [f for f in files if ".venv" not in f and "/results/" not in f]
    proc = run(str(BIN / "snakefmt"), "--check", *files)
    assert proc.returncode == 0, proc.stdout + proc.stderr
