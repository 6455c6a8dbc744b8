"""posenc.rope_scaling against loops written here from the papers and the reference code (Meta's
``apply_scaling``, jquesnelle/yarn, Phi-3's and microsoft/LongRoPE's LongRoPE embeddings,
Barbero et al.'s p-RoPE code, transformers' ``modeling_rope_utils.py``), never from the
module's helpers; YaRN's ramp bounds worked out by hand; the failure paths; and, separately,
LongRoPE and p-RoPE against transformers' own ROPE_INIT_FUNCTIONS."""

from __future__ import annotations

import ast
import dataclasses
import math
import random
from pathlib import Path

import pytest
import torch

from posenc import rope_scaling
from posenc.rope_scaling import (
    METHODS,
    ScaledRope,
    longrope_attention_factor,
    proportional_rotated_pairs,
    rope_inv_freq,
    scaled_rope,
    yarn_correction_range,
    yarn_inv_freq_continuous,
    yarn_rounding_gap,
)

# (head_dim, base, scale, original_length); the last is Llama 3.1 (d 128, 500000, x8, 8192).
CASES = [
    (16, 10000.0, 2.0, 128),
    (16, 500000.0, 4.0, 1024),
    (64, 10000.0, 8.0, 4096),
    (64, 500000.0, 16.0, 2048),
    (64, 10000.0, 3.0, 512),  # a scale that is not a power of two: rounding differs by an ulp
    (16, 10000.0, 4.0, 32768),  # every pair turns > 1 time: YaRN's high bound passes d/2 - 1
    (128, 500000.0, 8.0, 8192),
]
LLAMA31 = CASES[-1]
# Order of magnitude of float64 rounding after a handful of operations (a few ulps).
REL = 1e-15


def assert_pairs_close(actual, expected, rel=REL):
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert math.isclose(a, e, rel_tol=rel, abs_tol=0.0), f"pair {i}: {a!r} != {e!r}"


def assert_float64_close(actual, expected, rel=REL):
    """Relative closeness in float64, pair by pair; a zero frequency must be exactly zero."""
    torch.testing.assert_close(
        torch.tensor(actual, dtype=torch.float64),
        torch.tensor(expected, dtype=torch.float64),
        rtol=rel,
        atol=0.0,
    )


def plain_by_hand(d, base):
    """Su et al. 2021: theta_i = base^(-2i/d)."""
    return [base ** (-2 * i / d) for i in range(d // 2)]


# Loops written from the sources.


def pi_by_hand(d, base, s, L):
    # Chen et al. 2023: f(x, m) = f(x, m L / L') with L' = s L, i.e. m theta -> m theta / s.
    return [theta / s for theta in plain_by_hand(d, base)]


def ntk_by_hand(d, base, s, L):
    # Peng et al. 2023, eqs. 15-16: b' = b s^(|D| / (|D| - 2)), h(theta_d) = b'^(-2d/|D|).
    b_prime = base * s ** (d / (d - 2))
    return [b_prime ** (-2 * i / d) for i in range(d // 2)]


def dynamic_by_hand(d, base, s, L, length):
    # transformers' _compute_dynamic_ntk_parameters, with seq_len = max(length, L).
    seq_len = max(length, L)
    new_base = base * ((s * seq_len / L) - (s - 1)) ** (d / (d - 2))
    return [1.0 / new_base ** (i / d) for i in range(0, d, 2)]


def yarn_by_hand(d, base, s, L, beta_fast=32, beta_slow=1):
    # jquesnelle/yarn, LlamaYaRNScaledRotaryEmbedding.yarn (= transformers, truncate=True).
    def correction_dim(rotations):
        return (d * math.log(L / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), d - 1)
    if low == high:
        high += 0.001
    inv_freq = []
    for i in range(d // 2):
        pos_freq = base ** ((2 * i) / d)
        mask = 1 - min(1.0, max(0.0, (i - low) / (high - low)))
        inv_freq.append(1.0 / (s * pos_freq) * (1 - mask) + 1.0 / pos_freq * mask)
    return inv_freq


def yarn_paper_by_hand(d, base, s, L, alpha=1.0, beta=32.0):
    # Peng et al. 2023, eqs. 17-20: r = L / lambda, lambda = 2 pi b^(2d/|D|).
    inv_freq = []
    for i in range(d // 2):
        wavelength = 2 * math.pi * base ** (2 * i / d)
        r = L / wavelength
        gamma = 0.0 if r < alpha else 1.0 if r > beta else (r - alpha) / (beta - alpha)
        theta = base ** (-2 * i / d)
        inv_freq.append((1 - gamma) * theta / s + gamma * theta)
    return inv_freq


def llama3_by_hand(d, base, s, L, low_freq_factor=1.0, high_freq_factor=4.0):
    # Meta's apply_scaling (Llama 3.1), with old_context_len = L.
    freqs = [1.0 / (base ** (k / d)) for k in range(0, d, 2)]
    low_freq_wavelen = L / low_freq_factor
    high_freq_wavelen = L / high_freq_factor
    new_freqs = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            new_freqs.append(freq)
        elif wavelen > low_freq_wavelen:
            new_freqs.append(freq / s)
        else:
            smooth = (L / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            new_freqs.append((1 - smooth) * freq / s + smooth * freq)
    return new_freqs


# The registry and the result type.


def test_methods_and_result_shape():
    assert METHODS == ("pi", "ntk", "dynamic", "yarn", "llama3", "longrope", "proportional")
    result = scaled_rope("yarn", 64, 10000.0, 4.0, 4096)
    assert isinstance(result, ScaledRope) and len(result.inv_freq) == 32
    assert all(type(x) is float for x in result.inv_freq)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.attention_factor = 2.0


@pytest.mark.parametrize("name", ["rope_scaling", "rope_methods", "rope_checks"])
def test_module_is_torch_free(name):
    # The workflow imports it while parsing: the standard library's math and nothing heavier,
    # and of posenc only the parts of rope_scaling.
    tree = ast.parse(Path(rope_scaling.__file__).with_name(f"{name}.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "posenc":
            imported |= {f"posenc.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    parts = {"posenc.rope_methods", "posenc.rope_checks"}
    others = {m.split(".")[0] for m in imported - parts}
    assert others <= {"__future__", "math", "dataclasses", "collections"}, imported


@pytest.mark.parametrize("d, base", [(16, 10000.0), (128, 500000.0)])
def test_plain_rope(d, base):
    assert_pairs_close(rope_inv_freq(d, base), plain_by_hand(d, base))


# Each method against its loop.


@pytest.mark.parametrize("case", CASES)
def test_pi(case):
    result = scaled_rope("pi", *case)
    assert_pairs_close(result.inv_freq, pi_by_hand(*case))
    assert result.attention_factor == 1.0


@pytest.mark.parametrize("case", CASES)
def test_ntk(case):
    result = scaled_rope("ntk", *case)
    assert_pairs_close(result.inv_freq, ntk_by_hand(*case))
    assert result.attention_factor == 1.0
    d, base, s, _ = case
    # Why the exponent d / (d - 2): the slowest pair is interpolated by exactly s, the fastest kept.
    assert result.inv_freq[0] == 1.0
    assert math.isclose(result.inv_freq[-1], plain_by_hand(d, base)[-1] / s, rel_tol=1e-13)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("stretch", [1.5, 2, 4.25])
def test_dynamic_beyond_the_trained_length(case, stretch):
    length = int(case[3] * stretch)
    result = scaled_rope("dynamic", *case, length=length)
    assert_pairs_close(result.inv_freq, dynamic_by_hand(*case, length))
    assert result.attention_factor == 1.0
    # The same shape as NTK-aware, at the effective scale s l / L - (s - 1).
    d, base, s, L = case
    effective = s * length / L - (s - 1)
    assert_pairs_close(result.inv_freq, scaled_rope("ntk", d, base, effective, L).inv_freq)


@pytest.mark.parametrize("case", CASES)
def test_dynamic_is_plain_up_to_the_trained_length(case):
    d, base, _, L = case
    for length in (None, 1, L // 2, L):
        result = scaled_rope("dynamic", *case, length=length)
        assert result.inv_freq == tuple(rope_inv_freq(d, base)), length
        assert_pairs_close(result.inv_freq, plain_by_hand(d, base))


def test_dynamic_at_scale_one_is_the_papers_dynamic_ntk():
    # Peng et al. 2023 §3.3: s = max(1, l / L) in NTK-aware; transformers' formula at factor 1.
    d, base, L = 64, 10000.0, 1024
    for length in (1500, 2048, 5000):
        dynamic = scaled_rope("dynamic", d, base, 1.0, L, length=length).inv_freq
        assert_pairs_close(dynamic, ntk_by_hand(d, base, length / L, L), rel=1e-14)
        assert dynamic[-1] < plain_by_hand(d, base)[-1]  # not plain RoPE beyond L, even at s = 1


def test_length_is_read_by_dynamic_and_longrope_only():
    for method in ("pi", "ntk", "yarn", "llama3", "proportional"):
        longer = scaled_rope(method, 64, 10000.0, 4.0, 1024, length=100_000)
        assert longer == scaled_rope(method, 64, 10000.0, 4.0, 1024), method
    short, long = longrope_factors(64, 4.0, seed=0)
    params = {"short_factor": short, "long_factor": long}
    longer = scaled_rope("longrope", 64, 10000.0, 4.0, 1024, params, length=100_000)
    assert longer != scaled_rope("longrope", 64, 10000.0, 4.0, 1024, params)


@pytest.mark.parametrize("case", CASES)
def test_yarn(case):
    result = scaled_rope("yarn", *case)
    assert_pairs_close(result.inv_freq, yarn_by_hand(*case))
    s = case[2]
    assert math.isclose(result.attention_factor, 0.1 * math.log(s) + 1, rel_tol=REL)


def test_yarn_params():
    d, base, s, L = 64, 10000.0, 8.0, 4096
    betas = {"beta_fast": 16, "beta_slow": 2}
    result = scaled_rope("yarn", d, base, s, L, betas)
    assert_pairs_close(result.inv_freq, yarn_by_hand(d, base, s, L, 16, 2))
    assert result != scaled_rope("yarn", d, base, s, L)
    override = scaled_rope("yarn", d, base, s, L, {"attention_factor": 1.5, "factor": s})
    assert override.attention_factor == 1.5
    assert override.inv_freq == scaled_rope("yarn", d, base, s, L).inv_freq
    # None is transformers' "not set": the defaults.
    unset = {"beta_fast": None, "beta_slow": None, "attention_factor": None, "factor": None}
    assert scaled_rope("yarn", d, base, s, L, unset) == scaled_rope("yarn", d, base, s, L)


def test_yarn_ramp_bounds_by_hand():
    # d 64, base 10000, L 4096: pair i turns r_i = 4096 / (2 pi 10000^(i/32)) times, so
    # i(r) = 32 ln(4096 / (2 pi r)) / ln 10000 = 3.4744 ln(651.90 / r):
    # i(32) = 3.4744 * 3.0143 = 10.472 -> low 10;  i(1) = 3.4744 * 6.4799 = 22.513 -> high 23.
    assert yarn_correction_range(64, 10000.0, 4096) == (10, 23)
    low, high = yarn_correction_range(64, 10000.0, 4096, truncate=False)
    assert math.isclose(low, 10.4722, abs_tol=1e-4) and math.isclose(high, 22.5134, abs_tol=1e-4)
    # L 128: i(32) = 3.4744 ln(0.63662) = -1.569 -> floor -2 -> clamped to 0;
    #        i(1) = 3.4744 ln(20.372) = 10.472 -> high 11.
    assert yarn_correction_range(64, 10000.0, 128) == (0, 11)
    # d 16, L 32768: i(1) = 16 ln(32768 / (2 pi)) / (2 ln 10000) = 7.43 -> 8, past the last
    # pair (7), kept because the reference code clamps at d - 1 = 15: no pair is fully
    # interpolated (each turns more than once in L), and pair 7 sits on the ramp.
    assert yarn_correction_range(16, 10000.0, 32768)[1] == 8
    inv_freq = scaled_rope("yarn", 16, 10000.0, 4.0, 32768).inv_freq
    theta = plain_by_hand(16, 10000.0)[7]
    assert theta / 4 < inv_freq[7] < theta
    assert all(isinstance(b, int) for b in yarn_correction_range(64, 10000.0, 4096))


def test_yarn_zero_width_ramp():
    # L 4 < 2 pi: i(1) = 16 ln(4 / (2 pi)) / (2 ln 10000) = -0.39 -> ceil 0, and low clamps to
    # 0: low == high, the reference code's +0.001 guard. Pair 0 is kept, the others divided by s,
    # although the paper would interpolate pair 0 too (it turns 0.64 < 1 times).
    assert yarn_correction_range(16, 10000.0, 4) == (0, 0)
    inv_freq = scaled_rope("yarn", 16, 10000.0, 4.0, 4).inv_freq
    assert_pairs_close(inv_freq, yarn_by_hand(16, 10000.0, 4.0, 4))
    plain = plain_by_hand(16, 10000.0)
    assert_pairs_close(inv_freq, [plain[0]] + [theta / 4 for theta in plain[1:]])


@pytest.mark.parametrize("L, low, high", [(4096, 10, 23), (128, 0, 11)])
def test_yarn_ramp_boundaries(L, low, high):
    d, base, s = 64, 10000.0, 8.0  # s a power of two: theta / s is exact
    plain = plain_by_hand(d, base)
    inv_freq = scaled_rope("yarn", d, base, s, L).inv_freq
    for i, (scaled, theta) in enumerate(zip(inv_freq, plain)):
        if i <= low:  # extrapolated: the original frequency
            assert math.isclose(scaled, theta, rel_tol=REL), i
        elif i >= high:  # interpolated: divided by s
            assert math.isclose(scaled, theta / s, rel_tol=REL), i
        else:  # on the ramp, strictly between
            assert theta / s < scaled < theta, i


@pytest.mark.parametrize("case", CASES)
def test_yarn_continuous_is_the_papers_formula(case):
    d, base, s, L = case
    continuous = yarn_inv_freq_continuous(d, base, s, L)
    assert_pairs_close(continuous, yarn_paper_by_hand(d, base, s, L), rel=1e-14)
    # The same boundary behaviour: pairs turning more than beta = 32 times are kept, those
    # turning fewer than alpha = 1 times are divided by s.
    for i, (scaled, theta) in enumerate(zip(continuous, plain_by_hand(d, base))):
        r = L * theta / (2 * math.pi)
        if r > 32:
            assert math.isclose(scaled, theta, rel_tol=REL), i
        elif r < 1:
            assert math.isclose(scaled, theta / s, rel_tol=REL), i
        else:
            assert theta / s <= scaled <= theta, i


def test_yarn_rounding_gap_is_large_for_a_typical_head():
    gap = yarn_rounding_gap(64, 10000.0, 8.0, 4096)
    assert gap["pairs"] == 32
    assert gap["max_relative_difference"] > 0.1  # not a rounding-level difference
    # Only the 12 pairs strictly inside the ramp (low 10, high 23) differ: pair 10 turns
    # 36.7 > 32 times and pair 23 0.87 < 1 times, so both ramps keep / interpolate them alike.
    assert 10 < gap["pair"] < 23
    assert gap["pairs_differing"] == 12


@pytest.mark.parametrize(
    "d, base, s, L, beta_fast, beta_slow",
    [
        (64, 10000.0, 1.0, 4096, 32, 1),  # no extension
        # 100^(i/8) < 16384 / (64 pi) = 81.5 for every pair: all turn more than 32 times.
        (16, 100.0, 4.0, 16384, 32, 1),
        # i(2) = 3.30 and i(1) = 3.90 (d 16, base 10^4, L 560): no whole pair on the ramp.
        (16, 10000.0, 4.0, 560, 2, 1),
    ],
)
def test_yarn_rounding_gap_vanishes(d, base, s, L, beta_fast, beta_slow):
    gap = yarn_rounding_gap(d, base, s, L, beta_fast, beta_slow)
    assert gap["pairs_differing"] == 0 and gap["max_relative_difference"] < REL


@pytest.mark.parametrize("case", CASES)
def test_llama3(case):
    result = scaled_rope("llama3", *case)
    assert_pairs_close(result.inv_freq, llama3_by_hand(*case))
    assert result.attention_factor == 1.0


@pytest.mark.parametrize("L", [792, 800])
def test_llama3_at_a_band_edge(L):
    # lambda_3 = 2 pi 10000^(3/8) = 198.7 for d 16: just above L / 4 = 198 (smoothed) at L 792,
    # just below L / 4 = 200 (kept) at L 800.
    inv_freq = scaled_rope("llama3", 16, 10000.0, 4.0, L).inv_freq
    assert_pairs_close(inv_freq, llama3_by_hand(16, 10000.0, 4.0, L))
    theta = plain_by_hand(16, 10000.0)[3]
    assert (inv_freq[3] == theta) == (L == 800)


def test_llama3_params():
    d, base, s, L = LLAMA31
    params = {"low_freq_factor": 2, "high_freq_factor": 8, "original_max_position_embeddings": L}
    result = scaled_rope("llama3", d, base, s, L, params)
    assert_pairs_close(result.inv_freq, llama3_by_hand(d, base, s, L, 2, 8))


def test_llama31_bands_by_hand():
    # lambda_i = 2 pi 500000^(i/64): < 2048 for i <= 28 (i < 64 ln(325.95) / ln(5e5) = 28.22),
    # > 8192 for i >= 35 (i > 64 ln(1303.8) / ln(5e5) = 34.98), smoothed for i = 29..34.
    params = {"factor": 8, "low_freq_factor": 1, "high_freq_factor": 4}
    inv_freq = scaled_rope("llama3", 128, 500000.0, 8.0, 8192, params).inv_freq
    plain = plain_by_hand(128, 500000.0)
    kept = [i for i, (a, b) in enumerate(zip(inv_freq, plain)) if math.isclose(a, b, rel_tol=REL)]
    divided = [
        i for i, (a, b) in enumerate(zip(inv_freq, plain)) if math.isclose(a, b / 8, rel_tol=REL)
    ]
    assert kept == list(range(29)) and divided == list(range(35, 64))


# LongRoPE (Ding et al. 2024, as Phi-3 ships it).


def longrope_factors(d, s, seed):
    """Two factor lists shaped as the reference search makes them (microsoft/LongRoPE
    dim_mono: each in [1, 1 + s], non-decreasing in the pair): short ones near 1, long ones
    rising towards 1 + s. Fixed by ``seed``."""
    rng = random.Random(seed)
    short = sorted(1 + 0.25 * rng.random() for _ in range(d // 2))
    long = sorted(1 + s * rng.random() for _ in range(d // 2))
    return short, long


def longrope_by_hand(d, base, L, short_factor, long_factor, length):
    # Phi-3's Phi3LongRoPEScaledRotaryEmbedding.forward, with seq_len = length:
    # ext_factors = long if seq_len > original_max_position_embeddings else short;
    # inv_freq = 1 / (ext_factors * base ** (arange(0, dim, 2) / dim)).
    ext_factors = long_factor if length > L else short_factor
    inv_freq_shape = [k / d for k in range(0, d, 2)]
    return [1.0 / (ext_factors[j] * base ** inv_freq_shape[j]) for j in range(d // 2)]


def longrope_attention_by_hand(max_position_embeddings, L):
    # Phi-3's forward and microsoft/LongRoPE's _calc_mscale_su.
    scale = max_position_embeddings / L
    if scale <= 1.0:
        return 1.0
    return math.sqrt(1 + math.log(scale) / math.log(L))


# (head_dim, base, s, L): small; Phi-3-mini-128k's head (d 96, base 10^4, 131072 / 4096 = 32);
# a Llama-3-like head at a factor that is not a power of two.
LONGROPE_CASES = [
    (16, 10000.0, 2.0, 128),
    (64, 10000.0, 8.0, 2048),
    (96, 10000.0, 32.0, 4096),
    (128, 500000.0, 12.0, 8192),
]


@pytest.mark.parametrize("case", LONGROPE_CASES)
@pytest.mark.parametrize("where", ["unset", "1", "L-1", "L", "L+1", "L+2", "4L"])
def test_longrope(case, where):
    d, base, s, L = case
    short, long = longrope_factors(d, s, seed=d)
    length = {"unset": None, "1": 1, "L-1": L - 1, "L": L, "L+1": L + 1, "L+2": L + 2}.get(
        where, 4 * L
    )
    seq_len = L if length is None else length  # unset: transformers' seq_len None, short set
    params = {"short_factor": short, "long_factor": long}
    result = scaled_rope("longrope", d, base, s, L, params, length=length)
    assert_float64_close(result.inv_freq, longrope_by_hand(d, base, L, short, long, seq_len))
    max_position_embeddings = round(s * L)
    assert result.attention_factor == pytest.approx(
        longrope_attention_by_hand(max_position_embeddings, L), rel=REL
    )


def test_longrope_switches_sets_past_the_original_length():
    # The switch is at l > L: l = L still takes the short factors, l = L + 1 the long ones.
    d, base, s, L = 96, 10000.0, 32.0, 4096
    short, long = longrope_factors(d, s, seed=1)
    params = {"short_factor": short, "long_factor": long}
    plain = plain_by_hand(d, base)
    at = scaled_rope("longrope", d, base, s, L, params, length=L)
    past = scaled_rope("longrope", d, base, s, L, params, length=L + 1)
    assert at == scaled_rope("longrope", d, base, s, L, params)  # None is L
    assert_float64_close(at.inv_freq, [theta / f for theta, f in zip(plain, short)])
    assert_float64_close(past.inv_freq, [theta / f for theta, f in zip(plain, long)])
    assert all(a > b for a, b in zip(at.inv_freq, past.inv_freq))  # long > short factors
    # One attention factor for both sets: even the short window is not plain RoPE.
    assert at.attention_factor == past.attention_factor > 1


def test_longrope_attention_factor_by_hand():
    # Phi-3-mini-128k: s = 32, L = 4096 = 2^12, so ln s / ln L = 5 / 12 and the factor is
    # sqrt(17 / 12) = 1.19024; q.k scales by 17 / 12.
    assert longrope_attention_factor(32.0, 4096) == pytest.approx(math.sqrt(17 / 12), rel=REL)
    assert longrope_attention_factor(4096.0, 4096) == pytest.approx(math.sqrt(2), rel=REL)
    # s <= 1: exactly 1, whatever L (L = 1 too, where ln L = 0 would divide).
    for scale in (0.25, 0.999, 1.0):
        assert longrope_attention_factor(scale, 4096) == 1.0
        assert longrope_attention_factor(scale, 1) == 1.0
    short, long = longrope_factors(64, 1.0, seed=2)
    params = {"short_factor": short, "long_factor": long}
    assert (
        scaled_rope("longrope", 64, 10000.0, 1.0, 2048, params, length=9999).attention_factor == 1
    )
    # An explicit attention_factor wins, and leaves the frequencies alone.
    given = scaled_rope("longrope", 64, 10000.0, 8.0, 2048, {**params, "attention_factor": 1.5})
    assert given.attention_factor == 1.5
    assert given.inv_freq == scaled_rope("longrope", 64, 10000.0, 8.0, 2048, params).inv_freq


def test_longrope_special_cases_are_plain_and_pi():
    d, base, s, L = 64, 10000.0, 8.0, 2048
    ones, constant = [1.0] * (d // 2), [s] * (d // 2)
    params = {"short_factor": ones, "long_factor": constant}
    # Unit short factors: plain RoPE up to L (with the attention factor of s all the same).
    assert_float64_close(
        scaled_rope("longrope", d, base, s, L, params).inv_freq, plain_by_hand(d, base)
    )
    # Every long factor s: Position Interpolation's frequencies beyond L.
    beyond = scaled_rope("longrope", d, base, s, L, params, length=2 * L).inv_freq
    assert_float64_close(beyond, scaled_rope("pi", d, base, s, L).inv_freq)


# p-RoPE (Barbero et al. 2024), transformers' "proportional".


def proportional_by_hand(d, base, p, s):
    # Barbero et al.'s apply_p_rope (and Gemma's apply_rope): rope_angles pairs with timescale
    # base^(2j/d), the others padded with an infinite timescale; the angle position / timescale
    # divided by scale_factor (transformers: factor). Frequency = (1 / timescale) / s.
    rope_angles = int(p * d // 2)
    nope_angles = d // 2 - rope_angles
    timescale = [base ** (2.0 * j / d) for j in range(rope_angles)] + [math.inf] * nope_angles
    return [1.0 / t / s for t in timescale]


@pytest.mark.parametrize("d", [16, 64, 100, 256, 512])
@pytest.mark.parametrize("base", [10000.0, 1e6])
@pytest.mark.parametrize("p", [0.25, 0.5, 0.58, 0.75, 1.0])
@pytest.mark.parametrize("s", [1.0, 4.0])
def test_proportional(d, base, p, s):
    result = scaled_rope("proportional", d, base, s, 1024, {"partial_rotary_factor": p})
    assert_float64_close(result.inv_freq, proportional_by_hand(d, base, p, s))
    assert result.attention_factor == 1.0


@pytest.mark.parametrize(
    "d, p, kept",
    [
        (512, 0.25, 64),  # Gemma 4's global layers
        (64, 0.25, 8),
        (100, 0.25, 12),  # p d / 2 = 12.5: floor
        (100, 0.58, 28),  # p d = 57.99999999999999 in floats: 28, not 29
        (64, 1.0, 32),
        (16, 0.1, 0),  # p d < 2: no pair turns (NoPE), as in transformers
    ],
)
def test_proportional_kept_pairs_by_hand(d, p, kept):
    assert proportional_rotated_pairs(d, p) == kept
    inv_freq = scaled_rope("proportional", d, 10000.0, 1.0, 1024, {"partial_rotary_factor": p})
    assert sum(f > 0 for f in inv_freq.inv_freq) == kept
    assert inv_freq.inv_freq[kept:] == (0.0,) * (d // 2 - kept)  # the slow end is dropped


def test_proportional_at_p_one_is_pi_and_keeps_the_fast_pairs():
    d, base, s, L = 64, 10000.0, 4.0, 1024
    full = scaled_rope("proportional", d, base, s, L)  # default p = 1
    assert_float64_close(full.inv_freq, scaled_rope("pi", d, base, s, L).inv_freq)
    quarter = scaled_rope("proportional", d, base, 1.0, L, {"partial_rotary_factor": 0.25})
    assert_float64_close(quarter.inv_freq[:8], plain_by_hand(d, base)[:8])  # full RoPE's own


def test_proportional_is_not_partial_rope():
    # GPT-NeoX's rotary_pct = 0.25 on d = 64 turns r = 16 dimensions at base^(-2i/16): its
    # slowest pair turns at base^(-14/16) = 3.2e-4; p-RoPE's slowest kept pair (i = 7) at
    # full RoPE's base^(-14/64) = 0.13. Only pair 0 (theta = 1) agrees.
    d, base = 64, 10000.0
    neox = [base ** (-2 * i / 16) for i in range(8)]
    p_rope = scaled_rope("proportional", d, base, 1.0, 1024, {"partial_rotary_factor": 0.25})
    kept = p_rope.inv_freq[:8]
    assert kept[0] == neox[0] == 1.0
    assert all(k > n for k, n in zip(kept[1:], neox[1:]))
    assert kept[-1] == pytest.approx(base ** (-14 / 64), rel=REL)
    assert neox[-1] == pytest.approx(base ** (-14 / 16), rel=REL)


# Scale 1 is plain RoPE.


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("d, base, L", [(16, 10000.0, 128), (64, 500000.0, 4096), (128, 5e5, 8192)])
def test_scale_one_is_plain_rope(method, d, base, L):
    # LongRoPE needs its factor lists, and is plain only when they are all 1 (proportional
    # only at its default p = 1): their own tests show them otherwise at s = 1.
    params = {"short_factor": [1.0] * (d // 2), "long_factor": [1.0] * (d // 2)}
    result = scaled_rope(method, d, base, 1.0, L, params if method == "longrope" else None)
    assert_pairs_close(result.inv_freq, plain_by_hand(d, base))
    assert result.attention_factor == 1.0


# Bad input names the argument.

GOOD = {"method": "yarn", "head_dim": 64, "base": 10000.0, "scale": 4.0, "original_length": 1024}
ONES = [1.0] * 32  # one LongRoPE factor per pair of GOOD's head
LONGROPE = {"short_factor": ONES, "long_factor": ONES}


@pytest.mark.parametrize(
    "change, named",
    [
        ({"method": "linear"}, "method"),
        ({"scale": 0.5}, "scale"),
        ({"scale": float("nan")}, "scale"),
        ({"head_dim": 63}, "head_dim"),
        ({"head_dim": 2}, "head_dim"),
        ({"base": 1.0}, "base"),
        ({"original_length": 0}, "original_length"),
        ({"length": 0}, "length"),
        ({"params": {"factor": 8.0}}, "factor"),
        (
            {"params": {"original_max_position_embeddings": 2048}},
            "original_max_position_embeddings",
        ),
        ({"params": {"beta_fast": 1, "beta_slow": 1}}, "beta_fast"),
        ({"params": {"beta_fast": 0.5}}, "beta_fast"),
        ({"params": {"beta_slow": 0}}, "beta_slow"),
        ({"params": {"attention_factor": -1.0}}, "attention_factor"),
        ({"params": {"truncate": "yes"}}, "truncate"),
        ({"params": {"mscale": 1.0}}, "mscale"),  # a DeepSeek key this module does not implement
        ({"method": "llama3", "params": {"beta_fast": 32}}, "beta_fast"),  # not llama3's
        ({"method": "llama3", "params": {"high_freq_factor": 0.5}}, "high_freq_factor"),
        (
            {"method": "llama3", "params": {"low_freq_factor": 4, "high_freq_factor": 2}},
            "high_freq_factor",
        ),
        ({"method": "llama3", "params": {"low_freq_factor": 0}}, "low_freq_factor"),
        ({"method": "longrope"}, "short_factor"),
        ({"method": "longrope", "params": {"short_factor": ONES}}, "long_factor"),
        ({"method": "longrope", "params": {"long_factor": ONES}}, "short_factor"),
        ({"method": "longrope", "params": {**LONGROPE, "long_factor": ONES[:-1]}}, "long_factor"),
        ({"method": "longrope", "params": {**LONGROPE, "long_factor": ONES * 2}}, "long_factor"),
        ({"method": "longrope", "params": {**LONGROPE, "short_factor": ONES[:1]}}, "short_factor"),
        ({"method": "longrope", "params": {**LONGROPE, "long_factor": 2.0}}, "long_factor"),
        ({"method": "longrope", "params": {**LONGROPE, "long_factor": "1" * 32}}, "long_factor"),
        ({"method": "longrope", "params": {**LONGROPE, "long_factor": [0.0] * 32}}, "long_factor"),
        (
            {"method": "longrope", "params": {**LONGROPE, "long_factor": [*ONES[:-1], math.nan]}},
            "long_factor",
        ),
        ({"method": "longrope", "params": {**LONGROPE, "long_factor": [True] * 32}}, "long_factor"),
        ({"method": "longrope", "params": {**LONGROPE, "attention_factor": 0}}, "attention_factor"),
        ({"method": "longrope", "params": LONGROPE, "original_length": 1}, "original_length"),
        # GPT-NeoX's partial rotary is the caller's head_dim (the rotated width), not a param.
        (
            {"method": "longrope", "params": {**LONGROPE, "partial_rotary_factor": 0.5}},
            "partial_rotary_factor",
        ),
        ({"method": "longrope", "params": {**LONGROPE, "short_mscale": 1.2}}, "short_mscale"),
        ({"method": "proportional", "params": {"partial_rotary_factor": 0}}, "partial_rotary"),
        ({"method": "proportional", "params": {"partial_rotary_factor": -0.25}}, "partial_rotary"),
        ({"method": "proportional", "params": {"partial_rotary_factor": 1.5}}, "partial_rotary"),
        (
            {"method": "proportional", "params": {"partial_rotary_factor": math.nan}},
            "partial_rotary_factor",
        ),
        ({"method": "proportional", "params": {"partial_rotary_factor": "0.5"}}, "partial_rotary"),
        ({"method": "proportional", "params": {"partial_rotary_factor": True}}, "partial_rotary"),
        ({"method": "proportional", "params": {"long_factor": ONES}}, "long_factor"),
    ],
)
def test_bad_input_raises_naming_the_argument(change, named):
    with pytest.raises(ValueError, match=named):
        scaled_rope(**{**GOOD, **change})


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ValueError) as raised:
        scaled_rope("linear", 64, 10000.0, 2.0, 1024)
    assert all(method in str(raised.value) for method in METHODS)


def test_continuous_and_gap_check_their_arguments():
    with pytest.raises(ValueError, match="beta_fast"):
        yarn_inv_freq_continuous(64, 10000.0, 4.0, 1024, beta_fast=1, beta_slow=2)
    with pytest.raises(ValueError, match="scale"):
        yarn_rounding_gap(64, 10000.0, 0.9, 1024)


# Against transformers' own ROPE_INIT_FUNCTIONS (5.24), which computes in float32: the
# exponent 2i/d rounds (relatively, half an eps), and base^x turns that into a relative error
# of ln(base) x / 2 eps, x < 1; the power itself, LongRoPE's factor (rounded to float32) and
# product, and the reciprocal or p-RoPE's division by the factor add about half an eps to one
# eps each. Allowed: ln(base) / 2 + 3 float32 eps relatively (7.6 at base 10^4, 9.9 at 10^6).
# Measured on a wider sweep of these configs: at most 2.4 (LongRoPE) and 3.6 (p-RoPE; d 100,
# base 5 10^5, where 2i/d is inexact). transformers' attention factors are Python floats,
# the same formula in float64: equal to a float64 rounding.
EPS32 = 2.0**-23


def transformers_ulps(base):
    return math.log(base) / 2 + 3


def assert_float32_ulps(theirs, ours, base):
    """theirs (float32, from transformers) within transformers_ulps(base) float32 epsilons of
    ours, relatively; a zero frequency must be exactly zero in both."""
    torch.testing.assert_close(
        theirs.double(),
        torch.tensor(ours, dtype=torch.float64),
        rtol=transformers_ulps(base) * EPS32,
        atol=0.0,
    )


def llama_config(d, base, max_position_embeddings, rope_parameters):
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=d,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=d,
        max_position_embeddings=max_position_embeddings,
        rope_parameters={"rope_theta": base, **rope_parameters},
    )


@pytest.mark.parametrize("case", LONGROPE_CASES)
@pytest.mark.parametrize("with_factor", [False, True])
def test_longrope_matches_transformers(case, with_factor):
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    d, base, s, L = case
    short, long = longrope_factors(d, s, seed=d)
    rope_parameters = {
        "rope_type": "longrope",
        "short_factor": short,
        "long_factor": long,
        "original_max_position_embeddings": L,
    }
    if with_factor:
        # An explicit factor decides the attention factor; max_position_embeddings (here a
        # ratio of 3, no case's s) no longer does.
        config = llama_config(d, base, 3 * L, {**rope_parameters, "factor": s})
    else:
        config = llama_config(d, base, round(s * L), rope_parameters)
    params = {"short_factor": short, "long_factor": long}
    for seq_len in (None, L, L + 1, 3 * L):
        inv_freq, attention = rope_utils.ROPE_INIT_FUNCTIONS["longrope"](config, None, seq_len)
        ours = scaled_rope("longrope", d, base, s, L, params, length=seq_len)
        assert_float32_ulps(inv_freq, ours.inv_freq, base)
        assert attention == pytest.approx(ours.attention_factor, rel=REL)


def test_longrope_matches_transformers_phi3_config():
    # Phi-3-mini-128k's shape: head 3072 / 32 = 96, s = 131072 / 4096. Its configs give
    # original_max_position_embeddings at the top level, which overrides rope_parameters'.
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    from transformers import Phi3Config

    base = 10000.0
    short, long = longrope_factors(96, 32.0, seed=3)
    config = Phi3Config(
        hidden_size=3072,
        num_attention_heads=32,
        num_key_value_heads=32,
        max_position_embeddings=131072,
        original_max_position_embeddings=4096,
        rope_parameters={
            "rope_type": "longrope",
            "rope_theta": base,
            "short_factor": short,
            "long_factor": long,
            "original_max_position_embeddings": 2048,  # overridden by the top-level 4096
        },
    )
    params = {"short_factor": short, "long_factor": long}
    for seq_len in (4096, 4097):
        inv_freq, attention = rope_utils.ROPE_INIT_FUNCTIONS["longrope"](config, None, seq_len)
        ours = scaled_rope("longrope", 96, base, 32.0, 4096, params, length=seq_len)
        assert_float32_ulps(inv_freq, ours.inv_freq, base)
        assert attention == pytest.approx(math.sqrt(17 / 12), rel=REL)
        assert attention == pytest.approx(ours.attention_factor, rel=REL)


def test_longrope_without_original_length_in_transformers():
    # No original_max_position_embeddings anywhere: transformers takes L = the config's
    # max_position_embeddings, so s = 1, attention factor 1, and the long factors only past it.
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    d, base, max_position_embeddings = 64, 10000.0, 8192
    short, long = longrope_factors(d, 4.0, seed=5)
    rope_parameters = {"rope_type": "longrope", "short_factor": short, "long_factor": long}
    config = llama_config(d, base, max_position_embeddings, rope_parameters)
    params = {"short_factor": short, "long_factor": long}
    for seq_len in (4096, max_position_embeddings, max_position_embeddings + 1):
        inv_freq, attention = rope_utils.ROPE_INIT_FUNCTIONS["longrope"](config, None, seq_len)
        ours = scaled_rope("longrope", d, base, 1.0, max_position_embeddings, params, seq_len)
        assert_float32_ulps(inv_freq, ours.inv_freq, base)
        assert attention == ours.attention_factor == 1.0


def test_longrope_switch_matches_transformers_module():
    # transformers' rotary module switches sets in its forward (dynamic_rope_update), from
    # max(position_ids) + 1: the short set for L positions, the long one for L + 1.
    pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    d, base, s, L = 16, 10000.0, 4.0, 64
    short, long = longrope_factors(d, s, seed=4)
    rope_parameters = {
        "rope_type": "longrope",
        "short_factor": short,
        "long_factor": long,
        "original_max_position_embeddings": L,
    }
    module = LlamaRotaryEmbedding(llama_config(d, base, round(s * L), rope_parameters))
    params = {"short_factor": short, "long_factor": long}
    for n in (L, L + 1, L, 10):  # back to the short set once the sequence is short again
        module(torch.zeros(1), torch.arange(n)[None])
        ours = scaled_rope("longrope", d, base, s, L, params, length=n)
        assert_float32_ulps(module.inv_freq, ours.inv_freq, base)
        assert module.attention_scaling == pytest.approx(ours.attention_factor, rel=REL)


@pytest.mark.parametrize(
    "d, base, p, s",
    [
        (64, 10000.0, 0.25, 1.0),
        (100, 10000.0, 0.58, 1.0),  # the float rounding of p d: 28 pairs
        (100, 10000.0, 0.25, 1.0),  # p d / 2 = 12.5
        (256, 10000.0, 0.5, 4.0),  # with transformers' factor
        (512, 1e6, 0.25, 1.0),  # Gemma 4's global layers
        (64, 500000.0, 1.0, 8.0),  # p = 1: PI
    ],
)
def test_proportional_matches_transformers(d, base, p, s):
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    rope_parameters = {"rope_type": "proportional", "partial_rotary_factor": p, "factor": s}
    config = llama_config(d, base, 4096, rope_parameters)
    inv_freq, attention = rope_utils.ROPE_INIT_FUNCTIONS["proportional"](config, None)
    ours = scaled_rope("proportional", d, base, s, 4096, {"partial_rotary_factor": p})
    assert_float32_ulps(inv_freq, ours.inv_freq, base)
    assert attention == ours.attention_factor == 1.0


def test_proportional_matches_transformers_gemma4_config():
    # Gemma 4's own text config: its full-attention layers, head 512, p = 0.25, base 10^6.
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    from transformers import Gemma4TextConfig

    config = Gemma4TextConfig().per_layer_config["full_attention"]
    rope = config.rope_parameters["full_attention"]
    base = rope["rope_theta"]
    assert (rope["rope_type"], rope["partial_rotary_factor"], base) == ("proportional", 0.25, 1e6)
    inv_freq, _ = rope_utils.ROPE_INIT_FUNCTIONS["proportional"](
        config, None, layer_type="full_attention"
    )
    params = {"partial_rotary_factor": 0.25}
    ours = scaled_rope("proportional", config.head_dim, base, 1.0, 8192, params)
    assert config.head_dim == 512 and inv_freq.shape == (256,)
    assert_float32_ulps(inv_freq, ours.inv_freq, base)
