"""Randomized positions (Ruoss et al. 2023): the draws, training and evaluation with them, the
model names, the config's checks, and the claim that reads them."""

import io
import re
import sys
from pathlib import Path

import pytest
import torch
import yaml

from posenc.analyses.extrapolation import compute
from posenc.analyses.extrapolation.spec import SPEC, check_registry
from posenc.claims import evaluate
from posenc.data import PasskeyTask, RandomizedPositions, lm_batches
from posenc.evaluate import evaluate_lm, evaluate_passkey
from posenc.train import TrainConfig, build_model, train
from posenc.variants import model_name, models, name_pattern, split_model

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
import train_model as train_script  # noqa: E402

CPU = torch.device("cpu")


def test_draws_are_sorted_distinct_in_range_and_seeded():
    rp = RandomizedPositions(100)
    a = rp.sample(torch.Generator().manual_seed(0), 30)
    b = rp.sample(torch.Generator().manual_seed(0), 30)
    assert torch.equal(a, b) and a.shape == (30,) and a.dtype == torch.long
    assert torch.all(a[1:] > a[:-1]) and 0 <= int(a.min()) and int(a.max()) < 100
    # Not 0..n-1, and over many draws every position up to L_rand turns up.
    g = torch.Generator().manual_seed(1)
    seen = torch.cat([rp.sample(g, 30) for _ in range(50)]).unique()
    assert not torch.equal(a, torch.arange(30)) and len(seen) == 100
    assert torch.equal(rp.sample(g, 100), torch.arange(100))  # all of them: 0..L_rand-1
    with pytest.raises(ValueError, match="randomized_positions.max_position"):
        rp.sample(g, 101)


def test_batches_carry_their_positions_from_the_data_generator():
    tokens = torch.arange(1000) % 7
    plain, rp = lm_batches(tokens, 16), RandomizedPositions(64)
    x, y, positions = rp.batches(plain)(torch.Generator().manual_seed(3), 4)
    x0, y0 = plain(torch.Generator().manual_seed(3), 4)
    assert torch.equal(x, x0) and torch.equal(y, y0)  # the same data, positions drawn after
    assert positions.shape == (16,) and int(positions.max()) < 64


def tiny_learned(max_len):
    torch.manual_seed(0)
    return build_model(7, {"d_model": 8, "n_heads": 2, "n_layers": 1}, "learned", max_len=max_len)


def test_training_reaches_the_positions_it_draws():
    """A learned table of L_rand rows trained on randomized positions: rows far past the
    training length move; trained on 0..n-1 they stay as initialised."""
    tokens = torch.arange(2000) % 7
    cfg = TrainConfig(  # no weight decay: it would move rows that get no gradient
        steps=20, batch_size=4, lr=1e-2, weight_decay=0.0, warmup_steps=1, progress_interval_s=1e9
    )
    moved = {}
    for randomized in (False, True):
        model = tiny_learned(256)
        start = model.stack.encoding.table.weight.detach().clone()
        batches = lm_batches(tokens, 16)
        if randomized:
            batches = RandomizedPositions(256).batches(batches)
        train(model, batches, cfg, seed=0, device=CPU, label="t", progress=io.StringIO())
        delta = (model.stack.encoding.table.weight.detach() - start).abs().sum(-1)
        moved[randomized] = int((delta[16:] > 0).sum())
    assert moved[False] == 0 and moved[True] > 100


def test_evaluation_draws_positions_and_a_learned_table_of_l_rand_rows_is_defined_past_l_train():
    tokens = torch.arange(3000) % 7
    model = tiny_learned(128).eval()
    common = dict(
        train_len=16,
        multipliers=[1, 4],
        tokens=64,
        segment=4,
        segment_windows=2,
        batch_tokens=64,
        device=CPU,
    )
    plain = evaluate_lm(model, tokens[:2000], tokens[2000:], **common)
    drawn = evaluate_lm(
        model, tokens[:2000], tokens[2000:], randomized=RandomizedPositions(128), **common
    )
    again = evaluate_lm(
        model, tokens[:2000], tokens[2000:], randomized=RandomizedPositions(128), **common
    )
    assert [r["bits_per_char"] for r in drawn] == [r["bits_per_char"] for r in again]  # seeded
    assert [r["bits_per_char"] for r in drawn] != [r["bits_per_char"] for r in plain]
    assert all(r["defined"] for r in drawn)
    # Past L_rand nothing can be drawn: the table's rows end there too.
    task = PasskeyTask(4, 2)
    rows = evaluate_passkey(
        model,
        task,
        train_len=16,
        multipliers=[1, 8],
        sequences=8,
        seed=0,
        batch_size=8,
        device=CPU,
        randomized=RandomizedPositions(128),
    )
    assert [r["defined"] for r in rows] == [True, True]


def test_the_rule_script_trains_a_randomized_model_under_its_own_name(tmp_path):
    settings = {
        "data": {"num_symbols": 4, "key_len": 2, "min_len": 5, "max_len": 8, "curriculum": 0},
        "model": {"d_model": 8, "n_heads": 2, "n_layers": 1},
        "train": {"steps": 3, "batch_size": 2, "lr": 1e-3, "warmup_steps": 1},
        "encoding": {},
        "randomized_positions": 64,
    }
    _, meta, summary = train_script.compute(
        "passkey", "learned+randomized", 0, settings, CPU, progress=io.StringIO()
    )
    assert meta["encoding"] == "learned" and meta["name"] == "learned+randomized"
    assert meta["max_len"] == 64 and meta["randomized_positions"] == 64
    assert summary["encoding"] == "learned+randomized"
    del settings["randomized_positions"]
    with pytest.raises(ValueError, match="randomized_positions"):
        train_script.compute("passkey", "learned+randomized", 0, settings, CPU)


def test_model_names():
    assert model_name("rope", True) == "rope+randomized" and model_name("rope") == "rope"
    assert split_model("rope+randomized") == ("rope", True)
    assert split_model("rope") == ("rope", False) and split_model("a+b") == ("a+b", False)
    pattern = re.compile(name_pattern(["rope", "t5_bias"]))
    assert all(pattern.fullmatch(n) for n in ("rope", "rope+randomized", "t5_bias"))
    assert not any(pattern.fullmatch(n) for n in ("alibi", "rope+PI", "rope+randomizedx"))
    config = {
        "encodings": ["rope", "alibi"],
        "extrapolation": {
            "randomized_positions": {
                "max_position": 9,
                "encodings": {"lm": [], "passkey": ["rope"]},
            }
        },
    }
    assert models(config, "lm") == ["rope", "alibi"]
    assert models(config, "passkey") == ["rope", "alibi", "rope+randomized"]


def default_config():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def test_inputs_list_the_randomized_models():
    config = default_config()
    listed = config["extrapolation"]["randomized_positions"]["encodings"]["passkey"]
    evaluations = SPEC.inputs(config)["evaluations"]
    for e in listed:
        assert f"results/extrapolation/eval/passkey/{e}+randomized/seed0.json" in evaluations
        assert f"results/extrapolation/eval/lm/{e}+randomized/seed0.json" not in evaluations


def problems_of(config):
    return [p for check in SPEC.checks for p in check(config)]


def test_l_rand_below_the_longest_evaluation_length_is_an_error():
    config = default_config()
    xp = config["extrapolation"]
    for task, train_len in (("passkey", xp["passkey"]["task"]["max_len"]), ("lm", 128)):
        config = default_config()
        xp = config["extrapolation"]
        longest = max(xp[task]["eval"]["multipliers"]) * train_len
        xp["randomized_positions"]["encodings"][task] = ["rope"]
        xp["randomized_positions"]["max_position"] = longest
        assert problems_of(config) == []
        xp["randomized_positions"]["max_position"] = longest - 1
        message = (
            f"config key extrapolation.randomized_positions.max_position = {longest - 1}: "
            f"below the longest {task} evaluation length {longest}"
        )
        assert any(message in p for p in problems_of(config)), problems_of(config)


def test_an_unknown_randomized_encoding_is_a_schema_error():
    from configs import encoding_meta

    from posenc.config import ConfigError, validate_config, workflow_schema

    config = default_config()
    config["extrapolation"]["randomized_positions"]["encodings"]["passkey"] = ["ropee"]
    analyses = sorted(p.parent.name for p in ROOT.glob("analyses/*/schema.yaml"))
    schema = workflow_schema(ROOT, analyses, encoding_meta(["rope", "alibi", "none"]))
    with pytest.raises(ConfigError, match=r"randomized_positions\.encodings\.passkey\.0"):
        validate_config(config, schema)


def test_an_encoding_not_trained_plainly_or_without_positions_is_an_error():
    config = default_config()
    config["encodings"] = ["none", "alibi"]
    config["extrapolation"]["randomized_positions"]["encodings"]["passkey"] = ["rope", "none"]
    problems = [p for check in SPEC.checks for p in check(config)]
    assert any("rope not in encodings" in p for p in problems), problems
    meta = {"none": {"acts_on": "none"}, "rope": {"acts_on": "qk"}, "alibi": {"acts_on": "bias"}}
    (problem,) = check_registry(config, meta)
    assert "encodings.passkey" in problem and "none takes no positions" in problem


def passkey_record(encoding, seed, accuracies):
    """Per-sequence outcomes of one model at 1N, 2N, 4N (100 sequences each)."""
    rows = [
        {
            "multiplier": m,
            "length": 16 * m,
            "accuracy": a,
            "correct": [1] * round(100 * a) + [0] * (100 - round(100 * a)),
            "sequences": 100,
            "defined": True,
        }
        for m, a in zip([1, 2, 4], accuracies)
    ]
    return {
        "task": "passkey",
        "encoding": encoding,
        "seed": seed,
        "train_len": 16,
        "device": "cpu",
        "chance": 1 / 64,
        "settings": {},
        "rows": rows,
    }


def claim(plain_at_4n, randomized_at_4n):
    from test_extrapolation import BASELINES, STATUS, THRESHOLDS, lm_record, train_log

    curves = {"rope": [2.0, 2.5, 3.0, 3.4, 3.6]}
    evals, logs = [], []
    for seed in (0, 1):
        evals.append(lm_record("rope", seed, curves))
        logs.append(train_log("lm", "rope", seed))
        for name, at_4n in (("rope", plain_at_4n), ("rope+randomized", randomized_at_4n)):
            evals.append(passkey_record(name, seed, [1.0, 0.8, at_4n]))
            logs.append(train_log("passkey", name, seed))
    m = compute.aggregate(
        evals, logs, False, BASELINES, {"level": 0.95, "resamples": 400}, **STATUS
    )
    cfg = {"smoke_test": False, "thresholds": THRESHOLDS}
    (verdict,) = [
        c for c in evaluate(SPEC.claims, m.evidence, cfg, SPEC.id) if "randomized" in c["id"]
    ]
    return m, verdict


def test_the_randomized_claim_passes_fails_and_is_na_from_the_numbers():
    m, verdict = claim(0.2, 0.6)
    assert verdict["verdict"] == "pass"
    gain = m.evidence["randomized_gain"]["rope"]
    assert gain["estimate"] == pytest.approx(0.4) and gain["low"] > 0
    assert m.summary["passkey_encodings"] == ["rope", "rope+randomized"]
    assert m.summary["encodings"] == ["rope"]  # no LM model was randomized
    assert claim(0.5, 0.3)[1]["verdict"] == "fail"
    assert claim(0.5, 0.5)[1]["verdict"] == "fail"  # no gain is not a raise
    from test_extrapolation import run

    _, claims = run(randomized=())  # no randomized model at all
    assert claims["randomized_raises_passkey"]["verdict"] == "n/a"
