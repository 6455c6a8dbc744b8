"""The complexity analysis: the fits in L and in d on synthetic timings, each encoding's timed
work, the page faults and caches behind a step, the verdicts the claims give at every width, a
tiny real run, encodings registered from outside, and the rule that runs it alone."""

import logging
import re
import time
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
import yaml
from workflow_utils import copy_workflow, snakemake

from posenc.analyses.complexity import compute as cx
from posenc.analyses.complexity import evidence, fits, memory, present, resample, timing, workloads
from posenc.analyses.complexity.spec import SPEC, check_lengths
from posenc.analyses.complexity.workloads import ATTENTION
from posenc.analysis import Context, Measurements
from posenc.claims import evaluate, interval
from posenc.encodings import (
    REGISTRY,
    BiasEncoding,
    EncodingSpec,
    InputEncoding,
    sinusoidal_table,
)

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")
CFG = yaml.safe_load(
    """
d_models: [8, 16]
head_dim: 4
batch: 1
causal: false
lengths: [16, 32, 64]
attention_max_len: 64
bias_max_len: 32
attention_fit_min_len_per_d: 2
encoding_fit_min_len: 32
warmup: 1
min_run_time: 0.001
min_blocks: 3
rounds: 2
intervals: {level: 0.95, resamples: 200}
thresholds: {pe_slope: 1.0, pe_slope_tol: 0.2, pe_max_fraction: 0.05, attention_slope: 2.0,
             attention_slope_tol: 0.2, d_slope: 1.0, d_slope_tol: 0.2}
"""
)
ENCODING = {
    "t5_bias": {"max_distance": 128},
    "rope_partial": {"fraction": 0.5},  # heads of 4: a quarter would rotate one dimension
}
BUILT_IN = list(REGISTRY)  # before any test registers its own
IDS = [
    "complexity.pe_linear",
    "complexity.attention_quadratic",
    "complexity.pe_linear_in_d",
    "complexity.attention_linear_in_d",
]
# For runs whose fits must exist: every workload's time well above its per-call cost t0 over
# its fit range (even a table, at 16 K elements), and enough warm-up that the time at L = 1
# is not the first call's.
RUN_CFG = {
    **CFG,
    "d_models": [16, 32],
    "head_dim": 8,
    "lengths": [256, 512, 1024],
    "attention_max_len": 1024,
    "bias_max_len": 512,
    "attention_fit_min_len_per_d": 16,
    "encoding_fit_min_len": 512,
    "warmup": 5,
    "min_run_time": 0.01,
}


@pytest.fixture
def one_thread():
    """One thread, as the workflow runs the analysis (and its thread-CPU-time clock)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def context(cfg=RUN_CFG, encodings=BUILT_IN) -> Context:
    return Context(
        cfg=cfg,
        seed=0,
        encodings=list(encodings),
        encoding=ENCODING,
        device=CPU,
        log=logging.getLogger("test"),
    )


def synthetic(
    workload: str, acts_on: str, t0: float, c: float, alpha: float, d: int = 8, beta: float = 1
) -> list[dict]:
    """t(L, d) = t0 + c · L^alpha · d^beta at the lengths a fit uses."""
    return [
        {
            "workload": workload,
            "acts_on": acts_on,
            "d_model": d,
            "heads": d // 4,
            "length": n,
            "median_s": t0 + c * n**alpha * d**beta,
            "iqr_s": 0.0,
            "repeats": 1,
            "out_bytes": 4 * n * d,
            "fresh_bytes": 0.0,
        }
        for n in (1, 256, 512, 1024, 2048, 4096)
    ]


def test_log_log_fit_recovers_a_power_law():
    lengths = [10, 100, 1000]
    slope, intercept = fits.log_log_fit(lengths, [3e-6 * n**1.7 for n in lengths])
    assert slope == pytest.approx(1.7)
    assert intercept == pytest.approx(torch.log(torch.tensor(3e-6)).item())


def test_fits_remove_the_per_call_overhead_at_every_width():
    cfg = {**CFG, "attention_fit_min_len_per_d": 64, "encoding_fit_min_len": 512}
    rows = []
    for d in (8, 16):
        rows += synthetic("table", "input", 2e-5, 1e-9, 1.0, d)
        rows += synthetic(ATTENTION, "layer", 5e-5, 1e-10, 2.0, d)
    by = {(f["workload"], f["d_model"]): f for f in fits.fits(rows, cfg)}
    assert set(by) == {("table", 8), ("table", 16), (ATTENTION, 8), (ATTENTION, 16)}
    for d in (8, 16):
        assert by[("table", d)]["slope"] == pytest.approx(1.0, abs=1e-2)
        assert by[(ATTENTION, d)]["slope"] == pytest.approx(2.0, abs=1e-2)
        assert (by[("table", d)]["fit_from"], by[("table", d)]["fit_to"]) == (512, 4096)
        # Attention's window starts at a fixed multiple of d, set in the config.
        assert by[(ATTENTION, d)]["fit_from"] == 64 * d
    assert by[("table", 8)]["slope_raw"] < 0.9  # the overhead flattens the raw times
    assert by[("table", 8)]["overhead_s"] == pytest.approx(2e-5 + 1e-9 * 8)


def test_the_fit_windows_come_from_the_config_alone():
    """The same timings fitted under two configs: the windows follow the config, not the data."""
    rows = synthetic(ATTENTION, "layer", 5e-5, 1e-10, 2.0, 16) + synthetic(
        "table", "input", 2e-5, 1e-9, 1.0, 16
    )
    for per_d, enc_min in ((16, 256), (64, 2048)):
        cfg = {**CFG, "attention_fit_min_len_per_d": per_d, "encoding_fit_min_len": enc_min}
        by = {f["workload"]: f for f in fits.fits(rows, cfg)}
        assert by[ATTENTION]["fit_from"] == per_d * 16
        assert by["table"]["fit_from"] == enc_min


def test_flop_model_slopes():
    assert fits.flop_model_slope(128, 64) == pytest.approx(1.5)
    assert fits.flop_model_slope(10**9, 64) == pytest.approx(2.0, abs=1e-6)
    # In d: 1 + 2D / (L + 2D) at each D; 1 once L >> 2D, toward 2 (the projections) at L << D.
    assert fits.flop_model_d_slope(10**9, [64, 128, 256]) == pytest.approx(1.0, abs=1e-5)
    assert fits.flop_model_d_slope(1, [10**4, 10**5]) == pytest.approx(2.0, abs=1e-3)
    at = fits.flop_model_d_slope(16384, [64, 128, 256])
    assert 1 + 128 / (16384 + 128) < at < 1 + 512 / (16384 + 512)


def test_d_fits_recover_the_exponent_in_d_at_the_largest_length():
    rows = []
    for d in (16, 32, 64):
        rows += synthetic("table", "input", 2e-5, 1e-9, 1.0, d, beta=1.0)
        rows += synthetic("wide", "input", 2e-5, 1e-12, 1.0, d, beta=2.0)
        rows += synthetic(ATTENTION, "layer", 5e-5, 1e-10, 2.0, d, beta=1.0)
    by = {f["workload"]: f for f in fits.d_fits(rows, [16, 32, 64])}
    assert by["table"]["slope"] == pytest.approx(1.0, abs=1e-6)  # t0 removed exactly
    assert by["wide"]["slope"] == pytest.approx(2.0, abs=1e-6)
    assert by["table"]["length"] == 4096 and by["table"]["points"] == 3
    assert by["table"]["flop_model_slope"] is None
    assert by[ATTENTION]["flop_model_slope"] == fits.flop_model_d_slope(4096, [16, 32, 64])
    assert by["table"]["seconds"][32] == pytest.approx(2e-5 + 1e-9 * 4096 * 32)
    # One width: no slope in d.
    assert fits.d_fits(synthetic("table", "input", 2e-5, 1e-9, 1.0, 16), [16]) == []


def fitted_at(pe: dict[int, float], att: dict[int, float]) -> list[dict]:
    return [
        {"workload": "table", "d_model": d, "slope": v, "fit_from": 512, "fit_to": 4096}
        for d, v in pe.items()
    ] + [
        {"workload": ATTENTION, "d_model": d, "slope": v, "fit_from": 16 * d, "fit_to": 4096}
        for d, v in att.items()
    ]


def d_fitted_at(pe_d: float, att_d: float) -> list[dict]:
    return [
        {"workload": "table", "length": 4096, "slope": pe_d, "flop_model_slope": None},
        {"workload": ATTENTION, "length": 1024, "slope": att_d, "flop_model_slope": 1.01},
    ]


def at_lengths(ratio, lengths=(256, 4096)) -> dict[int, dict]:
    """A table's fraction of attention at each length: one number at every length (a
    zero-width interval), or ``{length: (estimate, low, high)}``."""
    if not isinstance(ratio, dict):
        ratio = dict.fromkeys(lengths, (ratio, ratio, ratio))
    return {n: interval(*v) for n, v in ratio.items()}


def verdicts_with(pe, att, ratio, pe_d=1.0, att_d=1.0, cfg=CFG) -> list[dict]:
    pe = pe if isinstance(pe, dict) else {8: pe}
    att = att if isinstance(att, dict) else {8: att}
    by_length = {("table", d): at_lengths(ratio) for d in pe}
    ev = evidence.evidence(fitted_at(pe, att), d_fitted_at(pe_d, att_d), by_length, ["table"])
    return evaluate(SPEC.claims, ev, cfg, "complexity")


@pytest.mark.parametrize(
    "pe, att, ratio, pe_d, att_d, verdicts",
    [
        (1.05, 1.95, 0.01, 1.0, 1.0, ("pass", "pass", "pass", "pass")),
        (1.5, 1.95, 0.01, 1.0, 1.0, ("fail", "pass", "pass", "pass")),
        (0.7, 1.95, 0.01, 1.0, 1.0, ("fail", "pass", "pass", "pass")),  # too flat: wrong too
        (1.0, 1.5, 0.01, 1.0, 1.0, ("pass", "fail", "pass", "pass")),
        (1.0, 2.3, 0.01, 1.0, 1.0, ("pass", "fail", "pass", "pass")),
        (1.0, 2.0, 0.5, 1.0, 1.0, ("fail", "pass", "pass", "pass")),  # linear, not negligible
        (1.0, 2.0, 0.01, 0.5, 1.0, ("pass", "pass", "fail", "pass")),  # overhead-bound in d
        (1.0, 2.0, 0.01, 1.0, 1.9, ("pass", "pass", "pass", "fail")),  # projections' d^2
        (1.0, 2.0, 0.01, 1.15, 0.85, ("pass", "pass", "pass", "pass")),
    ],
)
def test_verdicts_follow_the_thresholds(pe, att, ratio, pe_d, att_d, verdicts):
    claims = verdicts_with(pe, att, ratio, pe_d, att_d)
    assert tuple(c["verdict"] for c in claims) == verdicts
    assert [c["id"] for c in claims] == IDS
    # The ledger carries the raw slopes (compared with the config's exponents), by label.
    assert claims[0]["measured"]["log-log slope"] == {"table d=8": pe}
    assert claims[1]["measured"]["attention log-log slope"] == {"d=8": att}
    assert claims[1]["measured"]["attention fit range"] == {"d=8": "128–4096"}
    assert claims[2]["measured"] == {"table L=4096": pe_d}
    assert claims[3]["measured"]["attention log-log slope in d"] == att_d
    assert claims[3]["measured"]["attention d length"] == 1024


def test_a_claim_holds_only_if_it_holds_at_every_width():
    good = verdicts_with({64: 1.0, 128: 1.0, 256: 1.0}, {64: 2.0, 128: 2.0, 256: 2.0}, 0.01)
    assert [c["verdict"] for c in good[:2]] == ["pass", "pass"]
    one_bad = verdicts_with({64: 1.0, 128: 1.0, 256: 1.4}, {64: 2.0, 128: 1.6, 256: 2.0}, 0.01)
    assert [c["verdict"] for c in one_bad[:2]] == ["fail", "fail"]
    assert set(one_bad[0]["measured"]["log-log slope"]) == {
        "table d=64",
        "table d=128",
        "table d=256",
    }


def test_claims_are_na_without_their_workloads():
    """No table encoding and no attention fit: every claim n/a, with a generated reason."""
    claims = evaluate(SPEC.claims, evidence.evidence([], [], {}, []), CFG, "complexity")
    assert [c["verdict"] for c in claims] == ["n/a"] * 4
    assert all(c["reason"] for c in claims)


def test_a_table_not_timed_where_attention_was_fails():
    ev = evidence.evidence(fitted_at({8: 1.0}, {8: 2.0}), d_fitted_at(1.0, 1.0), {}, ["table"])
    assert evaluate(SPEC.claims, ev, CFG, "complexity")[0]["verdict"] == "fail"


def test_essentially_free_must_hold_at_every_length_the_worst_deciding():
    """A table at 0.17 of a layer at L = 256 and 0.01 at L = 4096 is not essentially free:
    the claim fails on the short length, whatever the longest one says, and the ledger shows
    the fraction at every length and which one was worst."""
    short_costly = {256: (0.17, 0.16, 0.18), 4096: (0.01, 0.009, 0.011)}
    claim = verdicts_with(1.0, 2.0, short_costly)[0]
    assert claim["verdict"] == "fail"
    fractions = claim["measured"]["table time / attention time at every L"]
    assert fractions == {
        "table d=8": {"L=256": interval(0.17, 0.16, 0.18), "L=4096": interval(0.01, 0.009, 0.011)}
    }
    assert claim["measured"]["worst fraction length"] == {"table d=8": 256}
    assert claim["outcomes"]["table_to_attention"] == {"table d=8": "fail"}
    assert "table time / attention time at every L ≤ 0.05" in claim["expected"]
    # Under the bound at every length: it holds.
    assert (
        verdicts_with(1.0, 2.0, {256: (0.04, 0.03, 0.045), 4096: (0.01, 0.009, 0.011)})[0][
            "verdict"
        ]
        == "pass"
    )
    # Under it at the longest length alone is not enough, even by far.
    assert (
        verdicts_with(1.0, 2.0, {256: (0.06, 0.055, 0.07), 4096: (1e-4, 1e-4, 1e-4)})[0]["verdict"]
        == "fail"
    )


def test_a_fraction_whose_interval_straddles_the_bound_is_inconclusive():
    claim = verdicts_with(1.0, 2.0, {256: (0.049, 0.04, 0.06), 4096: (0.01, 0.009, 0.011)})[0]
    assert claim["verdict"] == "inconclusive"
    assert "table d=8 L=256 [0.04, 0.06]" in claim["reason"] and "straddles" in claim["reason"]
    # A fail at another length decides it: the worst length wins.
    claim = verdicts_with(1.0, 2.0, {256: (0.2, 0.15, 0.25), 4096: (0.049, 0.04, 0.06)})[0]
    assert claim["verdict"] == "fail"


def test_the_statement_names_the_lengths_judged_and_smoke_runs_are_not_judged():
    claim = verdicts_with(1.0, 2.0, {256: (0.2, 0.2, 0.2), 512: (0.1, 0.1, 0.1)})[0]
    assert "(L = 256, 512)" in claim["statement"]
    smoke = verdicts_with(1.0, 2.0, 0.9, cfg={**CFG, "smoke_test": True})[0]
    assert smoke["verdict"] == "n/a" and "smoke_test" in smoke["reason"]
    assert smoke["measured"]["table time / attention time at every L"]  # numbers still shown


def test_ratio_intervals_bracket_every_ratio_and_skip_the_untimed():
    rng = np.random.default_rng(0)
    blocks = {
        (name, 8, n): list(t * (1 + 0.05 * rng.standard_normal(12)))
        for name, t in (("table", 1e-4), (ATTENTION, 1e-3))
        for n in (16, 32)
    }
    del blocks[(ATTENTION, 8, 32)]
    points = resample.medians(blocks, 400, 0)
    ratio = points["table", 8, 16].point / points[ATTENTION, 8, 16].point
    rows = [
        {"workload": "table", "d_model": 8, "length": 16, "ratio": ratio},
        {"workload": "table", "d_model": 8, "length": 32, "ratio": None},
    ]
    timed, untimed = resample.ratio_intervals(rows, points, 0.95, ATTENTION)
    assert timed["ratio_low"] < ratio < timed["ratio_high"]
    assert timed["ratio_high"] - timed["ratio_low"] < 0.05  # 5 % noise on 12 blocks
    assert untimed["ratio_low"] is None and untimed["ratio_high"] is None


def timing_row(workload, d, length, t, acts_on="input", out_bytes=4, fresh_bytes=0.0):
    return {
        "workload": workload,
        "acts_on": acts_on,
        "d_model": d,
        "heads": d // 4,
        "length": length,
        "median_s": t,
        "out_bytes": out_bytes,
        "fresh_bytes": fresh_bytes,
    }


def test_ratios_at_every_length_and_width_with_gaps_where_untimed():
    """Each encoding over attention at the same width and L; None where either was not
    timed there."""
    rows = (
        [timing_row(ATTENTION, 8, n, t, "layer") for n, t in ((1, 1.0), (16, 2.0), (32, 8.0))]
        + [timing_row(ATTENTION, 16, n, t, "layer") for n, t in ((1, 1.0), (16, 4.0))]
        + [
            timing_row("table", d, n, t)
            for d in (8, 16)
            for n, t in ((1, 0.5), (16, 0.5), (32, 1.0), (64, 2.0))
        ]
        + [timing_row("bias", 8, n, t, "bias") for n, t in ((1, 0.25), (16, 1.0))]
    )
    got = {(r["workload"], r["d_model"], r["length"]): r for r in fits.ratios(rows, [16, 32, 64])}
    assert len(got) == 9  # (table, 2 widths) + (bias, 1 width), x three lengths; no attention
    assert got[("table", 8, 16)]["ratio"] == 0.25 and got[("table", 8, 32)]["ratio"] == 0.125
    assert got[("table", 16, 16)]["ratio"] == 0.125  # against attention of its own width
    assert got[("table", 16, 32)]["ratio"] is None  # attention at d = 16 not timed at 32
    assert got[("table", 8, 64)]["ratio"] is None  # attention not timed at 64
    assert (
        got[("table", 8, 64)]["encoding_s"] == 2.0 and got[("table", 8, 64)]["attention_s"] is None
    )
    assert got[("bias", 8, 16)]["ratio"] == 0.5
    assert got[("bias", 8, 32)]["ratio"] is None and got[("bias", 8, 32)]["encoding_s"] is None
    assert got[("bias", 8, 32)]["acts_on"] == "bias"
    # The claim's fractions: every L where both were timed, none where either was not.
    by_length = fits.fractions(list(got.values()))
    assert {k: set(v) for k, v in by_length.items()} == {
        ("table", 8): {16, 32},
        ("table", 16): {16},
        ("bias", 8): {16},
    }
    assert by_length[("table", 8)][16] == interval(0.25, 0.25, 0.25)  # no bounds: zero width
    worst = fits.worst_fractions(by_length)
    assert worst[("table", 8)] == {"length": 16, **interval(0.25, 0.25, 0.25)}
    ev = evidence.evidence([], [], by_length, ["table"])
    assert ev["table_to_attention"] == {
        "table d=8": {"L=16": interval(0.25, 0.25, 0.25), "L=32": interval(0.125, 0.125, 0.125)},
        "table d=16": {"L=16": interval(0.125, 0.125, 0.125)},
    }
    assert ev["worst_fraction_length"] == {"table d=8": 16, "table d=16": 16}
    assert ev["fraction_lengths"] == [16, 32]


def test_steps_find_the_largest_rise_in_time_per_byte():
    mib = 2**20
    rows = [
        timing_row("bias", 8, n, t, "bias", out_bytes=b * mib, fresh_bytes=f * mib)
        for n, t, b, f in (
            (1, 1e-5, 1e-6, 0.0),
            (256, 1.0, 1, 0.0),
            (512, 4.0, 4, 0.0),  # 4x the bytes, 4x the time: no step
            (1024, 48.0, 16, 64.0),  # 4x the bytes, 12x the time, and fresh pages
            (2048, 200.0, 64, 256.0),
        )
    ]
    (step,) = memory.steps(rows)
    assert (step["from_len"], step["to_len"]) == (512, 1024)
    assert step["time_x"] == pytest.approx(12.0) and step["bytes_x"] == pytest.approx(4.0)
    assert step["per_byte_x"] == pytest.approx(3.0)
    assert (step["out_mib_from"], step["out_mib_to"]) == (4, 16)
    assert (step["fresh_mib_from"], step["fresh_mib_to"]) == (0.0, 64.0)
    assert memory.steps([timing_row(ATTENTION, 8, 16, 1.0, "layer")]) == []


def test_output_bytes_of_tensors_and_tuples():
    a, b = torch.zeros(3, 4), torch.zeros(5, dtype=torch.float64)
    assert timing.output_bytes(a) == 48
    assert timing.output_bytes((a, b)) == 48 + 40
    assert timing.output_bytes(None) == 0


def median_time(fn, warmup, min_run_time, timer, min_blocks=3):
    """One round of timing.time_blocks, summarised as the measurement's rows are."""
    t = timing.time_blocks(fn, warmup, min_run_time, timer, min_blocks)
    return {
        **timing.summarise(t["times"]),
        "out_bytes": t["out_bytes"],
        "fresh_bytes": t["fresh_bytes"],
    }


def test_median_time_measures_a_known_sleep():
    timer, name = timing.clock(torch.device("cuda"))  # wall time: a sleep uses no CPU
    assert name == "wall time"
    t = median_time(lambda: time.sleep(0.002), warmup=1, min_run_time=0.02, timer=timer)
    assert t["median_s"] > 0.0015  # a sleep is never shorter; a busy machine makes it longer
    assert t["out_bytes"] == 0 and t["repeats"] >= 3


@pytest.mark.parametrize("seconds", [0.0005, 0.015])
def test_the_median_is_of_several_blocks_even_for_a_long_call(seconds):
    """A call longer than min_run_time (one block of its own) and a short one (blocked by
    torch.utils.benchmark) both get at least min_blocks timed blocks."""
    t = median_time(lambda: time.sleep(seconds), 1, 1e-4, time.perf_counter, min_blocks=4)
    assert t["repeats"] >= 4
    assert t["median_s"] > seconds * 0.9  # never shorter than the sleep; longer when busy


@pytest.mark.skipif(timing.minor_faults() is None, reason="no page-fault counts on this OS")
def test_median_time_counts_the_pages_a_call_maps_afresh():
    """A 64 MiB block is above the C allocator's largest threshold for reusing freed memory,
    so each call faults every page of a fresh one in; a 4 KiB one is reused."""
    big = median_time(lambda: torch.ones(2**24), 1, 0.02, time.perf_counter)
    small = median_time(lambda: torch.ones(2**10), 1, 0.02, time.perf_counter)
    assert big["out_bytes"] == 2**26 and small["out_bytes"] == 2**12
    assert big["fresh_bytes"] >= 0.9 * big["out_bytes"]
    assert small["fresh_bytes"] < 0.1 * small["out_bytes"]


def test_cache_sizes_read_from_sysfs(tmp_path):
    for i, (level, kind, size, cpus) in enumerate(
        [
            (1, "Data", "48K", "0"),
            (1, "Instruction", "64K", "0"),
            (2, "Unified", "2048K", "0"),
            (3, "Unified", "32M", "0-7"),
        ]
    ):
        index = tmp_path / f"index{i}"
        index.mkdir()
        for name, value in (
            ("level", level),
            ("type", kind),
            ("size", size),
            ("shared_cpu_list", cpus),
        ):
            (index / name).write_text(f"{value}\n")
    caches = memory.cache_sizes(tmp_path)
    assert caches["source"] == str(tmp_path)
    assert [(c["level"], c["bytes"]) for c in caches["levels"]] == [
        (1, 48 * 2**10),
        (2, 2 * 2**20),
        (3, 32 * 2**20),
    ]  # instruction caches hold no data
    assert memory.last_levels(caches) == (2 * 2**20, 32 * 2**20)


def test_cache_sizes_fall_back_to_unknown(tmp_path, monkeypatch):
    def no_sysconf(name):
        raise ValueError(name)

    monkeypatch.setattr(memory.os, "sysconf", no_sysconf)
    caches = memory.cache_sizes(tmp_path / "absent")
    assert caches == {"source": "unknown", "levels": []}
    assert memory.last_levels(caches) == (None, None)
    m = Measurements(summary={}, timing={"machine": {"caches": caches}})
    assert present.table_caches(m, None)[1] == [[None, "unknown", None, None, "unknown"]]


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_encoding_does_its_own_work(name):
    """What each place of action times, selected by where the encoding declares it acts,
    never by name."""
    length, b, d = 16, CFG["batch"], CFG["d_models"][-1]
    h = workloads.heads(CFG, d)
    enc = workloads.encoding_module(name, CFG, d, ENCODING, length, CPU)
    assert enc.params.n_heads == h and enc.params.head_dim == CFG["head_dim"]
    fn = workloads.encoding_workload(enc, CFG, length, CPU)
    if not REGISTRY[name].positional:
        assert fn is None
        return
    with torch.no_grad():
        out = fn()
    positions = torch.arange(length)
    acts_on = REGISTRY[name].acts_on
    if acts_on == "input":
        assert tuple(out.shape) == (length, d)
        assert torch.equal(out, enc.input_encoding(positions))
    elif acts_on == "qk":
        # The same queries and keys as the analysis drew before the registry timed them.
        g = torch.Generator().manual_seed(0)
        q = torch.empty(b, h, length, d // h).uniform_(-1.0, 1.0, generator=g)
        k = torch.empty(b, h, length, d // h).uniform_(-1.0, 1.0, generator=g)
        want = enc.rotate(q, k, positions, positions)
        assert all(torch.equal(a, w) for a, w in zip(out, want))
        assert out[0].shape == out[1].shape == (b, h, length, d // h)
    else:
        assert acts_on == "bias" and enc.quadratic_cost
        assert tuple(out.shape) == (h, length, length)
        assert torch.equal(out, enc.score_bias(positions, positions, CFG["causal"]))


def test_tiny_measurement_has_every_workload_length_and_width():
    rows, tables, quadratic, blocks = workloads.measure(CFG, BUILT_IN, ENCODING, 0, CPU)
    seen = {(r["workload"], r["d_model"], r["length"]) for r in rows}
    assert set(blocks) == seen
    # Every round times every point: at least one block per round, and min_blocks in all.
    assert all(len(b) >= max(CFG["rounds"], CFG["min_blocks"]) for b in blocks.values())
    assert all(r["repeats"] == len(blocks[r["workload"], r["d_model"], r["length"]]) for r in rows)
    timed = [n for n in BUILT_IN if REGISTRY[n].positional]
    assert tables and quadratic
    for d in CFG["d_models"]:
        for n in (1, *CFG["lengths"]):
            assert (ATTENTION, d, n) in seen
            for name in timed:
                capped = name in quadratic and n > CFG["bias_max_len"]
                assert ((name, d, n) in seen) is not capped  # quadratic: up to bias_max_len
    assert not any(r["workload"] not in timed + [ATTENTION] for r in rows)  # NoPE: no work
    assert all(r["median_s"] > 0 for r in rows)
    assert all(r["heads"] == r["d_model"] // CFG["head_dim"] for r in rows)
    table = next(r for r in rows if r["workload"] in tables and r["length"] == 32)
    assert table["out_bytes"] == 4 * 32 * table["d_model"]  # an (L, d) float32 table


def test_rounds_interleave_every_point_in_alternating_directions(monkeypatch):
    """A burst of load falls on all points alike: each round passes over every point before
    the next round times any of them again, forwards then backwards."""
    calls = []

    def fake(fn, warmup, run_time, timer, min_blocks, number=None):
        fn()
        calls.append(run_time)
        return {"times": [1e-6] * min_blocks, "number": 1, "out_bytes": 0, "fresh_bytes": None}

    cfg = {**CFG, "rounds": 3}
    order = []
    monkeypatch.setattr(workloads, "time_blocks", fake)
    real = workloads.attention_workload
    monkeypatch.setattr(
        workloads,
        "attention_workload",
        lambda c, d, n, seed, device: order.append((d, n)) or real(c, d, n, seed, device),
    )
    workloads.measure(cfg, [], ENCODING, 0, CPU)
    plan = [(d, n) for d in CFG["d_models"] for n in (1, *CFG["lengths"])]
    assert order == plan + plan[::-1] + plan
    assert set(calls) == {CFG["min_run_time"] / 3}  # each round times a share


def test_bootstrap_slopes_bracket_the_estimate_and_widen_with_noise():
    rng = np.random.default_rng(0)
    lengths = [256, 512, 1024, 2048]

    def blocks(noise):
        out = {("table", 8, 1): list(1e-6 * (1 + noise * rng.standard_normal(9)))}
        for n in lengths:
            out["table", 8, n] = list(1e-6 + 1e-9 * n * (1 + noise * rng.standard_normal(9)))
        return out

    widths = {}
    for noise in (0.01, 0.3):
        b = blocks(noise)
        rows = [
            {
                "workload": "table",
                "acts_on": "input",
                "d_model": 8,
                "length": n,
                **timing.summarise(t),
            }
            for (_, _, n), t in b.items()
        ]
        fitted = fits.fits(rows, {**CFG, "encoding_fit_min_len": 256})
        (f,) = resample.fit_intervals(fitted, resample.medians(b, 400, 0), 0.95)
        assert f["slope_low"] <= f["slope"] <= f["slope_high"]
        widths[noise] = f["slope_high"] - f["slope_low"]
    assert widths[0.01] < 0.05 < widths[0.3]


def test_log_log_slopes_leave_out_points_without_work():
    work = np.array([[1.0, 2.0, 4.0], [1.0, -1.0, 4.0], [-1.0, -1.0, 4.0]])
    slopes = resample.log_log_slopes([1, 2, 4], work)
    assert slopes[0] == pytest.approx(1.0) and slopes[1] == pytest.approx(1.0)
    assert np.isnan(slopes[2])  # one point left: no slope


def test_a_slope_interval_that_straddles_the_tolerance_is_inconclusive():
    """A noisy table slope (the learned table's 0.71 on a loaded machine) whose interval
    reaches into the tolerance is inconclusive; wholly outside it, a fail; inside, a pass."""

    def verdict(low, high):
        fit = [
            {**f, "slope_low": low, "slope_high": high} if f["workload"] == "table" else f
            for f in fitted_at({8: (low + high) / 2}, {8: 2.0})
        ]
        ev = evidence.evidence(
            fit, d_fitted_at(1.0, 1.0), {("table", 8): at_lengths(0.01)}, ["table"]
        )
        return evaluate(SPEC.claims, ev, CFG, "complexity")[0]

    assert verdict(0.9, 1.1)["verdict"] == "pass"
    claim = verdict(0.6, 0.9)
    assert claim["verdict"] == "inconclusive"
    assert "table d=8 [0.6, 0.9]" in claim["reason"] and "straddles" in claim["reason"]
    assert claim["outcomes"]["table_slope"] == {"table d=8": "inconclusive"}
    assert verdict(0.5, 0.7)["verdict"] == "fail"


def test_compute_and_present_on_a_small_run(one_thread):
    m = cx.compute(context())
    # Every table with a fit is in the evidence, at every width. Whether a cheap table's times
    # rise above the per-call overhead on a loaded machine is timing, not logic: a table may
    # lack a fit.
    fitted = {workloads.label(f["workload"], f["d_model"]) for f in m.summary["fits"]}
    tables = {workloads.label(n, d) for n in m.summary["tables"] for d in RUN_CFG["d_models"]}
    assert set(m.evidence["table_slope"]) == fitted & tables
    assert m.evidence["table_slope"]
    assert set(m.evidence["attention_fit_slope"]) == {f"d={d}" for d in RUN_CFG["d_models"]}
    assert m.evidence["attention_fit_range"] == {"d=16": "256–1024", "d=32": "512–1024"}
    assert list(m.evidence["flop_model_slope"].values()) == m.summary["expected_attention_slopes"]
    assert m.evidence["attention_d_length"] == RUN_CFG["attention_max_len"]
    # The tables' fraction of attention at every length where both were timed, each an
    # interval that holds its estimate, and the worst length among them.
    assert m.evidence["fraction_lengths"] == RUN_CFG["lengths"]
    for name, by_length in m.evidence["table_to_attention"].items():
        assert list(by_length) == [f"L={n}" for n in RUN_CFG["lengths"]], name
        assert all(v["low"] <= v["estimate"] <= v["high"] for v in by_length.values()), name
        worst = max(by_length, key=lambda n: by_length[n]["estimate"])
        assert worst == f"L={m.evidence['worst_fraction_length'][name]}"
    assert m.summary["threads"] == SPEC.resources.threads  # whatever the rule held
    assert m.timing["machine"]["page_bytes"] > 0
    assert "machine" not in m.summary  # machine-specific: timing.json only
    columns, rows = present.table_slopes(m, context())
    assert [(r[0], r[2]) for r in rows] == [
        (f["workload"], f["d_model"]) for f in m.summary["fits"]
    ]
    assert all(len(r) == len(columns) for r in rows)
    columns, rows = present.table_d_slopes(m, context())
    assert columns[-2:] == ["d = 16 (s)", "d = 32 (s)"]
    assert {r[0] for r in rows} >= {ATTENTION, *m.summary["tables"]}
    fig = present.figure_scaling(m, context())
    assert len(fig.axes) == len(RUN_CFG["d_models"])
    for ax, d in zip(fig.axes, RUN_CFG["d_models"]):
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert len(labels) == len({r["workload"] for r in m.rows["timings"] if r["d_model"] == d})
        assert f"d = {d}" in ax.get_title()
    fig = present.figure_memory(m, context())
    top = fig.axes[0]
    # The cache sizes are reference lines (posenc.plotting.reference_line): vertical, grey.
    from posenc.plotting import REFERENCE_COLORS

    cache_lines = [
        ln
        for ln in top.get_lines()
        if ln.get_color() in REFERENCE_COLORS and len(set(ln.get_xdata())) == 1
    ]
    assert len(cache_lines) == len(m.timing["machine"]["caches"]["levels"])
    # The ratio table: every encoding timed at every width, every configured L; a gap only
    # where untimed.
    columns, rows = present.table_ratios(m, context())
    assert columns[3:-1] == [f"L = {n}" for n in RUN_CFG["lengths"]]
    assert columns[-1] == "largest at L"
    timed = {(r["workload"], r["d_model"]) for r in m.rows["timings"]} - {
        (ATTENTION, d) for d in RUN_CFG["d_models"]
    }
    assert {(r[0], r[2]) for r in rows} == timed and len(rows) == len(timed)
    times = {(r["workload"], r["d_model"], r["length"]): r["median_s"] for r in m.rows["timings"]}
    for row in rows:
        for n, value in zip(RUN_CFG["lengths"], row[3:-1]):
            enc, att = times.get((row[0], row[2], n)), times.get((ATTENTION, row[2], n))
            if enc is None or att is None:
                assert value is None
            else:  # the ratio, then its bootstrap interval
                assert re.fullmatch(r"\S+ \[\S+, \S+\]", value), value
                assert float(value.split()[0]) == pytest.approx(enc / att, rel=5e-3)
        assert row[-1] == m.summary["worst_fraction"][f"{row[0]} d={row[2]}"]["length"]
    capped = [r for r in rows if r[0] in m.summary["quadratic"]]
    assert capped and all(r[-2] is None for r in capped)  # beyond bias_max_len
    fig = present.figure_fractions(m, context())
    assert len(fig.axes) == len(RUN_CFG["d_models"])
    for ax in fig.axes:
        bound = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert [ln.get_ydata()[0] for ln in bound] == [RUN_CFG["thresholds"]["pe_max_fraction"]]
        labels = {t.get_text() for t in ax.get_legend().get_texts()}
        assert labels == {r[0] for r in rows}
    # One step per encoding and width, in the memory table with the cache ratios.
    columns, rows = present.table_memory(m, context())
    assert len(rows) == len(m.summary["steps"]) == len(timed)
    assert all(len(r) == len(columns) for r in rows)


def test_claims_fail_on_a_real_run_when_they_cannot_hold(one_thread):
    """Thresholds no timing can meet: every claim must fail, not pass, go n/a or stay
    inconclusive (exponents of 10, which no interval can reach)."""
    cfg = {
        **RUN_CFG,
        "thresholds": {
            **RUN_CFG["thresholds"],
            "pe_max_fraction": 1e-12,
            "attention_slope": 10.0,
            "attention_slope_tol": 1e-9,
            "d_slope": 10.0,
            "d_slope_tol": 1e-9,
        },
    }
    m = cx.compute(context(cfg))
    claims = evaluate(SPEC.claims, m.evidence, cfg, "complexity")
    assert [c["verdict"] for c in claims] == ["fail"] * 4


class WideSinusoidal(InputEncoding):
    """A table from outside the registry file: sinusoidal with another base."""

    def input_encoding(self, positions):
        return sinusoidal_table(positions, self.params.d_model, 500.0, self.params.angle_dtype)


class DistanceBias(BiasEncoding):
    """A bias from outside the registry file: -|i - j| / 10 on every head."""

    def score_bias(self, q_pos, k_pos, causal):
        rel = (q_pos[:, None] - k_pos[None, :]).abs().float() / 10  # (Lq, Lk)
        return -rel.expand(self.params.n_heads, -1, -1).contiguous()


@pytest.fixture
def outside_encodings(registered):
    names = ["test_wide_table", "test_distance_bias"]
    return registered(
        *(
            EncodingSpec(
                name,
                acts_on,
                module,
                relative=acts_on == "bias",
                learned=False,
                citation="a test's toy",
                summary="A test's toy.",
            )
            for name, module, acts_on in zip(
                names, (WideSinusoidal, DistanceBias), ("input", "bias")
            )
        )
    )


def test_encodings_registered_from_outside_flow_through(outside_encodings, one_thread):
    table, bias = outside_encodings
    ctx = context(encodings=[*BUILT_IN, *outside_encodings])
    m = cx.compute(ctx)
    lengths = {r["length"] for r in m.rows["timings"] if r["workload"] == bias}
    assert max(lengths) <= RUN_CFG["bias_max_len"]  # quadratic, like the registry's biases
    assert bias in m.summary["quadratic"] and table in m.summary["tables"]
    for d in RUN_CFG["d_models"]:
        assert workloads.label(table, d) in m.evidence["table_slope"]
        assert workloads.label(table, d) in m.evidence["table_to_attention"]
    assert f"{table} L={max(RUN_CFG['lengths'])}" in m.evidence["table_d_slope"]
    _, rows = present.table_slopes(m, ctx)
    assert {table, bias} <= {r[0] for r in rows}
    _, rows = present.table_ratios(m, ctx)
    assert {table, bias} <= {r[0] for r in rows}
    assert {table, bias} <= {r["workload"] for r in m.rows["ratios"]}
    assert {table, bias} <= {s["workload"] for s in m.summary["steps"]}
    fig = present.figure_scaling(m, ctx)
    labels = " ".join(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert table in labels and bias in labels


def test_config_checks_name_their_keys():
    good = {"complexity": CFG}
    assert check_lengths(good) == []
    assert check_lengths({}) == []
    bad = {
        "complexity": {
            **CFG,
            "lengths": [256, 64, 128],
            "d_models": [8, 10],
            "encoding_fit_min_len": 512,
        }
    }
    problems = check_lengths(bad)
    for key in ("complexity.lengths", "complexity.d_models", "complexity.encoding_fit_min_len"):
        assert any(p.startswith(f"config key {key} ") for p in problems), key
    odd = check_lengths({"complexity": {**CFG, "head_dim": 3, "d_models": [6]}})
    assert any(p.startswith("config key complexity.head_dim ") for p in odd)
    # At d = 16 the attention window (L >= 32) holds two lengths up to 64, at d = 32 one.
    few = check_lengths({"complexity": {**CFG, "d_models": [8, 16, 32]}})
    assert [p for p in few if "attention_fit_min_len_per_d" in p] and all(
        "d = 32" in p for p in few
    )


def test_shipped_configs_pass_the_checks():
    base = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    assert check_lengths(base) == []
    # The other configs override some of the section's keys (Snakemake merges them in).
    for name in ("test.yaml", "gpu.yaml"):
        over = yaml.safe_load((ROOT / "config" / name).read_text())
        assert check_lengths({"complexity": {**base["complexity"], **over["complexity"]}}) == []


def test_the_fit_windows_are_fixed_in_the_config_with_their_reason():
    """Each window is a number in the config, with the comment that says why, above it."""
    text = (ROOT / "config/config.yaml").read_text()
    section = text[text.index("\ncomplexity:") :]
    for key in ("attention_fit_min_len_per_d", "encoding_fit_min_len"):
        before = section[: section.index(f"  {key}:")].splitlines()
        assert before[-1].lstrip().startswith("#"), f"complexity.{key} has no reason above it"


def test_spec_lists_every_threshold_its_claims_use():
    used = {c.threshold for claim in SPEC.claims for c in claim.checks if c.threshold}
    assert used <= set(CFG["thresholds"])
    assert [c.id for c in SPEC.claims] == IDS


def rule_blocks(dry_run_output: str) -> dict[str, str]:
    """Each job's block of ``snakemake --dry-run`` output, by rule name."""
    blocks = re.split(r"\n(?=(?:local)?rule \w+:)", dry_run_output)
    return {m.group(1): b for b in blocks if (m := re.match(r"(?:local)?rule (\w+):", b))}


def test_the_timing_job_runs_alone(tmp_path):
    """An exclusive spec's job holds every core the workflow has, so the local scheduler runs
    nothing beside it, and asks SLURM for a node of its own; other analyses hold their own
    thread count."""
    assert SPEC.resources.exclusive and SPEC.resources.threads == 1
    work = copy_workflow(tmp_path / "wf")
    targets = ["results/complexity/claims.json", "results/equivariance/claims.json"]
    for cores in (2, 3):
        proc = snakemake(
            work,
            "--dry-run",
            "--cores",
            str(cores),
            "--configfile",
            "config/test.yaml",
            "--",
            *targets,
        )
        blocks = rule_blocks(proc.stdout)
        assert re.search(rf"^\s+threads: {cores}$", blocks["complexity"], re.M), blocks
        assert "slurm_extra=--exclusive" in blocks["complexity"]
        assert not re.search(r"^\s+threads: [2-9]", blocks["equivariance"], re.M)
        assert "slurm_extra" not in blocks["equivariance"]


def test_rounds_that_disagree_widen_the_interval():
    """Three rounds whose blocks agree within each round but not between them (a workload
    rebuilt in each round may sit differently in memory): resampling the rounds too gives an
    interval that spans them, where one over blocks alone would be narrow."""
    times = [1.0] * 10 + [1.3] * 10 + [1.6] * 10
    blocks = {("table", 8, 64): times}
    flat = resample.medians(blocks, 400, 0)[("table", 8, 64)].interval(0.95)
    nested = resample.medians(blocks, 400, 0, {("table", 8, 64): [10, 10, 10]})
    both = nested[("table", 8, 64)].interval(0.95)
    assert flat["high"] - flat["low"] < both["high"] - both["low"]
    assert both["low"] <= 1.0 + 1e-9 and both["high"] >= 1.6 - 1e-9
    again = resample.medians(blocks, 400, 0, {("table", 8, 64): [10, 10, 10]})
    assert (again[("table", 8, 64)].draws == nested[("table", 8, 64)].draws).all()
