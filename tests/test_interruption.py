"""A training job killed with SIGKILL midway resumes from its last checkpoint, and the rerun ends
with exactly the weights and losses of an uninterrupted run."""

import os
import signal
import subprocess
import time

import pytest
import torch
from workflow_utils import SNAKEMAKE, STALL_S, copy_workflow, env_for, snakemake

pytestmark = pytest.mark.slow

MODEL = "results/extrapolation/models/lm/rope/seed0"
RESUME = "results/extrapolation/resume/lm/rope/seed0.pt"
# Long enough to kill after a checkpoint and before the end, tiny otherwise.
LONGER = """
extrapolation:
  training: {checkpoint_every: 5}
  lm:
    train: {batch_size: 4, steps: 400, lr: 0.003, weight_decay: 0.1, warmup_steps: 5,
            min_lr_ratio: 0.1, grad_clip: 1.0}
"""
ARGS = ("--cores", "1", "--configfile", "config/test.yaml", "longer.yaml")


def workflow(path):
    work = copy_workflow(path)
    (work / "longer.yaml").write_text(LONGER)
    return work


def weights(work):
    return torch.load(work / MODEL / "model.pt", map_location="cpu", weights_only=False)


def test_sigkill_then_rerun_equals_uninterrupted(tmp_path):
    killed = workflow(tmp_path / "killed")
    proc = subprocess.Popen(
        [SNAKEMAKE, *ARGS, "--", f"{MODEL}/model.pt"],
        cwd=killed,
        env=env_for(killed),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # A hang guard, not a deadline: the run only has to start training, however slowly.
    deadline = time.monotonic() + STALL_S
    while not (killed / RESUME).exists():
        assert proc.poll() is None, "training finished before a checkpoint was seen"
        assert time.monotonic() < deadline, f"no resume checkpoint in {STALL_S} s: hung"
        time.sleep(0.05)
    time.sleep(0.5)  # let it run past the checkpoint, so the kill loses some steps
    os.killpg(proc.pid, signal.SIGKILL)  # snakemake and its job, no chance to clean up
    proc.wait()
    assert not (killed / MODEL / "model.pt").exists()

    # A SIGKILLed Snakemake leaves its lock behind: the documented recovery is --unlock.
    snakemake(killed, "--unlock", *ARGS)
    snakemake(killed, "--rerun-incomplete", *ARGS, "--", f"{MODEL}/model.pt")
    log = (killed / "results/logs/extrapolation/train/lm/rope/seed0.log").read_text()
    assert "resumed from step" in log
    assert not (killed / RESUME).exists()  # removed once the model is written

    clean = workflow(tmp_path / "clean")
    snakemake(clean, *ARGS, "--", f"{MODEL}/model.pt")
    state, expected = weights(killed)["model"], weights(clean)["model"]
    assert state.keys() == expected.keys()
    for name in state:
        assert torch.equal(state[name], expected[name]), name
