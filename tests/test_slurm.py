"""The workflow through a real (one-node, localhost) SLURM cluster via the SLURM profile.

The jobs must go through sbatch (the cluster's job-completion log lists them) and the claims
must equal a local run's. Complexity claims are timings, which differ between any two runs, so
they are compared for presence only.
"""

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
import slurm_cluster
from sysdeps import require, unavailable
from workflow_utils import copy_workflow, snakemake

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TIMING_SECTIONS = {"complexity"}


def comparable(ledger):
    return {
        c["id"]: (c["measured"], c["verdict"])
        for c in ledger
        if c["section"] not in TIMING_SECTIONS
    }


@pytest.fixture(scope="session", autouse=True)
def _slurm():
    """Checked first (autouse, session scope), before the workflow runs for this test."""
    require("slurm")
    reason = slurm_cluster.available()
    if reason:
        unavailable(reason)


def test_test_config_through_slurm_matches_local_run(test_run, tmp_path):
    work = copy_workflow(tmp_path / "wf")
    # munged runs as user munge: its socket folder must be reachable, and pytest's tmp_path
    # sits under a 0700 folder, so the cluster lives in a folder of its own under /tmp.
    cluster = Path(tempfile.mkdtemp(prefix="posenc-slurm-"))
    os.chmod(cluster, 0o755)
    with slurm_cluster.local_cluster(cluster) as job_log:
        proc = snakemake(
            work,
            "--profile",
            "profiles/slurm",
            "--configfile",
            "config/test.yaml",
            # More jobs in flight than the node runs at once: the SLURM plugin backs off its
            # status checks by 10 s each time none has finished, so with only as many jobs
            # as cores each check tends to come too early and the next one far too late.
            "--jobs",
            "16",
            # No slurmdbd here, so sacct cannot answer: poll squeue instead (MinJobAge=300).
            "--slurm-status-command",
            "squeue",
            "--slurm-init-seconds-before-status-checks",
            "2",
            "--seconds-between-status-checks",
            "2",
            timeout=1800,
        )
        jobs = job_log.read_text() if job_log.exists() else ""
    shutil.rmtree(cluster, ignore_errors=True)
    submitted = re.findall(r"Job \S+ has been submitted with SLURM jobid (\d+)", proc.stdout)
    completed = re.findall(r"JobId=(\d+) .*JobState=COMPLETED", jobs)
    assert submitted, proc.stdout[-3000:]
    assert set(submitted) <= set(completed), (submitted, jobs)

    local = json.loads((test_run / "results/claims.json").read_text())
    remote = json.loads((work / "results/claims.json").read_text())
    assert {c["id"] for c in remote} == {c["id"] for c in local}
    assert comparable(remote) == comparable(local)
