"""The workflow through a real (one-node, localhost) SLURM cluster via the SLURM profile.

The jobs must go through sbatch (the cluster's job-completion log lists them) and the claims
must equal a local run's. Complexity claims are timings, which differ between any two runs, so
they are compared for presence only.
"""

import json
import re

import pytest
import slurm_cluster
from sysdeps import require, unavailable

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


def test_test_config_through_slurm_matches_local_run(test_run, second_run):
    assert second_run["via_slurm"]
    submitted = re.findall(
        r"Job \S+ has been submitted with SLURM jobid (\d+)", second_run["stdout"]
    )
    completed = re.findall(r"JobId=(\d+) .*JobState=COMPLETED", second_run["jobs"])
    assert submitted, second_run["stdout"][-3000:]
    assert set(submitted) <= set(completed), (submitted, second_run["jobs"])

    local = json.loads((test_run / "results/claims.json").read_text())
    remote = json.loads((second_run["folder"] / "results/claims.json").read_text())
    assert {c["id"] for c in remote} == {c["id"] for c in local}
    assert comparable(remote) == comparable(local)
