"""The system packages the project needs beyond pip, each named once: how to find it, which
Debian packages provide it, and what goes unchecked without it.

``python -m posenc.sysdeps [test|report]`` installs what is missing (as root, with apt) or
prints the one command that would, and always exits 0: a laptop without root still runs what
it can. The tests ask :func:`missing` and skip with the reason (``tests/sysdeps.py``).

Each probe honours an override variable, so the skip path can be checked on a machine that
has the package: ``POSENC_CHROMIUM=/nonexistent`` behaves like a machine without Chromium,
``POSENC_SLURMCTLD=/nonexistent`` like one without SLURM. Standard library only: it runs
before anything else is installed.
"""

from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def _executable(variable: str, default: str, *fallbacks: str) -> str | None:
    """The path of an executable, from ``variable`` if set (then only there), else from PATH
    or the fallback folders (Debian keeps daemons in /usr/sbin, often not on a user's PATH)."""
    chosen = os.environ.get(variable) if variable else None
    if chosen:
        return chosen if os.access(chosen, os.X_OK) and Path(chosen).is_file() else None
    return shutil.which(default) or next(
        (str(Path(d, default)) for d in fallbacks if os.access(Path(d, default), os.X_OK)), None
    )


@dataclass(frozen=True)
class SystemDependency:
    name: str  # what a reader calls it
    packages: tuple[str, ...]  # Debian packages that provide it
    checks: str  # what goes unchecked without it
    variable: str | None  # the override that points the probe elsewhere
    probe: Callable[[], str | None]  # -> str | None: where it was found, or None

    def where(self) -> str | None:
        return self.probe()

    def reason(self) -> str:
        how = f" ({self.variable}={os.environ[self.variable]})" if self._overridden() else ""
        return f"{self.name} not found{how}: {self.checks} not checked"

    def _overridden(self) -> bool:
        return bool(self.variable and os.environ.get(self.variable))


def _library(soname: str) -> Callable[[], str | None]:
    return lambda: ctypes.util.find_library(soname)


def _all(*probes: Callable[[], str | None]) -> Callable[[], str | None]:
    def probe():
        found = [p() for p in probes]
        return found[0] if all(found) else None

    return probe


DEPENDENCIES: dict[str, SystemDependency] = {
    d.name: d
    for d in (
        SystemDependency(
            "chromium",
            ("chromium",),
            "the real-browser test of the report",
            "POSENC_CHROMIUM",
            lambda: _executable("POSENC_CHROMIUM", "chromium"),
        ),
        SystemDependency(
            "slurm",
            ("slurm-wlm", "munge"),
            "the SLURM executor test",
            "POSENC_SLURMCTLD",
            _all(
                lambda: _executable("POSENC_SLURMCTLD", "slurmctld", "/usr/sbin"),
                lambda: _executable("", "slurmd", "/usr/sbin"),
                lambda: _executable("", "munged", "/usr/sbin"),
            ),
        ),
        # WeasyPrint lays out the PDF with Pango: without it no report is rendered at all.
        SystemDependency(
            "pango",
            ("libpango-1.0-0", "libpangoft2-1.0-0"),
            "the end-to-end run of the workflow (its PDF)",
            None,
            _all(_library("pango-1.0"), _library("pangoft2-1.0")),
        ),
        # WeasyPrint subsets fonts with HarfBuzz's subset library; without it every PDF
        # embeds whole fonts and warns that future versions will require it.
        SystemDependency(
            "harfbuzz-subset",
            ("libharfbuzz-subset0",),
            "the PDF test",
            None,
            _library("harfbuzz-subset"),
        ),
    )
}

# What each make target needs: the report renders a PDF; the tests also drive a browser and
# a SLURM cluster.
PURPOSES = {
    "report": ("pango", "harfbuzz-subset"),
    "test": ("pango", "harfbuzz-subset", "chromium", "slurm"),
}


def missing(names: tuple[str, ...] | None = None) -> list[SystemDependency]:
    return [DEPENDENCIES[n] for n in names or DEPENDENCIES if DEPENDENCIES[n].where() is None]


def install_command(deps: list[SystemDependency]) -> str:
    packages = " ".join(p for d in deps for p in d.packages)
    return f"sudo apt-get update && sudo apt-get install -y {packages}"


def install(purpose: str = "test") -> int:
    """Install what ``purpose`` needs and is missing; do nothing when all is present."""
    deps = missing(PURPOSES[purpose])
    # A probe pointed elsewhere by hand stays as the user set it: installing cannot help.
    to_install = [d for d in deps if not d._overridden()]
    for d in deps:
        if d._overridden():
            print(f"system-deps: {d.reason()}; {d.variable} is set, so not installing")
    if not to_install:
        if not deps:
            print(f"system-deps: everything {purpose} needs is installed")
        return 0
    names = ", ".join(d.name for d in to_install)
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print(f"system-deps: missing {names}; to install, run:\n  {install_command(to_install)}")
        return 0
    packages = [p for d in to_install for p in d.packages]
    print(f"system-deps: installing {' '.join(packages)}", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    quiet = {"stdout": subprocess.DEVNULL}
    # A failed index update (no network) still leaves a cached index to install from.
    subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, **quiet)
    done = subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env, **quiet)
    if done.returncode or missing(tuple(d.name for d in to_install)):
        print(f"system-deps: could not install {names}; the tests that need it will skip")
    return 0


if __name__ == "__main__":
    sys.exit(install(*(sys.argv[1:2] or ["test"])))
