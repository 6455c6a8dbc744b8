"""benchmarks/gpu.sh and its Python parts, the cheap ones only (seconds): the throughput
benchmark at a tiny size with bf16 autocast and the SDPA reference, the study part's
bookkeeping with a stand-in for snakemake, and the summary of a fixture of benchmark files. The
study itself is the GPU config's workflow, which the end-to-end tests cover at the test scale."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from workflow_utils import ROOT, run_watched

sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_bench  # noqa: E402 -- benchmarks/ is no package
import throughput  # noqa: E402

GPU_SH = ROOT / "benchmarks" / "gpu.sh"


def gpu_sh(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    proc = run_watched(
        ["bash", str(GPU_SH), *args], env={**os.environ, "PYTHON": sys.executable, **env}
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"gpu.sh {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return proc


def tiny_args(**over) -> argparse.Namespace:
    args = dict(
        device="cpu",
        threads=1,
        encodings=["none", "rope", "t5_bias"],
        vocab=11,
        d_model=16,
        heads=2,
        layers=1,
        seq_len=8,
        batch=2,
        steps=1,
        repeats=1,
        bf16=False,
        reference="torch",
        out="unused",
    )
    return argparse.Namespace(**(args | over))


@pytest.mark.parametrize("reference", ["torch", "sdpa"])
def test_throughput_with_bf16_against_either_reference(reference):
    result = throughput.measure(tiny_args(bf16=True, reference=reference))
    assert result["benchmark"].endswith(f"{throughput.REFERENCES[reference][1]} reference")
    assert result["settings"]["bf16"] and result["settings"]["reference"] == reference
    assert [r["encoding"] for r in result["rows"]] == ["none", "rope", "t5_bias"]
    for row in result["rows"]:
        assert row["tokens_per_s"] > 0 and row["ratio"] == pytest.approx(
            row["tokens_per_s"] / row["reference_tokens_per_s"]
        )
        assert "peak_memory_mb" not in row  # CUDA's allocator only
    assert "peak GPU memory" not in throughput.markdown(result)


def test_the_sdpa_reference_is_the_size_of_ours_and_causal():
    from posenc.train import build_model

    cfg = {"d_model": 32, "n_heads": 4, "n_layers": 2}
    ours = build_model(50, cfg, "learned", max_len=16)
    reference = throughput.SdpaReferenceLM(50, 32, 4, 2, 16)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert abs(count(reference) - count(ours)) / count(ours) < 0.01
    tokens = torch.randint(0, 50, (2, 16))
    changed = tokens.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % 50
    with torch.no_grad():  # causal: a change at position 10 leaves logits before it alone
        torch.testing.assert_close(reference(tokens)[:, :10], reference(changed)[:, :10])


def test_throughput_arguments_are_the_configs_model():
    config = gpu_bench.load_config([str(ROOT / "config/gpu.yaml")])
    args = gpu_bench.throughput_args(config, "cuda", Path("out.json"), 20, 5)
    pairs = dict(zip(args[::2], args[1::2]))
    xp = config["extrapolation"]
    assert pairs["--d-model"] == str(xp["model"]["d_model"]) and pairs["--reference"] == "sdpa"
    assert pairs["--layers"] == str(xp["model"]["n_layers"])
    assert pairs["--seq-len"] == str(xp["lm"]["seq_len"])
    assert pairs["--batch"] == str(xp["lm"]["train"]["batch_size"])
    assert int(pairs["--vocab"]) > 100  # the standard library's characters
    assert "--bf16" in args and set(config["encodings"]) <= set(args)


def test_gpu_sh_throughput_runs_tiny_on_the_cpu_and_skips_when_done(tmp_path):
    env = {"GPU_BENCH_OUT": str(tmp_path), "GPU_BENCH_STEPS": "1"}
    gpu_sh("--tiny", "throughput", env=env)
    result = json.loads((tmp_path / "throughput.json").read_text())
    tiny = gpu_bench.load_config(
        [str(ROOT / "config/test.yaml"), str(ROOT / "config/gpu-tiny.yaml")]
    )
    assert [r["encoding"] for r in result["rows"]] == tiny["encodings"]
    assert result["settings"]["d_model"] == tiny["extrapolation"]["model"]["d_model"]
    assert "SDPA" in result["benchmark"] or "scaled_dot_product" in result["benchmark"]
    assert (tmp_path / "throughput.md").read_text().startswith("| encoding |")
    again = gpu_sh("--tiny", "throughput", env=env)
    assert "done before" in again.stderr


def test_gpu_sh_study_records_each_command_and_resumes_past_the_limit(tmp_path):
    """A stand-in for snakemake: first too slow for the limit (exit 75, not done), then done."""
    stub = tmp_path / "snakemake"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        'case " $* " in *" --unlock "*) exit 0;; esac\n'
        f'echo "$@" >> {tmp_path}/calls\n'
        f"if [[ ! -f {tmp_path}/second ]]; then touch {tmp_path}/second; sleep 30; fi\n"
    )
    stub.chmod(0o755)
    out = tmp_path / "out"
    env = {"GPU_BENCH_OUT": str(out), "SNAKEMAKE": str(stub), "GPU_BENCH_LIMIT_S": "1"}
    first = gpu_sh("--tiny", "study", env=env, check=False)
    assert first.returncode == 75 and "run it again" in first.stderr
    assert not (out / "study.done").exists()
    gpu_sh("--tiny", "study", env=env)
    assert (out / "study.done").exists()
    runs = [json.loads(line) for line in (out / "study_runs.jsonl").read_text().splitlines()]
    assert [r["rc"] for r in runs] == [124, 0] and runs[0]["seconds"] >= 1
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "--rerun-incomplete" in calls[0] and "device=cpu" in calls[0]
    assert "config/test.yaml config/gpu-tiny.yaml" in calls[0]
    assert "done before" in gpu_sh("--tiny", "study", env=env).stderr  # nothing run a third time
    assert len((tmp_path / "calls").read_text().splitlines()) == 2


def write_fixture(results: Path, out: Path) -> None:
    """Benchmark files as Snakemake writes them, timing files as the training rules do."""
    bench = results / "benchmarks"
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for name, seconds in [
        ("aliasing", 12.0),
        ("report", 3.0),
        ("extrapolation/evaluate/lm/rope/seed0", 2.0),
        ("extrapolation/evaluate/lm/alibi/seed0", 4.0),
        ("extension/zero_shot/rope/seed0", 1.5),
    ]:
        path = bench / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + f"{seconds}\t0:00:01\t250.5\t600\t150\t200\t0\t0\t40\t1\n")
    for task, enc, seed, tps in [("lm", "rope", 0, 2.0e6), ("lm", "rope", 1, 1.0e6)]:
        folder = results / f"extrapolation/models/{task}/{enc}/seed{seed}"
        folder.mkdir(parents=True)
        timing = {"label": f"{task}/{enc}/seed{seed}", "wall_s": 16.0, "tokens_per_s": tps}
        timing |= {"peak_memory_mb": 900.0 + seed, "peak_memory_kind": "cuda_max_allocated"}
        (folder / "timing.json").write_text(json.dumps(timing))
        log = {"task": task, "encoding": enc, "device": "NVIDIA H200"}
        (folder / "train_log.json").write_text(json.dumps(log))
    out.mkdir(parents=True)
    (out / "study_runs.jsonl").write_text(
        '{"started": "x", "seconds": 300.0, "rc": 124, "args": []}\n'
        '{"started": "y", "seconds": 250.0, "rc": 0, "args": []}\n'
    )
    (out / "study.done").touch()
    (out / "env.json").write_text(json.dumps({"date": "today", "gpu": "NVIDIA H200"}))
    row = {"encoding": "rope", "tokens_per_s": 1.6e6, "reference_tokens_per_s": 1.8e6}
    row |= {"ratio": 1.6 / 1.8, "target": 0.85, "meets_target": True, "peak_memory_mb": 2048.0}
    (out / "throughput.json").write_text(
        json.dumps({"rows": [row | {"reference_peak_memory_mb": 1900.0}]})
    )


def test_gpu_sh_summary_of_a_fixture(tmp_path):
    results, out = tmp_path / "results", tmp_path / "out"
    write_fixture(results, out)
    gpu_sh("--tiny", "summary", env={"GPU_BENCH_OUT": str(out), "GPU_BENCH_RESULTS": str(results)})
    summary = json.loads((out / "summary.json").read_text())
    rules = {r["rule"]: r for r in summary["rules"]}
    assert set(rules) == {
        "aliasing",
        "report",
        "extrapolation_evaluate",
        "extension_zero_shot",
        "extrapolation_train",
    }
    assert (
        rules["extrapolation_evaluate"]["jobs"] == 2
        and rules["extrapolation_evaluate"]["total_s"] == 6.0
    )
    assert rules["extrapolation_train"]["total_s"] == 32.0
    assert rules["extrapolation_train"]["source"].startswith("timing file")
    assert summary["rules"][0]["rule"] == "extrapolation_train"  # the longest total first
    [trained] = summary["training"]
    assert trained["tokens_per_s"] == 1.5e6 and trained["peak_gpu_memory_mb"] == 901.0
    targets = {t["target"]: t for t in summary["targets"]}
    assert targets["whole GPU study"]["measured"] == 550.0 and targets["whole GPU study"]["met"]
    assert targets["training rope, tokens/s"]["met"] is True
    assert targets["training rope, ratio to the SDPA reference"]["met"] is True
    md = (out / "summary.md").read_text()
    assert "| whole GPU study | 550 | <= 600 s | yes |" in md
    assert "| extrapolation_evaluate | 2 | 6.0 | 3.0 | 4.0 | 250 | benchmark |" in md


def test_gpu_sh_refuses_an_unknown_part(tmp_path):
    proc = gpu_sh("--tiny", "everything", env={"GPU_BENCH_OUT": str(tmp_path)}, check=False)
    assert proc.returncode == 2 and "usage" in proc.stderr


def test_gpu_sh_study_skips_the_pdf_where_weasyprint_cannot_load_and_says_so(tmp_path):
    """The GPU machine has no Pango: WeasyPrint fails at import. The study then asks
    Snakemake for the page and the claims only, pdf.json records why, and the summary says
    the PDF was skipped. Where WeasyPrint loads, nothing is left out."""
    stub = tmp_path / "snakemake"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        'case " $* " in *" --unlock "*) exit 0;; esac\n'
        f'echo "$@" >> {tmp_path}/calls\n'
    )
    stub.chmod(0o755)
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "weasyprint.py").write_text(
        "raise OSError(\"cannot load library 'libpango-1.0-0': no such file\")\n"
    )
    out = tmp_path / "out"
    env = {"GPU_BENCH_OUT": str(out), "SNAKEMAKE": str(stub), "PYTHONPATH": str(fake)}
    proc = gpu_sh("--tiny", "study", env=env)
    assert "no PDF" in proc.stderr
    call = (tmp_path / "calls").read_text().splitlines()[0].split()
    assert call[:2] == ["results/report/index.html", "results/claims.json"]
    pdf = json.loads((out / "pdf.json").read_text())
    assert pdf["rendered"] is False and "libpango" in pdf["reason"]
    results = tmp_path / "results"
    (results / "benchmarks").mkdir(parents=True)
    summary = gpu_bench.summarise(out, results)
    text = gpu_bench.markdown(summary)
    assert "| the report's PDF |" in text and "skipped: WeasyPrint cannot load here" in text
    # Where it loads: the whole study, the PDF included.
    (out / "study.done").unlink()
    gpu_sh("--tiny", "study", env={**env, "PYTHONPATH": ""})
    call = (tmp_path / "calls").read_text().splitlines()[1].split()
    assert "results/report/index.html" not in call
    assert json.loads((out / "pdf.json").read_text()) == {"rendered": True}
