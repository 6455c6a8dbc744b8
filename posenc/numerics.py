"""Reusable numerics for the rotation and aliasing analyses: pure functions, no I/O.

* The shift of a sinusoidal encoding by k is a block rotation R(k) (Vaswani et al. 2017, §3.5):
  :func:`rotation_blocks`, :func:`shift_matrix`.
* Distances between sinusoidal encodings depend on the offset only, so the minimum over all
  pairs below L is a scan over L - 1 offsets: :func:`offset_sq_distances`,
  :func:`min_distance_scan` (O(L·d), against :func:`pairwise_min_distance`'s O(L²·d)).
* Nearest-neighbour decoding of vectors against a codebook produced chunk by chunk:
  :func:`nearest_neighbour_decode`.
* Exact counting of the distinct rows of a table: :mod:`posenc.distinct`.
* Positions where rounding errors are measured, sampled in every octave (both ends and
  uniform draws): :func:`error_positions`, shared by the aliasing section and the shipped
  models' precision scan (:mod:`posenc.shipped.precision`).

Tables too large to hold are passed as a function ``rows_fn(index) -> (len(index), d)`` that
computes the requested rows; every function here calls it on bounded chunks, so memory is
O(chunk·d) for the rows plus O(L) integers of bookkeeping.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from posenc.encodings import angles, inverse_frequencies

RowsFn = Callable[[Tensor], Tensor]  # LongTensor (n,) of row indices -> (n, d) rows


def chunks(n: int, chunk: int):
    if chunk <= 0:
        raise ValueError(f"chunk must be positive, got {chunk}")
    for start in range(0, n, chunk):
        yield start, min(n, start + chunk)


def error_positions(max_log2: int, per_octave: int, generator: torch.Generator) -> Tensor:
    """Positions in every octave [2^e, 2^(e+1)), e < max_log2: both ends and ``per_octave``
    uniform draws, sorted and unique. Shape (n,)."""
    out = []
    for e in range(max_log2):
        lo, hi = 2**e, 2 ** (e + 1)
        draws = torch.randint(lo, hi, (per_octave,), generator=generator)
        out.append(torch.cat((torch.tensor([lo, hi - 1]), draws)))
    return torch.cat(out).unique()


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
    for start, stop in chunks(lengths[-1] - 1, chunk):
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
    for start, stop in chunks(n, chunk):
        d2 = sq[start:stop, None] + sq[None, :] - 2 * x[start:stop] @ x.T  # (c, L)
        d2 = d2.masked_fill(cols[None, :] <= cols[start:stop, None], float("inf"))  # q > p only
        value, flat = d2.flatten().min(0)
        if value.item() < best:
            best, pair = value.item(), (start + int(flat) // n, int(flat) % n)
    return max(best, 0.0) ** 0.5, pair[0], pair[1]


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
    for start, stop in chunks(min(n, int(lim.max())), max(256, max_elements // max(m, 1))):
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
