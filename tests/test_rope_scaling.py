"""posenc.rope_scaling against loops written here from the papers and the reference code (Meta's
``apply_scaling``, jquesnelle/yarn, transformers' ``modeling_rope_utils.py``), never from the
module's helpers; YaRN's ramp bounds worked out by hand; and the failure paths."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import pytest

from posenc import rope_scaling
from posenc.rope_scaling import (
    METHODS,
    ScaledRope,
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
    assert METHODS == ("pi", "ntk", "dynamic", "yarn", "llama3")
    result = scaled_rope("yarn", 64, 10000.0, 4.0, 4096)
    assert isinstance(result, ScaledRope) and len(result.inv_freq) == 32
    assert all(type(x) is float for x in result.inv_freq)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.attention_factor = 2.0


def test_module_is_torch_free():
    # The workflow imports it while parsing: the standard library's math and nothing heavier.
    tree = ast.parse(Path(rope_scaling.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "math", "dataclasses", "collections"}, imported


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


def test_length_is_read_by_dynamic_only():
    for method in ("pi", "ntk", "yarn", "llama3"):
        longer = scaled_rope(method, 64, 10000.0, 4.0, 1024, length=100_000)
        assert longer == scaled_rope(method, 64, 10000.0, 4.0, 1024), method


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


# Scale 1 is plain RoPE.


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("d, base, L", [(16, 10000.0, 128), (64, 500000.0, 4096), (128, 5e5, 8192)])
def test_scale_one_is_plain_rope(method, d, base, L):
    result = scaled_rope(method, d, base, 1.0, L)
    assert_pairs_close(result.inv_freq, plain_by_hand(d, base))
    assert result.attention_factor == 1.0


# Bad input names the argument.

GOOD = {"method": "yarn", "head_dim": 64, "base": 10000.0, "scale": 4.0, "original_length": 1024}


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
        ({"method": "llama3", "params": {"high_freq_factor": 1}}, "high_freq_factor"),
        (
            {"method": "llama3", "params": {"low_freq_factor": 4, "high_freq_factor": 2}},
            "high_freq_factor",
        ),
        ({"method": "llama3", "params": {"low_freq_factor": 0}}, "low_freq_factor"),
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
