"""Exact counting of the distinct rows of a (possibly huge) table, in chunks: each row's bit
pattern hashed (equal values, equal bits: :func:`canonical_bits`), then every hash match
checked row by row, so a collision never miscounts (:func:`distinct_rows`; several tables in
one pass: :func:`distinct_rows_many`). Pure functions, no I/O.

Tables too large to hold are passed as a function ``rows_fn(index) -> (len(index), d)`` that
computes the requested rows; every function here calls it on bounded chunks, so memory is
O(chunk·d) for the rows plus O(L) integers of bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from posenc.numerics import RowsFn, chunks


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
    for start, stop in chunks(order.numel(), chunk):
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
    for start, stop in chunks(n, chunk):
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
