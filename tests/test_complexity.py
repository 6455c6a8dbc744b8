"""analyses/complexity.py: the fits on synthetic timings, the verdicts, and a tiny real run."""

import time

import pytest
import torch
import yaml

from analyses.complexity import (
    clock,
    encoding_workload,
    fits,
    flop_model_slope,
    log_log_fit,
    make_claims,
    measure,
    median_time,
)

CFG = yaml.safe_load(
    """
d_model: 8
n_heads: 2
batch: 1
causal: false
lengths: [16, 32, 64]
attention_max_len: 64
bias_max_len: 32
attention_fit_min_len: 32
encoding_fit_min_len: 32
warmup: 1
min_run_time: 0.001
thresholds: {pe_slope: 1.0, pe_slope_tol: 0.2, pe_max_fraction: 0.05, attention_slope: 2.0,
             attention_slope_tol: 0.2}
"""
)
ENCODING = {"base": 10000, "rope_base": 10000, "t5_num_buckets": 32, "t5_max_distance": 128}
ENCODINGS = ["none", "sinusoidal", "learned", "rope", "alibi", "t5_bias"]


def synthetic(workload: str, acts_on: str, t0: float, c: float, alpha: float) -> list[dict]:
    return [
        {
            "workload": workload,
            "acts_on": acts_on,
            "length": n,
            "median_s": t0 + c * n**alpha,
            "iqr_s": 0.0,
            "repeats": 1,
        }
        for n in (1, 256, 512, 1024, 2048, 4096)
    ]


def test_log_log_fit_recovers_a_power_law():
    lengths = [10, 100, 1000]
    slope, intercept = log_log_fit(lengths, [3e-6 * n**1.7 for n in lengths])
    assert slope == pytest.approx(1.7)
    assert intercept == pytest.approx(torch.log(torch.tensor(3e-6)).item())


def test_fits_remove_the_per_call_overhead():
    cfg = {**CFG, "attention_fit_min_len": 512, "encoding_fit_min_len": 512}
    rows = synthetic("sinusoidal", "input", 2e-5, 1e-9, 1.0) + synthetic(
        "attention", "layer", 5e-5, 1e-10, 2.0
    )
    by = {f["workload"]: f for f in fits(rows, cfg)}
    assert by["sinusoidal"]["slope"] == pytest.approx(1.0, abs=1e-2)  # t(1) holds one element
    assert by["attention"]["slope"] == pytest.approx(2.0, abs=1e-2)
    assert by["sinusoidal"]["slope_raw"] < 0.9  # the overhead flattens the raw times
    assert by["sinusoidal"]["overhead_s"] == pytest.approx(2e-5 + 1e-9)


def test_flop_model_slope():
    assert flop_model_slope(128, 64) == pytest.approx(1.5)
    assert flop_model_slope(10**9, 64) == pytest.approx(2.0, abs=1e-6)


def result_with(pe_slope: float, att_slope: float, ratio: float) -> dict:
    return {
        "fits": [
            {"workload": "sinusoidal", "slope": pe_slope, "fit_from": 512, "fit_to": 4096},
            {"workload": "attention", "slope": att_slope, "fit_from": 512, "fit_to": 4096},
        ],
        "pe_to_attention": {"sinusoidal": ratio},
        "ratio_len": 4096,
        "expected_attention_slope": 1.9,
    }


@pytest.mark.parametrize(
    "pe, att, ratio, verdicts",
    [
        (1.05, 1.95, 0.01, ("pass", "pass")),
        (1.5, 1.95, 0.01, ("fail", "pass")),
        (1.0, 1.5, 0.01, ("pass", "fail")),
        (1.0, 2.0, 0.5, ("fail", "pass")),  # linear, but not negligible next to attention
    ],
)
def test_verdicts_follow_the_thresholds(pe, att, ratio, verdicts):
    claims = make_claims(result_with(pe, att, ratio), CFG)
    assert tuple(c["verdict"] for c in claims) == verdicts
    assert [c["id"] for c in claims] == ["complexity.pe_linear", "complexity.attention_quadratic"]


def test_median_time_measures_a_known_sleep():
    timer, name = clock(torch.device("cuda"))  # wall time: a sleep uses no CPU
    assert name == "wall time"
    t = median_time(lambda: time.sleep(0.002), warmup=1, min_run_time=0.02, timer=timer)
    assert 0.0015 < t["median_s"] < 0.05


def test_every_encoding_does_its_own_work():
    assert encoding_workload("none", CFG, ENCODING, 16, torch.device("cpu")) is None
    for name, shape in (
        ("sinusoidal", (16, 8)),
        ("learned", (16, 8)),
        ("alibi", (2, 16, 16)),
        ("t5_bias", (2, 16, 16)),
    ):
        with torch.no_grad():
            out = encoding_workload(name, CFG, ENCODING, 16, torch.device("cpu"))()
        assert tuple(out.shape) == shape
    q, k = encoding_workload("rope", CFG, ENCODING, 16, torch.device("cpu"))()
    assert q.shape == k.shape == (1, 2, 16, 4)


def test_tiny_measurement_has_every_workload_and_length():
    rows = measure(CFG, ENCODINGS, ENCODING, 0, torch.device("cpu"))
    seen = {(r["workload"], r["length"]) for r in rows}
    for n in (1, 16, 32, 64):
        for w in ("attention", "sinusoidal", "learned", "rope"):
            assert (w, n) in seen
    assert ("alibi", 64) not in seen and ("alibi", 32) in seen  # capped at bias_max_len
    assert all(r["median_s"] > 0 for r in rows)
