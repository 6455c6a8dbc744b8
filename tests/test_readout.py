"""The attention readout and the evaluation-time query temperature (posenc.model's hooks,
posenc.readout): exact against hand-computed attention, and free when not asked for."""

from __future__ import annotations

import math

import pytest
import torch

from posenc.encodings import build
from posenc.model import LanguageModel, ModelConfig, observing, query_temperature
from posenc.readout import attention_readout, readouts

D, H = 16, 2


def model(encoding: str) -> LanguageModel:
    torch.manual_seed(0)
    config = {"t5_bias": {"max_distance": 64}}
    cfg = ModelConfig(d_model=D, n_heads=H, n_layers=2)
    return LanguageModel(11, cfg, build(encoding, config, d_model=D, n_heads=H, max_len=64)).eval()


@pytest.mark.parametrize("encoding", ["rope", "alibi", "t5_bias", "sinusoidal", "none"])
def test_observed_attention_is_the_fused_kernels(encoding):
    m = model(encoding)
    x = torch.randint(0, 11, (3, 40))
    seen = []
    with torch.no_grad():
        fused = m(x)
        with observing(m, lambda layer, probs: seen.append((layer, probs.shape))):
            explicit = m(x)
        again = m(x)  # the hooks are gone after the block
    torch.testing.assert_close(explicit, fused, rtol=0, atol=1e-5)
    assert torch.equal(again, fused)
    assert seen == [(0, (3, H, 40, 40)), (1, (3, H, 40, 40))]


def uniform_model() -> LanguageModel:
    """Every query attends uniformly to the keys it sees: zero query and key weights."""
    m = model("none")
    for block in m.stack.blocks:
        with torch.no_grad():
            block.attn.qkv.weight[: 2 * D].zero_()
            block.attn.qkv.bias[: 2 * D].zero_()
    return m


def test_readout_of_uniform_attention():
    length, train_len = 12, 4
    tokens = torch.randint(0, 11, (200,))
    out = attention_readout(uniform_model(), tokens, length, train_len, tokens_scored=24)
    assert len(out["window_bits"]) == 2
    # Uniform over n keys: entropy ln n, normalised 1.
    torch.testing.assert_close(torch.tensor(out["entropy"]), torch.ones(2, 2))
    # Query i sees i + 1 keys, of which i + 1 - L_train lie at distance >= L_train.
    far = [(i + 1 - train_len) / (i + 1) for i in range(train_len, length)]
    torch.testing.assert_close(torch.tensor(out["far_mass"]), torch.full((2, 2), sum(far) / 8))


def test_readout_within_train_len_has_no_far_keys():
    out = attention_readout(model("rope"), torch.randint(0, 11, (200,)), 8, 8, tokens_scored=16)
    assert out["far_mass"] == [[None, None]] * 2
    assert all(0.0 <= e <= 1.0 + 1e-6 for row in out["entropy"] for e in row)


def test_readout_loss_is_the_models():
    m, length = model("alibi"), 10
    tokens = torch.randint(0, 11, (100,))
    out = attention_readout(m, tokens, length, 5, tokens_scored=length)
    window = tokens[: length + 1]
    with torch.no_grad():
        nll = torch.nn.functional.cross_entropy(m(window[None, :-1])[0], window[1:])
    assert out["window_bits"][0] == pytest.approx(nll.item() / math.log(2), rel=1e-5)


def test_query_temperature():
    m = model("rope")
    x = torch.randint(0, 11, (2, 20))
    with torch.no_grad():
        plain = m(x)
        with query_temperature(m, lambda p: torch.ones(p.shape[-1])):
            same = m(x)
        with query_temperature(m, lambda p: torch.zeros(p.shape[-1])):
            flat = m(x)
        assert torch.equal(m(x), plain)
    torch.testing.assert_close(same, plain, rtol=0, atol=0)
    # A zero multiplier makes every query's attention uniform: the uniform model's output
    # (whose zero query and key weights do the same), given the same value weights.
    u = model("rope")
    for block in u.stack.blocks:
        with torch.no_grad():
            block.attn.qkv.weight[:D].zero_()
            block.attn.qkv.bias[:D].zero_()
    with torch.no_grad():
        torch.testing.assert_close(flat, u(x), rtol=0, atol=1e-5)


def test_readouts_cover_every_length_plainly_and_under_logn_but_none_past_a_table():
    tokens = torch.randint(0, 11, (400,))
    out = readouts(model("rope"), tokens, 8, [1, 2, 4], tokens_scored=32)
    assert [r["multiplier"] for r in out["plain"]] == [1, 2, 4]
    assert [r["multiplier"] for r in out["logn"]] == [2, 4]  # the same model up to L_train
    assert out["logn"][0]["window_bits"] != out["plain"][1]["window_bits"]
    learned = build("learned", {}, d_model=D, n_heads=H, max_len=8)
    table = LanguageModel(11, ModelConfig(d_model=D, n_heads=H, n_layers=2), learned).eval()
    out = readouts(table, tokens, 8, [1, 2], tokens_scored=16)
    assert [r["multiplier"] for r in out["plain"]] == [1] and out["logn"] == []
