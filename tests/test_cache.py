"""Trained models are shared between checkouts through Snakemake's between-workflow cache."""

import pytest
from workflow_utils import copy_workflow, snakemake

pytestmark = pytest.mark.slow

MODELS = [
    f"results/extrapolation/models/{task}/{encoding}/seed0/model.pt"
    for task in ("lm", "passkey")
    for encoding in ("none", "rope")
]


def test_second_checkout_trains_nothing(tmp_path):
    env = {"SNAKEMAKE_OUTPUT_CACHE": str(tmp_path / "cache")}
    (tmp_path / "cache").mkdir()
    args = ("--cores", "2", "--configfile", "config/test.yaml", "--cache", "--", *MODELS)
    first = copy_workflow(tmp_path / "first")
    log = snakemake(first, *args, env=env).stdout
    assert log.count("to cache.") == 3 * len(MODELS)  # model, train log, timing each

    second = copy_workflow(tmp_path / "second")
    log = snakemake(second, *args, env=env).stdout
    assert "to cache." not in log
    assert log.count("from cache.") == 3 * len(MODELS)
    # Snakemake may create the jobs' log files, but no training wrote to them.
    train_logs = list((second / "results/logs").rglob("train/*/*/seed0.log"))
    assert not any(path.read_text().strip() for path in train_logs)
    for model in MODELS:
        assert (second / model).read_bytes() == (first / model).read_bytes()
