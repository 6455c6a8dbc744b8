"""The tasks study: train and test disjoint, the claims decided by the numbers (hand-made runs
that must pass and must fail), and the config's checks naming their keys."""

from __future__ import annotations

import copy
import json

import pytest
import torch
import yaml
from workflow_utils import ROOT

from posenc.analyses.tasks import compute, generators, spec, training
from posenc.analysis import Context
from posenc.claim_evaluation import evaluate
from posenc.train import TrainConfig, build_model, train
from posenc.variants import model_name


def config() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


@pytest.mark.parametrize("max_position", [None, 64])
def test_the_sequences_a_run_trained_on_are_those_replayed_and_never_scored(max_position):
    cfg = TrainConfig(steps=60, batch_size=8, lr=0.003, warmup_steps=5, progress_interval_s=1e9)
    drawn: set[bytes] = set()
    batches = training.train_batches("reverse_string", 6, max_position)

    def recording(generator, batch_size, step):
        out = batches(generator, batch_size, step)
        if out[0].shape[1] == generators.sequence_length("reverse_string", 6):
            drawn.update(row.numpy().tobytes() for row in out[0])
        return out

    xp = config()["extrapolation"]
    model = build_model(
        generators.vocab_size("reverse_string"), xp["model"], "rope", {}, max_len=64
    )
    train(model, recording, cfg, seed=3, device=torch.device("cpu"), label="t", log=lambda *a: None)
    assert drawn and training.seen_at("reverse_string", 6, cfg, 3, max_position) == drawn


def test_a_length_whose_every_sequence_was_trained_on_is_refused():
    xp = config()["extrapolation"]
    model = build_model(generators.vocab_size("even_pairs"), xp["model"], "rope", {}, max_len=16)
    everything = {
        generators.batch("even_pairs", torch.Generator().manual_seed(s), 64, 3)[0][i]
        .numpy()
        .tobytes()
        for s in range(20)
        for i in range(64)
    }
    with pytest.raises(ValueError, match="raise tasks.train_length"):
        training.evaluate(model, "even_pairs", 3, 16, None, everything, torch.device("cpu"))


def run(task, model, exact_at_n, test_token, seeds=(0, 1, 2), n=4):
    """A hand-made run: every seed with the given exact match at N and per-token accuracy at
    the test lengths."""
    return {
        "task": task,
        "model": model,
        "n": n,
        "n_params": 1000,
        "seeds": [
            {
                "seed": s,
                "by_length": [
                    {"length": n, "sequences": 8, "exact_match": exact_at_n, "token_accuracy": 1},
                    *(
                        {"length": n * k, "sequences": 8, "exact_match": 0.0,
                         "token_accuracy": test_token + 0.001 * s}
                        for k in (2, 8)
                    ),
                ],
            }
            for s in seeds
        ],
    }  # fmt: skip


def judged(tmp_path, runs: list[dict]) -> dict[str, str]:
    cfg = copy.deepcopy(config()["tasks"])
    cfg |= {"tasks": ["reverse_string", "even_pairs"], "randomized": ["rope"]}
    paths = []
    for i, r in enumerate(runs):
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps(r))
        paths.append(str(path))
    ctx = Context(
        cfg=cfg,
        seed=0,
        encodings=["none", "rope"],
        encoding={},
        device=torch.device("cpu"),
        inputs={"runs": paths},
        config={"extrapolation": config()["extrapolation"]},
    )
    m = compute.compute(ctx)
    claims = evaluate(spec.SPEC.claims, m.evidence, cfg, "tasks")
    return {c["id"].removeprefix("tasks."): c["verdict"] for c in claims}


def study(plain_far: float, randomized_far: float, randomized_exact: float = 1.0) -> list[dict]:
    out = []
    for task in ("reverse_string", "even_pairs"):
        out += [
            run(task, "none", 1.0, plain_far),
            run(task, "rope", 1.0, plain_far),
            run(task, model_name("rope", True), randomized_exact, randomized_far),
        ]
    return out


def test_the_claims_decide_from_the_numbers(tmp_path):
    # Plain positions fail past training, randomized ones gain, in-domain kept: all pass.
    assert judged(tmp_path, study(0.55, 0.8)) == {
        "small_models_learn": "pass",
        "plain_positions_fail_past_training": "pass",
        "randomized_raises_test_accuracy": "pass",
        "randomized_keeps_in_domain": "pass",
    }
    # Plain positions that generalise, randomized ones that lose and lose in-domain: fail.
    verdicts = judged(tmp_path, study(0.97, 0.5, randomized_exact=0.93))
    assert verdicts["plain_positions_fail_past_training"] == "fail"
    assert verdicts["randomized_raises_test_accuracy"] == "fail"
    # Its exact match at N 0.07 below the plain models': more than the in-domain margin.
    assert verdicts["randomized_keeps_in_domain"] == "fail"


def test_models_that_did_not_learn_are_no_evidence(tmp_path):
    runs = [run(r["task"], r["model"], 0.2, 0.3) for r in study(0.5, 0.8)]
    verdicts = judged(tmp_path, runs)
    assert verdicts["small_models_learn"] == "fail"
    assert verdicts["plain_positions_fail_past_training"] == "inconclusive"
    assert verdicts["randomized_keeps_in_domain"] == "inconclusive"
    assert verdicts["randomized_raises_test_accuracy"] == "inconclusive"


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda c: c.update(test_multipliers=[1, 2, 4]), "tasks.test_multipliers = [1, 2, 4]"),
        (lambda c: c.update(test_multipliers=[2, 8]), "must include 1"),
        (lambda c: c.update(tasks=["reverse"]), "tasks.tasks: 'reverse' not a task"),
        (lambda c: c.update(max_position=100), "tasks.max_position = 100: below the longest"),
        (lambda c: c.update(absent_seeds=4), "tasks.absent_seeds = 4"),
    ],
)
def test_a_bad_tasks_setting_is_refused_naming_its_key(edit, message):
    cfg = config()
    edit(cfg["tasks"])
    problems = spec.check_config(cfg)
    assert any(message in p for p in problems), problems


def test_unknown_encoding_names_are_refused_and_unconfigured_ones_skipped():
    cfg = config()
    cfg["tasks"] |= {"encodings": ["rope", "ropee"], "randomized": ["rope", "alibi"]}
    known = {e: {} for e in cfg["encodings"]}
    (problem,) = spec.check_registry(cfg, known)
    assert problem.startswith("config key tasks.encodings: 'ropee' not a registered encoding")
    cfg["tasks"]["encodings"] = ["rope"]
    assert spec.check_registry(cfg, known) == []
    assert spec.models_of(cfg) == ["rope", "rope+randomized"]  # alibi is not trained here
