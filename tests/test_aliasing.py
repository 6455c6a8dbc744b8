"""The aliasing analysis on tiny tables, against naive references written here; claims that
must fail; and encodings registered from outside, which must flow through with no edit."""

import copy
import logging

import pytest
import torch
import yaml

from posenc.analyses.aliasing import present
from posenc.analyses.aliasing import spec as aliasing_spec
from posenc.analyses.aliasing.compute import compute
from posenc.analyses.aliasing.distinct import count_distinct, decode_accuracy
from posenc.analyses.aliasing.exact import exact_min_distances
from posenc.analyses.aliasing.spec import SPEC, check_lengths
from posenc.analyses.aliasing.tables import AngleTable, Variant, angle_tables, learned_tables
from posenc.analysis import Context
from posenc.claims import evaluate
from posenc.encodings import (
    REGISTRY,
    EncodingSpec,
    InputEncoding,
    QKEncoding,
    angles,
    apply_rope,
    inverse_frequencies,
)
from posenc.numerics import error_positions
from posenc.rounding import first_overflowing_integer, significand_bits

TINY = yaml.safe_load(
    """
min_log2_len: 4
max_log2_len: 17
chunk_rows: 8192
exact: {d_values: [4, 16], bases: [10000], check_len: 200}
d_model: 16
rope_head_dim: 16
n_heads: 2
bases: {rope: 10000}
variants:
  - {angles: bfloat16, store: bfloat16}
  - {angles: float16, store: float16}
  - {angles: float32, store: float32}
  - {angles: float32, store: bfloat16}
  - {angles: float64, store: float16}
error_samples_per_octave: 2
decode_samples: 4
decode_block_elements: 1048576
learned_max_len: 32
thresholds:
  min_far_to_adjacent: 1.0
  scan_rtol: 1.0e-9
  collapse_max_distinct_fraction: 0.5
  fp16_max_position: 65504
  angle_error_slope: 1.0
  angle_error_slope_tol: 0.2
  angle_fit_min_position: 16
  angle_max_over_bound: 1.0
  careful_min_distinct_fraction: 1.0
  careful_error_ulps: 0.5
  careful_min_decode_accuracy: 1.0
"""
)
ENCODING = {
    # Partial RoPE's rotated part is its table: a quarter of these 16-wide heads is 4 columns,
    # too few to keep 2^17 positions apart in bfloat16; the shipped configs' heads are wider.
    "rope_partial": {"fraction": 0.5},
}
CPU = torch.device("cpu")
BUILT_IN = list(REGISTRY)  # before any test registers its own
CLAIMS = [c.id for c in SPEC.claims]


def context(cfg=TINY, encodings=None) -> Context:
    return Context(
        cfg=copy.deepcopy(cfg),
        seed=0,
        encodings=list(encodings or BUILT_IN),
        encoding=dict(ENCODING),
        device=CPU,
        log=logging.getLogger("test_aliasing"),
    )


def verdicts(cfg=TINY, encodings=None) -> dict[str, str]:
    m = compute(context(cfg, encodings))
    return {c["id"]: c["verdict"] for c in evaluate(SPEC.claims, m.evidence, cfg, "aliasing")}


def tables(cfg=TINY) -> dict[str, AngleTable]:
    return angle_tables(cfg, BUILT_IN, ENCODING)


def input_table() -> AngleTable:
    """The first built-in input encoding with a table of angles."""
    return next(t for e, t in tables().items() if REGISTRY[e].acts_on == "input")


def test_significand_bits():
    assert significand_bits(torch.bfloat16) == 8
    assert significand_bits(torch.float16) == 11
    assert significand_bits(torch.float32) == 24
    assert significand_bits(torch.float64) == 53


def test_first_overflowing_integer_rounds_to_infinity_and_the_one_before_does_not():
    p = first_overflowing_integer(torch.float16)
    assert p == 65520  # 65504 + half of float16's spacing 32 there
    assert torch.tensor(float(p)).half().isinf() and not torch.tensor(p - 1.0).half().isinf()
    top = int(torch.finfo(torch.bfloat16).max)
    q = first_overflowing_integer(torch.bfloat16)
    assert torch.tensor(float(q)).bfloat16().isinf() and q > top


def test_tables_are_the_encodings_with_waves_at_the_section_widths():
    found = tables()
    assert found  # the built-ins have some
    for name in BUILT_IN:
        assert (name in found) == REGISTRY[name].waves, name
    narrow = {**TINY, "rope_head_dim": 8}  # one head narrower than the model
    for name, table in tables(narrow).items():
        qk = REGISTRY[name].acts_on == "qk"
        head = table.module.params.head_dim
        assert head == (narrow["rope_head_dim"] if qk else narrow["d_model"])
        # An input table is as wide as the model; a rotation's, as the part of a head it
        # turns (all of it for RoPE, a share of it for a partial rotation).
        assert table.width == head if not qk else 0 < table.width <= head
        assert table.module.params.max_len == narrow["learned_max_len"]


def test_angle_tables_are_the_sines_and_cosines_of_their_angles():
    """Layout aside, every row holds sin and cos of the angles the analysis measures, in the
    same dtype: the angle error studied is the one behind the table."""
    pos = torch.tensor([0, 3, 257, 4000, 70000])
    for table in tables().values():
        for dt in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
            theta = table.angles(pos, dt)
            expected = torch.cat((theta.sin(), theta.cos()), -1)
            got = table.module.angle_table(pos, dt)
            assert got.dtype == dt and got.shape == (len(pos), table.width)
            assert torch.equal(
                got.sort(-1).values.nan_to_num(), expected.sort(-1).values.nan_to_num()
            )
        omega = table.module.frequencies()
        assert torch.equal(table.angles(pos, torch.float64), pos.double()[:, None] * omega)


def test_angles_are_the_registry_formula_in_the_dtype():
    """AngleTable.angles is posenc.encodings.angles (ω in float64, positions and ω cast, one
    product), here for the input table, whose base is its params' ``base``."""
    table = input_table()
    pos = torch.arange(70000)
    for dt in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
        want = angles(pos, table.width, table.module.params.hyper.base, dt)
        assert torch.equal(table.angles(pos, dt).nan_to_num(), want.nan_to_num())
    assert table.base == pytest.approx(table.module.params.hyper.base, rel=1e-12)


def test_input_tables_are_what_the_model_adds():
    """An input encoding's angle table at its angle dtype is its input encoding."""
    table = input_table()
    pos = torch.arange(50)
    assert torch.equal(
        table.module.angle_table(pos, table.module.params.angle_dtype),
        table.module.input_encoding(pos),
    )


def test_rotation_tables_are_the_angles_queries_and_keys_turn_by():
    """A rotation's cos/sin table reproduces its own rotate(), written out here with
    apply_rope's pairing from the table's cos and sin halves, on the part of a head it turns,
    one position at a time (a transform that also scales, xPos, centres its scales on the
    positions it is given: one alone is turned and not scaled)."""
    pos = torch.arange(9)
    for name, table in tables().items():
        module = table.module
        if REGISTRY[name].acts_on != "qk":
            continue
        half = table.width // 2
        rows = module.angle_table(pos, module.params.angle_dtype)  # (L, width)
        x = torch.randn(1, 1, len(pos), table.width, dtype=torch.float64)
        want = apply_rope(x, rows[:, :half], rows[:, half:], module.params.hyper.interleaved)
        for i in range(len(pos)):
            one = pos[i : i + 1]
            got, _ = module.rotate(x[:, :, i : i + 1], x[:, :, i : i + 1], one, one)
            assert torch.allclose(got, want[:, :, i : i + 1], atol=1e-12), table.encoding


def test_naive_variant_rounds_positions_in_its_dtype():
    table = input_table()
    fn = table.rows_fn(Variant("bfloat16", "bfloat16"))
    assert torch.equal(fn(torch.tensor([257])), fn(torch.tensor([256])))  # 257 is not bfloat16
    careful = table.rows_fn(Variant("float32", "bfloat16"))
    assert not torch.equal(careful(torch.tensor([257])), careful(torch.tensor([256])))


def test_exact_scan_agrees_with_brute_force_and_finds_far_pairs_at_small_d():
    lengths = [2**e for e in range(4, 13)]
    rows, checks = exact_min_distances(TINY, lengths, CPU)
    assert all(c["relative_difference"] < 1e-9 for c in checks)
    d4 = next(r for r in rows if r["d"] == 4 and r["length"] == lengths[-1])
    assert d4["argmin_offset"] > 1  # at d = 4 a distant pair is the closest one
    assert d4["far_to_adjacent"] < 1.0
    d16 = [r for r in rows if r["d"] == 16]
    assert all(r["far_to_adjacent"] >= 1.0 for r in d16)  # d = 16: neighbours are closest


def test_distinct_counts_of_naive_and_careful_tables():
    table = input_table()
    variants = [
        Variant("bfloat16", "bfloat16"),
        Variant("float16", "float16"),
        Variant("float32", "float16"),
    ]
    lengths = [2**e for e in range(4, 18)]
    summary, curve = count_distinct({table.encoding: table}, variants, lengths, TINY, CPU)
    by = {s["variant"]: s for s in summary}
    bf16, fp16, careful = (
        by["naive bfloat16"],
        by["naive float16"],
        by["float16 from float32 angles"],
    )
    assert (bf16["first_repeat"], bf16["first_repeat_of"]) == (257, 256)
    assert (fp16["first_repeat"], fp16["first_repeat_of"]) == (2049, 2048)
    assert fp16["first_nonfinite"] == 65520  # the first integer that rounds to float16 inf
    assert fp16["nonfinite_rows"] == 2**17 - 65520
    assert careful["nonfinite_rows"] == 0 and careful["distinct"] == 2**17
    # The naive bfloat16 count is the number of distinct bfloat16 values among the positions.
    positions = torch.arange(2**17).to(torch.bfloat16)
    assert bf16["distinct"] == positions.unique().numel()
    small = [c for c in curve if c["variant"] == "naive bfloat16" and c["length"] <= 256]
    assert all(c["distinct"] == c["length"] for c in small)


def test_exact_variant_decodes_every_position():
    table = input_table()
    variants = [Variant("float64", "float64"), Variant("bfloat16", "bfloat16")]
    rows = decode_accuracy(
        {table.encoding: table},
        variants,
        [16, 1024, 8192],
        TINY,
        torch.Generator().manual_seed(0),
        CPU,
    )
    exact = [r["accuracy"] for r in rows if r["variant"] == "naive float64"]
    assert exact == [1.0, 1.0, 1.0]
    assert min(r["accuracy"] for r in rows if r["variant"] == "naive bfloat16") < 1.0


def test_error_positions_cover_every_octave():
    pos = error_positions(10, 3, torch.Generator().manual_seed(0))
    for e in range(10):
        assert ((pos >= 2**e) & (pos < 2 ** (e + 1))).any()
    assert pos.min() == 1 and pos.max() == 2**10 - 1


def test_learned_tables_refuse_position_l_max():
    found = learned_tables(TINY, BUILT_IN, ENCODING)
    assert found  # the built-ins have a learned input table
    for out in found:
        assert REGISTRY[out["encoding"]].learned
        assert out["raised"] and out["error"] == "PositionOutOfRange"
        assert "32" in out["message"] and out["in_range_shape"] == [32, TINY["d_model"]]


def test_tiny_run_passes_every_claim():
    assert verdicts() == dict.fromkeys(CLAIMS, "pass")


def test_claims_fail_when_their_thresholds_cannot_hold():
    cfg = copy.deepcopy(TINY)
    cfg["thresholds"] |= {
        "collapse_max_distinct_fraction": 0.001,  # naive tables keep more than that distinct
        "angle_error_slope": 2.0,  # the float32 angle error grows linearly, not quadratically
        "careful_error_ulps": 0.01,  # correctly rounded is half an ulp, not a hundredth
        "fp16_max_position": 70000,  # overflow starts below it
        "min_far_to_adjacent": 2.0,  # far pairs are not twice as far as neighbours
    }
    got = verdicts(cfg)
    for cid in (
        "aliasing.low_precision_collapse",
        "aliasing.fp32_angle_error_growth",
        "aliasing.careful_computation_fix",
        "aliasing.fp16_overflow",
        "aliasing.exact_min_distance",
    ):
        assert got[cid] == "fail", cid
    assert got["aliasing.learned_out_of_range"] == "pass"


def test_ledger_measures_raw_values_and_shows_their_context():
    """The slope is recorded as measured (the claim compares it with the config's exponent),
    and the numbers the verdict does not read stand beside the checked ones."""
    m = compute(context())
    ledger = {c["id"]: c["measured"] for c in evaluate(SPEC.claims, m.evidence, TINY, "aliasing")}
    fits = m.summary["fp32_angle"]
    growth = ledger["aliasing.fp32_angle_error_growth"]
    slope = next(c for c in SPEC.claims if c.id == "aliasing.fp32_angle_error_growth").checks[0]
    assert growth[slope.name] == {e: f["slope"] for e, f in fits.items()}
    assert growth["fp32 angle max error"] == {e: f["max_abs_error"] for e, f in fits.items()}
    careful = ledger["aliasing.careful_computation_fix"]
    assert careful["careful variants"] == m.summary["careful"]["variants"] > 0
    assert careful["careful nonfinite rows"] == 0
    repeats = ledger["aliasing.low_precision_collapse"]["collapse first repeat"]
    assert [r for k, r in repeats.items() if k.endswith(", float16")] == [2049] * len(tables())
    shapes = ledger["aliasing.learned_out_of_range"]["learned in range shape"]
    assert shapes and all(s == [32, TINY["d_model"]] for s in shapes.values())


def test_overflow_is_untestable_below_65504_and_missing_tables_are_na():
    cfg = copy.deepcopy(TINY)
    cfg["max_log2_len"] = 12
    assert verdicts(cfg)["aliasing.fp16_overflow"] == "n/a"
    # Only encodings without waves and without a learned input table: nothing to measure.
    plain = [n for n in BUILT_IN if n not in tables() and not learned_tables(TINY, [n], ENCODING)]
    got = verdicts(encodings=plain)
    assert got == {**dict.fromkeys(CLAIMS, "n/a"), "aliasing.exact_min_distance": "pass"}


def test_every_figure_and_table_of_the_spec_is_presented():
    ctx = context()
    m = compute(ctx)
    for fid in SPEC.figures:
        assert getattr(present, f"figure_{fid}")(m, ctx).axes
    for tid in SPEC.tables:
        columns, rows = getattr(present, f"table_{tid}")(m, ctx)
        assert rows and all(len(r) == len(columns) for r in rows), tid


def test_config_checks_name_their_keys():
    assert check_lengths({"aliasing": TINY}) == []
    assert check_lengths({}) == []
    bad = copy.deepcopy(TINY)
    bad["min_log2_len"] = 17
    bad["thresholds"]["angle_fit_min_position"] = 2**16
    problems = check_lengths({"aliasing": bad})
    assert len(problems) == 2
    assert "aliasing.min_log2_len" in problems[0]
    assert "aliasing.thresholds.angle_fit_min_position" in problems[1]


# ------------------------------------------------------------------ encodings from outside


class SlowWaves(InputEncoding):
    """An input table from outside the registry file: sin and cos of p·ω_i with base 500,
    written here (sines first, then cosines)."""

    def frequencies(self):
        return inverse_frequencies(self.params.d_model, 500.0)

    def angle_table(self, positions, dtype):
        theta = angles(positions, self.params.d_model, 500.0, dtype)
        return torch.cat((theta.sin(), theta.cos()), -1)

    def input_encoding(self, positions):
        return self.angle_table(positions, self.params.angle_dtype)


class HalfTurn(QKEncoding):
    """A rotation from outside the registry file: pairs (x_i, x_{i+Dh/2}) turned by p·ω_i,
    base 1000."""

    def frequencies(self):
        return inverse_frequencies(self.params.head_dim, 1000.0)

    def angle_table(self, positions, dtype):
        theta = angles(positions, self.params.head_dim, 1000.0, dtype)
        return torch.cat((theta.cos(), theta.sin()), -1)

    def rotate(self, q, k, q_pos, k_pos):
        half = self.params.head_dim // 2
        turn = lambda x, p: apply_rope(  # noqa: E731
            x, *self.angle_table(p, torch.float32).split(half, -1), interleaved=False
        )
        return turn(q, q_pos), turn(k, k_pos)


@pytest.fixture
def outside_encodings(registered):
    names = ["test_slow_waves", "test_half_turn"]
    return registered(
        *(
            EncodingSpec(
                name,
                acts_on,
                module,
                relative=relative,
                learned=False,
                citation="a test's toy",
                summary="A test's toy.",
                waves=True,
            )
            for name, module, acts_on, relative in zip(
                names, (SlowWaves, HalfTurn), ("input", "qk"), (False, True)
            )
        )
    )


def test_encodings_registered_from_outside_flow_through(outside_encodings):
    waves, turn = outside_encodings
    ctx = context(encodings=[*BUILT_IN, *outside_encodings])
    m = compute(ctx)
    listed = {t["encoding"]: t for t in m.summary["tables"]}
    assert {waves, turn} <= set(listed)
    assert listed[waves]["width"] == TINY["d_model"] and listed[waves]["base"] == 500.0
    assert listed[turn]["width"] == TINY["rope_head_dim"] and listed[turn]["base"] == 1000.0
    # The built-ins without waves or a learned table are n/a here, with the reason.
    assert set(m.summary["not_measured"]) == {
        e
        for e in BUILT_IN
        if not REGISTRY[e].waves and not (REGISTRY[e].learned and REGISTRY[e].acts_on == "input")
    }
    for rows in ("distinct", "distinct_curve", "errors", "decode"):
        assert {waves, turn} <= {r["encoding"] for r in m.rows[rows]}, rows
    assert {waves, turn} <= set(m.evidence["fp16_first_nonfinite"])
    assert {f"{waves}, bfloat16", f"{turn}, float16"} <= set(
        m.evidence["collapse_distinct_fraction"]
    )
    claims = evaluate(SPEC.claims, m.evidence, ctx.cfg, "aliasing")
    assert all(c["verdict"] == "pass" for c in claims)
    columns, rows = present.table_floating_point(m, ctx)
    assert {waves, turn} <= {r[0] for r in rows}
    # No repeat or non-finite row is a dash, not the rows' sentinel −1.
    at = [columns.index(c) for c in ("first repeat", "of row", "first non-finite")]
    assert all(r[i] is None or r[i] >= 0 for r in rows for i in at)
    assert any(r[i] is None for r in rows for i in at)
    for fid in ("distinct", "errors", "decode"):
        fig = getattr(present, f"figure_{fid}")(m, ctx)
        titles = " ".join(ax.get_title() for ax in fig.axes)
        assert waves in titles and turn in titles, fid
    fig = present.figure_errors(m, ctx)
    # The legend is the figure's (one for every panel) or the first panel's.
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    labels = " ".join(t.get_text() for legend in legends for t in legend.get_texts())
    assert waves in labels and turn in labels


def test_an_encoding_whose_heads_differ_gives_a_table_per_group(toy_plugin):
    """RoPE whose head h has base 10000·16^h: one table per group of heads, at each group's
    own base (head 0 RoPE's), where one table read at head 0 would be RoPE's alone."""
    found = angle_tables(TINY, ["rope", "toy_head_base"], {})
    assert list(found) == ["rope", "toy_head_base+heads 0", "toy_head_base+heads 1"]
    assert [t.base for t in found.values()] == [10000.0, 10000.0, 160000.0]
    pos = torch.arange(0, 4096, 97)
    rows = {name: t.exact_fn()(pos) for name, t in found.items()}
    assert torch.equal(rows["toy_head_base+heads 0"], rows["rope"])
    assert not torch.allclose(rows["toy_head_base+heads 1"], rows["rope"])
    # A base named for the toy moves every group: head h at that base times 16^h.
    moved = angle_tables({**TINY, "bases": {"toy_head_base": 500.0}}, ["toy_head_base"], {})
    assert [t.base for t in moved.values()] == [500.0, 8000.0]


def test_bases_may_name_only_an_encoding_with_a_base():
    meta = {name: spec.metadata() for name, spec in REGISTRY.items()}
    assert aliasing_spec.check_bases({"aliasing": {"bases": {"rope": 5e5}}}, meta) == []
    config = {"aliasing": {"bases": {"alibi": 5e5, "ropee": 2.0}}}
    problems = aliasing_spec.check_bases(config, meta)
    assert [p.split(":")[0] for p in problems] == [
        "config key aliasing.bases.alibi",
        "config key aliasing.bases.ropee",
    ]
