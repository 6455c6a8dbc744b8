"""Where a report came from: the git checkout, the machine and the installed packages."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any


def git_state(folder: str | Path) -> dict[str, Any]:
    """The commit checked out in ``folder`` and whether tracked files differ from it; as a
    rule param, a new commit re-renders the report."""
    # safe.directory: a checkout owned by another user (a CI runner's, a shared clone) is
    # still the checkout the run came from; without it git refuses to read it.
    git = ["git", "-c", "safe.directory=*"]
    try:
        commit = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=folder
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                [*git, "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                check=True,
                cwd=folder,
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", True
    return {"commit": commit, "dirty": dirty}


def environment_info() -> dict[str, Any]:
    import torch

    info = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "cuda_available": torch.cuda.is_available(),
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def installed_packages() -> dict[str, Any]:
    """``pip freeze`` of the interpreter rendering the report (the one the jobs ran in).

    Falls back to the installed distributions' metadata where pip is absent (some conda
    environments), and says which it used.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=False
    )
    if proc.returncode == 0 and proc.stdout.strip():
        source, lines = "pip freeze", proc.stdout.split("\n")[:-1]
    else:
        names = {(d.metadata["Name"] or "?", d.version) for d in metadata.distributions()}
        lines = [f"{n}=={v}" for n, v in sorted(names, key=lambda nv: nv[0].lower())]
        source = "importlib.metadata (pip unavailable)"
    return {"source": source, "lines": lines, "count": len(lines)}
