"""posenc.numerics and posenc.distinct against naive references written here: loops over pairs,
torch.unique."""

import math

import pytest
import torch

from posenc import distinct
from posenc.distinct import canonical_bits, distinct_rows
from posenc.numerics import (
    apply_rotation_blocks,
    min_distance_scan,
    nearest_neighbour_decode,
    offset_sq_distances,
    pairwise_min_distance,
    rotation_blocks,
    shift_matrix,
)


def naive_pe(p: int, d: int, base: float) -> list[float]:
    """Vaswani et al. 2017, one position, one dimension at a time."""
    out = []
    for i in range(d // 2):
        w = 1.0 / base ** (2 * i / d)
        out += [math.sin(p * w), math.cos(p * w)]
    return out


def naive_table(n: int, d: int, base: float) -> torch.Tensor:
    return torch.tensor([naive_pe(p, d, base) for p in range(n)], dtype=torch.float64)


def naive_min_pair(table: torch.Tensor, first_offset: int = 1) -> tuple[float, int]:
    """min over p < q with q - p >= first_offset of |x_p - x_q|, by a double loop; and q - p."""
    best, offset = math.inf, 0
    n = table.shape[0]
    for p in range(n):
        for q in range(p + first_offset, n):
            dist = math.sqrt(
                sum((a - b) ** 2 for a, b in zip(table[p].tolist(), table[q].tolist()))
            )
            if dist < best:
                best, offset = dist, q - p
    return best, offset


@pytest.mark.parametrize("d", [2, 4, 6, 16])
@pytest.mark.parametrize("base", [10.0, 10000.0])
def test_offset_distance_formula_matches_every_pair(d, base):
    n = 40
    table = naive_table(n, d, base)
    offsets = torch.arange(n)
    formula = offset_sq_distances(offsets, d, base)  # (n,)
    for p in range(n):
        for q in range(p, n):
            direct = (table[p] - table[q]).square().sum().item()
            assert formula[q - p].item() == pytest.approx(direct, rel=1e-10, abs=1e-13)


@pytest.mark.parametrize("d, base", [(4, 10000.0), (8, 10000.0), (4, 500000.0), (16, 100.0)])
@pytest.mark.parametrize("chunk", [3, 7, 1 << 16])
def test_min_distance_scan_matches_brute_force(d, base, chunk):
    lengths = [2, 3, 17, 64, 150]
    table = naive_table(max(lengths), d, base)
    scan = min_distance_scan(lengths, d, base, chunk=chunk)
    for n, dist, k in zip(scan.lengths, scan.min_distance, scan.argmin_offset):
        best, offset = naive_min_pair(table[:n])
        assert dist == pytest.approx(best, rel=1e-10)
        assert k == offset
    assert scan.adjacent_distance == pytest.approx(naive_min_pair(table[:2])[0], rel=1e-12)


@pytest.mark.parametrize("chunk", [1, 5, 1 << 16])
def test_min_distance_scan_without_neighbours(chunk):
    lengths = [2, 3, 30, 120]
    d, base = 4, 10000.0
    table = naive_table(max(lengths), d, base)
    scan = min_distance_scan(lengths, d, base, chunk=chunk)
    assert scan.far_min_distance[0] is None and scan.far_argmin_offset[0] is None  # L = 2
    for n, dist, k in zip(scan.lengths[1:], scan.far_min_distance[1:], scan.far_argmin_offset[1:]):
        best, offset = naive_min_pair(table[:n], first_offset=2)
        assert dist == pytest.approx(best, rel=1e-10)
        assert k == offset


def test_min_distance_scan_rejects_lengths_without_pairs():
    with pytest.raises(ValueError):
        min_distance_scan([1], 4, 10000.0)


def test_pairwise_min_distance_matches_double_loop():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(37, 5, generator=g, dtype=torch.float64)
    best, p, q = pairwise_min_distance(x, chunk=4)
    naive_best = min((x[i] - x[j]).norm().item() for i in range(37) for j in range(i + 1, 37))
    assert best == pytest.approx(naive_best, rel=1e-9)
    assert p < q and (x[p] - x[q]).norm().item() == pytest.approx(naive_best, rel=1e-9)


def naive_first_repeat(x: torch.Tensor) -> tuple[int, int]:
    """The first row equal to an earlier one, and that earlier row, by a double loop."""
    for q in range(x.shape[0]):
        for p in range(q):
            if torch.equal(x[p], x[q]):
                return q, p
    return -1, -1


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("d", [1, 3, 8])
@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_distinct_rows_matches_torch_unique(dtype, d, chunk):
    g = torch.Generator().manual_seed(d)
    x = torch.randint(-2, 3, (200, d), generator=g).to(dtype) / 4  # many repeats
    res = distinct_rows(lambda idx: x[idx], x.shape[0], chunk=chunk)
    assert res.n_distinct == torch.unique(x, dim=0).shape[0]
    q, p = naive_first_repeat(x)
    assert (res.first_repeat, res.first_repeat_of) == (q, p)
    lengths = [1, 2, 10, 57, 200]
    assert res.distinct_below(lengths) == [torch.unique(x[:n], dim=0).shape[0] for n in lengths]
    assert res.n_nonfinite == 0 and res.first_nonfinite == -1


def test_distinct_rows_all_distinct_has_no_repeat():
    x = torch.arange(50, dtype=torch.float32)[:, None] * torch.ones(1, 4)
    res = distinct_rows(lambda idx: x[idx], 50, chunk=8)
    assert res.n_distinct == 50 and res.first_repeat == -1
    assert res.first_seen.tolist() == list(range(50))


def test_distinct_rows_resolves_hash_collisions(monkeypatch):
    # Every row hashes alike: the exact check must split the one run into the true classes.
    monkeypatch.setattr(
        distinct,
        "row_hashes",
        lambda bits, seed=0: bits.new_zeros(bits.shape[0], dtype=torch.int64),
    )
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 4, (120, 2), generator=g).to(torch.float32)
    res = distinct_rows(lambda idx: x[idx], 120, chunk=16)
    n_unique = torch.unique(x, dim=0).shape[0]
    assert res.n_distinct == n_unique
    assert res.hash_collisions == n_unique - 1
    assert (res.first_repeat, res.first_repeat_of) == naive_first_repeat(x)
    assert res.distinct_below([5, 60, 120]) == [
        torch.unique(x[:n], dim=0).shape[0] for n in (5, 60, 120)
    ]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_signed_zeros_are_equal_and_nans_are_one_value(dtype):
    nan = float("nan")
    x = torch.tensor(
        [[0.0, 1.0], [-0.0, 1.0], [nan, nan], [-nan, nan], [float("inf"), 1.0], [2.0, 1.0]],
        dtype=dtype,
    )
    bits = canonical_bits(x)
    assert torch.equal(bits[0], bits[1])
    assert torch.equal(bits[2], bits[3])
    assert not torch.equal(bits[2], bits[4])
    res = distinct_rows(lambda idx: x[idx], 6, chunk=4)
    assert res.n_distinct == 4
    assert res.n_nonfinite == 3 and res.first_nonfinite == 2
    assert (res.first_repeat, res.first_repeat_of) == (1, 0)


@pytest.mark.parametrize("max_elements", [1, 50, 1 << 20])
def test_nearest_neighbour_decode_matches_brute_force(max_elements):
    g = torch.Generator().manual_seed(1)
    codebook = torch.randn(300, 6, generator=g, dtype=torch.float64)
    queries = codebook[torch.randint(0, 300, (40,), generator=g)] + 0.3 * torch.randn(
        40, 6, generator=g, dtype=torch.float64
    )
    limits = torch.randint(1, 301, (40,), generator=g)
    idx, sq = nearest_neighbour_decode(
        queries,
        limits,
        lambda i: codebook[i],
        300,
        max_elements=max_elements,
        compute_dtype=torch.float64,
    )
    for j in range(40):
        dist = (codebook[: limits[j]] - queries[j]).square().sum(-1)
        assert idx[j].item() == int(dist.argmin())
        assert sq[j].item() == pytest.approx(dist.min().item(), rel=1e-9)


@pytest.mark.parametrize("d", [2, 4, 10])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_rotation_blocks_match_direct_evaluation(d, base):
    offsets = [0, 1, 5, 123, 10**6]
    blocks = rotation_blocks(torch.tensor(offsets), d, base)  # (n, d/2, 2, 2)
    for j, k in enumerate(offsets):
        for i in range(d // 2):
            a = k / base ** (2 * i / d)
            expected = [[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]]
            torch.testing.assert_close(
                blocks[j, i], torch.tensor(expected, dtype=torch.float64), atol=1e-9, rtol=0
            )


@pytest.mark.parametrize("d", [2, 4, 16])
@pytest.mark.parametrize("k", [1, 7, 300])
def test_rotation_moves_pe_p_to_pe_p_plus_k(d, k):
    base = 10000.0
    for p in (0, 1, 2, 50, 999):
        pe_p = torch.tensor(naive_pe(p, d, base), dtype=torch.float64)
        pe_pk = torch.tensor(naive_pe(p + k, d, base), dtype=torch.float64)
        blocks = rotation_blocks(torch.tensor([k]), d, base)[0]
        torch.testing.assert_close(apply_rotation_blocks(pe_p, blocks), pe_pk, atol=1e-12, rtol=0)
        torch.testing.assert_close(shift_matrix(k, d, base) @ pe_p, pe_pk, atol=1e-12, rtol=0)


def test_apply_rotation_blocks_is_the_explicit_two_by_two_product():
    g = torch.Generator().manual_seed(2)
    pe = torch.randn(3, 8, generator=g, dtype=torch.float64)
    blocks = torch.randn(3, 4, 2, 2, generator=g, dtype=torch.float64)
    out = apply_rotation_blocks(pe, blocks)
    for n in range(3):
        for i in range(4):
            x, y = pe[n, 2 * i].item(), pe[n, 2 * i + 1].item()
            r = blocks[n, i].tolist()
            assert out[n, 2 * i].item() == pytest.approx(r[0][0] * x + r[0][1] * y)
            assert out[n, 2 * i + 1].item() == pytest.approx(r[1][0] * x + r[1][1] * y)


def test_distinct_rows_many_matches_one_at_a_time():
    g = torch.Generator().manual_seed(5)
    base = torch.randint(0, 3, (90, 3), generator=g).to(torch.float64) / 3
    casts = (torch.float64, torch.bfloat16, torch.float16)
    many = distinct.distinct_rows_many(lambda idx: [base[idx].to(dt) for dt in casts], 3, 90, 16)
    for res, dt in zip(many, casts):
        one = distinct_rows(lambda idx, dt=dt: base[idx].to(dt), 90, chunk=16)
        assert (res.n_distinct, res.first_repeat, res.first_repeat_of) == (
            one.n_distinct,
            one.first_repeat,
            one.first_repeat_of,
        )
        assert torch.equal(res.first_seen, one.first_seen)
