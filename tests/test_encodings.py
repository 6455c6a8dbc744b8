"""Encodings against naive references.

Generic tests run over the whole registry, plus toy encodings registered here as a plugin would
register them (a 7th, 8th and 9th encoding, one per place of action): every hook equals the
naive per-element loop its spec carries (``EncodingSpec.reference``), and attention, a stack and
their gradients equal a softmax written out here that applies the hooks whatever they do.
Then each built-in's own formula against published values and loops written here, not in the
library (these name their encoding: they test that encoding's formula).
"""

import dataclasses
import math

import matplotlib.colors
import matplotlib.markers
import pytest
import torch
from configs import encoding_block

from posenc.encodings import (
    ENCODINGS,
    REGISTRY,
    ALiBi,
    BiasEncoding,
    EncodingParams,
    EncodingSpec,
    FireParams,
    InputEncoding,
    PositionalEncoding,
    PositionOutOfRange,
    QKEncoding,
    Rotary,
    RotaryParams,
    Sinusoidal,
    SinusoidalParams,
    T5Params,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    build,
    encoding_params,
    head_layout,
    override,
    params_schema,
    register,
    rope_cos_sin,
    sinusoidal_reference,
    sinusoidal_table,
    t5_bucket_by_hand,
    t5_relative_bucket,
)
from posenc.model import Attention, ModelConfig, TransformerStack
from posenc.plotting import style
from posenc.probe import probe

BUILTINS = {"none", "sinusoidal", "learned", "rope", "alibi", "t5_bias"}


@pytest.fixture(autouse=True)
def float64_default():
    # Exact comparisons against the loops: float64 everywhere, restored after each test.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


# ----------------------------------------------------------------------------- toy encodings
# Registered from outside, as a plugin does: they must pass every generic test unchanged.


class Base500Sinusoidal(Sinusoidal):
    """The sinusoidal table with base 500 instead of the config's."""

    def __init__(self, params: EncodingParams):
        super().__init__(dataclasses.replace(params, hyper=SinusoidalParams(base=500.0)))


class FirstPairTurn(QKEncoding):
    """Turns the first pair (x[0], x[1]) of every query and key by p radians; the rest stays."""

    def rotate(self, q, k, q_pos, k_pos):
        def turn(x, positions):
            c, s = positions.to(x.dtype).cos()[:, None], positions.to(x.dtype).sin()[:, None]
            a, b = x[..., :1], x[..., 1:2]
            return torch.cat((a * c - b * s, a * s + b * c, x[..., 2:]), dim=-1)

        return turn(q, q_pos), turn(k, k_pos)


def first_pair_reference(module, q, k, q_pos, k_pos):
    def turn(x, positions):
        rows = x.detach().double().reshape(-1, x.shape[-2], x.shape[-1]).tolist()
        for matrix in rows:
            for vector, p in zip(matrix, positions.tolist(), strict=True):
                a, b = vector[0], vector[1]
                vector[0] = a * math.cos(p) - b * math.sin(p)
                vector[1] = a * math.sin(p) + b * math.cos(p)
        return torch.tensor(rows).reshape(x.shape)

    return turn(q, q_pos), turn(k, k_pos)


class GaussianBias(BiasEncoding):
    """bias(h, i, j) = -((i - j) / w_h)^2 with w_h = 4 (h + 1), causal or not."""

    def score_bias(self, q_pos, k_pos, causal):
        width = 4.0 * torch.arange(1, self.params.n_heads + 1, dtype=torch.float64)
        rel = q_pos.double()[:, None] - k_pos.double()[None, :]
        return -((rel[None] / width[:, None, None]) ** 2)


def gaussian_reference(module, q_pos, k_pos, causal):
    bias = [
        [[-(((i - j) / (4.0 * (h + 1))) ** 2) for j in k_pos.tolist()] for i in q_pos.tolist()]
        for h in range(module.params.n_heads)
    ]
    return torch.tensor(bias).reshape(module.params.n_heads, len(q_pos), len(k_pos))


def toy(name, acts_on, module, reference, relative, **capabilities):
    return EncodingSpec(
        name,
        acts_on,
        module,
        relative=relative,
        learned=False,
        citation="a test's toy",
        summary="Registered by tests/test_encodings.py.",
        reference=reference,
        **capabilities,
    )


TOYS = {
    s.name: s
    for s in (
        toy(
            "toy_sinusoidal_500",
            "input",
            Base500Sinusoidal,
            sinusoidal_reference,
            False,
            waves=True,
        ),
        toy(
            "toy_first_pair", "qk", FirstPairTurn, first_pair_reference, True, planar_rotation=True
        ),
        toy("toy_gaussian", "bias", GaussianBias, gaussian_reference, True),
    )
}


@pytest.fixture(params=[*REGISTRY, *TOYS])
def spec(request, registered):
    """Each registered encoding, and each toy, registered for the test and removed after."""
    if request.param in TOYS:
        registered(TOYS[request.param])
    return REGISTRY[request.param]


# ----------------------------------------------------------------------------- generic helpers


def place_of_action(module: PositionalEncoding) -> type:
    """The base class of the module's place of action (PositionalEncoding: none)."""
    places = [c for c in (InputEncoding, QKEncoding, BiasEncoding) if isinstance(module, c)]
    assert len(places) <= 1, f"{type(module).__name__} acts in several places: {places}"
    return places[0] if places else PositionalEncoding


class ReferenceHooks:
    """The three hooks of ``module`` computed by its spec's naive reference where the module
    acts, neutral elsewhere; the calling convention (EncodingSpec's docstring) is its place's."""

    def __init__(self, spec: EncodingSpec, module: PositionalEncoding):
        self.spec, self.module, self.place = spec, module, place_of_action(module)

    def input_encoding(self, positions):
        if self.place is InputEncoding:
            return self.spec.reference(self.module, positions)
        return None

    def rotate(self, q, k, q_pos, k_pos):
        if self.place is QKEncoding:
            return self.spec.reference(self.module, q, k, q_pos, k_pos)
        return q, k

    def score_bias(self, q_pos, k_pos, causal):
        if self.place is BiasEncoding:
            return self.spec.reference(self.module, q_pos, k_pos, causal)
        return None


def random_module(name: str, config: dict | None = None, **shape) -> PositionalEncoding:
    """Encoding ``name`` at ``shape`` with its hyper-parameters from ``config`` (an
    ``encoding:`` block), float64 angles and every parameter random (T5's table starts at
    zero, which would make its bias trivially right). Heads here may be 4 wide, where partial
    RoPE's default quarter would rotate one dimension (refused): it rotates half of each unless
    told otherwise; its quarter is tested on wider heads at the end of this file."""
    torch.manual_seed(0)
    config = dict(config or {})
    config["rope_partial"] = {"fraction": 0.5, **config.get("rope_partial", {})}
    module = build(name, config, **shape, angle_dtype=torch.float64)
    for p in module.parameters():
        torch.nn.init.normal_(p)
    return module


def assert_same(got, want):
    if want is None or got is None:
        assert got is None and want is None, (got, want)
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    else:
        torch.testing.assert_close(got.double(), want.double())


def naive_attention(x, attn, positions, causal, hooks=None, window=None):
    """Softmax attention written out. The encoding acts through its hooks (``hooks``: the
    module's own by default, or :class:`ReferenceHooks`), whatever they do; ``window``: keys
    more than ``window - 1`` tokens away hidden, pair by pair."""
    hooks = attn.encoding if hooks is None else hooks
    B, L, D = x.shape
    H = attn.cfg.n_heads
    qkv = x @ attn.qkv.weight.T + attn.qkv.bias
    q, k, v = (t.view(B, L, H, D // H).transpose(1, 2) for t in qkv.split(D, dim=-1))
    q, k = hooks.rotate(q, k, positions, positions)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D // H)
    bias = hooks.score_bias(positions, positions, causal)
    if bias is not None:
        scores = scores + bias
    if causal:
        scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    if window is not None:
        far = torch.tensor([[abs(i - j) >= window for j in range(L)] for i in range(L)])
        scores = scores.masked_fill(far, float("-inf"))
    y = scores.softmax(-1) @ v
    return y.transpose(1, 2).reshape(B, L, D) @ attn.out.weight.T + attn.out.bias


class _Neutral:
    """No position: a layer the encoding's layout leaves out."""

    def rotate(self, q, k, q_pos, k_pos):
        return q, k

    def score_bias(self, q_pos, k_pos, causal):
        return None


def naive_stack(x, stack, positions, hooks=None):
    """The pre-LayerNorm stack written out around :func:`naive_attention`; the encoding acts
    in the layers its declared layout names (``layers``), every one unless it says so, and each
    layer attends within its declared window (``windows``)."""
    hooks = stack.encoding if hooks is None else hooks
    pe = hooks.input_encoding(positions)
    if pe is not None:
        x = x + pe
    acts = stack.encoding.layers(len(stack.blocks))
    windows = stack.encoding.windows(len(stack.blocks))
    for block, here, window in zip(stack.blocks, acts, windows, strict=True):
        layer = hooks if here else _Neutral()
        x = x + naive_attention(
            block.ln1(x), block.attn, positions, stack.cfg.causal, layer, window
        )
        x = x + block.mlp(block.ln2(x))
    return x


# ----------------------------------------------------------------------------- generic tests

# (shape, encoding: block); a setting applies to every encoding that declares it.
PARAMS = [
    (dict(d_model=8, n_heads=1, max_len=4096), {}),
    (
        dict(d_model=12, n_heads=3, max_len=4096),
        encoding_block(base=500.0, interleaved=False, num_buckets=16, max_distance=64),
    ),
    (
        dict(d_model=64, n_heads=4, max_len=4096),
        override(
            encoding_block(base=500000.0, num_buckets=8, max_distance=20), "sinusoidal", base=10.0
        ),
    ),
]
# (query positions, key positions; None: the very same tensor, self-attention's path)
POSITIONS = [([0, 1, 2, 3, 4, 5, 6], None), ([3, 17, 100, 1000, 4095], [0, 2, 64, 300, 4000, 9])]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: f"d{p[0]['d_model']}h{p[0]['n_heads']}")
@pytest.mark.parametrize("positions", POSITIONS, ids=["self", "cross"])
@pytest.mark.parametrize("causal", [True, False])
def test_hooks_match_the_naive_reference(spec, params, positions, causal):
    shape, config = params
    module = random_module(spec.name, config, **shape)
    reference = ReferenceHooks(spec, module)
    q_pos = torch.tensor(positions[0])
    k_pos = q_pos if positions[1] is None else torch.tensor(positions[1])
    heads, head_dim = shape["n_heads"], shape["d_model"] // shape["n_heads"]
    q, k = torch.randn(2, heads, len(q_pos), head_dim), torch.randn(2, heads, len(k_pos), head_dim)
    assert_same(module.input_encoding(q_pos), reference.input_encoding(q_pos))
    assert_same(module.rotate(q, k, q_pos, k_pos), reference.rotate(q, k, q_pos, k_pos))
    assert_same(module.score_bias(q_pos, k_pos, causal), reference.score_bias(q_pos, k_pos, causal))


def test_registry_declares_where_each_encoding_acts(spec):
    module = build(spec.name, {"rope_partial": {"fraction": 0.5}}, d_model=8, n_heads=2)
    assert module.acts_on == spec.acts_on
    # Its base class is its place of action: the analyses' kernel() and workload() come from it.
    assert place_of_action(module).acts_on == spec.acts_on
    # Every encoding that acts somewhere carries the naive reference its hook is held to.
    assert (spec.reference is not None) == spec.positional, spec.name


def test_builtins_are_registered_and_unknown_names_are_errors():
    assert BUILTINS <= set(ENCODINGS)
    assert tuple(REGISTRY) == ENCODINGS
    with pytest.raises(ValueError, match="unknown encoding 'pe3'"):
        build("pe3", d_model=8)


def test_declared_capabilities_are_true_to_the_module(spec):
    # What the analyses read off the spec, the module does: waves (a frequency table),
    # RoPE's scaling hook (rescalable), a transform that turns coordinate pairs (planar).
    module = build(spec.name, {"rope_partial": {"fraction": 0.5}}, d_model=8, n_heads=2)
    positions = torch.arange(5)
    assert spec.waves == (module.frequencies() is not None), spec.name
    assert spec.waves == (module.angle_table(positions, torch.float64) is not None), spec.name
    if spec.rescalable:
        assert module.scaling is None and 0 < module.rotated_width <= module.params.head_dim
        assert module.base == module.params.hyper.base
    if spec.planar_rotation:  # T(1) e_j stays within the pair of e_j
        basis = torch.eye(module.params.head_dim)[:, None, None, :]
        one = torch.tensor([1])
        moved = module.rotate(basis, basis, one, one)[0][:, 0, 0]
        support = [set(row.nonzero().flatten().tolist()) | {j} for j, row in enumerate(moved)]
        for pair in support:
            assert len(pair) <= 2 and all(support[c] == pair for c in pair), spec.name
    assert module.spec is REGISTRY[spec.name]  # build() says which entry it came from


def test_hyper_parameters_are_read_from_the_encodings_own_block():
    assert build("rope", d_model=8).base == RotaryParams().base  # left out: its default
    config = {"rope": {"base": 500.0}, "xpos": {"base": 7.0}}
    assert build("rope", config, d_model=8).base == 500.0
    assert build("xpos", config, d_model=8).base == 7.0
    assert build("rope_partial", config, d_model=8).base == RotaryParams().base
    with pytest.raises(ValueError, match=r"unknown config key encoding\.rope\.bsae"):
        build("rope", {"rope": {"bsae": 10}}, d_model=8)
    with pytest.raises(ValueError, match=r"encoding\.alibi\.slope \(allowed here: none\)"):
        build("alibi", {"alibi": {"slope": 1}}, d_model=8)
    with pytest.raises(ValueError, match=r"config key encoding\.rope_base = 10000"):
        build("rope", {"rope_base": 10000}, d_model=8)  # a flat block of old
    # An analysis that sweeps a setting sets it where an encoding has one.
    assert override(config, "rope", base=3.0)["rope"] == {"base": 3.0}
    assert override(config, "alibi", base=3.0) == config


def test_hyper_parameters_declare_the_config_schema(registered):
    assert params_schema(T5Params)["properties"]["num_buckets"] == {
        "type": "integer",
        "minimum": 4,
        "multipleOf": 2,
        "default": 32,
        "description": "buckets of relative distance (T5's 32)",
    }
    assert REGISTRY["fire"].metadata()["params"] == params_schema(FireParams)
    assert REGISTRY["alibi"].metadata()["params"] is None

    @dataclasses.dataclass(frozen=True)
    class NoDefault:
        width: int

    @dataclasses.dataclass(frozen=True)
    class NotAConfigType:
        widths: tuple = (1, 2)

    for params, field in ((NoDefault, "NoDefault.width"), (NotAConfigType, "widths")):
        with pytest.raises(TypeError, match=field):
            registered(dataclasses.replace(TOYS["toy_gaussian"], name="toy_p", params=params))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("heads", [1, 4])
def test_attention_matches_naive_softmax(spec, causal, heads):
    d = 16
    enc = random_module(spec.name, d_model=d, n_heads=heads)
    attn = Attention(ModelConfig(d_model=d, n_heads=heads, causal=causal), enc)
    x, positions = torch.randn(2, 9, d), torch.arange(9)
    got = attn(x, positions)
    torch.testing.assert_close(got, naive_attention(x, attn, positions, causal))
    reference = ReferenceHooks(spec, enc)
    torch.testing.assert_close(got, naive_attention(x, attn, positions, causal, reference))


@pytest.mark.parametrize("causal", [True, False])
def test_stack_matches_naive_stack(spec, causal):
    # Two layers: the stack computes a score bias once for every layer and adds the input
    # encoding once, before the first.
    d, heads = 16, 4
    enc = random_module(spec.name, d_model=d, n_heads=heads)
    stack = TransformerStack(ModelConfig(d_model=d, n_heads=heads, n_layers=2, causal=causal), enc)
    x, positions = torch.randn(2, 9, d), torch.arange(9)
    got = stack(x, positions)
    torch.testing.assert_close(got, naive_stack(x, stack, positions))
    torch.testing.assert_close(got, naive_stack(x, stack, positions, ReferenceHooks(spec, enc)))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("length", [9, 70])  # 70: several query blocks, the last one partial
def test_stack_gradients_match_naive_softmax(spec, causal, length):
    # A learned bias (T5's) under autograd takes the model's blockwise path on the CPU: its
    # forward and every gradient (queries, keys, values through the projections, and the
    # encoding's own parameters: a learned table, a bias table) must be the naive softmax
    # attention's, for every encoding.
    d, heads = 16, 4
    enc = random_module(spec.name, {"t5_bias": {"max_distance": 32}}, d_model=d, n_heads=heads)
    stack = TransformerStack(ModelConfig(d_model=d, n_heads=heads, n_layers=1, causal=causal), enc)
    x, positions = torch.randn(2, length, d), torch.arange(length)
    weight = torch.randn(2, length, d)

    def grads(forward):
        stack.zero_grad()
        (forward(x, positions) * weight).sum().backward()
        return [p.grad.clone() for p in stack.parameters()]

    torch.testing.assert_close(stack(x, positions), naive_stack(x, stack, positions))
    for got, want in zip(
        grads(stack), grads(lambda x, pos: naive_stack(x, stack, pos)), strict=True
    ):
        torch.testing.assert_close(got, want)


def test_every_encoding_has_a_style(spec):
    look = style(spec.name)
    assert matplotlib.colors.is_color_like(look["color"])
    assert look["marker"] in matplotlib.markers.MarkerStyle.markers
    if spec.color:
        assert look["color"] == spec.color
    else:  # assigned: a colour no other registered encoding declares
        assert look["color"] not in {s.color for s in REGISTRY.values()}
    assert style(f"{spec.name}+PI")["color"] == look["color"]  # a variant keeps its base's colour


def test_register_rejects_bad_specs():
    before = dict(REGISTRY)
    good = TOYS["toy_gaussian"]
    with pytest.raises(ValueError, match="registered already"):
        register(dataclasses.replace(good, name=next(iter(REGISTRY))))
    with pytest.raises(ValueError, match="must be an identifier"):
        register(dataclasses.replace(good, name="gauss-2"))
    with pytest.raises(ValueError, match="acts on 'bias'"):
        register(dataclasses.replace(good, acts_on="qk"))
    with pytest.raises(TypeError, match="EncodingSpec"):
        register(GaussianBias)
    # Capabilities that contradict the place or each other.
    with pytest.raises(ValueError, match="planar_rotation=True needs acts_on='qk'"):
        register(dataclasses.replace(good, planar_rotation=True))
    turn = TOYS["toy_first_pair"]
    with pytest.raises(ValueError, match="rescalable=True needs"):
        register(dataclasses.replace(turn, rescalable=True))  # no waves to stretch
    with pytest.raises(ValueError, match="need rescalable=True"):
        register(dataclasses.replace(turn, extensions=("pi",)))
    assert REGISTRY == before  # nothing half-registered


# ----------------------------------------------------------------------------- own formulas


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


@pytest.mark.parametrize("table", ["library", "reference"])
def test_sinusoidal_seed_snippet_values(table):
    # The seed snippet's table (d=64): cos(PE10, PE11/20/60) = 0.966, 0.658, 0.490; the
    # registry's naive reference must give them too, not just agree with the library.
    positions = torch.arange(100)
    if table == "library":
        pe = sinusoidal_table(positions, 64)
    else:
        pe = REGISTRY["sinusoidal"].reference(build("sinusoidal", d_model=64), positions)
    cos = torch.nn.functional.cosine_similarity
    got = [round(cos(pe[10], pe[j], dim=0).item(), 3) for j in (11, 20, 60)]
    assert got == [0.966, 0.658, 0.49]


@pytest.mark.parametrize("d", [3, 0, 63])
def test_sinusoidal_odd_dimension_is_an_error(d):
    with pytest.raises(ValueError, match="even"):
        build("sinusoidal", d_model=d)


def test_learned_table_lookup_and_out_of_range():
    enc = build("learned", d_model=8, max_len=10)
    pos = torch.tensor([0, 3, 9])
    torch.testing.assert_close(enc.input_encoding(pos), enc.table.weight[[0, 3, 9]])
    with pytest.raises(PositionOutOfRange, match="10 rows"):
        enc.input_encoding(torch.tensor([0, 10]))
    with pytest.raises(PositionOutOfRange):  # the reference knows it too
        REGISTRY["learned"].reference(enc, torch.tensor([0, 10]))


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
    plain = apply_rope(q, cos, sin, False) @ apply_rope(k, cos, sin, False).T
    assert not torch.allclose(inter, plain)


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
    enc = build("rope", d_model=8, n_heads=1)
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
    # The paper's example: 1/2, 1/4, ..., 1/256; the registry's reference says so too.
    assert alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]
    enc = build("alibi", d_model=16, n_heads=8)
    bias = REGISTRY["alibi"].reference(enc, torch.tensor([1]), torch.tensor([0]), True)
    assert bias.flatten().tolist() == [-(2.0**-k) for k in range(1, 9)]


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


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (16, 64), (8, 20)])
def test_t5_buckets_match_reference(bidirectional, num_buckets, max_distance):
    rel = torch.arange(-300, 301)
    got = t5_relative_bucket(rel, bidirectional, num_buckets, max_distance)
    want = [t5_bucket_by_hand(r, bidirectional, num_buckets, max_distance) for r in rel.tolist()]
    assert got.tolist() == want
    assert got.max() < num_buckets


def test_t5_bucket_cache_is_keyed_on_positions():
    enc = build(
        "t5_bias", {"t5_bias": {"num_buckets": 8, "max_distance": 16}}, d_model=8, n_heads=2
    )
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


# ----------------------------------------------------------------------------- relative claims


@pytest.mark.parametrize("causal", [True, False])
def test_relative_flag_is_true_to_the_stack(spec, causal):
    # ``relative`` says scores depend on positions only through p - q: then shifting every
    # position leaves a stack's output as it is; an absolute encoding's output moves. FIRE's
    # threshold is set low so that its queries pass it (below it, it is relative too).
    d, heads = 16, 4
    enc = random_module(spec.name, {"fire": {"threshold": 4.0}}, d_model=d, n_heads=heads)
    stack = TransformerStack(ModelConfig(d_model=d, n_heads=heads, n_layers=2, causal=causal), enc)
    x, positions = torch.randn(2, 9, d), torch.arange(9)
    with torch.no_grad():
        base = stack(x, positions)
        moved = [stack(x, positions + shift) for shift in (1, 37, 1000)]
    change = max(((m - base).abs().max() / base.abs().max()).item() for m in moved)
    if spec.relative:
        assert change < 1e-10, spec.name
    elif spec.positional:
        assert change > 1e-4, spec.name


# ----------------------------------------------------------------------------- kerple, fire


def test_kerple_is_the_log_kernel_with_positive_parameters():
    enc = build("kerple", d_model=8, n_heads=2)
    with torch.no_grad():  # r1 = (1.5, 0.25), r2 = (0.5, 2): raw = log(e^r - 1)
        enc.r1_raw.copy_(torch.tensor([1.5, 0.25]).expm1().log())
        enc.r2_raw.copy_(torch.tensor([0.5, 2.0]).expm1().log())
    bias = enc.score_bias(torch.tensor([0, 3, 10]), torch.tensor([0, 1, 10]), causal=True)
    for h, (r1, r2) in enumerate([(1.5, 0.5), (0.25, 2.0)]):
        for a, i in enumerate([0, 3, 10]):
            for b, j in enumerate([0, 1, 10]):
                want = -r1 * math.log(1 + r2 * abs(i - j))
                assert bias[h, a, b].item() == pytest.approx(want, rel=1e-12, abs=1e-15)
    # Any raw value is a valid parameter: the bias stays a penalty, zero at distance 0.
    with torch.no_grad():
        enc.r1_raw.fill_(-40.0)
        enc.r2_raw.fill_(40.0)
    bias = enc.score_bias(torch.arange(5), torch.arange(5), causal=False)
    assert (bias <= 0).all() and torch.equal(bias.diagonal(dim1=1, dim2=2), torch.zeros(2, 5))


def test_kerple_starts_as_chi_et_al_code():
    # r1 ~ U(0, 2), r2 ~ U(0, 1) per head, each at least 1e-2.
    torch.manual_seed(0)
    enc = build("kerple", d_model=4000, n_heads=2000)
    r1 = torch.nn.functional.softplus(enc.r1_raw.detach())
    r2 = torch.nn.functional.softplus(enc.r2_raw.detach())
    assert r1.shape == r2.shape == (2000,)
    assert 1e-2 - 1e-12 <= r1.min() and r1.max() <= 2 and abs(r1.mean() - 1) < 0.1
    assert 1e-2 - 1e-12 <= r2.min() and r2.max() <= 1 and abs(r2.mean() - 0.5) < 0.05


def test_fire_starts_as_li_et_al_code():
    enc = build("fire", {"fire": {"threshold": 64.0}}, d_model=12, n_heads=3)
    assert enc.c.item() == pytest.approx(0.1)
    assert enc.threshold().item() == 64.0
    assert enc.hidden.weight.shape == (32, 1) and enc.out.weight.shape == (3, 32)
    # Left out of the config, the threshold is the one FIRE declares.
    default = build("fire", d_model=12, n_heads=3).threshold().item()
    assert default == FireParams().threshold
    with pytest.raises(ValueError, match="positive MLP width"):
        build("fire", {"fire": {"mlp_width": 0}}, d_model=12, n_heads=3)


def test_fire_interpolates_past_its_threshold():
    # Below L the normaliser is psi(L): the bias depends on i - j alone. Past it, every
    # query's first key maps to psi(i) / psi(i) = 1 and its own position to 0, whatever i:
    # distances are squeezed into [0, 1] however long the sequence (progressive interpolation).
    enc = random_module("fire", {"fire": {"threshold": 16.0}}, d_model=8, n_heads=2)
    with torch.no_grad():
        enc.threshold_scale.fill_(1.0)
        enc.c.fill_(0.1)
        short = torch.arange(10)
        torch.testing.assert_close(
            enc.score_bias(short + 5, short + 5, True), enc.score_bias(short, short, True)
        )
        far = torch.tensor([0.0, 16, 100, 1000, 65536])
        bias = enc.score_bias(far, far, True)  # (H, 5, 5)
        first_key, own = bias[:, 1:, 0], bias.diagonal(dim1=1, dim2=2)[:, 1:]
        # (1 up to the normaliser's eps = 1e-6, times the MLP's slope)
        torch.testing.assert_close(
            first_key, first_key[:, :1].expand_as(first_key), rtol=0, atol=1e-4
        )
        torch.testing.assert_close(own, own[:, :1].expand_as(own))
        # A float position (Position Interpolation) is as valid as an integer one.
        assert enc.score_bias(far / 3, far / 3, True).isfinite().all()


def test_fire_bias_stays_wide_under_autocast():
    # bfloat16 autocast would run the MLP in bfloat16; the bias is computed as without it.
    enc = random_module("fire", d_model=8, n_heads=2)
    positions = torch.arange(300)
    want = enc.score_bias(positions, positions, True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = enc.score_bias(positions, positions, True)
    assert got.dtype == want.dtype == torch.float64
    torch.testing.assert_close(got, want)


# ----------------------------------------------------------------------------- xpos, rope_partial


def _scores(enc, q, k, q_pos, k_pos):
    """<T(n) q, T(m) k> for every query n and key m. (..., Lq, Lk)."""
    rq, rk = enc.rotate(q, k, q_pos, k_pos)
    return rq @ rk.transpose(-1, -2)


@pytest.mark.parametrize("interleaved", [True, False])
def test_xpos_scores_are_rope_scores_decayed_per_pair(interleaved):
    # Sun et al.: <q_n, k_m> carries zeta_i^((n - m)/gamma) on pair i, zeta_i = (2i/d + 0.4)/1.4,
    # and is RoPE's pair score otherwise; written out here from RoPE's own rotation per pair.
    d, gamma = 8, 512.0
    config = encoding_block(interleaved=interleaved)
    xpos = build("xpos", config, d_model=d, angle_dtype=torch.float64)
    rope = build("rope", config, d_model=d, angle_dtype=torch.float64)
    q, k = torch.randn(3, 5, d), torch.randn(3, 6, d)
    q_pos, k_pos = torch.tensor([0, 3, 17, 600, 2000]), torch.tensor([1, 2, 64, 300, 1999, 2000])
    want = torch.zeros(3, 5, 6)
    for i in range(d // 2):
        pair = [2 * i, 2 * i + 1] if interleaved else [i, i + d // 2]
        mask = torch.zeros(d)
        mask[pair] = 1.0
        zeta = (2 * i / d + 0.4) / 1.4
        decay = zeta ** ((q_pos[:, None] - k_pos[None, :]).double() / gamma)  # (Lq, Lk)
        want += decay * _scores(rope, q * mask, k * mask, q_pos, k_pos)
    torch.testing.assert_close(_scores(xpos, q, k, q_pos, k_pos), want)


@pytest.mark.parametrize(
    "dtype,shifts", [(torch.float64, (1, 1000, 2**16, 2**20)), (torch.float32, (1, 37, 1000))]
)
def test_xpos_scores_depend_on_the_offset_only(dtype, shifts):
    # Centred scales move with the positions, so a shift leaves them bit for bit as they were:
    # what changes is RoPE's rounding of the angles, about eps·(p + s) each.
    enc = build("xpos", d_model=16, angle_dtype=dtype)
    q, k = torch.randn(2, 7, 16, dtype=dtype), torch.randn(2, 7, 16, dtype=dtype)
    positions = torch.tensor([0, 1, 5, 9, 30, 31, 63])
    base = _scores(enc, q, k, positions, positions)
    for shift in shifts:
        moved = _scores(enc, q, k, positions + shift, positions + shift)
        change = ((moved - base).abs().max() / base.abs().max()).item()
        assert change < 8 * torch.finfo(dtype).eps * (shift + 64), shift


def test_xpos_scales_are_centred_and_bounded():
    from posenc.encodings import PositionOutOfRange, xpos_max_span, xpos_scales

    # The limit: gamma log(max) / -log(0.4/1.4), whatever the head width.
    limits = {torch.float32: 36260.7, torch.float16: 4532.4, torch.float64: 290085.8}
    for dtype, limit in limits.items():
        assert xpos_max_span(64, 512.0, dtype) == pytest.approx(limit, rel=1e-5)
        assert xpos_max_span(8, 512.0, dtype) == pytest.approx(limit, rel=1e-5)
    # Scale 1 at the midpoint of every query and key position; a query's scale times a key's
    # is zeta_i^((n - m)/gamma) whatever the other positions are.
    up, down = xpos_scales(torch.tensor([10, 20]), torch.tensor([30]), 8, 512.0, torch.float64)
    torch.testing.assert_close(up[1], torch.ones(4))
    zeta = torch.tensor([(2 * i / 8 + 0.4) / 1.4 for i in range(4)])
    torch.testing.assert_close(up[0] * down[0], zeta ** ((10 - 30) / 512))
    # Up to the limit every scale is finite and nonzero in float32...
    enc = build("xpos", d_model=64)
    n = 36000
    x = torch.ones(1, 1, n, 64)
    rq, rk = enc.rotate(x, x, torch.arange(n), torch.arange(n))
    assert rq.isfinite().all() and rk.isfinite().all()
    assert (rq.abs().amax(-2) > 0).all() and (rk.abs().amax(-2) > 0).all()
    # ...past it a clear error rather than inf or 0, and earlier for float16 storage.
    with pytest.raises(PositionOutOfRange, match="encoding.xpos.scale_base"):
        enc.rotate(x[:, :, :1], x[:, :, :1], torch.tensor([0]), torch.tensor([40000]))
    half = torch.ones(1, 1, 2, 64, dtype=torch.float16)
    with pytest.raises(PositionOutOfRange, match="float16"):
        enc.rotate(half, half, torch.tensor([0, 5000]), torch.tensor([0, 5000]))


def test_xpos_is_rope_at_one_position_and_shares_its_waves():
    # One position: centred at itself, scale 1, the very rotation RoPE makes (the rotation
    # analysis reads the pairs there); frequencies and the cos/sin table are RoPE's.
    shape = dict(d_model=16, n_heads=2, angle_dtype=torch.float64)
    xpos, rope = build("xpos", **shape), build("rope", **shape)
    q = torch.randn(1, 2, 1, 8)
    for p in (0, 1, 1000):
        pos = torch.tensor([p])
        for got, want in zip(xpos.rotate(q, q, pos, pos), rope.rotate(q, q, pos, pos)):
            torch.testing.assert_close(got, want)
    torch.testing.assert_close(xpos.frequencies(), rope.frequencies())
    positions = torch.arange(5)
    torch.testing.assert_close(
        xpos.angle_table(positions, torch.float64), rope.angle_table(positions, torch.float64)
    )


@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize(
    "head_dim,fraction,width", [(8, 0.25, 2), (16, 0.25, 4), (16, 0.5, 8), (12, 0.34, 4)]
)
def test_rope_partial_is_rope_of_its_width_on_the_leading_dimensions(
    interleaved, head_dim, fraction, width
):
    # GPT-NeoX: rotary_ndims = int(head_dim * rotary_pct) leading dimensions turn as a RoPE
    # head of that width would (frequencies base^(-2i/width)); the rest pass as they are.
    config = encoding_block(interleaved=interleaved, fraction=fraction)
    enc = build("rope_partial", config, d_model=2 * head_dim, n_heads=2, angle_dtype=torch.float64)
    assert enc.width == width
    rope = build("rope", config, d_model=2 * width, n_heads=2, angle_dtype=torch.float64)
    q, k = torch.randn(2, 2, 5, head_dim), torch.randn(2, 2, 4, head_dim)
    q_pos, k_pos = torch.tensor([0, 1, 7, 100, 4095]), torch.tensor([3, 64, 300, 9])
    got = enc.rotate(q, k, q_pos, k_pos)
    want = rope.rotate(q[..., :width], k[..., :width], q_pos, k_pos)
    for g, w, x in zip(got, want, (q, k)):
        torch.testing.assert_close(g[..., :width], w)
        assert torch.equal(g[..., width:], x[..., width:])
    torch.testing.assert_close(enc.frequencies(), rope.frequencies())
    assert enc.angle_table(q_pos, torch.float64).shape == (5, width)
    reference = REGISTRY["rope_partial"].reference(enc, q, k, q_pos, k_pos)
    for g, r in zip(got, reference):
        torch.testing.assert_close(g, r)


@pytest.mark.parametrize(
    "head_dim,fraction", [(4, 0.25), (12, 0.25), (16, 0.1), (8, 0.1), (6, 0.5)]
)
def test_rope_partial_odd_or_zero_width_is_an_error_naming_the_key(head_dim, fraction):
    from posenc.encodings import rope_partial_check

    config = {"rope_partial": {"fraction": fraction}}
    with pytest.raises(ValueError, match="encoding.rope_partial.fraction"):
        build("rope_partial", config, d_model=head_dim)
    (problem,) = rope_partial_check(encoding_params("rope_partial", config, d_model=head_dim))
    assert problem.startswith(f"config key encoding.rope_partial.fraction = {fraction:g}")
    assert "positive even number" in problem
    assert REGISTRY["rope_partial"].checks == (rope_partial_check,)
    assert rope_partial_check(encoding_params("rope_partial", config, d_model=64)) == []


@pytest.mark.parametrize("name", ["xpos", "rope_partial"])
@pytest.mark.parametrize("causal", [True, False])
def test_xpos_and_rope_partial_quarter_in_a_stack_and_its_gradients(name, causal):
    # The generic tests rotate half of a partial head (their heads can be 4 wide): here its
    # default quarter, on heads of 8, through a stack against the naive softmax with the
    # spec's reference loop as the hook, and its gradients against the naive softmax's;
    # xPos the same way.
    d, heads = 32, 4
    enc = random_module(name, {"rope_partial": {"fraction": 0.25}}, d_model=d, n_heads=heads)
    assert name != "rope_partial" or enc.width == 2
    cfg = ModelConfig(d_model=d, n_heads=heads, n_layers=2, causal=causal)
    stack = TransformerStack(cfg, enc)
    x, positions = torch.randn(2, 11, d), torch.arange(11)
    reference = ReferenceHooks(REGISTRY[name], enc)
    weight = torch.randn(2, 11, d)

    def grads(forward):
        stack.zero_grad()
        (forward(x, positions) * weight).sum().backward()
        return [p.grad.clone() for p in stack.parameters()]

    torch.testing.assert_close(stack(x, positions), naive_stack(x, stack, positions, reference))
    for got, want in zip(
        grads(stack), grads(lambda x, pos: naive_stack(x, stack, pos)), strict=True
    ):
        torch.testing.assert_close(got, want)
    with torch.no_grad():  # relative: a shift of every position changes nothing
        moved = stack(x, positions + 1000)
    torch.testing.assert_close(moved, stack(x, positions))


# ----------------------------------------------------------------------------- layouts


def test_a_declared_layout_leaves_its_layers_without_position():
    # The hybrid's layer 2 (k = 2) has no position: spreading the positions apart leaves its
    # attention as it is, while the RoPE layer's turns.
    enc = build("rope_nope_hybrid", {}, d_model=16, n_heads=4)
    cfg = ModelConfig(d_model=16, n_heads=4, n_layers=4)
    stack = TransformerStack(cfg, enc)
    assert stack.layout == (True, False, True, False)
    assert [b.attn.positional for b in stack.blocks] == [True, False, True, False]
    plain = TransformerStack(
        cfg,
        build("rope_nope_hybrid", {"rope_nope_hybrid": {"nope_every": 3}}, d_model=16, n_heads=4),
    )
    assert plain.layout == (True, True, False, True)
    x = torch.randn(1, 6, 16)
    nope = stack.blocks[1].attn
    with torch.no_grad():
        same = nope(x, torch.arange(6)), nope(x, torch.arange(6) * 7)
        turned = (
            stack.blocks[0].attn(x, torch.arange(6)),
            stack.blocks[0].attn(x, torch.arange(6) * 7),
        )
    torch.testing.assert_close(*same)
    assert not torch.allclose(*turned)


def test_a_layout_must_give_a_bool_per_layer_and_spare_input_encodings():
    class Short(Rotary):
        def layers(self, n_layers):
            return (True,)

    class Skipping(Sinusoidal):
        def layers(self, n_layers):
            return (False,) * n_layers

    cfg = ModelConfig(d_model=8, n_heads=2, n_layers=2)
    with pytest.raises(ValueError, match=r"layers\(2\) must give one bool per layer"):
        TransformerStack(cfg, Short(EncodingParams(d_model=8, n_heads=2, hyper=RotaryParams())))
    hyper = SinusoidalParams()
    with pytest.raises(ValueError, match="acts on the input"):
        TransformerStack(cfg, Skipping(EncodingParams(d_model=8, n_heads=2, hyper=hyper)))


def test_a_head_layout_must_give_a_group_per_head_and_spare_input_encodings():
    class Short(Rotary):
        def heads(self, n_heads):
            return (0,)

    class Split(Sinusoidal):
        def heads(self, n_heads):
            return tuple(range(n_heads))

    rope = Short(EncodingParams(d_model=8, n_heads=2, hyper=RotaryParams()))
    with pytest.raises(ValueError, match=r"heads\(2\) must give one non-negative int per head"):
        head_layout(rope, 2)
    table = Split(EncodingParams(d_model=8, n_heads=2, hyper=SinusoidalParams()))
    with pytest.raises(ValueError, match="acts on the input"):
        head_layout(table, 2)


@pytest.mark.parametrize("name", [n for n in REGISTRY if REGISTRY[n].acts_on == "bias"])
def test_each_head_of_a_score_bias_is_its_own_group(name):
    """A bias has a slope, a bucket table or an output per head: each head's kernel is the exp
    of its own bias, and the whole kernel their mean."""
    torch.manual_seed(0)
    module = build(name, {}, d_model=16, n_heads=4).double()
    for p in module.parameters():
        torch.nn.init.normal_(p)  # T5's table starts at zero: every head alike
    pos = torch.arange(9)
    assert head_layout(module, 4) == (0, 1, 2, 3)
    factor = module.score_bias(pos, pos, causal=False).double().exp()
    for h in range(4):
        torch.testing.assert_close(module.kernel(pos, h), factor[h], rtol=0, atol=0)
    torch.testing.assert_close(module.kernel(pos), factor.mean(0), rtol=0, atol=0)


def test_a_plugin_whose_heads_differ_must_take_the_group():
    """A bias written before groups (its kernel takes no group) is named at the probe, before
    any analysis asks it for a head's kernel."""

    class OldStyle(ALiBi):
        def kernel(self, positions):
            return super().kernel(positions)

    spec = EncodingSpec(
        "old_style_bias", "bias", OldStyle, relative=True, learned=False, citation="a test",
        summary="ALiBi with a kernel of old.",
    )  # fmt: skip
    problem = probe(spec, "old.py")
    assert problem.startswith(
        "plugin old.py: encoding old_style_bias: hook kernel: raised TypeError"
    )
