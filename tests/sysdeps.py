"""Tests that need a system package ask here: a missing one is a named skip, or, under
``CI=true`` or ``POSENC_STRICT=1``, a failure, so CI never silently loses the browser, PDF
or SLURM test. conftest.py ends pytest's summary with one line naming what was not checked."""

from __future__ import annotations

import os

import pytest

from posenc.sysdeps import DEPENDENCIES, install_command

SKIP_PREFIX = "missing system dependency"


def strict() -> bool:
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("POSENC_STRICT") == "1"


def unavailable(reason: str) -> None:
    """Skip (or fail, when strict) the calling test: ``reason`` says what is missing."""
    message = f"{SKIP_PREFIX}: {reason}"
    if strict():
        pytest.fail(f"{message} (CI=true or POSENC_STRICT=1: a skip here is a failure)")
    pytest.skip(message)


def require(name: str) -> str:
    """Where system dependency ``name`` was found; else skip or fail with its reason."""
    dep = DEPENDENCIES[name]
    found = dep.where()
    if found is None:
        unavailable(dep.reason())
    return found


def summary_line(reasons: list[str]) -> str | None:
    """The one closing line: what was not checked, and the command that installs it."""
    names = sorted(
        {name for name in DEPENDENCIES for r in reasons if r.startswith(f"{SKIP_PREFIX}: {name} ")}
    )
    if not reasons:
        return None
    deps = [DEPENDENCIES[n] for n in names]
    unchecked = "; ".join(sorted({r.split(": ", 1)[1] for r in reasons}))
    command = install_command(deps) if deps else "run the tests as root"
    return f"NOT CHECKED: {unchecked}. Install with: {command} (or `make system-deps` as root)"
