"""The attention readout and the evaluation-time query temperature (posenc.model's hooks,
posenc.readout): exact against hand-computed attention, and free when not asked for."""

from __future__ import annotations

import math

import pytest
import torch

from posenc.encodings import build
from posenc.model import LanguageModel, ModelConfig, observing, query_temperature
from posenc.readout import attention_readout, readout_multipliers, readouts, uniform_entropy

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
    # Uniform over n keys: entropy ln n, normalised 1; the mean over the queries with
    # n = 2..12 keys, by a naive sum, and the reference the readout carries.
    mean_log = sum(math.log(n) for n in range(2, length + 1)) / (length - 1)
    assert out["uniform_entropy"] == pytest.approx(mean_log, rel=1e-12)
    torch.testing.assert_close(torch.tensor(out["entropy_nats"]), torch.full((2, 2), mean_log))
    torch.testing.assert_close(torch.tensor(out["entropy_normalised"]), torch.ones(2, 2))
    # Query i sees i + 1 keys, of which i + 1 - L_train lie at distance >= L_train.
    far = [(i + 1 - train_len) / (i + 1) for i in range(train_len, length)]
    torch.testing.assert_close(torch.tensor(out["far_mass"]), torch.full((2, 2), sum(far) / 8))


def test_readout_within_train_len_has_no_far_keys():
    out = attention_readout(model("rope"), torch.randint(0, 11, (200,)), 8, 8, tokens_scored=16)
    assert out["far_mass"] == [[None, None]] * 2
    assert all(0.0 <= e <= 1.0 + 1e-6 for row in out["entropy_normalised"] for e in row)
    # Raw entropy of attention over n keys is at most ln n: its mean at most uniform's.
    assert all(
        0.0 <= e <= out["uniform_entropy"] + 1e-6 for row in out["entropy_nats"] for e in row
    )


def test_uniform_attention_rises_by_the_mean_of_ln_n_where_the_normalised_entropy_cannot():
    # Dilution at its extreme: uniform attention at 1x and 16x L_train. Its raw entropy rises
    # by the difference of the mean ln n over the queries (just under ln 16: the mean of ln n
    # over n = 2..L is ln L - 1 + O(ln L / L)); its normalised entropy does not move.
    train_len, tokens = 4, torch.randint(0, 11, (400,))
    out = readouts(uniform_model(), tokens, train_len, [1, 2, 16], tokens_scored=64)
    at_1x, at_16x = out["plain"]
    rise = torch.tensor(at_16x["entropy_nats"]) - torch.tensor(at_1x["entropy_nats"]).mean(0)
    analytic = math.lgamma(65) / 63 - math.lgamma(5) / 3
    naive = sum(map(math.log, range(2, 65))) / 63 - sum(map(math.log, range(2, 5))) / 3
    assert analytic == pytest.approx(naive, rel=1e-12)
    assert analytic < math.log(16)
    torch.testing.assert_close(rise, torch.full_like(rise, analytic), rtol=0, atol=1e-5)
    assert at_16x["uniform_entropy"] - at_1x["uniform_entropy"] == pytest.approx(analytic)
    normalised = torch.tensor(at_16x["entropy_normalised"] + at_1x["entropy_normalised"])
    torch.testing.assert_close(normalised, torch.ones_like(normalised))


def test_uniform_entropy_by_hand():
    assert uniform_entropy(2) == pytest.approx(math.log(2))
    assert uniform_entropy(3) == pytest.approx((math.log(2) + math.log(3)) / 2)
    with pytest.raises(ValueError, match="no query with two keys"):
        uniform_entropy(1)


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


def test_readouts_cover_1x_and_the_longest_plainly_the_longest_under_logn_none_past_a_table():
    tokens = torch.randint(0, 11, (400,))
    assert readout_multipliers([4, 1, 2]) == [1, 4] and readout_multipliers([2]) == [1, 2]
    out = readouts(model("rope"), tokens, 8, [1, 2, 4], tokens_scored=32)
    assert [r["multiplier"] for r in out["plain"]] == [1, 4]
    assert [r["multiplier"] for r in out["logn"]] == [4]  # the same model up to L_train
    assert out["logn"][0]["window_bits"] != out["plain"][1]["window_bits"]
    assert out["logn"][0]["uniform_entropy"] == out["plain"][1]["uniform_entropy"]
    learned = build("learned", {}, d_model=D, n_heads=H, max_len=8)
    table = LanguageModel(11, ModelConfig(d_model=D, n_heads=H, n_layers=2), learned).eval()
    out = readouts(table, tokens, 8, [1, 2], tokens_scored=16)
    assert [r["multiplier"] for r in out["plain"]] == [1] and out["logn"] == []
