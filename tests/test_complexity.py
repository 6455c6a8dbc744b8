"""The complexity analysis: the fits on synthetic timings, each encoding's timed work, the
verdicts the claims give, a tiny real run, and encodings registered from outside."""

import logging
import time
from pathlib import Path

import matplotlib
import pytest
import torch
import yaml

from analyses.complexity import compute as cx
from analyses.complexity import present
from analyses.complexity.spec import SPEC, check_lengths
from posenc.analysis import Context
from posenc.claims import evaluate
from posenc.encodings import (
    REGISTRY,
    BiasEncoding,
    EncodingSpec,
    InputEncoding,
    QKEncoding,
    register,
    sinusoidal_table,
)

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")
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
BUILT_IN = list(REGISTRY)  # before any test registers its own
IDS = ["complexity.pe_linear", "complexity.attention_quadratic"]
# For runs whose fits must exist: every workload's time well above its per-call cost t0 over
# its fit range (even a table, at 32 K elements), and enough warm-up that the time at L = 1
# is not the first call's.
RUN_CFG = {
    **CFG,
    "d_model": 32,
    "lengths": [256, 512, 1024],
    "attention_max_len": 1024,
    "bias_max_len": 512,
    "attention_fit_min_len": 512,
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
    slope, intercept = cx.log_log_fit(lengths, [3e-6 * n**1.7 for n in lengths])
    assert slope == pytest.approx(1.7)
    assert intercept == pytest.approx(torch.log(torch.tensor(3e-6)).item())


def test_fits_remove_the_per_call_overhead():
    cfg = {**CFG, "attention_fit_min_len": 512, "encoding_fit_min_len": 512}
    rows = synthetic("table", "input", 2e-5, 1e-9, 1.0) + synthetic(
        cx.ATTENTION, "layer", 5e-5, 1e-10, 2.0
    )
    by = {f["workload"]: f for f in cx.fits(rows, cfg)}
    assert by["table"]["slope"] == pytest.approx(1.0, abs=1e-2)  # t(1) holds one element
    assert by[cx.ATTENTION]["slope"] == pytest.approx(2.0, abs=1e-2)
    assert by["table"]["slope_raw"] < 0.9  # the overhead flattens the raw times
    assert by["table"]["overhead_s"] == pytest.approx(2e-5 + 1e-9)
    assert (by["table"]["fit_from"], by["table"]["fit_to"]) == (512, 4096)


def test_flop_model_slope():
    assert cx.flop_model_slope(128, 64) == pytest.approx(1.5)
    assert cx.flop_model_slope(10**9, 64) == pytest.approx(2.0, abs=1e-6)


def verdicts_with(pe_slope: float, att_slope: float, ratio: float) -> list[dict]:
    fitted = [
        {"workload": "table", "slope": pe_slope, "fit_from": 512, "fit_to": 4096},
        {"workload": cx.ATTENTION, "slope": att_slope, "fit_from": 512, "fit_to": 4096},
    ]
    evidence = cx.evidence(fitted, {"table": ratio}, ["table"], CFG["d_model"])
    return evaluate(SPEC.claims, evidence, CFG, "complexity")


@pytest.mark.parametrize(
    "pe, att, ratio, verdicts",
    [
        (1.05, 1.95, 0.01, ("pass", "pass")),
        (1.5, 1.95, 0.01, ("fail", "pass")),
        (0.7, 1.95, 0.01, ("fail", "pass")),  # too flat is as wrong as too steep
        (1.0, 1.5, 0.01, ("pass", "fail")),
        (1.0, 2.3, 0.01, ("pass", "fail")),
        (1.0, 2.0, 0.5, ("fail", "pass")),  # linear, but not negligible next to attention
    ],
)
def test_verdicts_follow_the_thresholds(pe, att, ratio, verdicts):
    claims = verdicts_with(pe, att, ratio)
    assert tuple(c["verdict"] for c in claims) == verdicts
    assert [c["id"] for c in claims] == IDS
    # The ledger carries the raw slopes (compared with the config's exponents), not deviations.
    assert claims[0]["measured"]["log-log slope"] == {"table": pe}
    assert claims[1]["measured"]["attention log-log slope"] == att
    assert claims[1]["measured"]["attention fit range"] == "512–4096"


def test_claims_are_na_without_their_workloads():
    """No table encoding and no attention fit: both claims n/a, with a generated reason."""
    evidence = cx.evidence([], {}, [], CFG["d_model"])
    claims = evaluate(SPEC.claims, evidence, CFG, "complexity")
    assert [c["verdict"] for c in claims] == ["n/a", "n/a"]
    assert all(c["reason"] for c in claims)


def test_a_table_not_timed_where_attention_was_fails():
    fitted = [
        {"workload": "table", "slope": 1.0, "fit_from": 512, "fit_to": 4096},
        {"workload": cx.ATTENTION, "slope": 2.0, "fit_from": 512, "fit_to": 4096},
    ]
    evidence = cx.evidence(fitted, {}, ["table"], CFG["d_model"])
    assert evaluate(SPEC.claims, evidence, CFG, "complexity")[0]["verdict"] == "fail"


def test_ratios_at_every_length_with_gaps_where_untimed():
    """Each encoding over attention at the same L; None where either was not timed there."""
    rows = (
        [
            {"workload": cx.ATTENTION, "acts_on": "layer", "length": n, "median_s": t}
            for n, t in ((1, 1.0), (16, 2.0), (32, 8.0))
        ]
        + [
            {"workload": "table", "acts_on": "input", "length": n, "median_s": t}
            for n, t in ((1, 0.5), (16, 0.5), (32, 1.0), (64, 2.0))
        ]
        + [
            {"workload": "bias", "acts_on": "bias", "length": n, "median_s": t}
            for n, t in ((1, 0.25), (16, 1.0))
        ]
    )
    got = {(r["workload"], r["length"]): r for r in cx.ratios(rows, [16, 32, 64])}
    assert len(got) == 6  # two encodings x three lengths, no attention row
    assert got[("table", 16)]["ratio"] == 0.25 and got[("table", 32)]["ratio"] == 0.125
    assert got[("table", 64)]["ratio"] is None  # attention not timed at 64
    assert got[("table", 64)]["encoding_s"] == 2.0 and got[("table", 64)]["attention_s"] is None
    assert got[("bias", 16)]["ratio"] == 0.5
    assert got[("bias", 32)]["ratio"] is None and got[("bias", 32)]["encoding_s"] is None
    assert got[("bias", 32)]["acts_on"] == "bias"


def test_median_time_measures_a_known_sleep():
    timer, name = cx.clock(torch.device("cuda"))  # wall time: a sleep uses no CPU
    assert name == "wall time"
    t = cx.median_time(lambda: time.sleep(0.002), warmup=1, min_run_time=0.02, timer=timer)
    assert 0.0015 < t["median_s"] < 0.05


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_encoding_does_its_own_work(name):
    """What each place of action times, selected by base class, never by name."""
    length, b, h, d = 16, CFG["batch"], CFG["n_heads"], CFG["d_model"]
    enc = cx.encoding_module(name, CFG, ENCODING, length, CPU)
    fn = cx.encoding_workload(enc, CFG, length, CPU)
    if not REGISTRY[name].positional:
        assert fn is None
        return
    with torch.no_grad():
        out = fn()
    positions = torch.arange(length)
    if isinstance(enc, InputEncoding):
        assert tuple(out.shape) == (length, d)
        assert torch.equal(out, enc.input_encoding(positions))
    elif isinstance(enc, QKEncoding):
        # The same queries and keys as the analysis drew before the registry timed them.
        g = torch.Generator().manual_seed(0)
        q = torch.randn(b, h, length, d // h, generator=g)
        k = torch.randn(b, h, length, d // h, generator=g)
        want = enc.rotate(q, k, positions, positions)
        assert all(torch.equal(a, w) for a, w in zip(out, want))
        assert out[0].shape == out[1].shape == (b, h, length, d // h)
    else:
        assert isinstance(enc, BiasEncoding) and enc.quadratic_cost
        assert tuple(out.shape) == (h, length, length)
        assert torch.equal(out, enc.score_bias(positions, positions, CFG["causal"]))


def test_tiny_measurement_has_every_workload_and_length():
    rows, tables, quadratic = cx.measure(CFG, BUILT_IN, ENCODING, 0, CPU)
    seen = {(r["workload"], r["length"]) for r in rows}
    timed = [n for n in BUILT_IN if REGISTRY[n].positional]
    assert tables and quadratic
    for n in (1, *CFG["lengths"]):
        assert (cx.ATTENTION, n) in seen
        for name in timed:
            capped = name in quadratic and n > CFG["bias_max_len"]
            assert ((name, n) in seen) is not capped  # quadratic ones capped at bias_max_len
    assert not any(r["workload"] not in timed + [cx.ATTENTION] for r in rows)  # NoPE: no work
    assert all(r["median_s"] > 0 for r in rows)


def test_compute_and_present_on_a_small_run(one_thread):
    m = cx.compute(context())
    # Every table with a fit is in the evidence. Whether a cheap table's times rise above the
    # per-call overhead on a loaded machine is timing, not logic: a table may lack a fit.
    fitted = {f["workload"] for f in m.summary["fits"]}
    assert set(m.evidence["table_slope"]) == fitted & set(m.summary["tables"])
    assert m.evidence["table_slope"]
    assert m.evidence["attention_fit_slope"] is not None
    assert m.evidence["flop_model_slope"] == m.summary["expected_attention_slope"]
    assert m.summary["ratio_len"] == RUN_CFG["attention_max_len"]
    columns, rows = present.table_slopes(m, context())
    assert [r[0] for r in rows] == [f["workload"] for f in m.summary["fits"]]
    assert all(len(r) == len(columns) for r in rows)
    fig = present.figure_scaling(m, context())
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(labels) == len({r["workload"] for r in m.rows["timings"]})
    # The ratio table: every encoding timed, every configured L; a gap only where untimed.
    columns, rows = present.table_ratios(m, context())
    assert columns[2:] == [f"L = {n}" for n in RUN_CFG["lengths"]]
    timed = {r["workload"] for r in m.rows["timings"]} - {cx.ATTENTION}
    assert {r[0] for r in rows} == timed and len(rows) == len(timed)
    times = {(r["workload"], r["length"]): r["median_s"] for r in m.rows["timings"]}
    for row in rows:
        for n, value in zip(RUN_CFG["lengths"], row[2:]):
            if (row[0], n) in times and (cx.ATTENTION, n) in times:
                assert value == times[(row[0], n)] / times[(cx.ATTENTION, n)]
            else:
                assert value is None
    capped = [r for r in rows if r[0] in m.summary["quadratic"]]
    assert capped and all(r[-1] is None for r in capped)  # beyond bias_max_len
    # The claim's ratio is the table's last timed column.
    for name, value in m.summary["pe_to_attention"].items():
        assert m.summary["ratios"][name][m.summary["ratio_len"]] == value


def test_claims_fail_on_a_real_run_when_they_cannot_hold(one_thread):
    """Thresholds no timing can meet: both claims must fail, not pass or go n/a."""
    cfg = {
        **RUN_CFG,
        "thresholds": {
            **RUN_CFG["thresholds"],
            "pe_max_fraction": 1e-12,
            "attention_slope_tol": 1e-9,
        },
    }
    m = cx.compute(context(cfg))
    claims = evaluate(SPEC.claims, m.evidence, cfg, "complexity")
    assert [c["verdict"] for c in claims] == ["fail", "fail"]


class WideSinusoidal(InputEncoding):
    """A table from outside the registry file: sinusoidal with another base."""

    def input_encoding(self, positions):
        return sinusoidal_table(positions, self.params.d_model, 500.0, self.params.angle_dtype)


class DistanceBias(BiasEncoding):
    """A bias from outside the registry file: -|i - j| / 10 on every head."""

    def score_bias(self, q_pos, k_pos, causal):
        rel = (q_pos[:, None] - k_pos[None, :]).abs().float() / 10  # (Lq, Lk)
        return -rel.expand(self.params.n_heads, -1, -1)


@pytest.fixture
def outside_encodings():
    names = ["test_wide_table", "test_distance_bias"]
    for name, module, acts_on in zip(names, (WideSinusoidal, DistanceBias), ("input", "bias")):
        register(
            EncodingSpec(
                name,
                acts_on,
                module,
                relative=acts_on == "bias",
                learned=False,
                citation="a test's toy",
                summary="A test's toy.",
            )
        )
    yield names
    for name in names:
        REGISTRY.pop(name)


def test_encodings_registered_from_outside_flow_through(outside_encodings, one_thread):
    table, bias = outside_encodings
    ctx = context(encodings=[*BUILT_IN, *outside_encodings])
    m = cx.compute(ctx)
    lengths = {r["length"] for r in m.rows["timings"] if r["workload"] == bias}
    assert max(lengths) <= RUN_CFG["bias_max_len"]  # quadratic, like the registry's biases
    assert bias in m.summary["quadratic"] and table in m.summary["tables"]
    assert table in m.evidence["table_slope"]
    assert table in m.evidence["table_to_attention"]
    _, rows = present.table_slopes(m, ctx)
    assert {table, bias} <= {r[0] for r in rows}
    _, rows = present.table_ratios(m, ctx)
    assert {table, bias} <= {r[0] for r in rows}
    assert {table, bias} <= {r["workload"] for r in m.rows["ratios"]}
    fig = present.figure_scaling(m, ctx)
    labels = " ".join(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert table in labels and bias in labels


def test_config_checks_name_their_keys():
    good = {"complexity": CFG}
    assert check_lengths(good) == []
    assert check_lengths({}) == []
    bad = {
        "complexity": {**CFG, "lengths": [256, 64, 128], "n_heads": 3, "encoding_fit_min_len": 512}
    }
    problems = check_lengths(bad)
    for key in ("complexity.lengths", "complexity.d_model", "complexity.encoding_fit_min_len"):
        assert any(p.startswith(f"config key {key} ") for p in problems), key
    few = {"complexity": {**CFG, "attention_max_len": 32}}
    assert any("complexity.attention_fit_min_len" in p for p in check_lengths(few))


def test_shipped_configs_pass_the_checks():
    base = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    test = yaml.safe_load((ROOT / "config/test.yaml").read_text())
    assert check_lengths(base) == []
    # The test config overrides some of the section's keys (Snakemake merges it into the base).
    assert check_lengths({"complexity": {**base["complexity"], **test["complexity"]}}) == []


def test_spec_lists_every_threshold_its_claims_use():
    used = {c.threshold for claim in SPEC.claims for c in claim.checks if c.threshold}
    assert used <= set(CFG["thresholds"])
    assert [c.id for c in SPEC.claims] == IDS
