"""The rotation analysis (analyses/rotation/): the identity checks, the hand trace, the score
shift test and offset maps, against naive references written here, and its claims, which must
fail on broken input. Encodings are chosen by what the registry says of them, never by name."""

import copy
import itertools
import logging
import math

import pytest
import torch
import yaml

from analyses.rotation import present
from analyses.rotation.compute import (
    blocks_from_row,
    compute,
    hand_trace,
    identity_errors,
    linear_offset_maps,
    params,
    qk_scores,
    resolution_span,
    select,
    table_frequencies,
)
from analyses.rotation.spec import SPEC, check_hand_trace, check_linear_map
from posenc.analysis import Context
from posenc.claims import evaluate
from posenc.encodings import (
    REGISTRY,
    EncodingSpec,
    InputEncoding,
    QKEncoding,
    apply_rope,
    build,
    rope_cos_sin,
    sinusoidal_table,
)
from posenc.numerics import rotation_blocks

CPU = torch.device("cpu")
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
thresholds: {identity_ulps: 4, rope_ulps: 2, linear_map_ulps: 4, max_over_bound: 1.0}
"""
)
ENCODING = {"base": 10000, "rope_base": 10000, "t5_num_buckets": 32, "t5_max_distance": 128}
BUILT_IN = list(REGISTRY)  # before any test registers more
IDS = {c.id for c in SPEC.claims}


def probe(d: int = 8) -> object:
    return params(ENCODING, d_model=d, n_heads=1)


def fixed_tables() -> list[str]:
    return select(BUILT_IN, probe(), InputEncoding, learned=False)


def relative_qk() -> list[str]:
    return [e for e in select(BUILT_IN, probe(), QKEncoding) if REGISTRY[e].relative]


def ctx(cfg=None, encodings=None) -> Context:
    return Context(
        cfg=copy.deepcopy(cfg or TINY),
        seed=0,
        encodings=list(encodings or BUILT_IN),
        encoding=ENCODING,
        device=CPU,
        log=logging.getLogger("test_rotation"),
    )


def verdicts(c: Context) -> dict[str, str]:
    return {
        x["id"]: x["verdict"] for x in evaluate(SPEC.claims, compute(c).evidence, c.cfg, "rotation")
    }


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


class _SuRotary(QKEncoding):
    """Su et al.'s rotation, interleaved pairs, from the registry's pure functions: the scores
    of qk_scores are compared with the naive loop above through it."""

    def rotate(self, q, k, q_pos, k_pos):
        p = self.params
        cq, sq = rope_cos_sin(q_pos, p.head_dim, p.rope_base, p.angle_dtype)
        ck, sk = rope_cos_sin(k_pos, p.head_dim, p.rope_base, p.angle_dtype)
        return apply_rope(q, cq, sq), apply_rope(k, ck, sk)


class _Base500Table(InputEncoding):
    """Vaswani et al.'s table with a base of its own (500): a fixed table from outside."""

    def input_encoding(self, positions):
        return sinusoidal_table(positions, self.params.d_model, 500.0, self.params.angle_dtype)


class _HalfSplitRotary(QKEncoding):
    """RoPE with base 500 in the half-split layout: a relative qk encoding from outside."""

    def rotate(self, q, k, q_pos, k_pos):
        p = self.params
        cq, sq = rope_cos_sin(q_pos, p.head_dim, 500.0, p.angle_dtype)
        ck, sk = rope_cos_sin(k_pos, p.head_dim, 500.0, p.angle_dtype)
        return apply_rope(q, cq, sq, False), apply_rope(k, ck, sk, False)


@pytest.fixture
def outsiders(monkeypatch):
    """Two encodings registered from outside, for this test only."""
    specs = [
        EncodingSpec(
            "outside_table",
            "input",
            _Base500Table,
            relative=False,
            learned=False,
            citation="a test",
            summary="Sinusoidal, base 500.",
        ),
        EncodingSpec(
            "outside_rotary",
            "qk",
            _HalfSplitRotary,
            relative=True,
            learned=False,
            citation="a test",
            summary="RoPE, base 500, half split.",
        ),
    ]
    for s in specs:
        monkeypatch.setitem(REGISTRY, s.name, s)
    return [s.name for s in specs]


def test_the_registry_has_what_the_analysis_measures():
    assert fixed_tables() and relative_qk()
    assert select(BUILT_IN, probe(), InputEncoding, learned=True)


@pytest.mark.parametrize("encoding", fixed_tables())
def test_rotation_read_off_the_row_is_the_direct_rotation(encoding):
    """R_i(k) from the table's row PE(k) equals cos/sin of k·ω_i evaluated directly, bit for
    bit, and the table is Vaswani et al.'s formula."""
    table = build(encoding, params(ENCODING, d_model=8, angle_dtype=torch.float64))
    k = torch.tensor([0, 1, 7, 4000])
    got = blocks_from_row(table.input_encoding(k))
    assert torch.equal(got, rotation_blocks(k, 8, table.params.base, torch.float64))
    for p in (0, 3, 1000):
        want = naive_pe(p, 8, table.params.base)
        assert table.input_encoding(torch.tensor([p]))[0].tolist() == pytest.approx(want, abs=1e-12)


def _make(encoding, d):
    return lambda a: build(encoding, params(ENCODING, d_model=d, angle_dtype=a))


def test_identity_holds_in_float64_within_the_bound():
    rows = identity_errors(
        fixed_tables()[0],
        _make(fixed_tables()[0], 8),
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


def test_identity_fails_for_a_table_that_is_not_a_rotation():
    """A learned table has no R(k): the check must see it, not pass by construction."""
    learned = select(BUILT_IN, probe(), InputEncoding, learned=True)[0]

    def make(a):
        torch.manual_seed(0)
        return build(learned, params(ENCODING, d_model=8, max_len=64, angle_dtype=a))

    rows = identity_errors(
        learned, make, 8, 10000.0, torch.float64, torch.tensor([2, 5]), torch.tensor([1]), 4
    )
    assert min(r["error_over_tolerance"] for r in rows) > 1e6


def test_identity_bound_grows_with_position():
    rows = identity_errors(
        fixed_tables()[0],
        _make(fixed_tables()[0], 4),
        4,
        10000.0,
        torch.float32,
        torch.tensor([1, 10**6]),
        torch.tensor([1]),
        ulps=4,
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
def test_qk_scores_match_a_naive_loop(x_dtype):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 6, generator=g, dtype=torch.float64)
    k = torch.randn(2, 6, generator=g, dtype=torch.float64)
    pq, pk = torch.tensor([0, 5, 77]), torch.tensor([3, 5, 1000])
    a = torch.promote_types(x_dtype, torch.float32)
    module = _SuRotary(params(ENCODING, d_model=6, n_heads=1, angle_dtype=a))
    got = qk_scores(module, q, k, pq, pk, x_dtype)
    assert got.shape == (2, 3)
    for i, j in itertools.product(range(2), range(3)):
        expected = naive_rope_score(q[i].tolist(), k[i].tolist(), int(pq[j]), int(pk[j]), 10000.0)
        tol = 1e-12 if x_dtype == torch.float64 else 1e-4
        assert got[i, j].item() == pytest.approx(expected, abs=tol)


@pytest.mark.parametrize("encoding", relative_qk())
def test_relative_qk_scores_ignore_a_common_shift(encoding):
    g = torch.Generator().manual_seed(1)
    q = torch.randn(3, 8, generator=g, dtype=torch.float64)
    k = torch.randn(3, 8, generator=g, dtype=torch.float64)
    module = build(encoding, params(ENCODING, d_model=8, n_heads=1, angle_dtype=torch.float64))
    pq, pk = torch.tensor([0, 4, 9]), torch.tensor([6, 1, 9])
    ref = qk_scores(module, q, k, pq, pk, torch.float64)
    moved = qk_scores(module, q, k, pq + 37, pk + 37, torch.float64)
    assert (moved - ref).abs().max() < 1e-12
    assert (qk_scores(module, q, k, pq, pk + 1, torch.float64) - ref).abs().max() > 1e-3


def test_resolution_span_is_two_pi_over_the_smallest_gap():
    for d, base in ((4, 10000.0), (16, 10000.0), (128, 500000.0)):
        omega = [base ** (-2 * i / d) for i in range(d // 2)]
        gaps = [a - b for a, b in itertools.pairwise(omega)] + [omega[-1]]
        table = build(
            fixed_tables()[0], params(ENCODING, d_model=d, base=base, angle_dtype=torch.float64)
        )
        read = table_frequencies(lambda p, t=table: t.input_encoding(p))
        assert read.tolist() == pytest.approx(omega, rel=1e-12)
        assert resolution_span(read) == pytest.approx(2 * math.pi / min(gaps), rel=1e-12)


def test_linear_map_is_exact_when_resolved_and_not_for_a_learned_table():
    g = torch.Generator().manual_seed(0)
    fixed = fixed_tables()
    learned = select(BUILT_IN, probe(), InputEncoding, learned=True)
    rows = linear_offset_maps(
        TINY["linear_map"], fixed, learned, ENCODING, [8], [10000.0], 4, g, CPU
    )
    full = [r for r in rows if r["encoding"] in fixed and r["training"] == "full"]
    assert full and all(r["held_out_rel_error"] <= r["tolerance"] for r in full)
    assert all(r["map_error"] < 1e-9 for r in full)
    contrast = [r for r in rows if r["encoding"] in learned]
    assert contrast and all(r["held_out_rel_error"] > 0.1 for r in contrast)


def test_tiny_run_passes_every_claim():
    c = ctx()
    m = compute(c)
    ledger = evaluate(SPEC.claims, m.evidence, c.cfg, "rotation")
    assert {x["id"]: x["verdict"] for x in ledger} == dict.fromkeys(IDS, "pass")
    naive = [r for r in m.rows["score_shift"] if r["naive"]]
    assert max(r["max_deviation"] for r in naive) > 1e-2  # bfloat16 positions do round
    assert not any("verdict" in r for rows in m.rows.values() for r in rows)
    # Context the ledger shows beside the checked values: the three vectors of the hand trace,
    # the identity's largest errors, the offset maps' figures and the learned contrast.
    measured = {x["id"]: x["measured"] for x in ledger}
    trace = measured["rotation.hand_trace"]
    assert sum(isinstance(v, list) and len(v) == 4 for v in trace.values()) == 3
    assert "identity max error" in measured["rotation.sinusoidal_identity"]
    assert "naive angle deviation" in measured["rotation.rope_relative_only"]
    assert {"offset map max error", "offset map max w error", "learned min error"} <= set(
        measured["rotation.linear_offset_map"]
    )


def test_claims_fail_when_their_bound_is_too_tight():
    cfg = copy.deepcopy(TINY)
    cfg["thresholds"]["max_over_bound"] = 1e-9
    cfg["thresholds"]["identity_ulps"] = 1e-9
    assert set(verdicts(ctx(cfg)).values()) == {"fail"}


@pytest.mark.parametrize(
    "key, printed",
    [("article_target", [0.919, -0.416, 0.020, 1.000]), ("article_cos_sin", [0.540, 0.842])],
)
def test_a_wrong_digit_in_the_article_fails_the_hand_trace_only(key, printed):
    cfg = copy.deepcopy(TINY)
    cfg["hand_trace"][key] = printed
    got = verdicts(ctx(cfg))
    assert got.pop("rotation.hand_trace") == "fail"
    assert set(got.values()) == {"pass"}


def test_claims_are_na_without_the_encodings_they_need():
    """With no positional encoding at all, only the article's own trace can be judged."""
    free = [e for e in BUILT_IN if not REGISTRY[e].positional]
    got = verdicts(ctx(encodings=free))
    assert got.pop("rotation.hand_trace") == "pass"
    assert set(got.values()) == {"n/a"}


def test_encodings_from_outside_flow_through(outsiders):
    import matplotlib

    matplotlib.use("Agg")
    c = ctx(encodings=[*BUILT_IN, *outsiders])
    m = compute(c)
    table, rotary = outsiders
    assert table in {r["encoding"] for r in m.rows["identity"]}
    assert table in {r["encoding"] for r in m.rows["linear_map"]}
    assert rotary in {r["encoding"] for r in m.rows["score_shift"]}
    assert table in m.evidence["identity_over_bound"]
    assert table in m.evidence["offset_map_over_bound"]
    assert rotary in m.evidence["shift_over_bound"]
    ledger = evaluate(SPEC.claims, m.evidence, c.cfg, "rotation")
    assert {x["verdict"] for x in ledger} == {"pass"}
    for tid in ("identity", "score_shift", "linear_map"):
        _, rows = getattr(present, f"table_{tid}")(m, c)
        assert {table, rotary} & {r[0] for r in rows}
    for fid, name in (("identity", table), ("score_shift", rotary)):
        fig = getattr(present, f"figure_{fid}")(m, c)
        labels = [
            t.get_text()
            for leg in [*fig.legends, *(a.get_legend() for a in fig.axes)]
            if leg
            for t in leg.get_texts()
        ]
        assert any(name in text for text in labels), labels


def test_config_checks_name_the_key():
    config = {"rotation": copy.deepcopy(TINY)}
    assert check_hand_trace(config) == [] and check_linear_map(config) == []
    config["rotation"]["hand_trace"]["from_position"] = 3
    config["rotation"]["hand_trace"]["article_target"] = [0.9]
    config["rotation"]["linear_map"]["n_train"] = 4
    problems = check_hand_trace(config) + check_linear_map(config)
    assert len(problems) == 3
    assert any("rotation.hand_trace.from_position" in p for p in problems)
    assert any("rotation.hand_trace.article_target" in p for p in problems)
    assert any("rotation.linear_map.n_train" in p for p in problems)
