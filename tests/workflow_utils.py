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
    """Copy the workflow's sources (not results/) into ``dest``, with the package they import
    (:func:`with_package`); return it."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    return with_package(dest)


def with_package(dest: Path) -> Path:
    """Give the copy at ``dest`` its own ``posenc``, laid out as a wheel installs it: a copy of
    the installed package with ``posenc/analyses`` the copy's own ``analyses/`` (a symlink).
    With ``PYTHONPATH=dest`` (:func:`env_for`) its parse and jobs import ``posenc.analyses``
    from ``dest/analyses``, which the Snakefile requires (``posenc.analysis.check_installed``):
    the checkout's editable install maps it to the checkout's folder instead."""
    from posenc.codegraph import package_dir

    if not (dest / "posenc").is_dir():
        shutil.copytree(
            package_dir("posenc"), dest / "posenc", ignore=shutil.ignore_patterns("__pycache__")
        )
    link = dest / "posenc" / "analyses"
    if not link.exists():
        link.symlink_to(Path("..", "analyses"), target_is_directory=True)
    return dest


def env_for(workdir: Path, env=None) -> dict[str, str]:
    """The environment to run the workflow copied to ``workdir`` in: its own package first."""
    return {**os.environ, "PYTHONPATH": str(workdir), **(env or {})}


def snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 1800, env=None):
    """``snakemake`` in ``workdir`` (:func:`env_for`); returns the CompletedProcess
    (stdout+stderr in .stdout)."""
    proc = subprocess.run(
        [SNAKEMAKE, *args],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        env=env_for(workdir, env),
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-6000:]}")
    return proc
