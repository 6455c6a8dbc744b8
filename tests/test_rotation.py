"""analyses/rotation.py: the identity checks, the hand trace, RoPE scores and offset maps,
against naive references written here."""

import copy
import itertools
import math

import pytest
import torch
import yaml

from analyses.rotation import (
    compute,
    hand_trace,
    identity_errors,
    linear_offset_maps,
    resolution_span,
    rope_scores,
)

TINY = yaml.safe_load(
    """
d_values: [4, 8]
bases: [10000]
dtypes: [float64, float32, bfloat16]
max_log2_position: 10
positions_per_octave: 2
offsets: [1, 5]
hand_trace: {d: 4, base: 10000, n_positions: 4, from_position: 1, offset: 1, decimals: 3,
             article_target: [0.909, -0.416, 0.020, 1.000], article_cos_sin: [0.540, 0.841]}
rope: {head_dim: 8, n_vectors: 3, n_pairs: 3, window: 8, max_log2_shift: 10,
       naive_dtypes: [bfloat16]}
linear_map: {offsets: [1, 3], n_train: 32, n_test: 16, train_span: 1.0, short_span: 0.0625,
             learned_len: 128}
thresholds: {identity_ulps: 4, rope_ulps: 2, linear_map_ulps: 4}
"""
)
ENCODING = {"base": 10000, "rope_base": 10000, "t5_num_buckets": 32, "t5_max_distance": 128}


def naive_pe(p: int, d: int, base: float) -> list[float]:
    out = []
    for i in range(d // 2):
        w = base ** (-2 * i / d)
        out += [math.sin(p * w), math.cos(p * w)]
    return out


def naive_rope_score(q: list[float], k: list[float], p: int, pk: int, base: float) -> float:
    """Su et al. 2021 in complex form: pair i of q times e^{i p θ_i}, dotted with k's."""
    d = len(q)
    score = 0.0
    for i in range(d // 2):
        theta = base ** (-2 * i / d)
        zq = complex(q[2 * i], q[2 * i + 1]) * complex(math.cos(p * theta), math.sin(p * theta))
        zk = complex(k[2 * i], k[2 * i + 1]) * complex(math.cos(pk * theta), math.sin(pk * theta))
        score += (zq * zk.conjugate()).real
    return score


def test_identity_holds_in_float64_within_the_bound():
    rows = identity_errors(
        8,
        10000.0,
        torch.float64,
        torch.tensor([0, 3, 1000, 70000]),
        torch.tensor([1, 9, 4000]),
        ulps=4,
    )
    assert len(rows) == 12
    assert max(r["error_over_tolerance"] for r in rows) <= 1.0
    assert max(r["max_abs_error"] for r in rows) < 1e-9


def test_identity_bound_grows_with_position():
    rows = identity_errors(
        4, 10000.0, torch.float32, torch.tensor([1, 10**6]), torch.tensor([1]), ulps=4
    )
    small, large = sorted(rows, key=lambda r: r["position"])
    assert large["tolerance"] > 1000 * small["tolerance"] / 10


def test_hand_trace_reproduces_the_article():
    h = hand_trace(TINY["hand_trace"])
    assert h["omega"] == pytest.approx([1.0, 0.01])
    assert h["table"][0] == pytest.approx([0.0, 1.0, 0.0, 1.0])
    for p in range(4):
        assert h["table"][p] == pytest.approx(naive_pe(p, 4, 10000.0), abs=1e-15)
    assert [round(v, 3) for v in h["target"]] == pytest.approx([0.909, -0.416, 0.020, 1.000])
    assert h["rotated_exact"] == pytest.approx(h["target"], abs=1e-15)
    # The article's arithmetic, by hand: PE(1) = (0.841, 0.540, 0.010, 1.000), cos 1 = 0.540,
    # sin 1 = 0.841, cos 0.01 = 1.000, sin 0.01 = 0.010.
    s, c = 0.841, 0.540
    by_hand = [s * c + c * s, c * c - s * s, 0.010 * 1.0 + 1.0 * 0.010, 1.0 * 1.0 - 0.010 * 0.010]
    assert h["rotated_by_hand"] == pytest.approx(by_hand, abs=1e-12)
    assert h["article_cos_sin_error"] <= 5e-4


@pytest.mark.parametrize("x_dtype", [torch.float64, torch.float32])
def test_rope_scores_match_a_naive_loop(x_dtype):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 6, generator=g, dtype=torch.float64)
    k = torch.randn(2, 6, generator=g, dtype=torch.float64)
    pq, pk = torch.tensor([0, 5, 77]), torch.tensor([3, 5, 1000])
    got = rope_scores(q, k, pq, pk, 10000.0, x_dtype, torch.promote_types(x_dtype, torch.float32))
    for i in range(2):
        for j in range(3):
            expected = naive_rope_score(
                q[i].tolist(), k[i].tolist(), int(pq[j]), int(pk[j]), 10000.0
            )
            tol = 1e-12 if x_dtype == torch.float64 else 1e-4
            assert got[i, j].item() == pytest.approx(expected, abs=tol)


def test_resolution_span_is_two_pi_over_the_smallest_gap():
    for d, base in ((4, 10000.0), (16, 10000.0), (128, 500000.0)):
        omega = [base ** (-2 * i / d) for i in range(d // 2)]
        gaps = [a - b for a, b in itertools.pairwise(omega)] + [omega[-1]]
        assert resolution_span(d, base) == pytest.approx(2 * math.pi / min(gaps), rel=1e-12)


def test_linear_map_is_exact_when_resolved_and_not_for_a_learned_table():
    g = torch.Generator().manual_seed(0)
    rows = linear_offset_maps(TINY["linear_map"], [8], [10000.0], 4, g, torch.device("cpu"))
    full = [r for r in rows if r["encoding"] == "sinusoidal" and r["training"] == "full"]
    assert full and all(r["held_out_rel_error"] <= r["tolerance"] for r in full)
    assert all(r["map_error"] < 1e-9 for r in full)
    learned = [r for r in rows if r["encoding"] == "learned"]
    assert learned and all(r["held_out_rel_error"] > 0.1 for r in learned)


def test_tiny_run_passes_every_claim():
    result = compute(TINY, 0, ENCODING, torch.device("cpu"))
    verdicts = {c["id"]: c["verdict"] for c in result["claims"]}
    assert verdicts == {
        "rotation.sinusoidal_identity": "pass",
        "rotation.hand_trace": "pass",
        "rotation.rope_relative_only": "pass",
        "rotation.linear_offset_map": "pass",
    }
    naive = [r for r in result["rope"] if r["naive"]]
    assert max(r["max_deviation"] for r in naive) > 1e-2  # bfloat16 positions do round


def test_claims_fail_when_their_bound_is_too_tight():
    cfg = copy.deepcopy(TINY)
    cfg["thresholds"] = {"identity_ulps": 1e-6, "rope_ulps": 1e-9, "linear_map_ulps": 1e-6}
    cfg["hand_trace"]["article_target"] = [0.919, -0.416, 0.020, 1.000]  # a wrong digit
    verdicts = {
        c["id"]: c["verdict"] for c in compute(cfg, 0, ENCODING, torch.device("cpu"))["claims"]
    }
    assert set(verdicts.values()) == {"fail"}
