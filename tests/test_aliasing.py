"""analyses/aliasing.py on tiny tables, against naive references written here."""

import copy
import math

import pytest
import torch
import yaml

from analyses.aliasing import (
    Table,
    Variant,
    compute,
    count_distinct,
    decode_accuracy,
    error_positions,
    exact_min_distances,
    learned_out_of_range,
    significand_bits,
)

TINY = yaml.safe_load(
    """
min_log2_len: 4
max_log2_len: 17
chunk_rows: 8192
exact: {d_values: [4, 16], bases: [10000], check_len: 200}
d_model: 16
rope_head_dim: 16
rope_base: 10000
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
  careful_min_distinct_fraction: 1.0
  careful_error_ulps: 0.5
  careful_min_decode_accuracy: 1.0
"""
)
ENCODING = {"base": 10000, "rope_base": 10000, "t5_num_buckets": 32, "t5_max_distance": 128}
CPU = torch.device("cpu")


def naive_rope_row(p: int, d: int, base: float) -> list[float]:
    theta = [base ** (-2 * i / d) for i in range(d // 2)]
    return [math.cos(p * t) for t in theta] + [math.sin(p * t) for t in theta]


def test_significand_bits():
    assert significand_bits(torch.bfloat16) == 8
    assert significand_bits(torch.float16) == 11
    assert significand_bits(torch.float32) == 24
    assert significand_bits(torch.float64) == 53


def test_rope_table_rows_are_cos_then_sin():
    rows = Table("rope", 6, 500000.0).exact_fn()(torch.tensor([0, 3, 4000]))
    for row, p in zip(rows, (0, 3, 4000)):
        assert row.tolist() == pytest.approx(naive_rope_row(p, 6, 500000.0), abs=1e-12)


def test_naive_variant_rounds_positions_in_its_dtype():
    fn = Table("sinusoidal", 4, 10000.0).rows_fn(Variant("bfloat16", "bfloat16"))
    assert torch.equal(fn(torch.tensor([257])), fn(torch.tensor([256])))  # 257 is not bfloat16
    careful = Table("sinusoidal", 4, 10000.0).rows_fn(Variant("float32", "bfloat16"))
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
    tables = {"sinusoidal": Table("sinusoidal", 16, 10000.0)}
    variants = [
        Variant("bfloat16", "bfloat16"),
        Variant("float16", "float16"),
        Variant("float32", "float16"),
    ]
    lengths = [2**e for e in range(4, 18)]
    summary, curve = count_distinct(tables, variants, lengths, TINY, CPU)
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
    tables = {"sinusoidal": Table("sinusoidal", 16, 10000.0)}
    variants = [Variant("float64", "float64"), Variant("bfloat16", "bfloat16")]
    rows = decode_accuracy(
        tables, variants, [16, 1024, 8192], TINY, torch.Generator().manual_seed(0), CPU
    )
    exact = [r["accuracy"] for r in rows if r["variant"] == "naive float64"]
    assert exact == [1.0, 1.0, 1.0]


def test_error_positions_cover_every_octave():
    pos = error_positions(10, 3, torch.Generator().manual_seed(0))
    for e in range(10):
        assert ((pos >= 2**e) & (pos < 2 ** (e + 1))).any()
    assert pos.min() == 1 and pos.max() == 2**10 - 1


def test_learned_table_refuses_position_l_max():
    out = learned_out_of_range(8, 32)
    assert out["raised"] and out["error"] == "PositionOutOfRange"
    assert "32" in out["message"] and out["in_range_shape"] == [32, 8]


def test_tiny_run_passes_every_claim():
    result = compute(TINY, 0, ENCODING, CPU)
    verdicts = {c["id"]: c["verdict"] for c in result["claims"]}
    assert verdicts == {
        "aliasing.exact_min_distance": "pass",
        "aliasing.low_precision_collapse": "pass",
        "aliasing.fp16_overflow": "pass",
        "aliasing.fp32_angle_error_growth": "pass",
        "aliasing.careful_computation_fix": "pass",
        "aliasing.learned_out_of_range": "pass",
    }


def test_overflow_is_untestable_below_65504_and_collapse_can_fail():
    cfg = copy.deepcopy(TINY)
    cfg["max_log2_len"] = 12
    cfg["thresholds"]["collapse_max_distinct_fraction"] = 0.001
    verdicts = {c["id"]: c["verdict"] for c in compute(cfg, 0, ENCODING, CPU)["claims"]}
    assert verdicts["aliasing.fp16_overflow"] == "n/a"
    assert verdicts["aliasing.low_precision_collapse"] == "fail"
