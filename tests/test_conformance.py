"""The conformance analysis (analyses/conformance/): its float64 references against naive
loops, the harness on tiny sizes with the real libraries, fake libraries with a known error
(which must show as disagreement or as a trap), a missing library (n/a rows with the reason),
and the claims through the ledger. The real libraries are imported once, by the module's
fixture."""

import copy
import json
import logging
import math
import sys

import pytest
import torch
import yaml

from posenc.analyses.conformance import compute as conformance
from posenc.analyses.conformance import present, reference, rope, traps
from posenc.analyses.conformance.libraries import (
    HALF,
    INTERLEAVED,
    LIBRARIES,
    Library,
    Rope,
    paper_alibi_slopes,
    paper_t5_bucket,
)
from posenc.analyses.conformance.spec import SPEC, TRAPS, check_config
from posenc.analysis import Context
from posenc.claims import check_ledger, evaluate
from posenc.encodings import apply_rope

TINY = yaml.safe_load(
    """
head_dim: 64
base: 10000
max_position: 511
n_vectors: 2
n_pairs: 16
shifts: [1, 37, 300]
sinusoidal: {d: 16}
scaling:
  head_dim: 16
  base: 10000
  original_length: 64
  factors: [2]
  methods: [pi, dynamic, yarn, llama3]
  params: {yarn: {beta_fast: 32, beta_slow: 1}, llama3: {low_freq_factor: 1, high_freq_factor: 4}}
  dynamic_lengths: [64, 256, 128, 32]
alibi_max_heads: 12
t5: {cases: [[32, 128], [16, 32]], max_relative: 300}
expected:
  posenc: {bf16_inputs: exact, module_cast: exact, autocast: exact, cached_angles: exact}
  posenc-half-split: {bf16_inputs: exact, module_cast: exact, autocast: exact,
                      cached_angles: exact}
  transformers: {bf16_inputs: exact, module_cast: lossy, autocast: exact, cached_angles: exact}
  x-transformers: {bf16_inputs: exact, module_cast: lossy, autocast: exact, cached_angles: exact}
  rotary-embedding-torch: {bf16_inputs: lossy, module_cast: lossy, autocast: exact,
                           cached_angles: lossy}
thresholds: {rope_ulps: 4, rope_angle_ulps: 8, max_over_bound: 1.0, scaling_ulps: 16,
             slope_ulps: 4, t5_max_mismatches: 0, trap_angle_rad: 0.1, ratchet_rtol: 1.0e-3}
"""
)
IDS = {c.id for c in SPEC.claims}
OURS = LIBRARIES[0]


def ctx(cfg=None) -> Context:
    return Context(
        cfg=copy.deepcopy(cfg or TINY),
        seed=0,
        encodings=[],
        encoding={},
        device=torch.device("cpu"),
        log=logging.getLogger("test_conformance"),
    )


@pytest.fixture(scope="module")
def run():
    """The tiny run with every real library: (context, measurements, ledger)."""
    c = ctx()
    m = conformance.compute(c)
    return c, m, evaluate(SPEC.claims, m.evidence, c.cfg, "conformance")


# ----------------------------------------------------------------------------- references


def test_reference_rotation_is_su_et_al_pair_by_pair():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 8, generator=g, dtype=torch.float64)
    theta = reference.reference_angles(3, 8, 500.0)
    got = reference.reference_rotation(x, theta)
    for p in range(3):
        for c in range(4):
            angle = p * 500.0 ** (-2 * c / 8)
            z = complex(x[p, 2 * c], x[p, 2 * c + 1]) * complex(math.cos(angle), math.sin(angle))
            assert got[p, 2 * c].item() == pytest.approx(z.real, abs=1e-14)
            assert got[p, 2 * c + 1].item() == pytest.approx(z.imag, abs=1e-14)


def test_layouts_round_trip_and_pair_c_with_c_plus_half():
    x = torch.arange(8.0)
    half = reference.to_layout(x, HALF)
    assert half.tolist() == [0, 2, 4, 6, 1, 3, 5, 7]  # pair c = (2c, 2c+1) at (c, c + 4)
    assert torch.equal(reference.from_layout(half, HALF), x)
    assert torch.equal(reference.to_layout(x, INTERLEAVED), x)


def test_wrap_lands_in_minus_pi_to_pi():
    angles = torch.tensor([0.0, math.pi, -math.pi, 3 * math.pi, 7.0, -7.0], dtype=torch.float64)
    wrapped = reference.wrap(angles)
    assert wrapped.gt(-math.pi).all() and wrapped.le(math.pi).all()
    assert wrapped[2].item() == pytest.approx(math.pi)
    assert torch.allclose(wrapped.cos(), angles.cos()) and torch.allclose(
        wrapped.sin(), angles.sin()
    )


def test_paper_alibi_slopes_and_t5_buckets_by_hand():
    assert paper_alibi_slopes(8) == [2.0**-k for k in range(1, 9)]
    # H = 12: the 8 slopes of 8 heads, then every other slope of 16 heads (2^-0.5, 2^-1.5, ...).
    twelve = paper_alibi_slopes(12)
    assert twelve[:8] == paper_alibi_slopes(8)
    assert twelve[8:] == pytest.approx([2.0 ** -(k + 0.5) for k in range(4)], rel=1e-15)
    # T5's default (32, 128), bidirectional: 16 buckets per side, 8 exact offsets.
    got = [paper_t5_bucket(r, True, 32, 128) for r in (-5, 0, 1, 7, 8, -8)]
    assert got == [5, 0, 17, 23, 24, 8]  # key after the query: 16 + its bucket
    assert paper_t5_bucket(-1000, True, 32, 128) == 15  # far past max_distance: the last bucket
    assert paper_t5_bucket(3, False, 32, 128) == 0  # causal: keys after the query share 0


def test_applied_angles_read_the_rotation_back():
    theta = reference.reference_angles(40, 8, 10000.0)
    for layout in (INTERLEAVED, HALF):
        probe = traps.unit_probe(40, 8, layout, torch.float64)
        rotated = reference.to_layout(
            reference.reference_rotation(reference.from_layout(probe, layout), theta), layout
        )
        got = traps.applied_angles(rotated, layout)
        assert (reference.wrap(got - theta).abs() < 1e-12).all()


# ----------------------------------------------------------------------------- the real run


def test_tiny_run_passes_every_claim(run):
    c, m, ledger = run
    assert {x["id"]: x["verdict"] for x in ledger} == dict.fromkeys(IDS, "pass")
    assert not m.summary["missing"]
    assert not any("verdict" in r for rows in m.rows.values() for r in rows)
    versions = m.summary["versions"]
    assert versions["transformers"] == "5.24.0"
    assert versions["x-transformers"] == "2.31.10"
    assert versions["rotary-embedding-torch"] == "0.9.1"
    assert versions["torch"] and versions["posenc"]


def test_traps_show_what_the_sources_say(run):
    """rotary-embedding-torch builds positions in bfloat16 for bfloat16 inputs, so its angles
    break from position 257 (bfloat16 rounds 257 to 256); a .to(bfloat16) rounds every
    library's frequencies or positions; ours stays exact everywhere."""
    _, m, _ = run
    by = {(r["library"], r["path"]): r for r in m.rows["traps"]}
    assert by["rotary-embedding-torch", "bf16_inputs"]["first_over_threshold"] == 257
    assert by["rotary-embedding-torch", "cached_angles"]["measured"] == "lossy"
    for lib in ("transformers", "x-transformers", "rotary-embedding-torch"):
        assert by[lib, "module_cast"]["measured"] == "lossy"
        assert by[lib, "float32"]["measured"] == "exact"
    for path in traps.PATHS:
        assert by["posenc", path]["measured"] == "exact"
        assert by["posenc-half-split", path]["measured"] == "exact"


def test_dynamic_ntk_is_measured_and_keeps_the_longest_length(run):
    """On one module transformers' dynamic update keeps the frequencies of the longest call
    for a shorter call past L, and resets below L; a fresh module follows s·l/L − (s − 1)."""
    _, m, _ = run
    rows = [r for r in m.rows["dynamic"] if r["library"] == "transformers"]
    fresh = {r["length"]: r for r in rows if r["option"] == "dynamic, fresh module"}
    assert fresh[256]["effective_scale"] == pytest.approx(2 * 256 / 64 - 1, rel=1e-5)
    assert fresh[32]["effective_scale"] == pytest.approx(1.0, rel=1e-5)
    in_order = {r["call"]: r for r in rows if r["option"] == "dynamic, in order"}
    assert in_order[2]["effective_scale"] == pytest.approx(fresh[256]["effective_scale"])
    assert m.summary["dynamic_ratchet"][0]["length"] == 128
    fixed = [r for r in m.rows["dynamic"] if r["option"] == "fixed NTK"]
    assert {r["library"] for r in fixed} == {"x-transformers", "rotary-embedding-torch"}


def test_the_claims_round_trip_through_the_ledger(run):
    c, m, ledger = run
    back = json.loads(json.dumps(ledger))
    assert check_ledger(back, "claims.json") == back
    assert [x["id"] for x in back] == [claim.id for claim in SPEC.claims]
    assert all(x["kind"] == "software" and x["section"] == "conformance" for x in back)
    trap = next(x for x in back if x["id"] == "conformance.trap_bf16_inputs")
    assert "rotary-embedding-torch" in trap["statement"]
    assert {"trap max error bf16 inputs", "trap first over bf16 inputs"} <= set(trap["measured"])


def test_claims_fail_when_their_limits_are_too_tight(run):
    c, m, _ = run
    cfg = copy.deepcopy(c.cfg)
    cfg["thresholds"] |= {"max_over_bound": 1e-9, "scaling_ulps": 1e-9, "slope_ulps": 1e-9}
    got = {x["id"]: x["verdict"] for x in evaluate(SPEC.claims, m.evidence, cfg, "conformance")}
    for cid in ("rope_agrees", "rope_relative_only", "sinusoidal_agrees", "scaling_agrees"):
        assert got[f"conformance.{cid}"] == "fail", cid
    assert got["conformance.alibi_agrees"] == "fail"


def test_a_wrong_expectation_fails_its_trap_claim(run):
    """The trap claims check the measurement against the config: stating rotary-embedding-torch
    exact under bfloat16 inputs (it is not) must fail, and nothing else."""
    c, _, _ = run
    cfg = copy.deepcopy(c.cfg)
    cfg["expected"]["rotary-embedding-torch"]["bf16_inputs"] = "exact"
    libs = (OURS, next(lib for lib in LIBRARIES if lib.name == "rotary-embedding-torch"))
    m = conformance.compute(ctx(cfg), libs)
    got = {x["id"]: x["verdict"] for x in evaluate(SPEC.claims, m.evidence, cfg, "conformance")}
    assert got["conformance.trap_bf16_inputs"] == "fail"
    assert got["conformance.trap_cached_angles"] == "pass"


def test_every_figure_and_table_is_drawn(run):
    import matplotlib

    matplotlib.use("Agg")
    c, m, _ = run
    for tid in SPEC.tables:
        columns, rows = getattr(present, f"table_{tid}")(m, c)
        assert rows and all(len(r) == len(columns) for r in rows), tid
    fig = present.figure_traps(m, c)
    labels = {t.get_text() for leg in fig.legends for t in leg.get_texts()}
    assert {"posenc", "transformers", "x-transformers", "rotary-embedding-torch"} <= labels


# ----------------------------------------------------------------------------- fakes


def _fake_rope(angle_error: float = 0.0, positions_in_input_dtype: bool = False):
    """RoPE by hand: angles p·ω in float64, off by ``angle_error`` from position 256 on, or
    computed from positions held in the input's dtype (as rotary-embedding-torch does)."""

    def make(head_dim, base, max_len):
        omega = reference.inverse_frequencies(head_dim, base)

        def rotate(q, k):
            p = torch.arange(q.shape[-2])
            if positions_in_input_dtype:
                p = p.to(q.dtype)
            theta = p.double()[:, None] * omega
            theta = theta + angle_error * (p >= 256).double()[:, None]
            cos, sin = theta.cos().float(), theta.sin().float()
            return apply_rope(q, cos, sin), apply_rope(k, cos, sin)

        return Rope(INTERLEAVED, torch.nn.Module(), rotate)

    return make


def test_a_library_with_an_angle_error_disagrees():
    """Angles off by 1e-3 rad at large positions: the fake exceeds the rounding bound of the
    reference and of ours, while ours stays within it."""
    fake = Library("fake", "fake-dist", rope=_fake_rope(angle_error=1e-3))
    good = Library("fake-but-right", "fake-dist", rope=_fake_rope())
    rows = rope.rope_conformance(TINY, (OURS, fake, good), torch.Generator().manual_seed(0))
    by = {r["library"]: r for r in rows}
    assert by["fake"]["error_over_bound"] > 1 and by["fake"]["ours_over_bound"] > 1
    assert by["fake-but-right"]["error_over_bound"] <= 1
    assert by["posenc"]["error_over_bound"] <= 1


def test_positions_built_in_bfloat16_show_as_a_trap():
    fake = Library("fake", "fake-dist", rope=_fake_rope(positions_in_input_dtype=True))
    cfg = copy.deepcopy(TINY)
    cfg["expected"] = {"fake": dict.fromkeys(TRAPS, "exact")}
    rows, curve = traps.trap_measurements(cfg, (fake,))
    by = {r["path"]: r for r in rows}
    assert by["bf16_inputs"]["measured"] == "lossy" and by["bf16_inputs"]["as_expected"] is False
    assert by["bf16_inputs"]["first_over_threshold"] == 257
    assert by["float32"]["measured"] == "exact" and by["autocast"]["as_expected"] is True
    assert {r["path"] for r in curve} == set(traps.PATHS)


def test_a_missing_library_gives_na_rows_with_the_reason(monkeypatch):
    """x-transformers uninstalled (every module of it unimportable): its rows are n/a, with
    the import error as the reason, and the rest is measured as before."""
    for name in [
        n for n in sys.modules if n == "x_transformers" or n.startswith("x_transformers.")
    ]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "x_transformers", None)
    xt = next(lib for lib in LIBRARIES if lib.name == "x-transformers")
    m = conformance.compute(ctx(), (OURS, xt))
    theirs = [r for rows in m.rows.values() for r in rows if r.get("library") == "x-transformers"]
    theirs = [r for r in theirs if "status" in r]
    assert theirs and all(r["status"] == "n/a" for r in theirs)
    assert all(r["reason"].startswith("not installed (") for r in theirs)
    assert all("x_transformers" in r["reason"] for r in theirs)
    assert "x-transformers" in m.summary["missing"]
    ledger = evaluate(SPEC.claims, m.evidence, TINY, "conformance")
    verdicts = {x["id"]: x["verdict"] for x in ledger}
    assert verdicts["conformance.ours_exact"] == "pass"
    assert "x-transformers" not in json.dumps(m.evidence["rope_over_bound"])
    c = ctx()
    for tid in SPEC.tables:
        columns, rows = getattr(present, f"table_{tid}")(m, c)
        assert all(len(r) == len(columns) for r in rows), tid
    assert any("n/a" in r for r in present.table_traps(m, c)[1])


def test_config_check_names_the_key():
    assert check_config({"conformance": TINY}) == []
    bad = {"conformance": {**TINY, "shifts": [1, 600]}}
    (problem,) = check_config(bad)
    assert "conformance.shifts" in problem and "conformance.max_position" in problem
