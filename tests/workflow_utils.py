"""Run the workflow as a user would: in a fresh copy of the sources, through the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("Snakefile", "rules", "analyses", "workflow", "report_templates", "config", "profiles")
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def copy_workflow(dest: Path) -> Path:
    """Copy the workflow's sources (not results/) into ``dest``; return it."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 1800, env=None):
    """``snakemake`` in ``workdir``; returns the CompletedProcess (stdout+stderr in .stdout)."""
    proc = subprocess.run(
        [SNAKEMAKE, *args],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-6000:]}")
    return proc
