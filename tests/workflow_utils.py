"""Run the workflow as a user would: in a fresh copy of the sources, through the CLI."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
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


def copy_run(run: Path, dest: Path) -> Path:
    """A copy of a finished run (``cp -a``, as a user would) with its own ``posenc``."""
    subprocess.run(["cp", "-a", str(run), str(dest)], check=True)
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


def env_for(workdir: Path, env=None, base=None) -> dict[str, str]:
    """The environment to run the workflow copied to ``workdir`` in: its own package first, over
    ``base`` (this process's environment as it is now, by default)."""
    return {**(os.environ if base is None else base), "PYTHONPATH": str(workdir), **(env or {})}


# A command that prints nothing for this long is taken as hung. Never a deadline on the whole
# run: a busy machine makes a run slower, not silent (Snakemake prints every job it starts and
# ends, the training scripts their progress every few seconds).
STALL_S = 1200


def run_watched(
    command: list[str],
    stall: float = STALL_S,
    merge: bool = False,
    stop: threading.Event | None = None,
    **kwargs,
):
    """``subprocess.run(command, text=True)`` with its output captured, killed only when it
    prints nothing on stdout or stderr for ``stall`` seconds (a hang, reported as an
    AssertionError naming the command and its last output) or when ``stop`` is set, however
    long it runs while it makes progress. ``merge``: stderr into stdout, as ``stderr=STDOUT``
    would. It runs in a session of its own, so a kill takes its children (Snakemake's jobs)
    with it."""
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge else subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    )
    streams = {"stdout": proc.stdout} if merge else {"stdout": proc.stdout, "stderr": proc.stderr}
    seen = {name: [] for name in streams}
    last = [time.monotonic()]

    def read(name, stream):
        for line in stream:
            seen[name].append(line)
            last[0] = time.monotonic()

    readers = [threading.Thread(target=read, args=item, daemon=True) for item in streams.items()]
    for reader in readers:
        reader.start()
    while proc.poll() is None:
        stalled = time.monotonic() - last[0] > stall
        if stalled or (stop is not None and stop.is_set()):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            why = f"no output for {stall:.0f} s, taken as hung" if stalled else "stopped"
            tail = "".join(seen["stdout"])[-3000:]
            raise AssertionError(f"{why}: {command}\n{tail}")
        time.sleep(0.5)
    for reader in readers:
        reader.join()
    out = {name: "".join(lines) for name, lines in seen.items()}
    return subprocess.CompletedProcess(command, proc.returncode, out["stdout"], out.get("stderr"))


def snakemake(workdir: Path, *args: str, check: bool = True, env=None, stop=None):
    """``snakemake`` in ``workdir`` (:func:`env_for`), guarded against a hang and stopped when
    ``stop`` is set (:func:`run_watched`); returns the CompletedProcess (stdout+stderr in
    .stdout)."""
    proc = run_watched(
        [SNAKEMAKE, *args], merge=True, stop=stop, cwd=workdir, env=env_for(workdir, env)
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-6000:]}")
    return proc
