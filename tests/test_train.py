"""Training: schedule, determinism, resume after a kill, and loud failure on NaN."""

import io
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from posenc.data import lm_batches
from posenc.train import (
    TrainConfig,
    TrainingDiverged,
    build_model,
    load_checkpoint,
    lr_at,
    make_optimizer,
    progress_file,
    save_checkpoint,
    train,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
import evaluate_model as evaluate_script  # noqa: E402
import train_model as train_script  # noqa: E402

CPU = torch.device("cpu")
TOKENS = (torch.arange(5000) * 3) % 11  # predictable: a run can show that it learns


def tiny_model(encoding="rope", seed=0, dropout=0.1):
    torch.manual_seed(seed)
    return build_model(
        11,
        {"d_model": 16, "n_heads": 2, "n_layers": 2, "dropout": dropout},
        encoding,
        {"t5_bias": {"max_distance": 16}},
        max_len=16,
    )


def run_tiny(
    resume_path=None, steps=40, checkpoint_every=5, delay=0.0, stop_at=None, encoding="rope"
):
    """A tiny run with dropout (so the RNG state matters); ``stop_at`` simulates a crash."""
    torch.set_num_threads(1)
    model = tiny_model(encoding)
    batch = lm_batches(TOKENS, 16)
    calls = []

    def batches(generator, batch_size, step=0):
        calls.append(1)
        if stop_at is not None and len(calls) > stop_at:
            raise KeyboardInterrupt("simulated kill")
        time.sleep(delay)
        return batch(generator, batch_size, step)

    cfg = TrainConfig(
        steps=steps,
        batch_size=4,
        lr=3e-3,
        warmup_steps=5,
        checkpoint_every=checkpoint_every,
        progress_interval_s=1e9,
    )
    log = train(
        model,
        batches,
        cfg,
        seed=7,
        device=CPU,
        label="lm/rope/seed7",
        resume_path=resume_path,
        fingerprint="tiny",
        progress=io.StringIO(),
        log=lambda *a: None,
    )
    return model, log


def assert_same_weights(a, b):
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


def test_lr_schedule_warms_up_then_decays_by_cosine():
    cfg = TrainConfig(steps=110, batch_size=1, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(60, cfg) == pytest.approx(0.55)  # half way down the cosine
    assert lr_at(110, cfg) == pytest.approx(0.1)
    values = [lr_at(s, cfg) for s in range(10, 111)]
    assert all(a >= b for a, b in itertools.pairwise(values))


def test_weight_decay_only_on_matrices():
    model = tiny_model()
    groups = make_optimizer(
        model, TrainConfig(steps=1, batch_size=1, lr=1.0, weight_decay=0.1)
    ).param_groups
    assert all(p.dim() >= 2 for p in groups[0]["params"]) and groups[0]["weight_decay"] == 0.1
    assert all(p.dim() < 2 for p in groups[1]["params"]) and groups[1]["weight_decay"] == 0.0


def test_two_runs_give_identical_losses_and_weights():
    a, log_a = run_tiny(steps=15)
    b, log_b = run_tiny(steps=15)
    assert log_a["losses"] == log_b["losses"]
    assert_same_weights(a, b)
    assert log_a["losses"][-1] < log_a["losses"][0]  # it does learn something
    for key in ("tokens_per_s", "wall_s", "peak_memory_mb"):
        assert log_a[key] > 0
    assert log_a["peak_memory_kind"] == "cpu_max_rss" and log_a["resumed_from_step"] == 0


def test_resume_after_interruption_gives_identical_final_weights(tmp_path):
    resume = tmp_path / "resume.pt"
    with pytest.raises(KeyboardInterrupt):
        run_tiny(resume, stop_at=13)  # checkpoints at 5 and 10, killed during step 13
    assert torch.load(resume, weights_only=True)["step"] == 10
    resumed, log = run_tiny(resume)
    uninterrupted, reference = run_tiny()
    assert log["resumed_from_step"] == 10
    assert log["losses"] == reference["losses"]
    assert_same_weights(resumed, uninterrupted)


def test_resume_after_sigkill_gives_identical_final_weights(tmp_path):
    resume = tmp_path / "resume.pt"
    child = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); "
        f"from test_train import run_tiny; run_tiny({str(resume)!r}, delay=0.02)"
    )
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT)
    deadline = time.monotonic() + 60
    while not resume.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the run ended before it could be killed"
    resumed, log = run_tiny(resume)
    uninterrupted, _ = run_tiny()
    assert 0 < log["resumed_from_step"] < 40
    assert_same_weights(resumed, uninterrupted)


def test_a_checkpoint_from_other_settings_is_not_resumed(tmp_path):
    resume = tmp_path / "resume.pt"
    with pytest.raises(KeyboardInterrupt):
        run_tiny(resume, stop_at=7)
    payload = torch.load(resume, weights_only=True)
    payload["fingerprint"] = "other settings"
    torch.save(payload, resume)
    _, log = run_tiny(resume)
    assert log["resumed_from_step"] == 0


def test_nan_loss_names_the_run_and_step_and_leaves_no_checkpoint(tmp_path):
    resume = tmp_path / "resume.pt"
    model = tiny_model("alibi")
    batch = lm_batches(TOKENS, 16)
    calls = []

    def poisoned(generator, batch_size, step=0):
        calls.append(1)
        if len(calls) == 4:  # the weights go bad before step 3
            model.ln_f.weight.data.fill_(float("nan"))
        return batch(generator, batch_size)

    cfg = TrainConfig(steps=10, batch_size=2, lr=1e-3, checkpoint_every=2)
    with pytest.raises(TrainingDiverged, match=r"lm/alibi/seed0: loss nan at step 3"):
        train(
            model,
            poisoned,
            cfg,
            seed=0,
            device=CPU,
            label="lm/alibi/seed0",
            resume_path=resume,
            progress=io.StringIO(),
        )
    assert not resume.exists()  # the step-2 checkpoint is gone too


def settings(tmp_path, **train_overrides):
    corpus = tmp_path / "corpus.txt"
    # Seeded random words: a text that repeats itself would leave no held-out validation text.
    words = "the quick brown fox jumps over lazy dog and cat".split()
    rng = random.Random(0)
    corpus.write_text(" ".join(rng.choice(words) for _ in range(600)) + ".", encoding="utf-8")
    return {
        "data": {"corpus": str(corpus), "val_fraction": 0.1, "split_block": 256, "seq_len": 16},
        "model": {"n_layers": 1, "d_model": 16, "n_heads": 2, "dropout": 0.0},
        "train": {
            "batch_size": 2,
            "steps": 6,
            "lr": 3e-3,
            "weight_decay": 0.1,
            "warmup_steps": 2,
            "min_lr_ratio": 0.1,
            "grad_clip": 1.0,
            "checkpoint_every": 2,
            "max_loss": 20.0,
            "bf16": False,
            "progress_interval_s": 1e9,
            **train_overrides,
        },
        "encoding": {
            "sinusoidal": {"base": 10000},
            "rope": {"base": 10000},
            "t5_bias": {"num_buckets": 32, "max_distance": 16},
        },
    }


def fake_snakemake(tmp_path, task, encoding, cfg):
    out = tmp_path / "out"
    return SimpleNamespace(
        wildcards=SimpleNamespace(task=task, encoding=encoding, seed="0"),
        params=SimpleNamespace(settings=cfg, device="cpu", resume=str(out / "resume.pt")),
        output=SimpleNamespace(
            model=str(out / "model.pt"),
            train_log=str(out / "log.json"),
            timing=str(out / "timing.json"),
        ),
        log=[],
        threads=1,
        config={"plugins": []},
        scriptdir=str(ROOT / "workflow" / "scripts"),
    )


def test_exploding_loss_in_the_rule_script_writes_no_checkpoint(tmp_path):
    smk = fake_snakemake(tmp_path, "lm", "t5_bias", settings(tmp_path, max_loss=0.5))
    with pytest.raises(TrainingDiverged, match=r"lm/t5_bias/seed0: loss .* at step 0"):
        train_script.main(smk)
    assert not any((tmp_path / "out").glob("*"))  # no model, no log, no resume file


def test_rule_script_writes_a_checkpoint_that_rebuilds_the_model(tmp_path):
    smk = fake_snakemake(tmp_path, "lm", "learned", settings(tmp_path))
    train_script.main(smk)
    model, meta = load_checkpoint(smk.output.model, CPU)
    log = json.loads(Path(smk.output.train_log).read_text())
    assert meta["max_len"] == meta["train_len"] == 16  # no rows beyond
    # Only its own block of the encoding settings goes with it: another's cannot rebuild it.
    assert meta["encoding_config"] == {"learned": {}}
    assert len(log["log"]["losses"]) == 6 and log["device"].startswith("cpu")
    timing = json.loads(Path(smk.output.timing).read_text())
    assert timing["tokens_per_s"] > 0 and timing["resumed_from_step"] == 0
    assert "tokens_per_s" not in log["log"]  # timings stay out of the deterministic log
    assert not Path(smk.params.resume).exists()  # removed once the model is written
    again, _ = load_checkpoint(smk.output.model, CPU)
    tokens = torch.randint(0, meta["vocab_size"], (1, 16))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens), again(tokens))


def test_a_language_model_keeps_its_first_epoch_and_its_evaluation_scores_it(tmp_path):
    """The memorisation claim compares the final model's train/validation gap with the same
    model's after one pass over the training text: the checkpoint keeps that state, and the
    evaluation scores it on the same windows as the final model at L_train."""
    cfg = settings(tmp_path, batch_size=64)
    model, meta, summary = train_script.compute("lm", "rope", 0, cfg, CPU, progress=io.StringIO())
    train_chars = meta["data"]["train_characters"]
    epoch = -(-train_chars // (64 * 16))
    assert 0 < epoch < 6 and meta["first_epoch"]["step"] == epoch == summary["first_epoch_step"]
    assert not torch.equal(  # an earlier state, not the final one
        meta["first_epoch"]["model"]["ln_f.weight"], model.state_dict()["ln_f.weight"]
    )
    settings_eval = {
        "multipliers": [1, 2],
        "tokens": 64,
        "segment": 8,
        "segment_windows": 2,
        "batch_tokens": 64,
    }
    record = evaluate_script.compute(model, meta, settings_eval, CPU)
    first = [r for r in record["rows"] if r["method"] == "first_epoch"]
    final = {
        (r["split"]): r
        for r in record["rows"]
        if r["method"] == "plain" and r["mode"] == "all" and r["multiplier"] == 1
    }
    assert sorted(r["split"] for r in first) == ["train", "val"]
    for r in first:  # the same windows as the final model's, scored with other weights
        assert r["windows"] == final[r["split"]]["windows"]
        assert r["bits_per_char"] != final[r["split"]]["bits_per_char"]
    # A run shorter than one pass keeps no snapshot.
    _, short, _ = train_script.compute(
        "lm", "rope", 0, settings(tmp_path), CPU, progress=io.StringIO()
    )
    assert "first_epoch" not in short


def test_passkey_task_trains_through_the_rule_script(tmp_path):
    cfg = settings(tmp_path)
    cfg["data"] = {"num_symbols": 4, "key_len": 2, "min_len": 5, "max_len": 8, "curriculum": 0.5}
    _model, meta, summary = train_script.compute(
        "passkey", "none", 0, cfg, CPU, progress=io.StringIO()
    )
    assert meta["train_len"] == 8 and meta["vocab_size"] == 6  # 4 symbols, KEY, QUERY
    assert len(summary["log"]["losses"]) == 6


def test_checkpoint_is_written_atomically(tmp_path):
    model = tiny_model()
    path = tmp_path / "model.pt"
    save_checkpoint(
        path,
        model,
        {"vocab_size": 11, "model_config": {}, "encoding": "rope", "encoding_config": {}},
    )
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]  # no temporary left behind


def test_progress_prints_one_line_per_update_off_a_terminal():
    stream = io.StringIO()
    model = tiny_model("none")
    cfg = TrainConfig(steps=3, batch_size=2, lr=1e-3, progress_interval_s=0)
    train(
        model,
        lm_batches(TOKENS, 16),
        cfg,
        seed=0,
        device=CPU,
        label="lm/none/seed0",
        progress=progress_file(stream),
    )
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and len(lines) >= 3
    assert lines[-1].startswith("lm/none/seed0: 100%")


def test_scale_embeddings_multiplies_tokens_by_sqrt_d_model():
    cfg = {"d_model": 16, "n_heads": 2, "n_layers": 1}
    torch.manual_seed(0)
    scaled = build_model(11, {**cfg, "scale_embeddings": True}, "sinusoidal")
    tokens = torch.randint(0, 11, (2, 8))
    with torch.no_grad():
        x = scaled.stack(scaled.embed(tokens) * 4.0)  # sqrt(16)
        torch.testing.assert_close(scaled(tokens), scaled.ln_f(x) @ scaled.embed.weight.T)


def test_scaled_embeddings_start_at_unit_rms_as_fairseq_draws_them():
    # fairseq: N(0, d^-1/2) weights times sqrt(d): tokens at unit RMS beside the sinusoidal
    # table's 1/sqrt(2); unscaled: GPT-2's N(0, 0.02).
    cfg = {"d_model": 64, "n_heads": 4, "n_layers": 1}
    torch.manual_seed(0)
    scaled = build_model(4000, {**cfg, "scale_embeddings": True}, "sinusoidal")
    plain = build_model(4000, cfg, "sinusoidal")
    tokens = torch.arange(4000)
    with torch.no_grad():
        rms = (scaled.embed(tokens) * scaled.embed_scale).pow(2).mean().sqrt()
        assert abs(float(rms) - 1.0) < 0.02
        assert abs(float(plain.embed.weight.std()) - 0.02) < 0.001
