"""The extension analysis: RoPE's scaling hook, the fine-tune stage (resumable to the bit), the
continued-training control (built and run without scaling), the aggregate's claims on hand-made
records, and the config's errors."""

import copy
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from posenc.analyses.extension import compute, stages
from posenc.analyses.extension.longrope import published_profile
from posenc.analyses.extension.spec import CONTROL, SPEC, check_config, check_registry
from posenc.claims import evaluate, interval, section_thresholds
from posenc.data import lm_batches, load_corpus
from posenc.encodings import REGISTRY
from posenc.rope_scaling import scaled_rope
from posenc.train import TrainConfig, build_model, train

ROOT = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")
# 17 letters, seeded: a periodic text would repeat every validation stretch in training.
TEXT = "".join(random.Random(0).choices("abcdefghijklmnopq", k=6000))


def tiny(encoding="rope", seed=0):
    torch.manual_seed(seed)
    return build_model(32, {"d_model": 16, "n_heads": 2, "n_layers": 1}, encoding, max_len=64)


def test_plain_frequencies_through_the_hook_change_nothing_and_the_factor_scales_scores():
    model = tiny().eval()
    tokens = torch.randint(0, 32, (2, 24))
    with torch.no_grad():
        plain = model(tokens)
        same = scaled_rope("pi", 8, 10000.0, 1, 16)  # s = 1: plain RoPE
        with stages.rescaled(model, same):
            torch.testing.assert_close(model(tokens), plain, atol=1e-6, rtol=0)
        # PI at s = 2 is plain RoPE at positions p / 2: the hook and the positions agree.
        with stages.rescaled(model, scaled_rope("pi", 8, 10000.0, 2, 16)):
            via_hook = model(tokens)
        halved = model(tokens, torch.arange(24, dtype=torch.float32) / 2)
        torch.testing.assert_close(via_hook, halved, atol=1e-5, rtol=0)
    # The attention factor multiplies cos and sin: every rotated q and k by it, q.k by its square.
    rotary = stages.rotary(model)
    q, k = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    positions = torch.arange(5)
    q0, k0 = rotary.rotate(q, k, positions, positions)
    rotary.scaling = (torch.tensor(scaled_rope("pi", 8, 10000.0, 1, 16).inv_freq), 1.5)
    q1, k1 = rotary.rotate(q, k, positions, positions)
    rotary.scaling = None
    torch.testing.assert_close(q1 @ k1.transpose(-1, -2), 2.25 * (q0 @ k0.transpose(-1, -2)))
    with pytest.raises(ValueError, match="alibi does not declare rescalable frequencies"):
        stages.rotary(tiny("alibi"))


def corpus_meta(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    corpus = load_corpus(str(path), 0.1, 500)
    data = {"corpus": str(path), "val_fraction": 0.1, "split_block": 500, "sha256": corpus.sha256}
    return {"train_len": 16, "data": data}, corpus.vocab_size


FINETUNE = {
    "method": "yarn",
    "scale": 2,
    "params": {"beta_fast": 32, "beta_slow": 1},
    "train": {
        "steps": 12,
        "batch_size": 2,
        "lr": 1e-3,
        "warmup_steps": 2,
        "checkpoint_every": 3,
        "progress_interval_s": 1e9,
    },
    "snapshots": [4, 8, 12],
}


def run_finetune(tmp_path, resume=None, delay=0.0):
    meta, vocab = corpus_meta(tmp_path)
    torch.manual_seed(0)
    model = build_model(vocab, {"d_model": 16, "n_heads": 2, "n_layers": 1}, "rope")
    if delay:  # slow every batch down, so that a kill lands mid-run
        original = stages.lm_batches

        def slow(tokens, length):
            batches = original(tokens, length)

            def batch(generator, size, step=0):
                time.sleep(delay)
                return batches(generator, size, step)

            return batch

        stages.lm_batches = slow
    torch.set_num_threads(1)
    return stages.finetune(
        model,
        meta,
        FINETUNE,
        seed=0,
        device=CPU,
        label="ft",
        resume_path=resume,
        fingerprint="ft",
        progress=io.StringIO(),
        log=lambda *a: None,
    )


def test_a_killed_finetune_resumes_to_the_same_snapshots(tmp_path):
    resume = tmp_path / "resume.pt"
    child = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); "
        f"sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
        "from test_extension import run_finetune; "
        f"run_finetune(Path({str(tmp_path)!r}), {str(resume)!r}, delay=0.05)"
    )
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if resume.exists() and torch.load(resume, weights_only=True)["step"] >= 6:
            break  # past the first snapshot: the resumed run must keep it
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the fine-tune ended before it could be killed"
    resumed, log = run_finetune(tmp_path, resume)
    reference, _ = run_finetune(tmp_path)
    assert 6 <= log["resumed_from_step"] < 12
    assert sorted(resumed) == [4, 8, 12]
    for step in reference:
        for name, weights in reference[step].items():
            assert torch.equal(resumed[step][name], weights), (step, name)
    assert not any(k.startswith("model.") for k in reference[4])  # the LM's own keys


def test_the_control_is_plain_rope_trained_on_at_l_train(tmp_path):
    """The continued-training control, through the fine-tune stage, is the base model trained
    on with the same recipe and nothing else: no frequencies rescaled, windows of L_train."""
    meta, vocab = corpus_meta(tmp_path)
    corpus = stages.corpus_of(meta)
    method, scale = CONTROL
    # As the fine-tune rule builds a job's settings: no parameters exist for the plain model.
    settings = dict(FINETUNE, method=method, scale=scale, params=CFG["params"].get(method, {}))
    assert settings["params"] == {}
    torch.manual_seed(0)
    model = build_model(vocab, {"d_model": 16, "n_heads": 2, "n_layers": 1}, "rope")
    reference = copy.deepcopy(model)
    assert stages.method_rope(model, method, scale, 16, {}, 16) is None
    torch.set_num_threads(1)
    quiet = {"device": CPU, "progress": io.StringIO(), "log": lambda *a: None}
    snapshots, _ = stages.finetune(model, meta, settings, seed=0, label="control", **quiet)
    assert stages.rotary(model).scaling is None  # nothing left rescaled either
    keys = set(TrainConfig.__dataclass_fields__)
    cfg = TrainConfig(**{k: v for k, v in FINETUNE["train"].items() if k in keys})
    plain = train(
        reference,
        lm_batches(corpus.train, meta["train_len"]),
        cfg,
        seed=0,
        label="plain",
        snapshot_steps=tuple(FINETUNE["snapshots"]),
        **quiet,
    )["snapshots"]
    assert sorted(snapshots) == sorted(plain) == FINETUNE["snapshots"]
    for step, weights in plain.items():
        for name, value in weights.items():
            assert torch.equal(snapshots[step][name], value), (step, name)
    # ... and the check can fail: the same recipe with PI at s = 2 trains another model.
    torch.manual_seed(0)
    other = build_model(vocab, {"d_model": 16, "n_heads": 2, "n_layers": 1}, "rope")
    stretched, _ = stages.finetune(
        other, meta, dict(FINETUNE, method="pi", params={}), seed=0, label="pi", **quiet
    )
    last = max(FINETUNE["snapshots"])
    assert not all(torch.equal(stretched[last][k], v) for k, v in plain[last].items())


def test_the_rules_fine_tune_and_evaluate_one_control_a_seed(tmp_path):
    """A dry run of the aggregate: one continued-training fine-tune and evaluation per base
    model (not per scale), from the models the extension already takes as input."""
    from test_extrapolation import jobs
    from workflow_utils import copy_workflow, snakemake

    work = copy_workflow(tmp_path / "wf")
    config = yaml.safe_load((work / "config/test.yaml").read_text())
    seeds = config["extrapolation"]["lm"]["seeds"]
    out = snakemake(
        work, "results/extension/metrics.json", "-n", "--configfile", "config/test.yaml"
    ).stdout
    assert {"extension_finetune", "extension_evaluate", "extension"} <= jobs(out)
    control = "results/extension/{}/rope/plain/s1/seed{}"
    for seed in seeds:
        for path in (
            control.format("finetune", seed) + "/snapshots.pt",
            control.format("finetune", seed) + "/train_log.json",
            control.format("eval/finetune", seed) + ".json",
        ):
            assert path in out, path
    fine_tunes = re.findall(r"output: (results/extension/finetune/\S+)/snapshots.pt", out)
    scales = config["extension"]["finetune"]["scales"]
    assert len(fine_tunes) == len(seeds) * (1 + len(config["extension"]["methods"]) * len(scales))
    assert sum("/plain/" in f for f in fine_tunes) == len(seeds)
    base = "results/extrapolation/models/lm/rope/seed{}/model.pt"
    assert all(base.format(seed) in out for seed in seeds)


def record_rows(bits_by_key):
    """Zero-shot rows from {(method, scale, multiplier): bits}, four windows each."""
    rows = []
    for (method, scale, m), bits in bits_by_key.items():
        for mode in ("all", "segment"):
            rows.append(
                {
                    "method": method,
                    "scale": scale,
                    "mode": mode,
                    "multiplier": m,
                    "length": 128 * m,
                    "window_bits": [bits + d for d in (-0.01, 0.0, 0.01, 0.0)],
                    "defined": True,
                }
            )
    return rows


CONFIG = yaml.safe_load((ROOT / "config/config.yaml").read_text())
CFG = CONFIG["extension"]
PROFILE = published_profile(CFG["stretch"]["longrope_profile"])
CLAIMS = {
    "scale_one_is_plain",
    "dynamic_plain_within_train",
    "pi_recovers_to_control",
    "yarn_zero_shot_beats_pi_and_ntk",
    "yarn_reaches_control_sooner",
    "finetuned_beats_zero_shot_yarn",
    "yarn_finetuned_below_continued_training",
    "llama4_temperature_lowers_long_loss",
    "whole_logit_temperature_beats_query_only",
}


def plain_bits(m):
    """The hand-made plain model at m x L_train: worse past L_train (RoPE does not extrapolate)."""
    return 2.0 + 0.2 * (m - 1)


def tuned_record(seed, method, scale, bits_at):
    """A fine-tune's evaluation record; ``bits_at(step, multiplier)`` the bits of every window."""
    rows = [
        {
            "step": step,
            "multiplier": m,
            "length": 128 * m,
            "window_bits": [bits_at(step, m)] * 4,
            "defined": True,
        }
        for step in [0, *CFG["finetune"]["snapshots"]]
        for m in sorted({scale, *CFG["finetune"]["eval_multipliers"]})
        if m >= scale
    ]
    return {
        "encoding": "rope",
        "seed": seed,
        "method": method,
        "scale": scale,
        "device": "cpu",
        "rows": rows,
    }


def hand_made(
    yarn_zero_shot=2.3,
    pi_after=2.0,
    yarn_first=2.0,
    pi_first=2.4,
    yarn_after=1.9,
    control_gain=0.03,
    method_gain_past_train=None,
    learned_margin=(0.6, 0.5, 0.7),
    longrope_zero_shot=2.2,
    llama4_gain=0.05,
    alibi_margin=(0.4, 0.3, 0.5),
    q_only_gain=-0.05,
):
    """Aggregate and judge hand-made records. Every method fine-tunes from 2.6 at s x L_train
    (YaRN from ``yarn_zero_shot``) down to ``pi_after`` (YaRN to ``yarn_after``); the
    continued-training control falls by ``control_gain`` over the fine-tune, linearly in the
    steps, at every length. The stretches: RoPE and ALiBi, the Llama-4-shaped temperature
    ``llama4_gain`` (log-n 0.05) below plain past L_train, ALiBi's log-n on q alone
    ``q_only_gain``; RoPE's LongRoPE at ``longrope_zero_shot`` there (PI zero-shot is at
    2.6)."""
    zs, tuned, logs, timings, stretched = [], [], [], {}, []
    model = {"rotated_width": 16, "base": 10000.0, "train_len": 128}
    last = max(CFG["finetune"]["snapshots"])
    runs = [(m, s) for m in CFG["methods"] for s in CFG["finetune"]["scales"]]

    def method_bits(method, step):
        value = {0: 2.6, 50: 2.3, 100: 2.1, last: pi_after}[step]
        if method == "yarn":
            value = {0: yarn_zero_shot, 50: yarn_first, last: yarn_after}.get(step, value)
        if method == "pi" and step == 50:
            value = pi_first
        return value

    def control_bits(step, m):
        return plain_bits(m) - control_gain * step / last

    for seed in (0, 1):
        bits = {("plain", 1, m): plain_bits(m) for m in CFG["zero_shot"]["multipliers"]}
        for method in CFG["methods"]:
            for m in CFG["zero_shot"]["multipliers"]:
                value = 2.0 if m == 1 else 2.6
                if method == "yarn" and m > 1:
                    value = yarn_zero_shot
                bits[(method, m, m)] = value
        bits.update({("dynamic", s, 1): 2.0 for s in CFG["finetune"]["scales"]})
        zs.append(
            {
                "encoding": "rope",
                "seed": seed,
                "model": model,
                "device": "cpu",
                "rows": record_rows(bits),
            }
        )
        for e in ("rope", "alibi"):
            arms = {"plain": 0.0, "logn": 0.05, "llama4_shaped": llama4_gain}
            if e == "alibi":  # an additive bias: the query-only contrast
                arms["logn_q_only"] = q_only_gain
            stretch = {
                (arm, 1, m): plain_bits(m) - (gain if m > 1 else 0.0)
                for arm, gain in arms.items()
                for m in CFG["zero_shot"]["multipliers"]
            }
            if e == "rope":
                stretch.update(
                    {
                        ("longrope", m, m): longrope_zero_shot if m > 1 else plain_bits(1)
                        for m in CFG["zero_shot"]["multipliers"]
                    }
                )
            stretched.append(
                {
                    "encoding": e,
                    "seed": seed,
                    "device": "cpu",
                    "settings": {"longrope": PROFILE},
                    "rows": record_rows(stretch),
                }
            )
        for method, s in runs:
            tuned.append(
                tuned_record(seed, method, s, lambda step, m, x=method: method_bits(x, step))
            )
        tuned.append(tuned_record(seed, *CONTROL, control_bits))
        for method, s in [*runs, CONTROL]:
            log = {
                "encoding": "rope",
                "method": method,
                "scale": s,
                "seed": seed,
                "device": "cpu",
                "log": {"losses": [2.0, 1.5]},
            }
            logs.append(log)
            timings[compute._label(log)] = {"tokens_per_s": 1.0, "wall_s": 1.0}
    margin = {"rope": interval(*learned_margin), "alibi": interval(*alibi_margin)}
    intervals = {"level": 0.95, "resamples": 200}
    m = compute.aggregate(zs, tuned, logs, timings, CFG, intervals, margin, stretched)
    cfg = {**CFG, "thresholds": section_thresholds(CONFIG, SPEC.id)}
    ledger = evaluate(SPEC.claims, m.evidence, cfg, SPEC.id)
    return m, {c["id"].split(".", 1)[1]: c for c in ledger}


def test_claims_pass_and_fail_from_the_numbers():
    m, claims = hand_made()
    assert set(claims) == CLAIMS  # the ids are a contract
    assert {k: c["verdict"] for k, c in claims.items()} == dict.fromkeys(CLAIMS, "pass"), {
        k: c["measured"] for k, c in claims.items()
    }
    # The contract rows: one per method and scale, every field named.
    rows = m.exports["frequencies"]
    assert {(r["method"], r["scale"]) for r in rows} >= {("yarn", 2), ("llama3", 16), ("pi", 1)}
    assert set(rows[0]) >= {
        "method",
        "scale",
        "head_dim",
        "base",
        "original_length",
        "params",
        "inv_freq",
        "attention_factor",
    }
    assert all(len(r["inv_freq"]) == 8 for r in rows)
    _, claims = hand_made(yarn_zero_shot=2.7, pi_after=2.3, yarn_first=2.6)
    assert claims["yarn_zero_shot_beats_pi_and_ntk"]["verdict"] == "fail"
    assert claims["pi_recovers_to_control"]["verdict"] == "fail"  # 0.33 above the control


def test_a_gain_that_continued_training_gives_is_not_the_methods():
    # PI falls from 2.6 to 2.0 over the fine-tune; the control, which kept learning, to 1.4:
    # PI recovered to the plain model at L_train, not to the control.
    _, claims = hand_made(control_gain=0.6)
    pi = claims["pi_recovers_to_control"]
    assert pi["verdict"] == "fail"
    assert set(pi["outcomes"]["pi_recovery_gap"].values()) == {"fail"}
    last = max(CFG["finetune"]["snapshots"])
    assert abs(pi["measured"]["control gain"][f"{last} steps"]["estimate"] - 0.6) < 1e-9
    # Every method ends 0.3-0.4 below zero-shot YaRN (2.3): less than the control's 0.6.
    lead = claims["finetuned_beats_zero_shot_yarn"]
    assert lead["verdict"] == "fail"
    assert set(lead["outcomes"]["finetuned_lead_over_zero_shot_yarn"].values()) == {"fail"}
    # YaRN below the plain model at L_train (1.9 < 2.0) but level with the control: not passed.
    _, claims = hand_made(yarn_after=2.0 - 0.1, control_gain=0.1)
    assert claims["yarn_finetuned_below_continued_training"]["verdict"] == "fail"


def test_pi_recovers_to_the_control_within_the_margin_or_not():
    margin = CFG["thresholds"]["recover_margin_bits"]
    control = plain_bits(1) - 0.03  # the control at L_train after the whole fine-tune
    _, claims = hand_made(pi_after=control + margin / 2)
    pi = claims["pi_recovers_to_control"]
    assert pi["verdict"] == "pass", pi["measured"]
    assert set(pi["measured"]) >= {"pi start gap", "control gain"}  # context, not checks
    _, claims = hand_made(pi_after=control + 2 * margin)
    assert claims["pi_recovers_to_control"]["verdict"] == "fail"


def test_yarn_reaches_the_control_sooner_only_where_pi_is_not_there_yet():
    # YaRN within the margin of the control at the first snapshot (2.0 against 1.9925), PI
    # still 0.4 above it there and further at step 0: sooner.
    first = min(CFG["finetune"]["snapshots"])
    _, claims = hand_made(yarn_zero_shot=2.3, yarn_first=2.0, pi_first=2.4)
    sooner = claims["yarn_reaches_control_sooner"]
    assert sooner["verdict"] == "pass", sooner["measured"]
    assert set(sooner["measured"]["steps to control"]["yarn"].values()) == {first}
    assert set(sooner["outcomes"]["pi_gap_until_yarn_reaches"]) == {
        f"{s}x {step} steps" for s in CFG["finetune"]["scales"] for step in (0, first)
    }
    # YaRN at the control's loss without fine-tuning needs no steps; PI, far above, is not there.
    _, claims = hand_made(yarn_zero_shot=2.0, yarn_first=2.0)
    assert claims["yarn_reaches_control_sooner"]["verdict"] == "pass"
    # Both there at the first snapshot: not sooner at the snapshots' resolution.
    _, claims = hand_made(yarn_first=2.0, pi_first=2.0)
    sooner = claims["yarn_reaches_control_sooner"]
    assert sooner["verdict"] == "fail"
    assert set(sooner["outcomes"]["yarn_reach_gap"].values()) == {"pass"}
    # Both there only at the last step: not sooner either.
    _, claims = hand_made(yarn_first=2.2, yarn_after=2.0, pi_after=2.0)
    assert claims["yarn_reaches_control_sooner"]["verdict"] == "fail"
    # YaRN never there: judged at the last step, where it is 0.33 above the control.
    _, claims = hand_made(yarn_first=2.3, yarn_after=2.3, pi_after=2.3)
    sooner = claims["yarn_reaches_control_sooner"]
    assert sooner["verdict"] == "fail"
    assert set(sooner["outcomes"]["yarn_reach_gap"].values()) == {"fail"}


def test_a_fine_tune_beats_zero_shot_yarn_only_beyond_the_controls_gain():
    # Every method ends at 2.0 (YaRN at 1.9), zero-shot YaRN is at 2.3 and the control falls
    # by 0.03: leads of 0.27 (YaRN's 0.37).
    m, claims = hand_made()
    assert claims["finetuned_beats_zero_shot_yarn"]["verdict"] == "pass"
    leads = m.evidence["finetuned_lead_over_zero_shot_yarn"]
    assert set(leads) == set(CFG["methods"])
    assert all(abs(v["estimate"] - 0.27) < 1e-9 for v in leads["pi"].values()), leads
    # The control falling by 0.35: more than PI's lead, less than YaRN's.
    _, claims = hand_made(control_gain=0.35)
    lead = claims["finetuned_beats_zero_shot_yarn"]
    assert lead["verdict"] == "fail"
    outcomes = lead["outcomes"]["finetuned_lead_over_zero_shot_yarn"]
    assert outcomes["pi"] == "fail" and outcomes["yarn"] == "pass"
    # Zero-shot YaRN as good as the fine-tunes: fine-tuning added nothing.
    _, claims = hand_made(yarn_zero_shot=2.0, yarn_first=2.0, yarn_after=2.0)
    assert claims["finetuned_beats_zero_shot_yarn"]["verdict"] == "fail"


def test_the_control_is_in_the_finetune_table_and_figure():
    import matplotlib.pyplot

    from posenc.analyses.extension import present

    m, _ = hand_made()
    columns, rows = present.table_finetune(m, None)
    assert "1x" in columns  # the control's own length
    control = [r for r in rows if r[1] == "continued training, no scaling"]
    assert [r[2:4] for r in control] == [[1, step] for step in m.summary["steps"]]
    one = columns.index("1x")
    assert all(r[one] == "—" for r in rows if r not in control)
    assert all(r[one] != "undefined" for r in control)
    figure = present.figure_finetune(m, None)
    for ax in figure.axes:
        labels = ax.get_legend_handles_labels()[1]
        assert "continued training, no scaling (at L_train)" in labels, labels
    matplotlib.pyplot.close(figure)
    _, training = present.table_training(m, None)
    assert sum(r[1] == "continued training, no scaling" for r in training) == 2  # one a seed


def default_config():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda x: x.update(methods=["pi", "rope_magic"]), "extension.methods"),
        (lambda x: x["finetune"].update(scales=[3]), "extension.finetune.scales = [3]"),
        (lambda x: x["finetune"].update(snapshots=[50]), "extension.finetune.snapshots"),
        (lambda x: x["zero_shot"].update(multipliers=[2, 4]), "zero_shot.multipliers"),
        (lambda x: x.update(encodings=["kerple_x"]), "extension.encodings"),
        (lambda x: x["stretch"].update(encodings=["kerple_x"]), "extension.stretch.encodings"),
        (
            lambda x: x["stretch"].update(longrope_profile="llama-2-7b"),
            "extension.stretch.longrope_profile: zoo model 'llama-2-7b' ships no longrope",
        ),
        (
            lambda x: x["stretch"].update(longrope_profile="phi-9"),
            "extension.stretch.longrope_profile: no zoo model 'phi-9'",
        ),
        (
            lambda x: x["stretch"].update(
                temperatures=["logn"], query_only_temperatures=["llama4"]
            ),
            "extension.stretch.query_only_temperatures = ['llama4']: llama4 not in "
            "extension.stretch.temperatures",
        ),
    ],
)
def test_bad_extension_config_names_the_key(edit, message):
    config = default_config()
    edit(config["extension"])
    assert any(message in p for p in check_config(config)), check_config(config)


def test_a_scale_below_one_and_an_unknown_parameter_are_schema_errors():
    from configs import encoding_meta

    from posenc.config import ConfigError, validate_config, workflow_schema

    analyses = sorted(p.parent.name for p in ROOT.glob("analyses/*/schema.yaml"))
    schema = workflow_schema(ROOT, analyses, encoding_meta())
    config = default_config()
    config["extension"]["finetune"]["scales"] = [0]
    with pytest.raises(ConfigError, match=r"extension\.finetune\.scales\.0 = 0"):
        validate_config(config, schema)
    config = default_config()
    config["extension"]["params"]["yarn"]["beta_fastest"] = 3
    with pytest.raises(ConfigError, match="extension.params.yarn.beta_fastest"):
        validate_config(config, schema)
    config = default_config()
    config["extension"]["stretch"]["query_only_temperatures"] = ["ssmax"]
    with pytest.raises(ConfigError, match=r"extension\.stretch\.query_only_temperatures\.0"):
        validate_config(config, schema)
    # The hybrid's window: one token at least (the schema is generated from its declaration).
    config = default_config()
    config["encoding"]["rope_nope_hybrid"]["window"] = 0
    with pytest.raises(ConfigError, match=r"encoding\.rope_nope_hybrid\.window = 0"):
        validate_config(config, schema)


def test_a_method_for_an_encoding_that_is_not_rescalable_is_an_error():
    config = default_config()
    config["extension"]["encodings"] = ["rope", "alibi"]
    meta = {
        "rope": {"rescalable": True},
        "xpos": {"rescalable": True},
        "alibi": {"rescalable": False},
    }
    (problem,) = check_registry(config, meta)
    assert "extension.encodings" in problem
    assert "alibi declares no rescalable frequencies (rope, xpos do)" in problem
    # The workflow's metadata (read without torch) says what the registry declares.
    from posenc.encoding_metadata import metadata

    real = metadata([], ROOT)
    declared = [e for e, s in REGISTRY.items() if s.rescalable]
    assert declared and [e for e, m in real.items() if m["rescalable"]] == declared
    assert check_registry({"extension": {**config["extension"], "encodings": declared}}, real) == []


def test_changing_evaluation_never_fine_tunes_again(run_copy, tmp_path):
    from test_extrapolation import jobs
    from workflow_utils import snakemake

    # Dry-runs of a copy of the finished test run (the settings in files outside it).
    work = run_copy
    target = "results/extension/eval/finetune/rope/pi/s2/seed0.json"
    control = "results/extension/eval/finetune/rope/plain/s1/seed0.json"
    base = [target, control, "--cores", "1", "--configfile", "config/test.yaml"]
    assert jobs(snakemake(work, *base, "-n").stdout) == set()  # up to date

    # The control ran the methods' recipe, unscaled at s = 1, and is scored at L_train too.
    def recipe(method, scale):
        path = work / f"results/extension/finetune/rope/{method}/s{scale}/seed0/snapshots.pt"
        return torch.load(path, weights_only=True)["finetune"]

    assert recipe("plain", 1) == recipe("pi", 2) | {"method": "plain", "scale": 1, "params": {}}
    rows = json.loads((work / control).read_text())["rows"]
    test_cfg = yaml.safe_load((work / "config/test.yaml").read_text())["extension"]
    finetune = test_cfg["finetune"]
    assert {(r["step"], r["multiplier"]) for r in rows} == {
        (step, m)
        for step in [0, *finetune["snapshots"]]
        for m in sorted({1, *finetune["eval_multipliers"]})
    }

    def dry_run(name, override):
        (tmp_path / name).write_text(yaml.safe_dump({"extension": override}))
        return jobs(snakemake(work, *base, str(tmp_path / name), "-n").stdout)

    longer = dict(test_cfg["finetune"], eval_multipliers=[2, 4, 8])
    assert dry_run("eval.yaml", {"finetune": longer}) == {"extension_evaluate"}
    # ... while a fine-tuning setting does fine-tune again: the check above can fail.
    train = dict(test_cfg["finetune"]["train"], lr=0.002)
    assert "extension_finetune" in dry_run("train.yaml", {"finetune": {**longer, "train": train}})


@pytest.mark.parametrize("margin", [(-0.2, -0.3, -0.1), (0.05, -0.02, 0.12)])
def test_claims_on_base_models_that_did_not_learn_are_inconclusive(margin):
    # Above the trigram, or an interval that straddles it: every claim about the trained
    # models is inconclusive, with the numbers; the identities still decide.
    _, claims = hand_made(learned_margin=margin)
    for name, claim in claims.items():
        if name == "llama4_temperature_lowers_long_loss":
            # Judged per stretched encoding: RoPE's entry is set aside, ALiBi's (which
            # learned) decides.
            assert claim["verdict"] == "pass", name
            assert claim["not_judged"]["entries"] == ["rope"]
        elif name == "whole_logit_temperature_beats_query_only":
            assert claim["verdict"] == "pass", name  # ALiBi's alone: RoPE has no bias
        elif claim["kind"] == "empirical":
            assert claim["verdict"] == "inconclusive", name
            assert "trigram" in claim["reason"], claim["reason"]
        else:
            assert claim["verdict"] == "pass", name
    # And back: the same numbers with a base model that learned decide as before.
    _, claims = hand_made(learned_margin=(0.3, 0.2, 0.4))
    assert {c["verdict"] for c in claims.values()} == {"pass"}


def test_the_stretch_claims_decide_from_the_numbers_and_each_encoding_that_learned():
    m, claims = hand_made()
    # LongRoPE's transplant is measured and shown, and decides no claim.
    assert m.evidence["longrope_long_gain"]["rope"]["estimate"] is not None
    assert "longrope_zero_shot_lead" not in m.evidence
    assert not any("longrope" in name for name in claims)
    assert m.evidence["llama4_long_gain"]["alibi"]["estimate"] == pytest.approx(0.05)
    # A temperature that raises the loss fails.
    _, claims = hand_made(llama4_gain=-0.05)
    assert claims["llama4_temperature_lowers_long_loss"]["verdict"] == "fail"
    # ALiBi's LMs did not learn: its entry is not judged, and the claim, "for every encoding
    # whose LMs learned", is decided on RoPE: a pass there holds, a fail refutes it.
    _, claims = hand_made(alibi_margin=(-0.2, -0.3, -0.1))
    assert claims["llama4_temperature_lowers_long_loss"]["verdict"] == "pass"
    assert claims["llama4_temperature_lowers_long_loss"]["outcomes"]["llama4_long_gain"] == {
        "rope": "pass",
        "alibi": "not judged",
    }
    _, claims = hand_made(alibi_margin=(-0.2, -0.3, -0.1), llama4_gain=-0.05)
    assert claims["llama4_temperature_lowers_long_loss"]["verdict"] == "fail"
    # The table: one row per encoding and arm, LongRoPE only where the frequencies rescale.
    from posenc.analyses.extension.present import table_stretch

    _, rows = table_stretch(m, None)
    assert [r[:2] for r in rows] == [
        ["rope", "plain"],
        ["rope", "log-n temperature"],
        ["rope", "Llama-4-shaped temperature (every layer, L0 = L_train)"],
        ["rope", "LongRoPE (published profile)"],
        ["alibi", "plain"],
        ["alibi", "log-n temperature"],
        ["alibi", "Llama-4-shaped temperature (every layer, L0 = L_train)"],
        ["alibi", "log-n on q alone (contrast)"],
    ]
    assert rows[0][-1] == "—" and rows[1][-1].startswith("-0.050")
    assert rows[-1][-1].startswith("0.050")  # q alone: above plain


def test_scaling_q_alone_is_judged_against_the_whole_logit_on_the_biased_encodings():
    # The contrast's deficit is its bits/char minus its temperature's on the whole logit, at
    # the longest length, per encoding with an additive bias (ALiBi here, not RoPE).
    m, claims = hand_made()
    deficit = m.evidence["query_only_deficit"]
    assert set(deficit) == {"alibi"} and deficit["alibi"]["estimate"] == pytest.approx(0.1)
    assert m.evidence["llama4_long_gain"]["rope"]["estimate"] == pytest.approx(0.05)
    assert claims["whole_logit_temperature_beats_query_only"]["verdict"] == "pass"
    # q alone better than the whole logit: the claim fails; ALiBi unlearned: inconclusive.
    _, claims = hand_made(q_only_gain=0.2)
    assert claims["whole_logit_temperature_beats_query_only"]["verdict"] == "fail"
    _, claims = hand_made(alibi_margin=(-0.2, -0.3, -0.1))
    assert claims["whole_logit_temperature_beats_query_only"]["verdict"] == "inconclusive"
