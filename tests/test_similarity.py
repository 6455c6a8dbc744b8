"""The similarity analysis against references written here: the seed's own sinusoid, closed
forms of each kernel built with loops, brute-force property measures, trained checkpoints read
as their causal models score pairs, the claims evaluated on its evidence (and failing when the
numbers do not hold), and an encoding registered from outside flowing through compute, figures
and tables."""

import cmath
import copy
import itertools
import logging
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch import nn

from posenc.analyses.similarity import compute as sm
from posenc.analyses.similarity import kernels, long_term_decay, present, properties, sinusoidal
from posenc.analyses.similarity import spec as similarity_spec
from posenc.analyses.similarity.spec import SPEC
from posenc.analysis import Context
from posenc.claims import evaluate
from posenc.encodings import (
    REGISTRY,
    BiasEncoding,
    EncodingSpec,
    InputEncoding,
    Rotary,
    RotaryParams,
    build,
    inverse_frequencies,
    override,
    sinusoidal_table,
)
from posenc.train import build_model, save_checkpoint

CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parents[1]
ENCODING_CFG = {"t5_bias": {"num_buckets": 8, "max_distance": 16}}
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


def context(cfg=None, encodings=None, trained=None) -> Context:
    return Context(
        cfg=cfg or tiny_cfg(),
        seed=0,
        encodings=list(REGISTRY) if encodings is None else encodings,
        encoding=ENCODING_CFG,
        device=CPU,
        inputs={} if trained is None else {"trained_models": trained},
        log=logging.getLogger("test_similarity"),
    )


LEARNED = [e for e in REGISTRY if REGISTRY[e].learned]
TRAIN_LEN = 12  # below tiny_cfg's 16 kernel positions: the trained kernels have 12


def checkpoint(folder: Path, encoding: str, seed: int, set_weights=None) -> str:
    """A tiny causal LM of ``encoding`` saved as the extrapolation study saves one, its
    encoding's parameters drawn from N(0, 1) (T5's table starts at zero: any reading of it
    would look right), or set by ``set_weights(module)``."""
    model_cfg = {"d_model": 16, "n_heads": 2, "n_layers": 1}
    torch.manual_seed(seed)
    model = build_model(11, model_cfg, encoding, ENCODING_CFG, max_len=TRAIN_LEN)
    with torch.no_grad():
        for weight in model.stack.encoding.parameters():
            weight.normal_()
        if set_weights:
            set_weights(model.stack.encoding)
    path = folder / f"{encoding}-seed{seed}.pt"
    meta = {
        "task": "lm",
        "encoding": encoding,
        "seed": seed,
        "vocab_size": 11,
        "train_len": TRAIN_LEN,
        "model_config": model_cfg,
        "encoding_config": ENCODING_CFG,
        "max_len": TRAIN_LEN,
    }
    save_checkpoint(path, model, meta)
    return str(path)


def naive_causal_kernel(encoding: str, module, n: int) -> torch.Tensor:
    """K(p, q) for q <= p from the registry's naive reference, one pair at a time, NaN above
    the diagonal; the reference's calling convention is its place of action's (EncodingSpec)."""
    reference, pos = REGISTRY[encoding].reference, torch.arange(n)
    K = torch.full((n, n), math.nan, dtype=torch.float64)
    if module.acts_on == "input":
        table = reference(module, pos)  # (n, d)
        for p in range(n):
            for q in range(p + 1):
                K[p, q] = table[p] @ table[q] / (table[p].norm() * table[q].norm())
    elif module.acts_on == "bias":
        bias = reference(module, pos, pos, True)  # (H, n, n), the causal buckets
        for p in range(n):
            for q in range(p + 1):
                K[p, q] = sum(math.exp(b) for b in bias[:, p, q].tolist()) / bias.shape[0]
    else:
        pytest.fail(f"no naive kernel for a learned encoding acting on {module.acts_on}")
    return K


def run(ctx: Context) -> tuple:
    m = sm.compute(ctx)
    return m, {c["id"]: c for c in evaluate(SPEC.claims, m.evidence, ctx.cfg, SPEC.id)}


def formula_kernel(encoding: str, n: int, d_model: int, n_heads: int, encoding_cfg: dict):
    """K(p, q) over positions 0..n-1 of the module compute builds from the formula (learned
    parameters drawn at std 0.5, seed 0). Shape (n, n)."""
    module = kernels.kernel_module(encoding, n, d_model, n_heads, encoding_cfg, 0.5, 0, CPU)
    with torch.no_grad():
        return module.kernel(torch.arange(n))


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
    m = sm.compute(context(encodings=["sinusoidal"]))
    got = [p["similarity"] for p in m.summary["seed_pairs"]]
    assert got == pytest.approx(want, abs=1e-6)
    assert [round(v, 3) for v in got] == [0.966, 0.658, 0.490]
    assert m.evidence["seed_similarity"] == got
    assert m.evidence["printed_values"] == [0.966, 0.658, 0.490]


@pytest.mark.parametrize("d, base", [(8, 10000.0), (16, 100.0), (6, 37.0)])
def test_sinusoidal_kernel_is_the_closed_form(d, base):
    config = override(ENCODING_CFG, "sinusoidal", base=base)
    K = formula_kernel("sinusoidal", 12, d, 1, config)
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
    config = override(ENCODING_CFG, "rope", base=base)
    K = formula_kernel("rope", n, 2 * head_dim, 2, config)
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
    K = formula_kernel("alibi", n, 4 * n_heads, n_heads, ENCODING_CFG)
    torch.testing.assert_close(K, want, rtol=1e-7, atol=0)  # the registry's bias is float32


def test_none_kernel_is_constant_and_learned_is_not_structured():
    assert torch.equal(
        formula_kernel("none", 5, 8, 2, ENCODING_CFG),
        torch.ones(5, 5, dtype=torch.float64),
    )
    K = formula_kernel("learned", 16, 8, 2, ENCODING_CFG)
    assert properties.translation_deviation(K) > 0.1


def test_monotone_range_on_hand_made_profiles():
    nan = float("nan")
    assert properties.monotone_range(torch.tensor([[5.0, 4.0, 3.0, 3.5, 1.0]])) == 2
    assert properties.monotone_range(torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0]])) == 4
    assert properties.monotone_range(torch.tensor([[5.0, 5.0, 3.0]])) == 0  # ties are not strict
    # A short row (NaN past its end) never limits the range by its missing entries.
    rows = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.5], [3.0, 2.0, nan, nan, nan]])
    assert properties.monotone_range(rows) == 4
    rows = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.5], [3.0, 4.0, nan, nan, nan]])
    assert properties.monotone_range(rows) == 0


def test_concordance_against_brute_force():
    g = torch.Generator().manual_seed(0)
    K = torch.rand(9, 9, generator=g, dtype=torch.float64)
    window = 4
    F = properties.offset_profiles(K)
    hits = total = 0
    for p in range(9 - window):
        for k1, k2 in itertools.combinations(range(window + 1), 2):
            hits += K[p, p + k1] > K[p, p + k2]
            total += 1
    assert properties.concordance(F, window) == pytest.approx(float(hits) / total)


def test_translation_and_symmetry_deviation():
    n = 7
    toeplitz = torch.tensor(
        [[math.exp(-0.3 * (q - p)) for q in range(n)] for p in range(n)], dtype=torch.float64
    )
    assert properties.translation_deviation(toeplitz) == 0.0
    assert properties.symmetry_deviation(toeplitz) > 0  # exp(-0.3 (q - p)) is not symmetric
    bumped = toeplitz.clone()
    bumped[2, 4] += 0.25
    assert properties.translation_deviation(bumped) == pytest.approx(0.25)
    sym = toeplitz + toeplitz.T
    assert properties.symmetry_deviation(sym) == 0.0


@pytest.mark.parametrize("d", [8, 32])
def test_relative_upper_bound_against_double_loop(d):
    base, R = 10000.0, 20
    theta = [base ** (-2 * i / d) for i in range(d // 2)]
    want = []
    for r in range(R + 1):
        partial = [abs(sum(cmath.exp(1j * r * t) for t in theta[:j])) for j in range(1, d // 2 + 1)]
        want.append(sum(partial) / (d // 2))
    # The frequencies as RoPE's module gives them, one head of width d.
    module = build("rope", {"rope": {"base": base}}, d_model=d)
    got = long_term_decay.relative_upper_bound(module.frequencies(), R, CPU)
    torch.testing.assert_close(got, torch.tensor(want, dtype=torch.float64), rtol=1e-12, atol=0)
    assert got[0].item() == pytest.approx((d // 2 + 1) / 2)  # S_j(0) = j


def test_xpos_bound_carries_its_scale_against_double_loop():
    """xPos's relative upper bound is of its scores, zeta_i^(r/gamma) e^{i r theta_i} on pair
    i (Sun et al. 2022), written out from the paper's zeta; not RoPE's, which ignores it."""
    d, R, gamma = 16, 40, 8.0
    module = build("xpos", {"xpos": {"scale_base": gamma}}, d_model=d)
    theta = module.frequencies().tolist()
    zeta = [(2 * i / d + 0.4) / 1.4 for i in range(d // 2)]
    want = []
    for r in range(R + 1):
        terms = [z ** (r / gamma) * cmath.exp(1j * r * t) for z, t in zip(zeta, theta)]
        partial = [abs(sum(terms[:j])) for j in range(1, d // 2 + 1)]
        want.append(sum(partial) / (d // 2))
    got = long_term_decay.relative_upper_bound(module.frequencies(), R, CPU, module.pair_decay)
    torch.testing.assert_close(got, torch.tensor(want, dtype=torch.float64), rtol=1e-12, atol=0)
    plain = build("rope", d_model=d)
    rope = long_term_decay.relative_upper_bound(plain.frequencies(), R, CPU, plain.pair_decay)
    assert got[0] == rope[0] and bool((got[1:] < rope[1:]).all())  # the scale only lowers it


def test_spearman_against_textbook_formula():
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(30, generator=g), torch.rand(30, generator=g)
    rx = x.argsort().argsort().double()
    ry = y.argsort().argsort().double()
    n = 30
    want = 1 - 6 * ((rx - ry) ** 2).sum().item() / (n * (n * n - 1))
    assert long_term_decay.spearman(x, y) == pytest.approx(want)


def test_near_window_is_half_a_period_of_the_fastest_wave():
    omega = sinusoidal.fastest_frequency([(64, 10000.0), (16, 100.0)], [])
    assert omega == 1.0  # omega_0 = base^0 on every ladder
    assert sinusoidal.near_window(omega, 1.0) == 3  # floor(pi)
    assert sinusoidal.near_window(omega, 2.0) == 6
    assert sinusoidal.near_window(0.5, 1.0) == 6  # a slower fastest wave widens the window
    # An encoding's own waves count: a module with a faster wave narrows the window.
    fast = build("sinusoidal", {"sinusoidal": {"base": 10000.0}}, d_model=8)
    assert sinusoidal.fastest_frequency([(8, 10000.0)], [fast]) == 1.0


@pytest.mark.parametrize("h, omega", [(1.0, 1.0), (2.0, 1.0), (1.0, 0.3), (3.7, 0.9)])
def test_reach_beyond_h_half_periods_means_monotone_over_the_near_window(h, omega):
    """The claim's evidence (reach > h) says exactly what the near window says
    (monotone range >= floor(h pi / omega)), for every integer range."""
    window = sinusoidal.near_window(omega, h)
    for monotone in range(0, 60):
        assert (sinusoidal.reach(monotone, omega) > h) == (monotone >= window), monotone


def test_compute_tiny_all_claims_pass_and_is_deterministic():
    first, claims = run(context())
    assert set(claims) == IDS
    failed = {cid for cid, c in claims.items() if c["verdict"] != "pass"}
    assert failed <= {"similarity.rope_long_term_decay"}, claims
    # Su et al.'s bound sums over the pairs a head turns: a partial rotation turns fewer pairs
    # than its head has (a quarter of them by default), and over those its bound falls less;
    # p-RoPE's still pairs (frequency 0) do not decay at all. Only an encoding that turns fewer
    # pairs than its head has may fail the decay claim; every full rotation passes it.
    th = tiny_cfg()["thresholds"]
    for label, ratio in first.evidence["decay_far_ratio"].items():
        name, d = label.rsplit(" d=", 1)
        spearman = first.evidence["decay_spearman"][label]
        if ratio > th["decay_max_far_ratio"] or spearman > th["decay_max_spearman"]:
            module = build(name, ENCODING_CFG, d_model=int(d))
            assert 2 * int((module.frequencies() > 0).sum()) < int(d), label
    again = sm.compute(context())
    assert again.rows["kernel_properties"] == first.rows["kernel_properties"]
    assert again.rows["offset_profiles"] == first.rows["offset_profiles"]
    assert again.evidence == first.evidence


def test_claims_fail_when_the_numbers_do_not_hold():
    cfg = tiny_cfg()
    cfg["seed"] = {**cfg["seed"], "expected": [0.9, 0.658, 0.490]}
    cfg["thresholds"] = {
        **cfg["thresholds"],
        "monotone_half_periods": 20.0,
        "decay_max_far_ratio": 0.01,
    }
    _, claims = run(context(cfg))
    verdicts = {i: c["verdict"] for i, c in claims.items()}
    assert verdicts["similarity.seed_values"] == "fail"
    assert verdicts["similarity.monotone_near"] == "fail"  # 62 offsets is far short of 20 pi
    assert verdicts["similarity.rope_long_term_decay"] == "fail"
    assert verdicts["similarity.translation_invariance"] == "pass"


def test_translation_claim_fails_under_an_impossible_tolerance():
    cfg = tiny_cfg()
    cfg["thresholds"] = {**cfg["thresholds"], "translation_ulps": 1e-6}
    m, claims = run(context(cfg, ["sinusoidal", "alibi"]))
    spread = m.evidence["translation_spread"]["sinusoidal"]
    assert spread > 1e-6 * m.evidence["eps_float64_times_N"]  # rounding, not exactly 0
    assert claims["similarity.translation_invariance"]["verdict"] == "fail"
    assert "1e-06" in claims["similarity.translation_invariance"]["expected"]


def test_translation_claim_is_not_applicable_without_fixed_or_relative_encodings():
    _, claims = run(context(encodings=["learned"]))
    assert claims["similarity.translation_invariance"]["verdict"] == "n/a"
    assert claims["similarity.monotone_near"]["verdict"] == "pass"  # the sweep still counts
    assert claims["similarity.rope_long_term_decay"]["verdict"] == "n/a"  # no rotary encoding
    assert claims["similarity.rope_long_term_decay"]["reason"]


def test_selection_follows_the_registry():
    m = sm.compute(context())
    positional = [e for e in REGISTRY if REGISTRY[e].positional]
    assert set(m.evidence["fixed"]) == {e for e in positional if not REGISTRY[e].learned}
    # Without trained models a learned encoding is in no claim: its random draw is a contrast.
    assert set(m.evidence["invariant"]) == {e for e in positional if not REGISTRY[e].learned}
    assert m.evidence["rotary"] == [
        e for e in REGISTRY if REGISTRY[e].planar_rotation and REGISTRY[e].waves
    ]
    assert m.evidence["rotary"]  # the built-in RoPE is one


class _ShortSinusoidal(InputEncoding):
    """Vaswani et al.'s table with base 500: a sinusoidal encoding not in the registry file."""

    def input_encoding(self, positions):
        p = self.params
        return sinusoidal_table(positions, p.d_model, 500.0, p.angle_dtype)

    def frequencies(self):
        return inverse_frequencies(self.params.d_model, 500.0)


class _ShortRotary(Rotary):
    """RoPE with base 500."""

    def __init__(self, params):
        super().__init__(replace(params, hyper=RotaryParams(base=500.0)))


@pytest.fixture
def toys(registered):
    return registered(
        EncodingSpec(
            "toy_sim_table",
            "input",
            _ShortSinusoidal,
            relative=False,
            learned=False,
            citation="a test's toy",
            summary="Sinusoidal with base 500.",
        ),
        EncodingSpec(
            "toy_sim_rotary",
            "qk",
            _ShortRotary,
            relative=True,
            learned=False,
            citation="a test's toy",
            summary="RoPE with base 500.",
            waves=True,
            planar_rotation=True,
        ),
    )


def test_an_encoding_registered_from_outside_flows_through(toys):
    import matplotlib

    matplotlib.use("Agg")
    table, rotary = toys
    ctx = context(encodings=["sinusoidal", "rope", *toys])
    m, claims = run(ctx)
    for name in toys:
        assert f"{name} kernel" in m.evidence["monotone_reach"]
        assert name in m.evidence["translation_spread"]
        assert name in {r["encoding"] for r in m.rows["kernel_properties"]}
    assert f"{rotary} d=64" in m.evidence["decay_spearman"]
    assert rotary in m.summary["long_term_decay"]
    assert all(c["verdict"] == "pass" for c in claims.values()), claims

    # A panel's title wraps its source onto a second line, to fit three panels a row.
    titles = {ax.get_title().replace("\n", " ") for ax in present.figure_kernels(m, ctx).axes}
    assert set(toys) <= titles
    decay_titles = " ".join(ax.get_title() for ax in present.figure_long_term_decay(m, ctx).axes)
    assert rotary in decay_titles
    _, rows = present.table_properties(m, ctx)
    assert set(toys) <= {r[0] for r in rows}
    _, rows = present.table_long_term_decay(m, ctx)
    assert rotary in {r[0] for r in rows}


def test_every_figure_and_table_of_the_spec_renders():
    import matplotlib

    matplotlib.use("Agg")
    ctx = context()
    m = sm.compute(ctx)
    for fid in SPEC.figures:
        assert getattr(present, f"figure_{fid}")(m, ctx).axes
    for tid in SPEC.tables:
        columns, rows = getattr(present, f"table_{tid}")(m, ctx)
        assert rows and all(len(r) == len(columns) for r in rows), tid
    for name in SPEC.csvs:
        assert m.rows[name], name


def test_a_kernel_heatmap_draws_the_kernels_own_numbers_and_leaves_unscored_pairs_blank():
    import matplotlib

    matplotlib.use("Agg")
    from posenc.analysis import Measurements

    kernel = [[1.0, math.nan, math.nan], [0.25, 1.0, math.nan], [-0.5, 0.25, 1.0]]  # causal
    rows = [
        {"source": sm.FIXED, "encoding": "rope", "seed": None, "p": p, "q": q, "kernel": v}
        for p, line in enumerate(kernel)
        for q, v in enumerate(line)
    ]
    fig = present.figure_kernels(Measurements(rows={"kernels": rows}), context())
    [mesh] = fig.axes[0].collections
    drawn = mesh.get_array()
    assert drawn.mask.tolist() == [[math.isnan(v) for v in line] for line in kernel]
    assert drawn.compressed().tolist() == [v for line in kernel for v in line if v == v]
    assert mesh.norm.vmin == -1.0 and mesh.norm.vmax == 1.0  # centred on 0: the sign reads


def _section(name):
    import yaml

    return yaml.safe_load((ROOT / "config/config.yaml").read_text())[name]


def test_shipped_section_is_valid_and_typos_are_rejected():
    import yaml
    from jsonschema import Draft202012Validator

    schema = yaml.safe_load((ROOT / "analyses/similarity/schema.yaml").read_text())
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
    cfg = copy.deepcopy(_section("similarity"))
    assert not [p for check in SPEC.checks for p in check({"similarity": cfg})]
    change(cfg)
    problems = [p for check in SPEC.checks for p in check({"similarity": cfg})]
    assert any(p.startswith(f"config key {key} ") for p in problems), problems


@pytest.mark.parametrize("encoding", LEARNED)
def test_trained_kernel_is_the_naive_reference_on_the_pairs_a_causal_model_scores(
    encoding, tmp_path
):
    path = checkpoint(tmp_path, encoding, seed=3)
    module, info = kernels.load_trained(path, CPU)
    assert info == {
        "encoding": encoding,
        "seed": 3,
        "train_len": TRAIN_LEN,
        "d_model": 16,
        "n_heads": 2,
        "causal": True,
        "head_groups": (0, 1) if REGISTRY[encoding].acts_on == "bias" else (0, 0),
    }
    with torch.no_grad():
        K = kernels.scored_kernel(module, torch.arange(TRAIN_LEN), info["causal"])
    want = naive_causal_kernel(encoding, module, TRAIN_LEN)
    torch.testing.assert_close(K, want, rtol=0, atol=1e-12, equal_nan=True)
    # compute reads the same kernel from the checkpoint, over min(16, L_train) positions; one
    # file comes as a string, as Snakemake hands a named input of one file over.
    m = sm.compute(context(encodings=[encoding], trained=path))
    rows = [r for r in m.rows["kernels"] if r["source"] == properties.TRAINED]
    got = torch.tensor(present._matrix(rows, "p", "q", "kernel"), dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12, equal_nan=True)


def test_a_bidirectional_bias_kernel_is_kept_whole():
    """Bidirectional attention scores every pair: nothing is masked, the module's own kernel."""
    module = build(LEARNED[-1], ENCODING_CFG, d_model=16, n_heads=2)
    with torch.no_grad():
        for weight in module.parameters():
            weight.normal_()
        pos = torch.arange(10)
        assert torch.equal(kernels.scored_kernel(module, pos, causal=False), module.kernel(pos))


def test_properties_of_a_causal_kernel_use_only_the_pairs_scored():
    n, nan = 8, math.nan
    decay = torch.tensor(
        [[math.exp(-0.3 * (p - q)) if q <= p else nan for q in range(n)] for p in range(n)],
        dtype=torch.float64,
    )
    props = properties.kernel_properties(decay, window=3)
    assert props["translation_deviation"] == 0.0
    assert math.isnan(props["symmetry_deviation"])  # no pair is scored both ways
    assert props["monotone_range"] == n - 1  # falls backwards all the way
    assert props["concordance"] == 1.0  # the backward direction alone
    bumped = decay.clone()
    bumped[5, 2] += 0.25
    assert properties.translation_deviation(bumped) == pytest.approx(0.25)
    bumped[6, 5] = 2.0  # above K(6, 6) = 1: the profile rises at offset 1
    assert properties.kernel_properties(bumped, window=3)["monotone_range"] == 0
    # A full kernel keeps both directions: a bump is seen from either side.
    full = torch.where(decay.isnan(), decay.T, decay)
    assert properties.symmetry_deviation(full) == 0.0
    full[1, 4] += 0.5
    assert properties.symmetry_deviation(full) == pytest.approx(0.5)


def test_learned_encodings_are_judged_as_trained_with_random_draws_as_contrast(tmp_path):
    seeds = (0, 1)
    paths = [checkpoint(tmp_path, e, s) for e in LEARNED for s in seeds]
    m, claims = run(context(trained=paths[::-1]))  # any order in, encoding then seed out
    positional = [e for e in REGISTRY if REGISTRY[e].positional]
    assert set(m.evidence["invariant"]) == {
        e for e in positional if REGISTRY[e].relative or not REGISTRY[e].learned
    }
    spread = m.evidence["translation_spread"]
    for e in LEARNED:
        assert e not in spread  # never the random draw
        if REGISTRY[e].relative:
            assert {f"{e} trained seed {s}" for s in seeds} <= set(spread)
    assert claims["similarity.translation_invariance"]["verdict"] == "pass"

    rows = m.rows["kernel_properties"]
    trained = [(r["encoding"], r["seed"]) for r in rows if r["source"] == properties.TRAINED]
    assert trained == [(e, s) for e in LEARNED for s in seeds]
    assert all(r["n_positions"] == TRAIN_LEN for r in rows if r["source"] == properties.TRAINED)
    contrast = [r["encoding"] for r in rows if r["source"] == properties.RANDOM_INIT]
    assert contrast == LEARNED
    assert m.summary["trained"]["seeds"] == list(seeds)
    assert set(m.summary["trained"]["properties"]) == set(LEARNED)
    # The figure shows the first seed only; the properties cover every seed.
    shown = {
        (r["encoding"], r["seed"]) for r in m.rows["kernels"] if r["source"] == properties.TRAINED
    }
    assert shown == {(e, 0) for e in LEARNED}


class _PairBias(BiasEncoding):
    """A learned bias per (query, key) position pair: scores that need not be relative."""

    def __init__(self, params):
        super().__init__(params)
        self.table = nn.Parameter(torch.zeros(params.n_heads, params.max_len, params.max_len))

    def score_bias(self, q_pos, k_pos, causal):
        return self.table[:, q_pos.long()][:, :, k_pos.long()]  # (H, Lq, Lk)


@pytest.fixture
def pair_bias(registered):
    (name,) = registered(
        EncodingSpec(
            "toy_sim_pair_bias",
            "bias",
            _PairBias,
            relative=True,  # as a plugin might declare it: the claim has to find out
            learned=True,
            citation="a test's toy",
            summary="A learned bias per position pair.",
        )
    )
    return name


def _by_offset(module):
    """Trained to depend on the offset only: bias(h, p, q) = (h + 1) 0.1 (q - p)."""
    H, L, _ = module.table.shape
    offset = torch.arange(L)[None, :] - torch.arange(L)[:, None]
    module.table.copy_(0.1 * (torch.arange(H) + 1)[:, None, None] * offset)


def test_translation_claim_reads_the_trained_table(pair_bias, tmp_path):
    """Trained to depend on p - q only, the claim holds, though the random draw (N(0, σ²) per
    pair) would fail it; one pair moved in training, and it fails by that much."""
    invariant = checkpoint(tmp_path, pair_bias, 0, _by_offset)
    m, claims = run(context(encodings=["sinusoidal", pair_bias], trained=invariant))
    assert m.evidence["translation_spread"][f"{pair_bias} trained seed 0"] == 0.0
    random_draw = next(
        r for r in m.rows["kernel_properties"] if r["source"] == properties.RANDOM_INIT
    )
    assert random_draw["translation_deviation"] > 0.1
    assert claims["similarity.translation_invariance"]["verdict"] == "pass"

    def moved(module):
        _by_offset(module)
        module.table[:, 7, 3] += 0.5

    m, claims = run(
        context(
            encodings=["sinusoidal", pair_bias], trained=[checkpoint(tmp_path, pair_bias, 1, moved)]
        )
    )
    spread = m.evidence["translation_spread"][f"{pair_bias} trained seed 1"]
    # K(7, 3) = mean_h exp(b_h + 0.5) beside mean_h exp(b_h) on the rest of its diagonal.
    offset_bias = [0.1 * (h + 1) * (3 - 7) for h in range(2)]
    want = sum(math.exp(b) for b in offset_bias) / 2 * (math.exp(0.5) - 1)
    assert spread == pytest.approx(want, rel=1e-6)  # the checkpoint's weights are float32
    assert claims["similarity.translation_invariance"]["verdict"] == "fail"


def test_tables_and_figure_say_what_each_kernel_is(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    paths = [checkpoint(tmp_path, e, s) for e in LEARNED for s in (0, 1)]
    ctx = context(trained=paths)
    m = sm.compute(ctx)
    columns, rows = present.table_properties(m, ctx)
    assert columns[1] == "kernel of"
    kinds = {(r[0], r[1]) for r in rows}
    for e in LEARNED:
        assert (e, "trained LM, seeds 0, 1") in kinds
        assert (e, "random init, N(0, 0.5²)") in kinds
    fixed = [e for e in REGISTRY if not REGISTRY[e].learned]
    assert {(e, "fixed formula") for e in fixed} <= kinds
    # Two seeds that differ: mean ± half range, one number where they agree (Kerple's penalty
    # only falls, so its concordance is 1 at every seed); symmetry on a causal model: undefined
    # (None).
    trained_rows = [r for r in rows if r[1].startswith("trained")]
    seeds = {
        (p["encoding"], p["seed"]): p["concordance"]
        for p in m.rows["kernel_properties"]
        if p["source"] == properties.TRAINED
    }
    for r in trained_rows:
        assert ("±" in str(r[3])) == (seeds[r[0], 0] != seeds[r[0], 1]), r
    assert any("±" in str(r[3]) for r in trained_rows)
    assert all(r[5] is None for r in trained_rows)
    # A panel's title wraps its source onto a second line, to fit three panels a row.
    titles = {ax.get_title().replace("\n", " ") for ax in present.figure_kernels(m, ctx).axes}
    for e in LEARNED:
        assert f"{e} (trained, seed 0)" in titles and f"{e} (random init)" in titles
        assert f"{e} (trained, seed 1)" not in titles


def test_cell_spreads_over_seeds():
    assert present._cell([0.5]) == 0.5
    assert present._cell([3, 3]) == 3
    assert present._cell([0.25, 0.75]) == "0.5 ± 0.25"
    assert present._cell([math.nan, math.nan]) is None


def test_monotone_near_is_labelled_an_identity():
    kinds = {c.id: c.kind for c in SPEC.claims}
    assert kinds["similarity.monotone_near"] == "identity"
    assert kinds["similarity.translation_invariance"] == "identity"


def _config():
    import yaml

    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def test_inputs_are_the_trained_lms_of_learned_encodings(monkeypatch):
    """Selected by the registry's ``learned`` metadata, every seed, at the paths the
    extrapolation study trains its LMs to (their training logs sit beside them)."""
    from posenc.analyses.extrapolation.spec import SPEC as EXTRAPOLATION

    meta = {name: spec.metadata() for name, spec in REGISTRY.items()}
    monkeypatch.setattr(similarity_spec.encoding_metadata, "metadata", lambda plugins, root: meta)
    config = _config()
    config["encodings"] = list(REGISTRY)
    config["extrapolation"]["lm"]["seeds"] = [0, 4]
    models = SPEC.inputs(config)["trained_models"]
    assert models == [
        f"results/extrapolation/models/lm/{e}/seed{s}/model.pt" for e in LEARNED for s in (0, 4)
    ]
    logs = set(EXTRAPOLATION.inputs(config)["train_logs"])
    assert {str(Path(m).with_name("train_log.json")) for m in models} <= logs
    # A plugin's learned encoding counts; a fixed one does not.
    meta |= {"plug_learned": {"learned": True}, "plug_fixed": {"learned": False}}
    config["encodings"] = ["plug_fixed", "plug_learned"]
    assert SPEC.inputs(config)["trained_models"] == [
        "results/extrapolation/models/lm/plug_learned/seed0/model.pt",
        "results/extrapolation/models/lm/plug_learned/seed4/model.pt",
    ]
    del config["extrapolation"]
    assert SPEC.inputs(config) == {}


def test_window_must_fit_the_trained_length():
    config = {"similarity": copy.deepcopy(_section("similarity")), **{"extrapolation": {}}}
    config["extrapolation"] = {"lm": {"seq_len": config["similarity"]["window"]}}
    problems = [p for check in SPEC.checks for p in check(config)]
    assert any(p.startswith("config key similarity.window ") for p in problems), problems
    config["extrapolation"]["lm"]["seq_len"] += 1
    assert not [p for check in SPEC.checks for p in check(config)]


def test_an_encoding_whose_heads_differ_is_measured_head_by_head(toy_plugin):
    """RoPE whose head h has base 10000·16^h: head 0 is RoPE, so a kernel read from one head
    would equal RoPE's. Each group is measured, and the whole kernel averages them."""
    n = 32
    pos = torch.arange(n)
    toy = build("toy_head_base", {}, d_model=64, n_heads=4, angle_dtype=torch.float64).double()
    rope = build("rope", {}, d_model=64, n_heads=4, angle_dtype=torch.float64).double()
    assert toy.groups == (0, 1, 2, 3)
    torch.testing.assert_close(toy.kernel(pos, 0), rope.kernel(pos), rtol=0, atol=0)
    for g in (1, 2, 3):
        assert (toy.kernel(pos, g) - rope.kernel(pos)).abs().max() > 0.1, g
    per_group = torch.stack([toy.kernel(pos, g) for g in toy.groups]).mean(0)
    torch.testing.assert_close(toy.kernel(pos), per_group, rtol=0, atol=1e-12)

    cfg = tiny_cfg(kernels={"n_positions": n, "d_model": 64, "n_heads": 4, "learned_init_std": 0.5})
    m = sm.compute(context(cfg, encodings=["rope", "toy_head_base", "alibi"]))
    by_head = {(r["encoding"], r["heads"]): r for r in m.rows["kernel_properties_by_head"]}
    # Single-group RoPE has no per-head rows; the toy has one per head, ALiBi one per slope.
    assert sorted(h for e, h in by_head if e == "toy_head_base") == ["0", "1", "2", "3"]
    assert sorted(h for e, h in by_head if e == "alibi") == ["0", "1", "2", "3"]
    assert not any(e == "rope" for e, _ in by_head)
    whole = {r["encoding"]: r for r in m.rows["kernel_properties"]}
    # Head 0 of the toy is RoPE; its slower heads order fewer offsets by distance.
    rope = whole["rope"]["concordance"]
    assert by_head["toy_head_base", "0"]["concordance"] == rope
    assert by_head["toy_head_base", "3"]["concordance"] < rope
    assert whole["toy_head_base"]["concordance"] != rope
    # ALiBi: each head's kernel is exp(-m_h |p - q|); a steeper slope is a lower neighbour.
    near = [by_head["alibi", str(h)]["concordance"] for h in range(4)]
    assert all(c == 1.0 for c in near), near
    # Su et al.'s bound is read per group of heads: the toy's four spectra give four bounds.
    assert [e for e in m.evidence["rotary"] if e.startswith("toy_head_base")] == [
        f"toy_head_base+heads {h}" for h in range(4)
    ]
    far = m.evidence["decay_far_ratio"]
    assert far["toy_head_base+heads 0 d=64"] == far["rope d=64"]
    assert far["toy_head_base+heads 3 d=64"] > far["rope d=64"]
    columns, rows = present.table_properties_by_head(m, context(cfg))
    assert [r[2] for r in rows if r[0] == "toy_head_base"] == [
        "all (mean kernel)",
        "0",
        "1",
        "2",
        "3",
    ]


@pytest.mark.parametrize("name", [n for n in REGISTRY if REGISTRY[n].acts_on == "bias"])
def test_a_causal_models_kernel_of_each_head_is_its_own_bias(name):
    """Read as a causal model reads it: head h's kernel is exp of head h's causal bias on the
    pairs q ≤ p, NaN above (never scored); the whole kernel their mean."""
    torch.manual_seed(1)
    module = build(name, {}, d_model=8, n_heads=2).double()
    for p in module.parameters():
        nn.init.normal_(p)
    pos = torch.arange(6)
    with torch.no_grad():
        bias = module.score_bias(pos, pos, causal=True).double()
        later = torch.ones(6, 6, dtype=torch.bool).triu(1)
        for h in (0, 1):
            want = bias[h].exp().masked_fill(later, math.nan)
            got = kernels.scored_kernel(module, pos, causal=True, group=h)
            torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        whole = kernels.scored_kernel(module, pos, causal=True)
        want = bias.exp().mean(0).masked_fill(later, math.nan)
        torch.testing.assert_close(whole, want, rtol=0, atol=0, equal_nan=True)
