"""Each registry encoding against a deliberately naive loop written here, not in the library."""

import math

import pytest
import torch

from posenc.encodings import (
    ENCODINGS,
    REGISTRY,
    EncodingParams,
    PositionOutOfRange,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    build,
    rope_cos_sin,
    sinusoidal_table,
    t5_relative_bucket,
)
from posenc.model import Attention, ModelConfig


@pytest.fixture(autouse=True)
def float64_default():
    # Exact comparisons against the loops: float64 everywhere, restored after each test.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


@pytest.mark.parametrize("d", [2, 4, 16, 64])
@pytest.mark.parametrize("base", [10000.0, 500000.0, 10.0])
def test_sinusoidal_matches_formula(d, base):
    positions = torch.tensor([0, 1, 2, 7, 100, 4095])
    table = sinusoidal_table(positions, d, base, dtype=torch.float64)
    for row, p in enumerate(positions.tolist()):
        for i in range(d // 2):
            angle = p / base ** (2 * i / d)
            assert table[row, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert table[row, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoidal_seed_snippet_values():
    # The seed snippet's table (d=64): cos(PE10, PE11/20/60) = 0.966, 0.658, 0.490.
    pe = sinusoidal_table(torch.arange(100), 64)
    cos = torch.nn.functional.cosine_similarity
    got = [round(cos(pe[10], pe[j], dim=0).item(), 3) for j in (11, 20, 60)]
    assert got == [0.966, 0.658, 0.49]


@pytest.mark.parametrize("d", [3, 0, 63])
def test_sinusoidal_odd_dimension_is_an_error(d):
    with pytest.raises(ValueError, match="even"):
        build("sinusoidal", EncodingParams(d_model=d))


def test_learned_table_lookup_and_out_of_range():
    enc = build("learned", EncodingParams(d_model=8, max_len=10))
    pos = torch.tensor([0, 3, 9])
    torch.testing.assert_close(enc.input_encoding(pos), enc.table.weight[[0, 3, 9]])
    with pytest.raises(PositionOutOfRange, match="10 rows"):
        enc.input_encoding(torch.tensor([0, 10]))


def naive_rope(x, positions, base):
    """Su et al. 2021, eq. (34): rotate pair (x[2i], x[2i+1]) by p * base^(-2i/d)."""
    out = x.clone()
    d = x.shape[-1]
    for row, p in enumerate(positions.tolist()):
        for i in range(d // 2):
            t = p * base ** (-2 * i / d)
            a, b = x[..., row, 2 * i], x[..., row, 2 * i + 1]
            out[..., row, 2 * i] = a * math.cos(t) - b * math.sin(t)
            out[..., row, 2 * i + 1] = a * math.sin(t) + b * math.cos(t)
    return out


@pytest.mark.parametrize("d", [2, 8, 32])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
@pytest.mark.parametrize("positions", [[0, 1, 2, 3], [5, 17, 1000, 65536]])
def test_rope_matches_naive_rotation(d, base, positions):
    positions = torch.tensor(positions)
    x = torch.randn(2, 3, len(positions), d)
    cos, sin = rope_cos_sin(positions, d, base, dtype=torch.float64)
    torch.testing.assert_close(apply_rope(x, cos, sin), naive_rope(x, positions, base))


@pytest.mark.parametrize("d", [4, 16, 64])
def test_rope_half_split_gives_same_scores_after_permutation(d):
    # Half split puts pair i at (i, i + d/2); interleaved at (2i, 2i + 1).
    perm = torch.cat((torch.arange(0, d, 2), torch.arange(1, d, 2)))
    positions = torch.arange(12)
    q, k = torch.randn(12, d), torch.randn(12, d)
    cos, sin = rope_cos_sin(positions, d, dtype=torch.float64)
    inter = apply_rope(q, cos, sin, True) @ apply_rope(k, cos, sin, True).T
    half = apply_rope(q[:, perm], cos, sin, False) @ apply_rope(k[:, perm], cos, sin, False).T
    torch.testing.assert_close(inter, half)
    # ...and without the permutation the conventions genuinely differ.
    assert not torch.allclose(inter, apply_rope(q, cos, sin, False) @ apply_rope(k, cos, sin, False).T)


def test_rope_scores_depend_on_offset_only():
    d, q, k = 16, torch.randn(16), torch.randn(16)

    def score(p, r):
        cq, sq = rope_cos_sin(torch.tensor([p]), d, dtype=torch.float64)
        ck, sk = rope_cos_sin(torch.tensor([r]), d, dtype=torch.float64)
        return (apply_rope(q[None], cq, sq) @ apply_rope(k[None], ck, sk).T).item()

    for p, r in [(3, 1), (10, 10), (0, 7)]:
        assert score(p, r) == pytest.approx(score(p + 123, r + 123), abs=1e-10)


def test_rope_angles_stay_float32_for_bfloat16_models():
    # A bf16 model must not build positions in bf16: 1001 is not representable there (it
    # rounds to 1000), which the aliasing analysis shows; the registry computes angles wide.
    params = EncodingParams(d_model=8, n_heads=1)
    enc = build("rope", params)
    q = torch.ones(1, 1, 1, 8, dtype=torch.bfloat16)
    rotated, _ = enc.rotate(q, q, torch.tensor([1001]), torch.tensor([1001]))
    reference = naive_rope(q.double(), torch.tensor([1001]), 10000.0)
    assert (rotated.double() - reference).abs().max() < 2e-2  # bf16 rounding of the output only


def naive_alibi_slopes(h):
    """Press et al. 2022, the reference code's get_slopes, spelled out."""
    def pow2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(h).is_integer():
        return pow2(h)
    closest = 2 ** math.floor(math.log2(h))
    return pow2(closest) + naive_alibi_slopes(2 * closest)[0::2][: h - closest]


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 5, 6, 8, 12, 16, 20])
def test_alibi_slopes_follow_the_paper(heads):
    torch.testing.assert_close(alibi_slopes(heads), torch.tensor(naive_alibi_slopes(heads)))


def test_alibi_slopes_for_eight_heads():
    assert alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]


@pytest.mark.parametrize("heads", [1, 4, 6])
@pytest.mark.parametrize("causal", [True, False])
def test_alibi_bias_matches_loop(heads, causal):
    pos = torch.arange(7)
    bias = alibi_bias(pos, pos, heads, causal, dtype=torch.float64)
    slopes = naive_alibi_slopes(heads)
    for h in range(heads):
        for i in range(7):
            for j in range(7):
                dist = i - j if causal else abs(i - j)
                assert bias[h, i, j].item() == pytest.approx(-slopes[h] * dist)


def naive_t5_bucket(rel, bidirectional, num_buckets, max_distance):
    """Raffel et al. 2020 / mesh-tensorflow's _relative_position_bucket, one scalar at a time."""
    ret, n = 0, -rel
    if bidirectional:
        num_buckets //= 2
        if n < 0:
            ret += num_buckets
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    val = max_exact + int(
        math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    )
    return ret + min(val, num_buckets - 1)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (16, 64), (8, 20)])
def test_t5_buckets_match_reference(bidirectional, num_buckets, max_distance):
    rel = torch.arange(-300, 301)
    got = t5_relative_bucket(rel, bidirectional, num_buckets, max_distance)
    want = [naive_t5_bucket(r, bidirectional, num_buckets, max_distance) for r in rel.tolist()]
    assert got.tolist() == want
    assert got.max() < num_buckets


def naive_attention(x, attn, positions, causal):
    """Softmax attention written out, with the encoding's hooks applied by hand."""
    B, L, D = x.shape
    H = attn.cfg.n_heads
    qkv = x @ attn.qkv.weight.T + attn.qkv.bias
    q, k, v = (t.view(B, L, H, D // H).transpose(1, 2) for t in qkv.split(D, dim=-1))
    enc = attn.encoding
    if enc.acts_on == "qk":
        q, k = naive_rope(q, positions, enc.base), naive_rope(k, positions, enc.base)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D // H)
    if enc.acts_on == "bias":
        scores = scores + enc.score_bias(positions, positions, causal)
    if causal:
        scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    y = scores.softmax(-1) @ v
    return y.transpose(1, 2).reshape(B, L, D) @ attn.out.weight.T + attn.out.bias


@pytest.mark.parametrize("name", [n for n in ENCODINGS if REGISTRY[n].acts_on != "input"])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("heads", [1, 4])
def test_attention_matches_naive_softmax(name, causal, heads):
    torch.manual_seed(0)
    d = 16
    enc = build(name, EncodingParams(d_model=d, n_heads=heads))
    for p in enc.parameters():  # T5's table starts at zero: make the bias non-trivial
        torch.nn.init.normal_(p)
    attn = Attention(ModelConfig(d_model=d, n_heads=heads, causal=causal), enc)
    x, positions = torch.randn(2, 9, d), torch.arange(9)
    torch.testing.assert_close(attn(x, positions), naive_attention(x, attn, positions, causal))


def test_registry_declares_where_each_encoding_acts():
    assert set(ENCODINGS) == {"none", "sinusoidal", "learned", "rope", "alibi", "t5_bias"}
    for name, spec in REGISTRY.items():
        enc = build(name, EncodingParams(d_model=8, n_heads=2))
        assert enc.acts_on == spec.acts_on
    with pytest.raises(ValueError, match="unknown encoding 'pe3'"):
        build("pe3", EncodingParams(d_model=8))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("length", [9, 70])  # 70: several query blocks, the last one partial
def test_t5_attention_gradients_match_naive_softmax(causal, length):
    # A learned bias under autograd takes the model's blockwise path on the CPU: its forward
    # and every gradient (queries, keys, values through the projections, and the bias table)
    # must be the naive softmax attention's.
    torch.manual_seed(0)
    d, heads = 16, 4
    enc = build("t5_bias", EncodingParams(d_model=d, n_heads=heads, t5_max_distance=32))
    torch.nn.init.normal_(enc.bias.weight)
    attn = Attention(ModelConfig(d_model=d, n_heads=heads, causal=causal), enc)
    x, positions = torch.randn(2, length, d), torch.arange(length)
    weight = torch.randn(2, length, d)

    def grads(forward):
        attn.zero_grad()
        (forward(x, positions) * weight).sum().backward()
        return [p.grad.clone() for p in attn.parameters()]

    torch.testing.assert_close(attn(x, positions), naive_attention(x, attn, positions, causal))
    for got, want in zip(
        grads(attn), grads(lambda x, pos: naive_attention(x, attn, pos, causal)), strict=True
    ):
        torch.testing.assert_close(got, want)


def test_t5_bucket_cache_is_keyed_on_positions():
    params = EncodingParams(d_model=8, n_heads=2, t5_num_buckets=8, t5_max_distance=16)
    enc = build("t5_bias", params)
    torch.nn.init.normal_(enc.bias.weight)

    def uncached(q_pos, k_pos, causal):
        rel = k_pos.round().long()[None, :] - q_pos.round().long()[:, None]
        return enc.bias(t5_relative_bucket(rel, not causal, 8, 16)).permute(2, 0, 1)

    calls = [
        (torch.arange(12), True),
        (torch.arange(12), True),  # a hit: the same grid again
        (torch.arange(12), False),  # the causal flag is part of the key
        (torch.arange(12) + 5, True),  # shifted positions: same offsets, recomputed all the same
        (torch.arange(20), True),  # another length
        (torch.arange(20) * 0.5, True),  # Position Interpolation: float positions, new grid
        (torch.arange(20) * 0.5 + 0.2, True),  # rounds to the same positions: the same grid
    ]
    for positions, causal in calls:
        got = enc.score_bias(positions, positions, causal)
        assert torch.equal(got, uncached(positions, positions, causal))
    # A hit returns the cached grid itself; new positions replace it.
    first = enc.buckets(torch.arange(7), torch.arange(7), True)
    assert enc.buckets(torch.arange(7), torch.arange(7), True) is first
    assert enc.buckets(torch.arange(7) * 2, torch.arange(7) * 2, True) is not first
    # Changing the caller's positions in place cannot stale the cache: the key is a copy.
    positions = torch.arange(7)
    before = enc.buckets(positions, positions, True).clone()
    positions.mul_(3)
    assert not torch.equal(enc.buckets(positions, positions, True), before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rope_complex_form_matches_real_form_on_strided_views(dtype):
    # apply_rope multiplies complex numbers for float32/64; check it against the real form
    # written out here, on the strided views the model passes and on a view at an odd offset.
    positions = torch.arange(6)
    cos, sin = rope_cos_sin(positions, 8, dtype=torch.float64)
    qkv = torch.randn(2, 6, 3, 2, 8, dtype=dtype).permute(2, 0, 3, 1, 4)  # 3 × (B, H, L, 8)
    odd = torch.randn(2, 6, 9, dtype=dtype)[..., 1:]  # storage offset 1: copied first
    c, s = cos.to(dtype), sin.to(dtype)
    for x in (qkv[0], qkv[1], odd):
        x1, x2 = x[..., 0::2], x[..., 1::2]
        want = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
        torch.testing.assert_close(apply_rope(x, cos, sin), want)
