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

from posenc.analyses.rotation import present
from posenc.analyses.rotation import scores as rotation_scores
from posenc.analyses.rotation.compute import compute
from posenc.analyses.rotation.encodings import groups
from posenc.analyses.rotation.hand_trace import hand_trace
from posenc.analyses.rotation.scores import qk_scores, score_shifts
from posenc.analyses.rotation.spec import SPEC, check_hand_trace, check_linear_map
from posenc.analyses.rotation.tables import (
    blocks_from_row,
    identity_errors,
    linear_offset_maps,
    resolution_span,
    table_frequencies,
)
from posenc.analysis import Context
from posenc.claims import evaluate
from posenc.encodings import (
    REGISTRY,
    EncodingParams,
    EncodingSpec,
    InputEncoding,
    QKEncoding,
    apply_rope,
    build,
    override,
    rope_cos_sin,
    sinusoidal_table,
)
from posenc.numerics import rotation_blocks
from posenc.rounding import past_exact_integers, rotation_pairs

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
qk: {head_dim: 8, n_heads: 2, n_vectors: 3, n_pairs: 3, window: 8, max_log2_shift: 10,
     naive_dtypes: [bfloat16]}
linear_map: {offsets: [1, 3], n_train: 32, n_test: 16, train_span: 1.0, short_span: 0.0625,
             learned_len: 128}
thresholds: {identity_ulps: 4, rope_ulps: 8, rope_angle_ulps: 1.0, linear_map_ulps: 4,
             max_over_bound: 1.0}
"""
)
ENCODING = {"sinusoidal": {"base": 10000}, "rope": {"base": 10000}}
BUILT_IN = list(REGISTRY)  # before any test registers more
IDS = {c.id for c in SPEC.claims}


def fixed_tables() -> list[str]:
    return groups(BUILT_IN)["fixed_tables"]


def learned_tables() -> list[str]:
    return groups(BUILT_IN)["learned_tables"]


def relative_qk() -> list[str]:
    return groups(BUILT_IN)["relative_qk"]


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
        cq, sq = rope_cos_sin(q_pos, p.head_dim, 10000.0, p.angle_dtype)
        ck, sk = rope_cos_sin(k_pos, p.head_dim, 10000.0, p.angle_dtype)
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
def outsiders(registered):
    """Two encodings registered from outside, for this test only."""
    return registered(
        EncodingSpec(
            "outside_table",
            "input",
            _Base500Table,
            relative=False,
            learned=False,
            citation="a test",
            summary="Sinusoidal, base 500.",
            waves=True,
        ),
        EncodingSpec(
            "outside_rotary",
            "qk",
            _HalfSplitRotary,
            relative=True,
            learned=False,
            citation="a test",
            summary="RoPE, base 500, half split.",
            planar_rotation=True,
        ),
    )


def test_the_registry_has_what_the_analysis_measures():
    assert fixed_tables() and relative_qk() and learned_tables()
    # Every other built-in is n/a here, with its reason.
    assert set(groups(BUILT_IN)["not_measured"]) == {
        e for e in BUILT_IN if e not in {*fixed_tables(), *learned_tables(), *relative_qk()}
    }


@pytest.mark.parametrize("encoding", fixed_tables())
def test_rotation_read_off_the_row_is_the_direct_rotation(encoding):
    """R_i(k) from the table's row PE(k) equals cos/sin of k·ω_i evaluated directly, bit for
    bit, and the table is Vaswani et al.'s formula."""
    table = build(encoding, ENCODING, d_model=8, angle_dtype=torch.float64)
    k = torch.tensor([0, 1, 7, 4000])
    got = blocks_from_row(table.input_encoding(k))
    base = table.params.hyper.base
    assert torch.equal(got, rotation_blocks(k, 8, base, torch.float64))
    for p in (0, 3, 1000):
        want = naive_pe(p, 8, base)
        assert table.input_encoding(torch.tensor([p]))[0].tolist() == pytest.approx(want, abs=1e-12)


def _make(encoding, d):
    return lambda a: build(encoding, ENCODING, d_model=d, angle_dtype=a)


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
    learned = learned_tables()[0]

    def make(a):
        torch.manual_seed(0)
        return build(learned, ENCODING, d_model=8, max_len=64, angle_dtype=a)

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
    module = _SuRotary(EncodingParams(d_model=6, angle_dtype=a))
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
    module = build(encoding, ENCODING, d_model=8, angle_dtype=torch.float64)
    pq, pk = torch.tensor([0, 4, 9]), torch.tensor([6, 1, 9])
    ref = qk_scores(module, q, k, pq, pk, torch.float64)
    moved = qk_scores(module, q, k, pq + 37, pk + 37, torch.float64)
    assert (moved - ref).abs().max() < 1e-12
    assert (qk_scores(module, q, k, pq, pk + 1, torch.float64) - ref).abs().max() > 1e-3


def test_resolution_span_is_two_pi_over_the_smallest_gap():
    for d, base in ((4, 10000.0), (16, 10000.0), (128, 500000.0)):
        omega = [base ** (-2 * i / d) for i in range(d // 2)]
        gaps = [a - b for a, b in itertools.pairwise(omega)] + [omega[-1]]
        table = fixed_tables()[0]
        config = override(ENCODING, table, base=base)
        table = build(table, config, d_model=d, angle_dtype=torch.float64)
        read = table_frequencies(lambda p, t=table: t.input_encoding(p))
        assert read.tolist() == pytest.approx(omega, rel=1e-12)
        assert resolution_span(read) == pytest.approx(2 * math.pi / min(gaps), rel=1e-12)


def test_linear_map_is_exact_when_resolved_and_not_for_a_learned_table():
    fixed = fixed_tables()
    learned = learned_tables()
    rows = linear_offset_maps(
        TINY["linear_map"], fixed, learned, ENCODING, [8], [10000.0], 4, 0, CPU
    )
    full = [r for r in rows if r["encoding"] in fixed and r["training"] == "full"]
    assert full and all(r["held_out_rel_error"] <= r["tolerance"] for r in full)
    assert all(r["map_error"] < 1e-9 for r in full)
    contrast = [r for r in rows if r["encoding"] in learned]
    assert contrast and all(r["held_out_rel_error"] > 0.1 for r in contrast)


def test_a_tables_offset_map_does_not_depend_on_the_other_tables_configured():
    # A report card's study configures other encodings than the main study: with one seed,
    # the learned table's contrast must read the same in both (it once read 179 % and 128 %).
    learned = learned_tables()
    alone = linear_offset_maps(TINY["linear_map"], [], learned, ENCODING, [8], [1e4], 4, 0, CPU)
    beside = linear_offset_maps(
        TINY["linear_map"], fixed_tables(), learned, ENCODING, [8], [1e4], 4, 0, CPU
    )
    assert alone and alone == [r for r in beside if r["encoding"] in learned]


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
    assert "shift max deviation" in measured["rotation.rope_relative_only"]
    naive_claim = measured["rotation.rope_naive_bf16_breaks_relative"]
    assert {"naive largest over bound", "naive angle deviation"} <= set(naive_claim)
    statement = next(x["statement"] for x in ledger if x["id"] == NAIVE)
    assert "(bfloat16)" in statement and "bfloat16: 256" in statement
    assert {"offset map max error", "offset map max w error", "learned min error"} <= set(
        measured["rotation.linear_offset_map"]
    )
    # A least-squares fit shows that the map exists, not that training finds it: the
    # statement says so, and claims no learning.
    offset = next(x["statement"] for x in ledger if x["id"] == "rotation.linear_offset_map")
    assert "exists" in offset and "whether a projection learns it in training is not" in offset
    assert "can learn" not in offset


NAIVE = "rotation.rope_naive_bf16_breaks_relative"


def test_claims_fail_when_their_bound_is_too_tight():
    """Too tight a limit fails every claim that the error stays within its bound; the naive
    claim, that its error exceeds the bound, fails when the limit is too loose instead."""
    cfg = copy.deepcopy(TINY)
    cfg["thresholds"]["max_over_bound"] = 1e-9
    cfg["thresholds"]["identity_ulps"] = 1e-9
    got = verdicts(ctx(cfg))
    assert got.pop(NAIVE) == "pass"
    assert set(got.values()) == {"fail"}
    cfg["thresholds"]["max_over_bound"] = 1e9
    assert verdicts(ctx(cfg))[NAIVE] == "fail"


def test_a_looser_storage_term_hides_the_naive_angles():
    """The naive claim rests on the bound being tight: with a storage term as loose as a
    worst-case d-term sum in bfloat16 (here 128·eps, about 1) no change need exceed it, so
    the naive claim fails while the relative-only claim still passes."""
    cfg = copy.deepcopy(TINY)
    cfg["thresholds"]["rope_ulps"] = 128
    got = verdicts(ctx(cfg))
    assert got[NAIVE] == "fail" and got["rotation.rope_relative_only"] == "pass"


def _shift_rows(encoding, angle_ulps=1.0, **rope):
    cfg = {**TINY["qk"], **rope}
    g = torch.Generator().manual_seed(3)
    return score_shifts(cfg, [encoding], ENCODING, ["float32", "bfloat16"], 8, angle_ulps, g, CPU)


@pytest.mark.parametrize("encoding", relative_qk())
def test_the_bound_holds_for_registry_angles_and_rejects_naive_ones(encoding):
    """One bound for both: the registry's float32 angles stay under it at every shift, up to
    2^20; the bfloat16 angles (positions built in bfloat16) exceed it at every shift from
    bfloat16's last exact integer, 256, on, and the bound itself is the same number."""
    rows = _shift_rows(encoding, head_dim=16, n_vectors=8, n_pairs=8, window=16, max_log2_shift=20)
    careful = [r for r in rows if not r["naive"]]
    naive = [r for r in rows if r["naive"]]
    assert careful and naive
    assert max(r["deviation_over_tolerance"] for r in careful) <= 1.0
    past = [r for r in naive if r["past_exact_integers"]]
    assert [r["shift"] for r in past] == [2**e for e in range(8, 21)]
    assert min(r["deviation_over_tolerance"] for r in past) > 1.0
    # Every bfloat16 case, naive or not, is held to the bound of the registry's angles.
    assert all(r["bound_angles"] == "float32" for r in rows if r["dtype"] == "bfloat16")
    # At 2^20 the float32 bound is far below the old 4·P·eps32 = 0.5, a few times the change.
    top = max((r for r in careful if r["dtype"] == "float32"), key=lambda r: r["shift"])
    assert top["tolerance"] < 0.1 and top["max_deviation"] > top["tolerance"] / 20


@pytest.mark.parametrize("encoding", relative_qk())
def test_half_an_ulp_per_angle_is_not_enough_past_float32_exact_integers(encoding):
    """The angle term counts two roundings (the position, then the product): its derivation
    matters. With a tenth of it the float32 rows at large positions exceed the bound."""
    rows = _shift_rows(
        encoding, angle_ulps=0.1, head_dim=16, n_vectors=8, n_pairs=8, max_log2_shift=20
    )
    float32 = [r for r in rows if r["dtype"] == "float32" and r["shift"] >= 2**16]
    assert max(r["deviation_over_tolerance"] for r in float32) > 1.0


def test_past_exact_integers():
    assert not past_exact_integers(torch.bfloat16, 255, 16)
    assert past_exact_integers(torch.bfloat16, 256, 16)
    assert past_exact_integers(torch.float16, 2048, 16)
    assert not past_exact_integers(torch.float16, 65536, 16)  # inf: no score at all
    assert not past_exact_integers(torch.float32, 2**20, 64)


def test_rotation_pairs_read_the_layout_and_frequencies(outsiders):
    """Interleaved pairs (2i, 2i+1) for the registry's rotary encoding, half-split pairs
    (i, i + d/2) for the one from outside, each with ω_i = base^(−2i/d)."""
    for encoding, base, half in ((relative_qk()[0], 10000.0, False), (outsiders[1], 500.0, True)):
        module = build(encoding, ENCODING, d_model=8, angle_dtype=torch.float64)
        pairs, omega = rotation_pairs(module, 8, CPU)
        want = [[i, i + 4] for i in range(4)] if half else [[2 * i, 2 * i + 1] for i in range(4)]
        assert pairs.tolist() == want
        assert omega.tolist() == pytest.approx([base ** (-2 * i / 8) for i in range(4)], rel=1e-12)


class _Mixing(QKEncoding):
    """Not a rotation of pairs: every coordinate mixed into every other."""

    def rotate(self, q, k, q_pos, k_pos):
        mix = torch.full((q.shape[-1],) * 2, 0.5, dtype=q.dtype)
        return q @ mix, k @ mix


def test_rotation_pairs_refuse_a_transform_that_is_not_one():
    with pytest.raises(ValueError, match="does not rotate coordinates in pairs"):
        rotation_pairs(_Mixing(EncodingParams(d_model=4)), 4, CPU)


def test_a_transform_that_is_not_planar_rotations_is_na_with_its_reason(registered):
    """Declared without planar_rotation, a query/key transform is not measured (and does not
    stop the analysis): the section says why."""
    (mixing,) = registered(
        EncodingSpec(
            "outside_mixing",
            "qk",
            _Mixing,
            relative=True,
            learned=False,
            citation="a test",
            summary="Every coordinate mixed.",
        )
    )
    m = compute(ctx(encodings=[*BUILT_IN, mixing]))
    assert mixing not in {r["encoding"] for r in m.rows["score_shift"]}
    assert "not made of planar rotations" in m.summary["not_measured"][mixing]
    assert m.summary["qk"] == relative_qk()  # the registry's own are measured as before


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


def test_an_encoding_whose_heads_differ_is_measured_group_by_group(toy_plugin):
    """RoPE whose head h has base 10000·16^h: read at one head it would be RoPE. Each group's
    first head is measured, named toy_head_base+heads h; head 0's rows are RoPE's to the bit,
    the others turn slower."""
    rows = _shift_rows("toy_head_base", head_dim=16, n_vectors=8, n_pairs=8, window=16)
    rope = _shift_rows("rope", head_dim=16, n_vectors=8, n_pairs=8, window=16)
    names = list(dict.fromkeys(r["encoding"] for r in rows))
    assert names == ["toy_head_base+heads 0", "toy_head_base+heads 1"]  # TINY's two heads
    head0 = [{**r, "encoding": "rope"} for r in rows if r["encoding"] == names[0]]
    assert head0 == rope
    careful = [r for r in rows if not r["naive"]]
    assert max(r["deviation_over_tolerance"] for r in careful) <= 1.0
    head1 = [r["max_deviation"] for r in rows if r["encoding"] == names[1]]
    assert head1 != [r["max_deviation"] for r in rope]
    bases = rotation_scores.head_bases(
        {**TINY["qk"], "head_dim": 16}, ["toy_head_base", "rope"], ENCODING
    )
    assert bases == {"toy_head_base": {"0": 10000.0, "1": 160000.0}}
