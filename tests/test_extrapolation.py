"""The extrapolation aggregate: claims from hand-made evaluation records, and the workflow's
promise that changing evaluation settings never retrains."""

import re
import sys

import pytest
import yaml
from workflow_utils import ROOT, copy_workflow, snakemake

from posenc.encodings import ENCODINGS

sys.path.insert(0, str(ROOT / "analyses"))
import extrapolation

MULTIPLIERS = [1, 2, 4, 8, 16]
THRESHOLDS = {
    "parity_margin_bits": 0.1,
    "degrade_min_bits": 0.3,
    "alibi_flat_margin_bits": 0.05,
    "alibi_beats_margin_bits": 0.0,
    "ntk_gain_bits": 0.0,
    "passkey_min_accuracy": 0.9,
    "memorisation_gap_bits": 0.1,
}

# Validation bits/char at each multiplier (mode segment), shaped like Press et al.'s Table 2.
CURVES = {
    "none": [2.10, 2.12, 2.15, 2.2, 2.3],
    "sinusoidal": [2.05, 2.6, 3.5, 4.5, 5.0],
    "learned": [2.06, None, None, None, None],
    "rope": [2.04, 2.5, 3.0, 3.4, 3.6],
    "alibi": [2.05, 2.04, 2.03, 2.03, 2.03],
    "t5_bias": [2.03, 2.05, 2.1, 2.2, 2.3],
}
PASSKEY = {
    "none": [1.0, 0.95, 0.9],
    "sinusoidal": [1.0, 0.3, 0.1],
    "learned": [1.0, None, None],
    "rope": [1.0, 0.8, 0.5],
    "alibi": [1.0, 0.99, 0.97],
    "t5_bias": [1.0, 0.9, 0.7],
}


def lm_record(encoding, seed, curves, gap=0.02):
    rows = []
    methods = ["plain", "pi", "ntk"] if encoding == "rope" else ["plain"]
    for method in methods:
        for m, bits in zip(MULTIPLIERS, curves[encoding]):
            if bits is not None and method != "plain" and m > 1:
                bits += {"pi": 0.3, "ntk": -0.2}[method]  # NTK helps at 2x; PI does not
            for mode in ("all", "segment"):
                rows.append(
                    {
                        "method": method,
                        "mode": mode,
                        "split": "val",
                        "multiplier": m,
                        "length": 128 * m,
                        "bits_per_char": bits,
                        "tokens_scored": 10,
                        "windows": 1,
                        "defined": bits is not None,
                    }
                )
    rows.append(
        {
            "method": "plain",
            "mode": "all",
            "split": "train",
            "multiplier": 1,
            "length": 128,
            "bits_per_char": curves[encoding][0] - gap,
            "tokens_scored": 10,
            "windows": 1,
            "defined": True,
        }
    )
    return {
        "task": "lm",
        "encoding": encoding,
        "seed": seed,
        "train_len": 128,
        "device": "cpu",
        "settings": {"segment": 64, "segment_windows": 64},
        "rows": rows,
    }


def passkey_record(encoding, seed, passkey=PASSKEY):
    rows = [
        {
            "multiplier": m,
            "length": 64 * m,
            "accuracy": a,
            "sequences": 10,
            "defined": a is not None,
        }
        for m, a in zip([1, 2, 4], passkey[encoding])
    ]
    return {
        "task": "passkey",
        "encoding": encoding,
        "seed": seed,
        "train_len": 64,
        "device": "cpu",
        "chance": 1 / 16,
        "settings": {},
        "rows": rows,
    }


def train_log(task, encoding, seed):
    return {
        "task": task,
        "encoding": encoding,
        "seed": seed,
        "device": "cpu",
        "n_params": 100,
        "model_config": {"n_layers": 2, "d_model": 64, "n_heads": 4, "dropout": 0.0},
        "data": {"corpus": None, "val_fraction": 0.1, "characters": 1000},
        "final_train_loss_nats": 1.4,
        "log": {
            "steps": 3,
            "losses": [3.0, 2.0, 1.0],
            "tokens_per_s": 1000.0,
            "wall_s": 1.0,
            "peak_memory_mb": 10.0,
            "peak_memory_kind": "cpu_max_rss",
            "resumed_from_step": 0,
            "config": {"checkpoint_every": 100},
        },
    }


def run(curves=CURVES, smoke=False, gap=0.02, encodings=ENCODINGS, passkey=PASSKEY):
    evals, logs = [], []
    for enc in encodings:
        for seed in (0, 1):
            evals += [lm_record(enc, seed, curves, gap), passkey_record(enc, seed, passkey)]
            logs += [train_log("lm", enc, seed), train_log("passkey", enc, seed)]
    result = extrapolation.compute(evals, logs, THRESHOLDS, smoke)
    return result, {c["id"].split(".")[1]: c for c in result["claims"]}


def test_every_claim_has_a_verdict_from_the_numbers():
    _, claims = run()
    assert set(claims) == {
        "in_distribution_parity",
        "learned_undefined_beyond_lmax",
        "sinusoidal_degrades",
        "rope_degrades",
        "alibi_flat",
        "alibi_beats_sinusoidal_long",
        "ntk_helps_rope",
        "synthetic_length_generalization",
        "no_memorisation",
    }
    assert {c["verdict"] for c in claims.values()} == {"pass"}
    assert claims["sinusoidal_degrades"]["measured"]["increase"] == pytest.approx(2.95)
    assert claims["ntk_helps_rope"]["measured"]["NTK gain"] == pytest.approx(0.2)
    assert claims["learned_undefined_beyond_lmax"]["measured"]["16x"] == "undefined"
    assert claims["synthetic_length_generalization"]["measured"]["best"] == "alibi"
    tied = dict(PASSKEY, none=[1.0, 1.0, 0.97])
    _, claims = run(passkey=tied)
    assert claims["synthetic_length_generalization"]["measured"]["best"] == "none, alibi"


def test_claims_fail_when_the_data_do_not_support_them():
    curves = dict(CURVES, alibi=[2.05, 2.2, 2.5, 2.8, 6.0], none=[2.5, 2.5, 2.5, 2.5, 2.5])
    _, claims = run(curves, gap=0.5)
    for name in (
        "alibi_flat",
        "alibi_beats_sinusoidal_long",
        "in_distribution_parity",
        "no_memorisation",
    ):
        assert claims[name]["verdict"] == "fail", name
    assert claims["in_distribution_parity"]["measured"]["behind best"]["none"] == (
        pytest.approx(0.47)
    )


def test_learned_with_a_number_past_lmax_fails_its_claim():
    curves = dict(CURVES, learned=[2.06, 2.5, 3.0, 3.5, 4.0])  # as if the table wrapped around
    _, claims = run(curves)
    assert claims["learned_undefined_beyond_lmax"]["verdict"] == "fail"


def test_smoke_test_keeps_numbers_but_not_ml_verdicts():
    _, claims = run(smoke=True)
    for name, c in claims.items():
        expected = "pass" if name == "learned_undefined_beyond_lmax" else "n/a"
        assert c["verdict"] == expected, name
        assert c["measured"]
    assert "smoke test" in claims["alibi_flat"]["statement"]


def test_claims_on_absent_encodings_are_not_testable():
    _, claims = run(encodings=("none", "rope"))
    assert claims["alibi_flat"]["verdict"] == "n/a"
    assert claims["learned_undefined_beyond_lmax"]["verdict"] == "n/a"
    assert claims["rope_degrades"]["verdict"] == "pass"


def test_tables_show_undefined_and_seed_spread():
    result, _ = run()
    rows = {r[0]: r for r in result["tables"]["segment"]["rows"]}
    assert rows["learned"][1:] == ["2.060 ± 0.000"] + ["undefined"] * 4
    assert set(rows) == {*ENCODINGS, "rope+PI", "rope+NTK"}
    assert len(result["tables"]["gap"]["rows"]) == 2 * len(ENCODINGS)


def test_figures_render(tmp_path):
    result, _ = run()
    extrapolation.plot_bits(result, tmp_path / "b.png", tmp_path / "b.svg")
    extrapolation.plot_passkey(result, tmp_path / "p.png", tmp_path / "p.svg")
    extrapolation.plot_training(result, tmp_path / "t.png", tmp_path / "t.svg")
    assert all((tmp_path / f).stat().st_size > 1000 for f in ("b.png", "p.png", "t.png"))


def jobs(output: str) -> set[str]:
    return set(re.findall(r"^rule (\w+):", output, flags=re.MULTILINE))


def test_changing_evaluation_settings_never_retrains(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    target = "results/extrapolation/eval/lm/rope/seed0.json"
    base = [target, "--cores", "1", "--configfile", "config/test.yaml"]
    snakemake(work, *base, timeout=600)
    assert jobs(snakemake(work, *base, "-n").stdout) == set()  # up to date

    def dry_run(name, override):
        (work / name).write_text(yaml.safe_dump({"extrapolation": override}))
        return jobs(snakemake(work, *base, name, "-n").stdout)

    test_cfg = yaml.safe_load((work / "config/test.yaml").read_text())["extrapolation"]
    longer = dict(test_cfg["lm"], eval=dict(test_cfg["lm"]["eval"], multipliers=[1, 2, 8]))
    assert dry_run("eval.yaml", {"lm": longer}) == {"extrapolation_evaluate"}
    # ... while a training setting does retrain: the check above can fail.
    more_steps = dict(test_cfg["lm"], train=dict(test_cfg["lm"]["train"], steps=31))
    assert "extrapolation_train" in dry_run("train.yaml", {"lm": more_steps})


def default_config():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda x: x["lm"].update(seq_len=64), "extrapolation.lm.seq_len = 64: below"),
        (
            lambda x: x["lm"]["eval"].update(multipliers=[2, 4]),
            "extrapolation.lm.eval.multipliers = [2, 4]: must include 1",
        ),
        (
            lambda x: x["lm"]["eval"].update(multipliers=[1, 4]),
            "extrapolation.lm.eval.multipliers = [1, 4]: must include 2",
        ),
        (
            lambda x: x["passkey"]["eval"].update(multipliers=[2]),
            "extrapolation.passkey.eval.multipliers = [2]: must include 1",
        ),
        (lambda x: x["lm"]["eval"].update(segment=512), "extrapolation.lm.eval.segment = 512"),
        (lambda x: x["model"].update(d_model=64, n_heads=32), "extrapolation.model.d_model = 64"),
        (lambda x: x["passkey"]["task"].update(min_len=100), "passkey.task.min_len = 100"),
        (
            lambda x: x.update(corpus="no/such/file.txt"),
            "extrapolation.corpus = 'no/such/file.txt'",
        ),
        (
            lambda x: x["lm"]["eval"].update(multipliers=[1, 0.5]),
            "extrapolation.lm.eval.multipliers.1",
        ),
        (
            lambda x: x["thresholds"].update(alibi_flat_margin_bits="small"),
            "alibi_flat_margin_bits",
        ),
        (lambda x: x.update(seeds=[0, 1.5]), "extrapolation.seeds.1"),
    ],
)
def test_bad_extrapolation_config_names_the_key(edit, message):
    from posenc.config import ConfigError, validate_config

    config = default_config()
    edit(config["extrapolation"])
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_config(config, ROOT / "config/schema.yaml")
