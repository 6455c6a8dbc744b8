"""The extension section's zero-shot stretches of every trained LM: Llama 4's query
temperature, LongRoPE's factors placed from a published profile, and the stage that scores
them (each arm the plain model where it must be)."""

from __future__ import annotations

import math

import pytest
import torch
from test_extension import corpus_meta

from posenc.analyses.extension import stretch
from posenc.analyses.extension.longrope import longrope_params, placed_factors, published_profile
from posenc.encodings import REGISTRY
from posenc.temperature import llama4, logn, temperature
from posenc.train import build_model

CPU = torch.device("cpu")
PHI3 = "phi-3-mini-128k-instruct"


def test_llama4_temperature_steps_at_every_multiple_of_l0():
    scale = llama4(8, 0.1)
    positions = torch.arange(40)
    got = scale(positions)
    # floor((p + 1) / 8): 0 up to p = 6, 1 from p = 7 (the 8th key), 2 from p = 15, ...
    expected = [1 + 0.1 * math.log1p((p + 1) // 8) for p in range(40)]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))
    assert got[6] == 1 and got[7] == 1 + 0.1 * math.log(2)
    # log-n is 1 up to L0 keys and log_L0(n) beyond.
    torch.testing.assert_close(logn(8)(positions)[:8], torch.ones(8, dtype=torch.float64))
    assert logn(8)(torch.tensor([63]))[0].item() == pytest.approx(2.0)
    # L0 is L_train unless given: Llama 4's own L0 is the chunk of its RoPE layers.
    torch.testing.assert_close(temperature("llama4", 8, {"beta": 0.1})(positions), got)
    chunked = temperature("llama4", 64, {"beta": 0.1, "floor_scale": 8})(positions)
    torch.testing.assert_close(chunked, got)
    with pytest.raises(ValueError, match="unknown query temperature 'ssmax'"):
        temperature("ssmax", 8)
    with pytest.raises(ValueError, match="floor_scale"):
        llama4(0, 0.1)


def test_the_published_profile_returns_at_its_own_shape_and_scale():
    profile = published_profile(PHI3)
    assert profile["rotated_width"] == 96 and profile["scale"] == 32
    # Its own head, base and scale: the published factors.
    placed = placed_factors(profile, 96, profile["base"], profile["scale"])
    assert placed == pytest.approx(profile["long_factor"], rel=1e-12)
    # At s = 1 every factor is 1; at 16 pairs' frequencies between the published ones,
    # interpolated in ln(factor); every factor grows with the scale and with the pair.
    assert placed_factors(profile, 16, 10000.0, 1) == [1.0] * 8
    ours = {s: placed_factors(profile, 16, 10000.0, s) for s in (2, 4, 16)}
    for s, factors in ours.items():
        assert factors == sorted(factors)
        power = math.log(s) / math.log(32)
        assert factors[0] == pytest.approx(profile["long_factor"][0] ** power)
    assert all(a < b for a, b in zip(ours[2], ours[16], strict=True))
    # Our pair 1 of 8 turns at 10000^(-1/8), Phi-3's pair 6 of 48 at the same frequency.
    assert ours[16][1] == pytest.approx(profile["long_factor"][6] ** 0.8)
    params = longrope_params(profile, 16, 10000.0, 4)
    assert params["short_factor"] == [1.0] * 8 and params["long_factor"] == ours[4]


SETTINGS = {
    "zero_shot_multipliers": [1, 2],
    "longest": 2,
    "tokens": 64,
    "segment": 4,
    "segment_windows": 4,
    "batch_tokens": 256,
    "temperatures": ["logn", "llama4"],
    "llama4_beta": 0.1,
    "query_only_temperatures": ["logn"],
    "longrope": published_profile(PHI3),
}


# Every registered encoding, plugins included: LongRoPE is an arm of those whose spec declares
# rescalable frequencies, the query-only contrast of those with an additive bias. Heads of 16,
# so that every encoding's defaults fit (partial RoPE's quarter of a head is two pairs); the
# hybrid's window half of L_train = 16, as in the study.
@pytest.mark.parametrize("encoding", list(REGISTRY))
def test_every_arm_is_the_plain_model_where_it_must_be(tmp_path, encoding):
    meta, vocab = corpus_meta(tmp_path)
    torch.manual_seed(0)
    model = build_model(
        vocab,
        {"d_model": 32, "n_heads": 2, "n_layers": 2},
        encoding,
        {"rope_nope_hybrid": {"window": 8}},
    )
    spec = REGISTRY[encoding]
    if spec.additive_bias:  # a learned bias starts at 0 (T5's table): give it one to scale
        with torch.no_grad():
            for p in model.stack.encoding.parameters():
                p.add_(torch.randn_like(p) * 0.5)
    rows = stretch.stretch(model, meta, SETTINGS, CPU)
    by = {(r["method"], r["multiplier"]): r for r in rows}
    # Llama 4's schedule as Llama 4 applies it where the model has its layout (the hybrid:
    # its NoPE layer, L0 = its window), Llama-4-shaped elsewhere.
    llama4 = "llama4" if spec.windowed else "llama4_shaped"
    assert stretch.llama4_setting(model) == (([1], 8) if spec.windowed else None)
    arms = [
        "plain",
        "logn",
        llama4,
        *(["logn_q_only"] if spec.additive_bias else []),
        *(["longrope"] if spec.rescalable else []),
    ]
    assert list(dict.fromkeys(r["method"] for r in rows)) == arms
    plain = by[("plain", 1)]["window_bits"]
    # At L_train log-n (on the whole logit or on q) and LongRoPE (short factors 1, attention
    # factor 1) are the plain model; Llama 4's first step is at the L0-th key, within a window
    # there (L0 = L_train, its last position; or the hybrid's window).
    assert by[("logn", 1)]["window_bits"] == plain
    if spec.additive_bias:
        assert by[("logn_q_only", 1)]["window_bits"] == plain
        # Past L_train the two scopes are two models: the bias scaled or not.
        assert by[("logn_q_only", 2)]["window_bits"] != by[("logn", 2)]["window_bits"]
    if spec.rescalable:
        assert by[("longrope", 1)]["window_bits"] == plain
        assert by[("longrope", 2)]["scale"] == 2
    assert by[(llama4, 1)]["window_bits"] != plain
    # Past L_train each arm changes the model.
    for arm in arms[1:]:
        assert by[(arm, 2)]["window_bits"] != by[("plain", 2)]["window_bits"], arm
    # The hooks are gone afterwards: the plain model scores as before at every length.
    again = stretch.stretch(
        model, meta, SETTINGS | {"temperatures": [], "query_only_temperatures": []}, CPU
    )
    assert {r["multiplier"]: r["window_bits"] for r in again if r["method"] == "plain"} == {
        m: by[("plain", m)]["window_bits"] for m in (1, 2)
    }
