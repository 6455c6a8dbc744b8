"""The test session's end-to-end runs, each started in a thread as soon as the session has
collected a test that needs it (``conftest.py``), and awaited by that test's fixture, so that
their waits (one-core jobs such as the PDF's layout, the SLURM scheduler's status checks) are
filled by the rest of the suite rather than by nothing:

* ``test_run``: the test config, ``rule all``, in a fresh copy of the sources, with the
  between-workflow cache on (``--cache``; the cache and the run's log beside the copy, for the
  cache test's second checkout: :func:`cache_of`);
* ``second_run``: the test config again, independently, through a one-node SLURM cluster when
  one can start here, else on this machine: the determinism test compares it with the first
  byte for byte, and the SLURM test checks that its jobs went through sbatch. Rule ``html``:
  everything but the PDF, which neither reads;
* ``toy_run``: ``posenc card`` on the example plugin and the toy encodings (the platform test).

How long any of them takes is a hang guard's business (``workflow_utils.run_watched``), never a
deadline's.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import slurm_cluster
from sysdeps import DEPENDENCIES
from workflow_utils import ROOT, copy_workflow, env_for, run_watched, snakemake

HERE = Path(__file__).parent
TEST_CONFIG = ("--configfile", "config/test.yaml")
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
# The card of the platform test: the example plugin a newcomer copies and the toys, against
# two baselines.
EXAMPLE = ROOT / "examples" / "alibi_learned_slopes.py"
BASELINES = ("rope", "alibi")
STOP = threading.Event()  # set when the session ends: a run still going is killed


def first_run(base: Path, environ: dict[str, str]) -> Path:
    """The folder holding ``results/`` of the test config's ``rule all``, run with the
    between-workflow cache on, as a user sharing trained models between checkouts runs it."""
    work = copy_workflow(base / "wf")
    (base / "cache").mkdir()
    env = env_for(work, base=environ, env={"SNAKEMAKE_OUTPUT_CACHE": str(base / "cache")})
    proc = snakemake(work, "--cores", "2", *TEST_CONFIG, "--cache", env=env, stop=STOP)
    (base / "snakemake.log").write_text(proc.stdout)
    return work


def cache_of(test_run: Path) -> tuple[Path, str] | None:
    """(the cache, the run's log) of a run :func:`first_run` made; None for a run reused with
    ``POSENC_TEST_RUN``, which may not have used one."""
    base = test_run.parent
    if not (base / "cache").is_dir() or not (base / "snakemake.log").is_file():
        return None
    return base / "cache", (base / "snakemake.log").read_text()


def second_run(base: Path, environ: dict[str, str]) -> dict:
    """``{"folder", "stdout", "jobs" (the cluster's job-completion log), "via_slurm"}``."""
    work = copy_workflow(base / "wf")
    env = env_for(work, base=environ)
    target = ("html", *TEST_CONFIG)  # the target first: after --configfile, a file
    if DEPENDENCIES["slurm"].where() is None or slurm_cluster.available():
        proc = snakemake(work, "--cores", "2", *target, env=env, stop=STOP)
        return {"folder": work, "stdout": proc.stdout, "jobs": "", "via_slurm": False}
    # munged runs as user munge: its socket folder must be reachable, and pytest's tmp_path
    # sits under a 0700 folder, so the cluster lives in a folder of its own under /tmp.
    cluster = Path(tempfile.mkdtemp(prefix="posenc-slurm-"))
    os.chmod(cluster, 0o755)
    try:
        with slurm_cluster.local_cluster(cluster) as job_log:
            proc = snakemake(work, *SLURM, *target, env=env, stop=STOP)
            jobs = job_log.read_text() if job_log.exists() else ""
    finally:
        shutil.rmtree(cluster, ignore_errors=True)
    assert re.search(r"submitted with SLURM jobid", proc.stdout), proc.stdout[-3000:]
    return {"folder": work, "stdout": proc.stdout, "jobs": jobs, "via_slurm": True}


def card(toys: Path, out: Path, *snakemake_args: str, env=None):
    """``posenc card`` on the toys and the example plugin, as a user runs it."""
    return run_watched(
        [sys.executable, "-m", "posenc.cli", "card", str(toys), str(EXAMPLE), "--config", "test",
         "--against", *BASELINES, "--cores", "2", "--out", str(out), "--", *snakemake_args],
        cwd=out.parent, env=env, stop=STOP,
    )  # fmt: skip


def toy_run(base: Path, environ: dict[str, str]) -> Path:
    """The card's folder, its toys a copy (the platform test edits it), all but the PDF (the
    PDF test reads the study's)."""
    out = base / "card"
    toys = base / "toy_encodings.py"
    shutil.copy(HERE / "toy_encodings.py", toys)
    proc = card(toys, out, "html", env=environ)
    assert proc.returncode == 0, proc.stderr[-6000:]
    # It prints the path of the report it wrote, and nothing else on stdout.
    assert proc.stdout.strip() == str(out / "results/report/index.html")
    return out


class Background:
    """One run in a thread: :meth:`start` it, :meth:`result` waits for it."""

    def __init__(self, run: Callable[[Path, dict], object]):
        self.run, self.thread, self.outcome = run, None, {}

    def start(self, base: Path) -> None:
        # The environment as it is now: a test that changes it meanwhile does not reach the run.
        environ = dict(os.environ)

        def target():
            try:
                self.outcome["result"] = self.run(base, environ)
            except BaseException as error:  # handed to the test that waits for it
                self.outcome["error"] = error

        self.thread = threading.Thread(target=target, name=self.run.__name__)
        self.thread.start()

    def result(self):
        """The run's outcome, once it has finished; its error, raised, if it failed."""
        if self.thread is not None:
            self.thread.join()
        if "error" in self.outcome:
            raise self.outcome["error"]
        return self.outcome["result"]


RUNS = {name: Background(run) for name, run in (("test_run", first_run),
        ("second_run", second_run), ("toy_run", toy_run))}  # fmt: skip


def stop() -> None:
    """Stop every run still going (the session ends: interrupted, or no test waited for it),
    and wait for them (a SLURM cluster shuts down); a finished run is left as it is."""
    STOP.set()
    for run in RUNS.values():
        if run.thread is not None:
            run.thread.join()
