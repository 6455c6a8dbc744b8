"""Reusable numerics for the rotation and aliasing analyses: pure functions, no I/O.

* The shift of a sinusoidal encoding by k is a block rotation R(k) (Vaswani et al. 2017, §3.5):
  :func:`rotation_blocks`, :func:`shift_matrix`.
* Distances between sinusoidal encodings depend on the offset only, so the minimum over all
  pairs below L is a scan over L - 1 offsets: :func:`offset_sq_distances`,
  :func:`min_distance_scan` (O(L·d), against :func:`pairwise_min_distance`'s O(L²·d)).
* Exact counting of distinct rows of a (possibly huge) table, in chunks, by hashing the rows'
  bit patterns and then checking every hash match row by row: :func:`distinct_rows`.
* Nearest-neighbour decoding of vectors against a codebook produced chunk by chunk:
  :func:`nearest_neighbour_decode`.

Tables too large to hold are passed as a function ``rows_fn(index) -> (len(index), d)`` that
computes the requested rows; every function here calls it on bounded chunks, so memory is
O(chunk·d) for the rows plus O(L) integers of bookkeeping.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from posenc.encodings import angles, inverse_frequencies

RowsFn = Callable[[Tensor], Tensor]  # LongTensor (n,) of row indices -> (n, d) rows


def _chunks(n: int, chunk: int):
    if chunk <= 0:
        raise ValueError(f"chunk must be positive, got {chunk}")
    for start in range(0, n, chunk):
        yield start, min(n, start + chunk)


def rotation_blocks(
    offsets: Tensor, d: int, base: float, dtype: torch.dtype = torch.float64
) -> Tensor:
    """The 2×2 rotations that shift a sinusoidal encoding by k. Shape (n, d/2, 2, 2).

    With PE(p, 2i) = sin(ω_i p) and PE(p, 2i+1) = cos(ω_i p), the angle-addition identities give

        [sin ω_i(p+k)]   [ cos ω_i k   sin ω_i k] [sin ω_i p]
        [cos ω_i(p+k)] = [-sin ω_i k   cos ω_i k] [cos ω_i p]  =  R_i(k) [sin ω_i p, cos ω_i p]ᵀ

    R_i(k) depends on k only, never on p. The angles ω_i k come from the registry's
    :func:`posenc.encodings.angles` in ``dtype``.
    """
    theta = angles(offsets, d, base, dtype)  # (n, d/2)
    c, s = theta.cos(), theta.sin()
    return torch.stack((torch.stack((c, s), -1), torch.stack((-s, c), -1)), -2)


def apply_rotation_blocks(pe: Tensor, blocks: Tensor) -> Tensor:
    """Rotate each interleaved pair (pe[2i], pe[2i+1]) of ``pe`` (..., d) by ``blocks``
    (..., d/2, 2, 2): the pair is multiplied by its 2×2 block as a column vector.

    Runs in the common dtype of the arguments: two multiplications and one addition per output.
    """
    pairs = pe.unflatten(-1, (-1, 2))  # (..., d/2, 2)
    return (blocks @ pairs.unsqueeze(-1)).squeeze(-1).flatten(-2)


def shift_matrix(offset: int, d: int, base: float, dtype: torch.dtype = torch.float64) -> Tensor:
    """M(k), block diagonal with the R_i(k): PE(p + k) = M(k) PE(p) for every p. Shape (d, d)."""
    blocks = rotation_blocks(torch.tensor([offset]), d, base, dtype)[0]  # (d/2, 2, 2)
    return torch.block_diag(*blocks)


def offset_sq_distances(offsets: Tensor, d: int, base: float) -> Tensor:
    """‖PE(p + k) − PE(p)‖² for each offset k, in float64. Shape (n,).

    Per pair, (sin a − sin b)² + (cos a − cos b)² = 2 − 2 cos(a − b), so

        ‖PE(p + k) − PE(p)‖² = Σ_i 2 − 2 cos(ω_i k) = Σ_i 4 sin²(ω_i k / 2),

    a function of the offset only. The half-angle form has no cancellation when the distance is
    small; the only rounding is that of ω_i k in float64, an absolute angle error below
    k · 2⁻⁵³ (2e-9 rad at k = 2²⁴), far under any distance reported. Cost O(n·d).
    """
    omega = inverse_frequencies(d, base, torch.float64).to(offsets.device)  # (d/2,)
    half = offsets.to(torch.float64)[:, None] * omega[None, :] / 2  # (n, d/2)
    return (4 * half.sin().square()).sum(-1)


@dataclass(frozen=True)
class MinDistance:
    """Closest pairs among positions below each length L (lists follow ``lengths``)."""

    lengths: list[int]
    min_distance: list[float]  # min over p ≠ q < L of ‖PE(p) − PE(q)‖
    argmin_offset: list[int]  # an offset q − p attaining it (the smallest)
    far_min_distance: list[float | None]  # the same over pairs at least 2 apart (None: no pair)
    far_argmin_offset: list[int | None]
    adjacent_distance: float  # ‖PE(p + 1) − PE(p)‖, the distance of neighbours


class _PrefixMin:
    """The running minimum of a sequence seen chunk by chunk, read off at chosen positions."""

    def __init__(self):
        self.best, self.best_at = math.inf, -1
        self.values: list[float] = []
        self.where: list[int] = []

    def update(self, values: Tensor, first: int, read_at: list[int]) -> None:
        """``values`` (n,) are items first..first+n-1; record the minimum over items up to
        each index in ``read_at`` (all inside this chunk), then absorb the chunk."""
        prefix, where = torch.cummin(values, 0)
        for last in read_at:
            v = prefix[last - first].item()
            better = v < self.best
            self.values.append(v if better else self.best)
            self.where.append(first + int(where[last - first]) if better else self.best_at)
        if prefix[-1].item() < self.best:
            self.best, self.best_at = prefix[-1].item(), first + int(where[-1])


def min_distance_scan(
    lengths: list[int],
    d: int,
    base: float,
    chunk: int = 1 << 16,
    device: torch.device | str = "cpu",
) -> MinDistance:
    """min_{0 ≤ p < q < L} ‖PE(p) − PE(q)‖ for every L in ``lengths``, in one scan of offsets.

    Pairs below L have offsets k = q − p in 1..L−1, and the distance depends on k only
    (:func:`offset_sq_distances`), so the answer for L is the prefix minimum of the offset
    distances up to L − 1. One pass to max(lengths) answers every length: O(L·d) time and
    O(chunk·d) memory, against O(L²·d) for all pairs. Ties keep the smallest offset. The same
    pass gives the minimum over offsets ≥ 2 (every pair but neighbours), which asks whether
    distant positions ever come closer than neighbours do.
    """
    lengths = sorted(int(n) for n in lengths)
    if not lengths or lengths[0] < 2:
        raise ValueError(f"lengths must be at least 2 (one pair), got {lengths}")
    closest, far = _PrefixMin(), _PrefixMin()
    pending = list(lengths)
    for start, stop in _chunks(lengths[-1] - 1, chunk):
        k = torch.arange(start + 1, stop + 1, device=device)  # offsets start+1 .. stop
        d2 = offset_sq_distances(k, d, base)  # (n,)
        ends = []
        while pending and pending[0] - 1 <= stop:
            ends.append(pending.pop(0) - 1)  # the largest offset below L
        closest.update(d2, start + 1, ends)
        if start == 0:
            d2 = d2.clone()
            d2[0] = math.inf  # offset 1: neighbours
        far.update(d2, start + 1, ends)
    adjacent = offset_sq_distances(torch.tensor([1]), d, base).item()
    return MinDistance(
        lengths=lengths,
        min_distance=[v**0.5 for v in closest.values],
        argmin_offset=closest.where,
        far_min_distance=[v**0.5 if math.isfinite(v) else None for v in far.values],
        far_argmin_offset=[k if math.isfinite(v) else None for v, k in zip(far.values, far.where)],
        adjacent_distance=adjacent**0.5,
    )


def pairwise_min_distance(x: Tensor, chunk: int = 1024) -> tuple[float, int, int]:
    """Brute force: min_{p < q} ‖x_p − x_q‖ over the rows of ``x`` (L, d), and the pair (p, q).

    All L(L−1)/2 pairs, through ‖x_p‖² + ‖x_q‖² − 2 x_p·x_q in float64: the rounding error of a
    squared distance is about d · 2⁻⁵³ · max‖x‖², below 1e-12 for unit-scale rows with
    d ≤ 128. O(L²·d) time, O(chunk·L) memory: the reference the offset scan is checked against.
    """
    x = x.to(torch.float64)
    n = x.shape[0]
    sq = x.square().sum(-1)  # (L,)
    cols = torch.arange(n, device=x.device)
    best, pair = float("inf"), (0, 0)
    for start, stop in _chunks(n, chunk):
        d2 = sq[start:stop, None] + sq[None, :] - 2 * x[start:stop] @ x.T  # (c, L)
        d2 = d2.masked_fill(cols[None, :] <= cols[start:stop, None], float("inf"))  # q > p only
        value, flat = d2.flatten().min(0)
        if value.item() < best:
            best, pair = value.item(), (start + int(flat) // n, int(flat) % n)
    return max(best, 0.0) ** 0.5, pair[0], pair[1]


@dataclass(frozen=True)
class _Layout:
    """IEEE 754 fields of a float format, as masks on its same-width signed integer view."""

    int_dtype: torch.dtype
    exponent: int  # all exponent bits set: infinity or NaN
    mantissa: int
    sign: int  # the bit pattern of -0.0, as a signed integer


@lru_cache
def _layout(dtype: torch.dtype) -> _Layout:
    info = torch.finfo(dtype)
    int_dtype = {64: torch.int64, 32: torch.int32, 16: torch.int16}[info.bits]
    mantissa_bits = -round(torch.log2(torch.tensor(info.eps, dtype=torch.float64)).item())
    exponent_bits = info.bits - 1 - mantissa_bits
    return _Layout(
        int_dtype=int_dtype,
        exponent=((1 << exponent_bits) - 1) << mantissa_bits,
        mantissa=(1 << mantissa_bits) - 1,
        sign=-(1 << (info.bits - 1)),
    )


def _canonical(x: Tensor) -> tuple[Tensor, Tensor | None]:
    """Canonical bits of ``x`` (see :func:`canonical_bits`) and, if any row holds a NaN or an
    infinity (all exponent bits set), the boolean (n,) mask of those rows, else None."""
    f = _layout(x.dtype)
    bits = (x + 0.0).view(f.int_dtype)  # -0.0 + 0.0 = +0.0 in round to nearest
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32  # no overflow
    if bool(x.sum(dtype=wide).isfinite()):  # one pass: a NaN or inf makes the sum non-finite
        return bits, None
    special = (bits & f.exponent) == f.exponent  # inf or NaN (or a sum that overflowed)
    if not bool(special.any()):
        return bits, None
    nan = special & ((bits & f.mantissa) != 0)
    return bits.masked_fill(nan, f.exponent | (f.mantissa + 1) >> 1), special.any(-1)


def canonical_bits(x: Tensor) -> Tensor:
    """The bit pattern of each float, as integers, such that equal bits ⇔ equal values.

    IEEE 754 has two exceptions to "equal value ⇔ equal bits": −0.0 = +0.0 (−0.0 becomes +0.0)
    and NaN ≠ NaN (every NaN becomes the one NaN pattern with only the exponent bits and the top
    mantissa bit set, so all-NaN rows, which carry no position, count as one encoding). Tests
    run on the integer view: half-precision float predicates are slow on CPUs, integer masks
    are not. Shape and element width of ``x``.
    """
    return _canonical(x)[0]


def row_hashes(bits: Tensor, seed: int = 0) -> Tensor:
    """A 64-bit hash per row of integer ``bits`` (n, d): Σ_j w[:, j] · m_j mod 2⁶⁴. Shape (n,).

    w are the row's bytes read as 64-bit words (a free reinterpretation when a row is a whole
    number of words, e.g. 128 float32 = 64 words, 128 bfloat16 = 32 words; else each element
    is widened). The m_j are fixed random odd 64-bit multipliers, so two different rows agree
    with probability about 2⁻⁶⁴ (multiply-sum hashing, Carter & Wegman 1979). Equal rows always
    agree; :func:`distinct_rows` checks every agreement, so a collision never miscounts.
    """
    d = bits.shape[1]
    if (d * bits.element_size()) % 8 == 0:
        words = bits.contiguous().view(torch.int64)  # (n, d * size / 8), no copy
    else:
        words = bits.to(torch.int64)  # (n, d)
    g = torch.Generator().manual_seed(seed)
    m = torch.randint(-(2**62), 2**62, (words.shape[1],), generator=g, dtype=torch.int64) * 2 + 1
    return (words * m.to(bits.device)).sum(-1)  # int64 products and sum wrap mod 2^64


@dataclass(frozen=True)
class DistinctRows:
    """The result of :func:`distinct_rows` on rows 0..n-1 (row index = position)."""

    n_rows: int
    n_distinct: int
    first_repeat: int  # smallest q with row q equal to an earlier row p < q; -1 if none
    first_repeat_of: int  # that earlier row p (the first row of its class); -1 if none
    first_seen: Tensor  # (n_distinct,) sorted: the first row index of each distinct row
    hash_collisions: int  # different rows that shared a hash (resolved exactly)
    n_nonfinite: int  # rows holding a NaN or an infinity
    first_nonfinite: int  # the first such row; -1 if none

    def distinct_below(self, lengths: list[int]) -> list[int]:
        """Number of distinct rows among rows 0..L-1, for every L: one binary search each."""
        limits = torch.tensor(lengths, dtype=torch.int64)
        return torch.searchsorted(self.first_seen, limits).tolist()


def _mismatched_runs(
    rows_fn: RowsFn, order: Tensor, new_run: Tensor, run_id: Tensor, chunk: int
) -> Tensor:
    """Runs of equal hashes (sorted entries ``order``) whose rows are not all bitwise equal.

    Every row is compared with the first row of its run. Runs are contiguous in ``order``, so
    one sweep in chunks computes each row once, carrying the open run's first row from chunk
    to chunk. Returns the run ids with a mismatch (almost always empty).
    """
    bad, carried = [], None
    for start, stop in _chunks(order.numel(), chunk):
        bits = canonical_bits(rows_fn(order[start:stop]))  # (c, d)
        local = torch.arange(stop - start, device=order.device)
        head = torch.where(new_run[start:stop], local, -1).cummax(0).values  # run start, or -1
        reference = bits[head.clamp(min=0)]
        if carried is not None:
            reference[head < 0] = carried  # the run began in an earlier chunk
        equal = (bits == reference).all(-1)
        bad.append(run_id[start:stop][~equal])
        carried = bits[head[-1]] if head[-1] >= 0 else carried
    return torch.cat(bad).unique() if bad else order.new_empty(0)


def distinct_rows(
    rows_fn: RowsFn, n: int, chunk: int = 1 << 14, device: torch.device | str = "cpu"
) -> DistinctRows:
    """Count the distinct rows among rows 0..n-1 exactly, in O(n·d) time and bounded memory.

    1. Hash every row's canonical bits (:func:`canonical_bits`, :func:`row_hashes`), chunk by
       chunk: n int64 hashes are all that is kept.
    2. Sort the hashes (stably, so rows stay in index order within a run of equal hashes).
    3. Check every row of a run of two or more against the run's first row, recomputing the
       rows in chunks. If all match, the runs are the classes of equal rows. A run with a
       mismatch (a true hash collision, probability ~n²/2⁶⁵) is split exactly with
       ``torch.unique`` on its rows.

    Equality is bitwise after canonicalisation: exact, no tolerance. Time O(n·d) for hashing and
    checking plus O(n log n) for the sort; memory O(n) integers plus O(chunk·d) for the rows.
    """
    return distinct_rows_many(lambda idx: [rows_fn(idx)], 1, n, chunk, device)[0]


def distinct_rows_many(
    rows_fn: Callable[[Tensor], list[Tensor]],
    k: int,
    n: int,
    chunk: int = 1 << 14,
    device: torch.device | str = "cpu",
) -> list[DistinctRows]:
    """:func:`distinct_rows` for ``k`` tables at once, ``rows_fn(index)`` returning the rows of
    each: tables that share most of their computation (one angle table cast to several
    dtypes) are hashed in the same pass, computing the shared part once."""
    hashes = torch.empty(k, n, dtype=torch.int64, device=device)
    n_nonfinite, first_nonfinite = [0] * k, [-1] * k
    for start, stop in _chunks(n, chunk):
        for j, rows in enumerate(rows_fn(torch.arange(start, stop, device=device))):
            bits, bad = _canonical(rows)  # (c, d)
            hashes[j, start:stop] = row_hashes(bits)
            if bad is not None:
                n_nonfinite[j] += int(bad.sum())
                if first_nonfinite[j] < 0:
                    first_nonfinite[j] = start + int(bad.nonzero()[0, 0])
    out = []
    for j in range(k):
        classes = _classes(lambda idx, j=j: rows_fn(idx)[j], hashes[j], chunk)
        out.append(
            DistinctRows(
                n_rows=n, **classes, n_nonfinite=n_nonfinite[j], first_nonfinite=first_nonfinite[j]
            )
        )
    return out


def _classes(rows_fn: RowsFn, hashes: Tensor, chunk: int) -> dict:
    """The classes of equal rows from the rows' hashes (steps 2 and 3 of :func:`distinct_rows`)."""
    n, device = hashes.numel(), hashes.device
    sorted_hashes, order = torch.sort(hashes, stable=True)  # order: row indices
    new_run = torch.ones(n, dtype=torch.bool, device=device)
    new_run[1:] = sorted_hashes[1:] != sorted_hashes[:-1]
    del sorted_hashes
    run_id = new_run.cumsum(0) - 1  # (n,) the run of each sorted entry
    n_runs = int(run_id[-1]) + 1
    sizes = torch.bincount(run_id, minlength=n_runs)
    shared = sizes[run_id] >= 2  # entries whose run has other members: the ones to check
    bad_runs = _mismatched_runs(rows_fn, order[shared], new_run[shared], run_id[shared], chunk)
    collisions = 0
    if bad_runs.numel():
        # Split each run holding a collision into its exact classes, with new labels.
        labels, next_label = run_id.clone(), n_runs
        for r in bad_runs.tolist():
            members = (run_id == r).nonzero().squeeze(-1)  # sorted entries of the run
            rows = canonical_bits(rows_fn(order[members]))
            _, inverse = torch.unique(rows, dim=0, return_inverse=True)
            extra = int(inverse.max())
            labels[members] = torch.where(inverse == 0, r, next_label + inverse - 1)
            collisions, next_label = collisions + extra, next_label + extra
        regroup = torch.sort(labels, stable=True).indices  # keeps row order inside a class
        labels, order = labels[regroup], order[regroup]
        new_run = torch.ones(n, dtype=torch.bool, device=device)
        new_run[1:] = labels[1:] != labels[:-1]
    starts = new_run.nonzero().squeeze(-1)  # (classes,) where each class starts in `order`
    first_seen = torch.sort(order[starts]).values
    # The first repeat is the smallest second member over the classes of two or more rows.
    class_sizes = torch.diff(starts, append=torch.tensor([n], device=device))
    multi = starts[class_sizes >= 2]
    if multi.numel():
        seconds = order[multi + 1]
        j = int(seconds.argmin())
        first_repeat, first_repeat_of = int(seconds[j]), int(order[multi[j]])
    else:
        first_repeat = first_repeat_of = -1
    return {
        "n_distinct": int(starts.numel()),
        "first_repeat": first_repeat,
        "first_repeat_of": first_repeat_of,
        "first_seen": first_seen.cpu(),
        "hash_collisions": collisions,
    }


def nearest_neighbour_decode(
    queries: Tensor,
    limits: Tensor,
    codebook_fn: RowsFn,
    n: int,
    max_elements: int = 1 << 24,
    compute_dtype: torch.dtype = torch.float32,
) -> tuple[Tensor, Tensor]:
    """For each query x_j (m, d): argmin_{q < limits[j]} ‖x_j − y_q‖², over codebook rows y_q.

    The codebook rows 0..n-1 come from ``codebook_fn`` chunk by chunk, and each chunk meets the
    queries in one matrix product, using ‖x − y‖² = ‖x‖² − 2 x·y + ‖y‖² (‖x‖² is the same for
    every q, so it is added only at the end). In ``compute_dtype`` the score error is about
    √d · eps · ‖x‖‖y‖ (blocked summation), which decides only near-ties; ties go to the smallest
    q. Queries are sorted by limit so that those still needing a chunk form a prefix: a query
    with a small limit costs little. Time O(Σ_j limits[j] · d), memory O(max_elements).

    Returns (index, squared distance), each (m,), in the order of ``queries``.
    """
    m = queries.shape[0]
    device = queries.device
    order = torch.argsort(limits.to(device), descending=True, stable=True)
    x = queries[order].to(compute_dtype)  # (m, d)
    lim = limits.to(device)[order]
    best = torch.full((m,), float("inf"), dtype=compute_dtype, device=device)
    best_idx = torch.zeros(m, dtype=torch.int64, device=device)
    for start, stop in _chunks(min(n, int(lim.max())), max(256, max_elements // max(m, 1))):
        a = int((lim > start).sum())  # queries still searching: a prefix
        idx = torch.arange(start, stop, device=device)
        y = codebook_fn(idx).to(compute_dtype)  # (c, d)
        score = torch.addmm(y.square().sum(-1)[None, :], x[:a], y.T, alpha=-2)  # (a, c)
        if int(lim[a - 1]) < stop:  # some limit falls inside this chunk
            score.masked_fill_(idx[None, :] >= lim[:a, None], float("inf"))
        value, at = score.min(-1)
        better = value < best[:a]
        best[:a] = torch.where(better, value, best[:a])
        best_idx[:a] = torch.where(better, start + at, best_idx[:a])
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(m, device=device)
    return best_idx[inverse], (best + x.square().sum(-1))[inverse]
