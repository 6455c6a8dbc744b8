"""Attention windows declared by an encoding (``PositionalEncoding.windows``: the RNoPE hybrid's
windowed RoPE layers) and query temperature by layer and by scope (``query_temperature``):
every attention path applies the window alike, a None window is the model as it was, and a
temperature on the whole logit scales an additive bias with the content."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from posenc.encodings import REGISTRY, build
from posenc.encodings.places import EncodingParams
from posenc.encodings.rotary import Rotary, RotaryParams
from posenc.model import (
    Attention,
    TransformerStack,
    observing,
    query_temperature,
    window_hidden,
)
from posenc.model_config import ModelConfig

D, H, L = 16, 4, 12


def attention(name: str, window: int | None, causal: bool = True, **cfg) -> Attention:
    torch.manual_seed(0)
    enc = build(name, cfg or None, d_model=D, n_heads=H)
    return Attention(
        ModelConfig(d_model=D, n_heads=H, n_layers=1, causal=causal), enc, True, window
    )


def observed(attn: Attention, x: torch.Tensor) -> torch.Tensor:
    """The explicit path, the one the readout takes (:func:`observing`)."""
    with observing(attn, lambda i, p: None):
        return attn(x, torch.arange(x.shape[1]))


def naive(attn: Attention, x: torch.Tensor, window: int | None, scale=None, scope="logits"):
    """Attention written out, query by query and key by key, with the window and a temperature
    ``scale`` (a list, one per query) on the whole logit or on q alone."""
    B, n, _ = x.shape
    positions = torch.arange(n)
    q, k, v = (
        t.view(B, n, H, D // H).transpose(1, 2)
        for t in (x @ attn.qkv.weight.T + attn.qkv.bias).split(D, dim=-1)
    )
    q, k = attn.encoding.rotate(q, k, positions, positions)
    bias = attn.encoding.score_bias(positions, positions, attn.cfg.causal)
    out = torch.zeros(B, H, n, D // H, dtype=torch.float64)
    for i in range(n):
        t = 1.0 if scale is None else float(scale[i])
        keys = [
            j
            for j in range(n)
            if (j <= i or not attn.cfg.causal) and (window is None or abs(i - j) < window)
        ]
        content = (q[:, :, i : i + 1] @ k[:, :, keys].transpose(-1, -2))[:, :, 0] / math.sqrt(
            D // H
        )
        b = 0.0 if bias is None else bias[:, i, keys]
        logits = t * (content + b) if scope == "logits" else t * content + b
        out[:, :, i] = (logits.double().softmax(-1)[..., None] * v[:, :, keys].double()).sum(-2)
    y = out.float().transpose(1, 2).reshape(B, n, D)
    return y @ attn.out.weight.T + attn.out.bias


# ----------------------------------------------------------------------------- windows


def test_the_hybrid_windows_its_rope_layers_and_declares_it():
    enc = build("rope_nope_hybrid", {"rope_nope_hybrid": {"window": 5}}, d_model=D, n_heads=H)
    assert enc.windows(4) == (5, None, 5, None)
    assert build("rope", None, d_model=D, n_heads=H).windows(3) == (None, None, None)
    stack = TransformerStack(ModelConfig(d_model=D, n_heads=H, n_layers=2), enc)
    assert stack.windows == (5, None)
    assert [b.attn.window for b in stack.blocks] == [5, None]


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_encoding_declares_windowed_as_its_module_windows(name):
    # The registry's capability and the module's layout say the same (both ways).
    enc = build(name, None, d_model=64, n_heads=4)  # every default fits heads of 16
    assert REGISTRY[name].windowed == any(w is not None for w in enc.windows(4))


def test_a_window_layout_must_give_a_window_per_layer():
    class Bad(Rotary):
        def windows(self, n_layers):
            return (0,) * n_layers

    class Short(Rotary):
        def windows(self, n_layers):
            return (3,)

    cfg = ModelConfig(d_model=8, n_heads=2, n_layers=2)
    for cls in (Bad, Short):
        with pytest.raises(ValueError, match=r"windows\(2\) must give one window per layer"):
            TransformerStack(cfg, cls(EncodingParams(d_model=8, n_heads=2, hyper=RotaryParams())))


def test_the_window_mask_counts_tokens_back_from_each_query():
    hidden = window_hidden(6, 3, causal=True)
    visible = [[j for j in range(6) if not hidden[i, j]] for i in range(6)]
    assert visible == [[0], [0, 1], [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]
    both = window_hidden(5, 2, causal=False)
    assert [[j for j in range(5) if not both[i, j]] for i in range(5)][2] == [1, 2, 3]
    assert window_hidden(5, None, causal=True) is None


# The paths: the fused SDPA path (RoPE: no bias), the SDPA path with a bias mask (ALiBi), the
# blockwise path of a bias that needs a gradient (T5 under autograd), and the explicit one.
CASES = [("rope_nope_hybrid", False), ("alibi", False), ("t5_bias", True)]


@pytest.mark.parametrize("name,grad", CASES)
@pytest.mark.parametrize("window", [1, 4])
def test_a_windowed_layer_ignores_tokens_beyond_its_window(name, grad, window):
    # Perturb token 0: a query i >= window cannot see it, in any path; one within can.
    attn = attention(name, window)
    x = torch.randn(2, L, D)
    moved = x.clone()
    moved[:, 0] += 3.0
    with torch.set_grad_enabled(grad):
        for run in (lambda t: attn(t, torch.arange(L)), lambda t: observed(attn, t)):
            a, b = run(x), run(moved)
            torch.testing.assert_close(a[:, window:], b[:, window:], rtol=0, atol=1e-6)
            assert not torch.allclose(a[:, :window], b[:, :window])


@pytest.mark.parametrize("name,grad", CASES)
@pytest.mark.parametrize("causal", [True, False])
def test_every_path_of_a_windowed_layer_agrees_with_the_naive_loop(name, grad, causal):
    attn = attention(name, 4, causal)
    x = torch.randn(2, L, D)
    want = naive(attn, x, 4)
    with torch.set_grad_enabled(grad):
        fused = attn(x, torch.arange(L))
        explicit = observed(attn, x)
    torch.testing.assert_close(fused, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(explicit, want, rtol=1e-5, atol=1e-5)
    # A window the sequence never reaches is full (causal) attention.
    wide = attention(name, L, causal)
    torch.testing.assert_close(wide(x, torch.arange(L)), naive(wide, x, None))


def test_a_windowed_learned_bias_trains_as_the_naive_softmax():
    # T5's table under autograd takes the blockwise path; its gradients with a window folded
    # into its bias are the naive softmax's (autograd through the written-out loop).
    attn = attention("t5_bias", 4)
    x = torch.randn(2, 40, D)  # more than one query block of the blockwise path
    weight = torch.randn(2, 40, D)

    def grads(forward):
        attn.zero_grad()
        (forward(x) * weight).sum().backward()
        return [p.grad.clone() for p in attn.parameters()]

    got = grads(lambda t: attn(t, torch.arange(40)))
    want = grads(lambda t: naive(attn, t, 4))
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["rope", "alibi", "t5_bias"])
def test_no_window_is_bit_identical_to_the_paths_as_they_were(name):
    # The code before windows, written out: SDPA with is_causal, or the bias with the future
    # masked as a (1, H, L, L) mask.
    attn = attention(name, None)
    x = torch.randn(2, L, D)
    with torch.no_grad():
        got = attn(x, torch.arange(L))
        q, k, v = attn.qkv(x).view(2, L, 3, H, D // H).permute(2, 0, 3, 1, 4)
        q, k = attn.encoding.rotate(q, k, torch.arange(L), torch.arange(L))
        bias = attn.encoding.score_bias(torch.arange(L), torch.arange(L), True)
        if bias is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            future = torch.ones(L, L, dtype=torch.bool).triu(1)
            mask = bias.masked_fill(future, float("-inf"))[None]
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        want = attn.out(y.transpose(1, 2).reshape(2, L, D))
    assert torch.equal(got, want)


# ----------------------------------------------------------------------------- temperature


def ramp(positions: torch.Tensor) -> torch.Tensor:
    return 1.0 + positions.to(torch.float64) / 4


@pytest.mark.parametrize("scope", ["logits", "query"])
@pytest.mark.parametrize("name", ["alibi", "t5_bias", "rope_nope_hybrid"])
def test_a_temperature_scales_the_whole_logit_or_the_query_alone(name, scope):
    attn = attention(name, 4)
    x = torch.randn(2, L, D)
    scale = ramp(torch.arange(L))
    with torch.no_grad(), query_temperature(attn, ramp, scope=scope):
        got, explicit = attn(x, torch.arange(L)), observed(attn, x)
    want = naive(attn, x, 4, scale, scope)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(explicit, want, rtol=1e-5, atol=1e-5)


def test_the_scopes_differ_only_where_there_is_a_bias():
    x = torch.randn(2, L, D)
    for name, differ in (("alibi", True), ("rope", False)):
        attn = attention(name, None)
        with torch.no_grad():
            with query_temperature(attn, ramp):
                whole = attn(x, torch.arange(L))
            with query_temperature(attn, ramp, scope="query"):
                alone = attn(x, torch.arange(L))
        assert torch.equal(whole, alone) != differ, name


def test_a_temperature_scales_the_chosen_layers_only_and_is_undone():
    enc = build("rope_nope_hybrid", None, d_model=D, n_heads=H)
    stack = TransformerStack(ModelConfig(d_model=D, n_heads=H, n_layers=2), enc)
    with query_temperature(stack, ramp, layers=[1]):
        assert [b.attn.query_scale for b in stack.blocks] == [None, ramp]
    with query_temperature(stack, ramp, scope="query"):
        assert [b.attn.query_scale for b in stack.blocks] == [ramp, ramp]
        assert [b.attn.scale_bias for b in stack.blocks] == [False, False]
    assert [(b.attn.query_scale, b.attn.scale_bias) for b in stack.blocks] == [(None, True)] * 2
    with pytest.raises(ValueError, match=r"layers \[2\] out of range: the model has 2"):
        with query_temperature(stack, ramp, layers=[2]):
            pass
    with pytest.raises(ValueError, match="scope must be one of logits, query"):
        with query_temperature(stack, ramp, scope="bias"):
            pass
