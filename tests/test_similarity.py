"""The similarity analysis against references written here: the seed's own sinusoid, closed
forms of each kernel built with loops, brute-force property measures, and claims that fail."""

import cmath
import itertools
import math
from pathlib import Path

import pytest
import torch

from analyses import similarity as sm

CPU = torch.device("cpu")
ENCODING_CFG = {"base": 10000.0, "rope_base": 10000.0, "t5_num_buckets": 8, "t5_max_distance": 16}
ALL = ["none", "sinusoidal", "learned", "rope", "alibi", "t5_bias"]
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
    got = sm.compute(tiny_cfg(), 0, ["sinusoidal"], ENCODING_CFG, CPU)["seed_values"]
    assert got == pytest.approx(want, abs=1e-6)
    assert [round(v, 3) for v in got] == [0.966, 0.658, 0.490]


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
def test_rope_upper_bound_against_double_loop(d):
    base, R = 10000.0, 20
    theta = [base ** (-2 * i / d) for i in range(d // 2)]
    want = []
    for r in range(R + 1):
        partial = [abs(sum(cmath.exp(1j * r * t) for t in theta[:j])) for j in range(1, d // 2 + 1)]
        want.append(sum(partial) / (d // 2))
    got = sm.rope_upper_bound(d, base, R, CPU)
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
    assert sm.near_window([(64, 10000.0), (16, 100.0)], 1.0) == 3  # omega_0 = 1: floor(pi)
    assert sm.near_window([(64, 10000.0)], 2.0) == 6


def test_compute_tiny_all_claims_pass_and_is_deterministic():
    first = sm.compute(tiny_cfg(), 0, ALL, ENCODING_CFG, CPU)
    assert {c["id"] for c in first["claims"]} == IDS
    assert all(c["verdict"] == "pass" for c in first["claims"]), first["claims"]
    again = sm.compute(tiny_cfg(), 0, ALL, ENCODING_CFG, CPU)
    assert again["properties"] == first["properties"]
    assert again["profile_rows"] == first["profile_rows"]


def test_claims_fail_when_the_numbers_do_not_hold():
    cfg = tiny_cfg()
    cfg["seed"] = {**cfg["seed"], "expected": [0.9, 0.658, 0.490]}
    cfg["thresholds"] = {
        **cfg["thresholds"],
        "monotone_half_periods": 20.0,
        "decay_max_far_ratio": 0.01,
    }
    verdicts = {c["id"]: c["verdict"] for c in sm.compute(cfg, 0, ALL, ENCODING_CFG, CPU)["claims"]}
    assert verdicts["similarity.seed_values"] == "fail"
    assert verdicts["similarity.monotone_near"] == "fail"  # 62 offsets is far past pi
    assert verdicts["similarity.rope_long_term_decay"] == "fail"
    assert verdicts["similarity.translation_invariance"] == "pass"


def test_translation_claim_is_not_applicable_without_fixed_or_relative_encodings():
    result = sm.compute(tiny_cfg(), 0, ["learned"], ENCODING_CFG, CPU)
    verdicts = {c["id"]: c["verdict"] for c in result["claims"]}
    assert verdicts["similarity.translation_invariance"] == "n/a"


def _section(name):
    import yaml

    root = Path(__file__).resolve().parents[1]
    return yaml.safe_load((root / "config/config.yaml").read_text())[name]


def test_shipped_section_is_valid_and_typos_are_rejected():
    import yaml
    from jsonschema import Draft202012Validator

    root = Path(__file__).resolve().parents[1]
    schema = yaml.safe_load((root / "config/schema/similarity.yaml").read_text())
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
    import copy

    from posenc.config import SEMANTIC_CHECKS

    cfg = copy.deepcopy(_section("similarity"))
    assert not [p for check in SEMANTIC_CHECKS for p in check({"similarity": cfg})]
    change(cfg)
    problems = [p for check in SEMANTIC_CHECKS for p in check({"similarity": cfg})]
    assert any(p.startswith(f"config key {key} ") for p in problems), problems
