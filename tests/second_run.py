"""A second, independent run of the test config in a fresh copy, through a one-node SLURM
cluster when one can start here, else on this machine: the determinism test compares it with
the first run (``test_run``) byte for byte, and the SLURM test checks that its jobs went
through sbatch. One run serves both. Rule ``html``: everything but the PDF, which neither
reads.

It runs in a thread of the test session, started when the session collects a test that needs
it (``conftest.py``), so that its waits (on the scheduler's status checks, on one-core jobs)
overlap the rest of the suite.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import slurm_cluster
from sysdeps import DEPENDENCIES
from workflow_utils import copy_workflow, env_for, snakemake

CONFIG = ("html", "--configfile", "config/test.yaml")  # the target first: after it, a file
SLURM = (
    "--profile",
    "profiles/slurm",
    # More jobs in flight than the node runs at once: the SLURM plugin backs off its status
    # checks by 10 s each time none has finished, so with only as many jobs as cores each
    # check tends to come too early and the next one far too late.
    "--jobs",
    "16",
    # No slurmdbd here, so sacct cannot answer: poll squeue instead (MinJobAge=300).
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--seconds-between-status-checks",
    "2",
)

STARTED: threading.Thread | None = None
STOP = threading.Event()  # set when the session ends without having waited for the run
_OUTCOME: dict = {}


def run(base: Path, environ: dict[str, str]) -> dict:
    """``{"folder", "stdout", "jobs" (the cluster's job-completion log), "via_slurm"}``, run in
    ``environ`` (the session's environment when it started: tests that change it meanwhile do
    not reach this run)."""
    work = copy_workflow(base / "wf")
    env = env_for(work, base=environ)
    if DEPENDENCIES["slurm"].where() is None or slurm_cluster.available():
        proc = snakemake(work, "--cores", "2", *CONFIG, env=env, stop=STOP)
        return {"folder": work, "stdout": proc.stdout, "jobs": "", "via_slurm": False}
    # munged runs as user munge: its socket folder must be reachable, and pytest's tmp_path
    # sits under a 0700 folder, so the cluster lives in a folder of its own under /tmp.
    cluster = Path(tempfile.mkdtemp(prefix="posenc-slurm-"))
    os.chmod(cluster, 0o755)
    try:
        with slurm_cluster.local_cluster(cluster) as job_log:
            proc = snakemake(work, *SLURM, *CONFIG, env=env, stop=STOP)
            jobs = job_log.read_text() if job_log.exists() else ""
    finally:
        shutil.rmtree(cluster, ignore_errors=True)
    assert re.search(r"submitted with SLURM jobid", proc.stdout), proc.stdout[-3000:]
    return {"folder": work, "stdout": proc.stdout, "jobs": jobs, "via_slurm": True}


def start(base: Path) -> None:
    """Start :func:`run` in a thread; :func:`result` waits for it."""
    global STARTED
    environ = dict(os.environ)

    def target():
        try:
            _OUTCOME["result"] = run(base, environ)
        except BaseException as error:  # handed to the test that waits for it
            _OUTCOME["error"] = error

    STARTED = threading.Thread(target=target, name="second run")
    STARTED.start()


def stop() -> None:
    """Stop a run still going (the session ends: interrupted, or no test waited for it) and wait
    for its cluster to shut down; a finished run is left as it is."""
    if STARTED is not None:
        STOP.set()
        STARTED.join()


def result() -> dict:
    """The run's outcome, once it has finished; its error, raised, if it failed."""
    if STARTED is not None:
        STARTED.join()
    if "error" in _OUTCOME:
        raise _OUTCOME["error"]
    return _OUTCOME["result"]
