"""The similarity analysis against references written here: the seed's own sinusoid, closed
forms of each kernel built with loops, brute-force property measures, the claims evaluated on
its evidence (and failing when the numbers do not hold), and an encoding registered from
outside flowing through compute, figures and tables."""

import cmath
import copy
import itertools
import logging
import math
from pathlib import Path

import pytest
import torch

from analyses.similarity import compute as sm
from analyses.similarity import present
from analyses.similarity.spec import SPEC
from posenc.analysis import Context
from posenc.claims import evaluate
from posenc.encodings import (
    REGISTRY,
    EncodingParams,
    EncodingSpec,
    QKEncoding,
    Rotary,
    Sinusoidal,
    build,
    inverse_frequencies,
    register,
    sinusoidal_table,
)

CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parents[1]
ENCODING_CFG = {"base": 10000.0, "rope_base": 10000.0, "t5_num_buckets": 8, "t5_max_distance": 16}
IDS = {
    "similarity.seed_values",
    "similarity.monotone_near",
    "similarity.translation_invariance",
    "similarity.rope_long_term_decay",
}


def tiny_cfg(**overrides):
    cfg = {
        "seed": {
            "d_model": 64,
            "n_positions": 100,
            "base": 10000,
            "position": 10,
            "others": [11, 20, 60],
            "expected": [0.966, 0.658, 0.490],
        },
        "dims": [16, 64],
        "bases": [10000],
        "max_offset": 64,
        "window": 6,
        "kernels": {"n_positions": 16, "d_model": 16, "n_heads": 2, "learned_init_std": 0.5},
        "rope_decay": {"dims": [64], "max_distance": 64},
        "thresholds": {
            "seed_abs_tol": 5e-4,
            "monotone_half_periods": 1.0,
            "translation_ulps": 64,
            "decay_max_spearman": 0.0,
            "decay_max_far_ratio": 0.5,
        },
    }
    return {**cfg, **overrides}


def context(cfg=None, encodings=None) -> Context:
    return Context(
        cfg=cfg or tiny_cfg(),
        seed=0,
        encodings=list(REGISTRY) if encodings is None else encodings,
        encoding=ENCODING_CFG,
        device=CPU,
        log=logging.getLogger("test_similarity"),
    )


def run(ctx: Context) -> tuple:
    m = sm.compute(ctx)
    return m, {c["id"]: c for c in evaluate(SPEC.claims, m.evidence, ctx.cfg, SPEC.id)}


def naive_cosine_kernel(n: int, d: int, base: float) -> torch.Tensor:
    """(2/d) sum_i cos(omega_i (p - q)), one entry at a time."""
    K = torch.empty(n, n, dtype=torch.float64)
    for p, q in itertools.product(range(n), repeat=2):
        K[p, q] = sum(math.cos((p - q) * base ** (-2 * i / d)) for i in range(d // 2)) * 2 / d
    return K


def test_seed_values_match_the_snippets_own_sinusoid():
    pos = torch.arange(100).unsqueeze(1)
    div = torch.exp(torch.arange(0, 64, 2) * (-math.log(10000.0) / 64))
    pe = torch.zeros(100, 64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    want = [
        torch.nn.functional.cosine_similarity(pe[10], pe[j], dim=0).item() for j in (11, 20, 60)
    ]
    m = sm.compute(context(encodings=["sinusoidal"]))
    got = [p["similarity"] for p in m.summary["seed_pairs"]]
    assert got == pytest.approx(want, abs=1e-6)
    assert [round(v, 3) for v in got] == [0.966, 0.658, 0.490]
    assert m.evidence["seed_similarity"] == got
    assert m.evidence["printed_values"] == [0.966, 0.658, 0.490]


@pytest.mark.parametrize("d, base", [(8, 10000.0), (16, 100.0), (6, 37.0)])
def test_sinusoidal_kernel_is_the_closed_form(d, base):
    K = sm.kernel("sinusoidal", 12, d, 1, {**ENCODING_CFG, "base": base}, 0.5, 0, CPU)
    torch.testing.assert_close(K, naive_cosine_kernel(12, d, base), rtol=0, atol=1e-12)


@pytest.mark.parametrize("head_dim, base", [(8, 10000.0), (4, 100.0)])
def test_rope_kernel_is_trace_of_naive_rotations(head_dim, base):
    """tr(R_p^T R_q)/d with R_p built block by block (pairs (2i, 2i+1), angle p theta_i)."""
    n = 10

    def rotation(p):
        R = torch.zeros(head_dim, head_dim, dtype=torch.float64)
        for i in range(head_dim // 2):
            a = p * base ** (-2 * i / head_dim)
            R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
                [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], dtype=torch.float64
            )
        return R

    want = torch.tensor(
        [
            [torch.trace(rotation(p).T @ rotation(q)).item() / head_dim for q in range(n)]
            for p in range(n)
        ],
        dtype=torch.float64,
    )
    K = sm.kernel("rope", n, 2 * head_dim, 2, {**ENCODING_CFG, "rope_base": base}, 0.5, 0, CPU)
    torch.testing.assert_close(K, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(K, naive_cosine_kernel(n, head_dim, base), rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_heads", [2, 4, 8])
def test_alibi_kernel_is_mean_of_exp_distance_penalties(n_heads):
    n = 9
    slopes = [2 ** (-8 * (h + 1) / n_heads) for h in range(n_heads)]  # powers of two only
    want = torch.tensor(
        [
            [sum(math.exp(-m * abs(p - q)) for m in slopes) / n_heads for q in range(n)]
            for p in range(n)
        ],
        dtype=torch.float64,
    )
    K = sm.kernel("alibi", n, 4 * n_heads, n_heads, ENCODING_CFG, 0.5, 0, CPU)
    torch.testing.assert_close(K, want, rtol=1e-7, atol=0)  # the registry's bias is float32


def test_none_kernel_is_constant_and_learned_is_not_structured():
    assert torch.equal(
        sm.kernel("none", 5, 8, 2, ENCODING_CFG, 0.5, 0, CPU), torch.ones(5, 5, dtype=torch.float64)
    )
    K = sm.kernel("learned", 16, 8, 2, ENCODING_CFG, 0.5, 0, CPU)
    assert sm.translation_deviation(K) > 0.1


def test_monotone_range_on_hand_made_profiles():
    nan = float("nan")
    assert sm.monotone_range(torch.tensor([[5.0, 4.0, 3.0, 3.5, 1.0]])) == 2
    assert sm.monotone_range(torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0]])) == 4
    assert sm.monotone_range(torch.tensor([[5.0, 5.0, 3.0]])) == 0  # ties are not strict
    # A short row (NaN past its end) never limits the range by its missing entries.
    rows = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.5], [3.0, 2.0, nan, nan, nan]])
    assert sm.monotone_range(rows) == 4
    rows = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.5], [3.0, 4.0, nan, nan, nan]])
    assert sm.monotone_range(rows) == 0


def test_concordance_against_brute_force():
    g = torch.Generator().manual_seed(0)
    K = torch.rand(9, 9, generator=g, dtype=torch.float64)
    window = 4
    F = sm.offset_profiles(K)
    hits = total = 0
    for p in range(9 - window):
        for k1, k2 in itertools.combinations(range(window + 1), 2):
            hits += K[p, p + k1] > K[p, p + k2]
            total += 1
    assert sm.concordance(F, window) == pytest.approx(float(hits) / total)


def test_translation_and_symmetry_deviation():
    n = 7
    toeplitz = torch.tensor(
        [[math.exp(-0.3 * (q - p)) for q in range(n)] for p in range(n)], dtype=torch.float64
    )
    assert sm.translation_deviation(toeplitz) == 0.0
    assert sm.symmetry_deviation(toeplitz) > 0  # exp(-0.3 (q - p)) is not symmetric
    bumped = toeplitz.clone()
    bumped[2, 4] += 0.25
    assert sm.translation_deviation(bumped) == pytest.approx(0.25)
    sym = toeplitz + toeplitz.T
    assert sm.symmetry_deviation(sym) == 0.0


@pytest.mark.parametrize("d", [8, 32])
def test_relative_upper_bound_against_double_loop(d):
    base, R = 10000.0, 20
    theta = [base ** (-2 * i / d) for i in range(d // 2)]
    want = []
    for r in range(R + 1):
        partial = [abs(sum(cmath.exp(1j * r * t) for t in theta[:j])) for j in range(1, d // 2 + 1)]
        want.append(sum(partial) / (d // 2))
    # The frequencies as RoPE's module gives them, one head of width d.
    module = Rotary(EncodingParams(d_model=d, n_heads=1, rope_base=base))
    got = sm.relative_upper_bound(module.frequencies(), R, CPU)
    torch.testing.assert_close(got, torch.tensor(want, dtype=torch.float64), rtol=1e-12, atol=0)
    assert got[0].item() == pytest.approx((d // 2 + 1) / 2)  # S_j(0) = j


def test_spearman_against_textbook_formula():
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(30, generator=g), torch.rand(30, generator=g)
    rx = x.argsort().argsort().double()
    ry = y.argsort().argsort().double()
    n = 30
    want = 1 - 6 * ((rx - ry) ** 2).sum().item() / (n * (n * n - 1))
    assert sm.spearman(x, y) == pytest.approx(want)


def test_near_window_is_half_a_period_of_the_fastest_wave():
    omega = sm.fastest_frequency([(64, 10000.0), (16, 100.0)], [])
    assert omega == 1.0  # omega_0 = base^0 on every ladder
    assert sm.near_window(omega, 1.0) == 3  # floor(pi)
    assert sm.near_window(omega, 2.0) == 6
    assert sm.near_window(0.5, 1.0) == 6  # a slower fastest wave widens the window
    # An encoding's own waves count: a module with a faster wave narrows the window.
    fast = Sinusoidal(EncodingParams(d_model=8, base=10000.0))
    assert sm.fastest_frequency([(8, 10000.0)], [fast]) == 1.0


@pytest.mark.parametrize("h, omega", [(1.0, 1.0), (2.0, 1.0), (1.0, 0.3), (3.7, 0.9)])
def test_reach_beyond_h_half_periods_means_monotone_over_the_near_window(h, omega):
    """The claim's evidence (reach > h) says exactly what the near window says
    (monotone range >= floor(h pi / omega)), for every integer range."""
    window = sm.near_window(omega, h)
    for monotone in range(0, 60):
        assert (sm.reach(monotone, omega) > h) == (monotone >= window), monotone


def test_compute_tiny_all_claims_pass_and_is_deterministic():
    first, claims = run(context())
    assert set(claims) == IDS
    assert all(c["verdict"] == "pass" for c in claims.values()), claims
    again = sm.compute(context())
    assert again.rows["kernel_properties"] == first.rows["kernel_properties"]
    assert again.rows["offset_profiles"] == first.rows["offset_profiles"]
    assert again.evidence == first.evidence


def test_claims_fail_when_the_numbers_do_not_hold():
    cfg = tiny_cfg()
    cfg["seed"] = {**cfg["seed"], "expected": [0.9, 0.658, 0.490]}
    cfg["thresholds"] = {
        **cfg["thresholds"],
        "monotone_half_periods": 20.0,
        "decay_max_far_ratio": 0.01,
    }
    _, claims = run(context(cfg))
    verdicts = {i: c["verdict"] for i, c in claims.items()}
    assert verdicts["similarity.seed_values"] == "fail"
    assert verdicts["similarity.monotone_near"] == "fail"  # 62 offsets is far short of 20 pi
    assert verdicts["similarity.rope_long_term_decay"] == "fail"
    assert verdicts["similarity.translation_invariance"] == "pass"


def test_translation_claim_fails_under_an_impossible_tolerance():
    cfg = tiny_cfg()
    cfg["thresholds"] = {**cfg["thresholds"], "translation_ulps": 1e-6}
    m, claims = run(context(cfg, ["sinusoidal", "alibi"]))
    spread = m.evidence["translation_spread"]["sinusoidal"]
    assert spread > 1e-6 * m.evidence["eps_float64_times_N"]  # rounding, not exactly 0
    assert claims["similarity.translation_invariance"]["verdict"] == "fail"
    assert "1e-06" in claims["similarity.translation_invariance"]["expected"]


def test_translation_claim_is_not_applicable_without_fixed_or_relative_encodings():
    _, claims = run(context(encodings=["learned"]))
    assert claims["similarity.translation_invariance"]["verdict"] == "n/a"
    assert claims["similarity.monotone_near"]["verdict"] == "pass"  # the sweep still counts
    assert claims["similarity.rope_long_term_decay"]["verdict"] == "n/a"  # no rotary encoding
    assert claims["similarity.rope_long_term_decay"]["reason"]


def test_selection_follows_the_registry():
    m = sm.compute(context())
    positional = [e for e in REGISTRY if REGISTRY[e].positional]
    assert set(m.evidence["fixed"]) == {e for e in positional if not REGISTRY[e].learned}
    assert set(m.evidence["invariant"]) == {
        e for e in positional if REGISTRY[e].relative or not REGISTRY[e].learned
    }
    params = EncodingParams(d_model=16, n_heads=2, **ENCODING_CFG)
    assert m.evidence["rotary"] == [
        e
        for e in REGISTRY
        if isinstance(build(e, params), QKEncoding) and build(e, params).frequencies() is not None
    ]
    assert m.evidence["rotary"]  # the built-in RoPE is one


class _ShortSinusoidal(Sinusoidal):
    """Vaswani et al.'s table with base 500: a sinusoidal encoding not in the registry file."""

    def input_encoding(self, positions):
        p = self.params
        return sinusoidal_table(positions, p.d_model, 500.0, p.angle_dtype)

    def frequencies(self):
        return inverse_frequencies(self.params.d_model, 500.0)


class _ShortRotary(Rotary):
    """RoPE with base 500."""

    def __init__(self, params):
        super().__init__(params)
        self.base = 500.0


@pytest.fixture
def toys():
    names = ("toy_sim_table", "toy_sim_rotary")
    register(
        EncodingSpec(
            names[0],
            "input",
            _ShortSinusoidal,
            relative=False,
            learned=False,
            citation="a test's toy",
            summary="Sinusoidal with base 500.",
        )
    )
    register(
        EncodingSpec(
            names[1],
            "qk",
            _ShortRotary,
            relative=True,
            learned=False,
            citation="a test's toy",
            summary="RoPE with base 500.",
        )
    )
    yield names
    for name in names:
        REGISTRY.pop(name, None)


def test_an_encoding_registered_from_outside_flows_through(toys):
    import matplotlib

    matplotlib.use("Agg")
    table, rotary = toys
    ctx = context(encodings=["sinusoidal", "rope", *toys])
    m, claims = run(ctx)
    for name in toys:
        assert f"{name} kernel" in m.evidence["monotone_reach"]
        assert name in m.evidence["translation_spread"]
        assert name in {r["encoding"] for r in m.rows["kernel_properties"]}
    assert f"{rotary} d=64" in m.evidence["decay_spearman"]
    assert rotary in m.summary["long_term_decay"]
    assert all(c["verdict"] == "pass" for c in claims.values()), claims

    titles = {ax.get_title() for ax in present.figure_kernels(m, ctx).axes}
    assert set(toys) <= titles
    decay_titles = " ".join(ax.get_title() for ax in present.figure_long_term_decay(m, ctx).axes)
    assert rotary in decay_titles
    _, rows = present.table_properties(m, ctx)
    assert set(toys) <= {r[0] for r in rows}
    _, rows = present.table_long_term_decay(m, ctx)
    assert rotary in {r[0] for r in rows}


def test_every_figure_and_table_of_the_spec_renders():
    import matplotlib

    matplotlib.use("Agg")
    ctx = context()
    m = sm.compute(ctx)
    for fid in SPEC.figures:
        assert getattr(present, f"figure_{fid}")(m, ctx).axes
    for tid in SPEC.tables:
        columns, rows = getattr(present, f"table_{tid}")(m, ctx)
        assert rows and all(len(r) == len(columns) for r in rows), tid
    for name in SPEC.csvs:
        assert m.rows[name], name


def _section(name):
    import yaml

    return yaml.safe_load((ROOT / "config/config.yaml").read_text())[name]


def test_shipped_section_is_valid_and_typos_are_rejected():
    import yaml
    from jsonschema import Draft202012Validator

    schema = yaml.safe_load((ROOT / "analyses/similarity/schema.yaml").read_text())
    validator = Draft202012Validator(schema)
    cfg = _section("similarity")
    assert not list(validator.iter_errors(cfg))
    bad = {**cfg, "kernels": {**cfg["kernels"], "n_head": 4}}
    assert any("n_head" in e.message for e in validator.iter_errors(bad))
    assert list(validator.iter_errors({**cfg, "dims": [15]}))  # odd d: no sin/cos pairs


@pytest.mark.parametrize(
    "change, key",
    [
        (lambda c: c["seed"].update(others=[11, 200]), "similarity.seed.others"),
        (lambda c: c["seed"].update(expected=[0.9]), "similarity.seed.expected"),
        (lambda c: c["kernels"].update(d_model=12, n_heads=4), "similarity.kernels.d_model"),
        (lambda c: c.update(window=10_000), "similarity.window"),
        (lambda c: c.update(max_offset=20), "similarity.max_offset"),
    ],
)
def test_semantic_checks_name_the_key(change, key):
    cfg = copy.deepcopy(_section("similarity"))
    assert not [p for check in SPEC.checks for p in check({"similarity": cfg})]
    change(cfg)
    problems = [p for check in SPEC.checks for p in check({"similarity": cfg})]
    assert any(p.startswith(f"config key {key} ") for p in problems), problems
