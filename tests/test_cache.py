"""Trained models are shared between checkouts through Snakemake's between-workflow cache: the
shared test-config run stores them (it runs with ``--cache``), and a second checkout fetches
them and trains nothing."""

import background
import pytest
from workflow_utils import copy_workflow, snakemake

pytestmark = pytest.mark.slow

MODELS = [
    f"results/extrapolation/models/{task}/{encoding}/seed0/model.pt"
    for task in ("lm", "passkey")
    for encoding in ("none", "rope")
]
ARGS = ("--cores", "2", "--configfile", "config/test.yaml", "--cache", "--", *MODELS)


def stored(test_run, tmp_path):
    """(the cache, the folder whose models went into it, the log that stored them): the shared
    run's, or for a run reused as it is (``POSENC_TEST_RUN``), a first checkout's here."""
    if found := background.cache_of(test_run):
        return found[0], test_run, found[1]
    cache = tmp_path / "cache"
    cache.mkdir()
    first = copy_workflow(tmp_path / "first")
    log = snakemake(first, *ARGS, env={"SNAKEMAKE_OUTPUT_CACHE": str(cache)}).stdout
    return cache, first, log


def test_second_checkout_trains_nothing(test_run, tmp_path):
    cache, first, log = stored(test_run, tmp_path)
    for model in MODELS:  # each model (with its train log and timing) went into the cache
        assert f"Moving output file {model} to cache." in log

    second = copy_workflow(tmp_path / "second")
    log = snakemake(second, *ARGS, env={"SNAKEMAKE_OUTPUT_CACHE": str(cache)}).stdout
    assert "to cache." not in log
    assert log.count("from cache.") == 3 * len(MODELS)
    # Snakemake may create the jobs' log files, but no training wrote to them.
    train_logs = list((second / "results/logs").rglob("train/*/*/seed0.log"))
    assert not any(path.read_text().strip() for path in train_logs)
    for model in MODELS:
        assert (second / model).read_bytes() == (first / model).read_bytes()
