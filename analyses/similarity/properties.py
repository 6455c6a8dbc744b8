"""Wang et al.'s (ICLR 2021) properties of a kernel: monotonicity (K falls with |p − q|),
translation invariance (K depends on p − q only) and symmetry (K(p, q) = K(q, p)), and their
spread over the seeds of trained models."""

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

# What each kernel of the properties table is: a formula with no learned parameter, a table
# trained in a language model, or learned parameters drawn at random (the contrast).
FIXED, TRAINED, RANDOM_INIT = "fixed", "trained", "random init"
# Wang et al.'s properties, as kernel_properties names them.
PROPERTIES = ("monotone_range", "concordance", "translation_deviation", "symmetry_deviation")


def offset_profiles(K: Tensor) -> Tensor:
    """F[p, k] = K(p, p + k) for k = 0..N-1-p, NaN past the end. Shape (N, N)."""
    n = K.shape[0]
    F = torch.full_like(K, float("nan"))
    for k in range(n):
        F[: n - k, k] = torch.diagonal(K, k)
    return F


def monotone_range(profiles: Tensor) -> int:
    """The largest W such that every profile (row, NaN past its end) is strictly decreasing on
    offsets 0..W (Wang et al.'s monotonicity, restricted to a window). Capped at the length."""
    rises = ~(profiles[:, 1:] < profiles[:, :-1]) & ~profiles[:, 1:].isnan()  # (R, M-1)
    first_rise = torch.where(rises.any(dim=1), rises.float().argmax(dim=1), rises.shape[1])
    return int(first_rise.min())


def concordance(profiles: Tensor, window: int) -> float:
    """Fraction of offset pairs k1 < k2 <= window with K(p, p+k1) > K(p, p+k2), over every row
    long enough. 1 is strictly monotone; 0.5 is what noise gives."""
    full = profiles[~profiles[:, : window + 1].isnan().any(dim=1), : window + 1]  # (R, W+1)
    k1, k2 = torch.triu_indices(window + 1, window + 1, 1)
    return (full[:, k1] > full[:, k2]).double().mean().item()


def both_directions(K: Tensor) -> tuple[Tensor, Tensor]:
    """Offset profiles looking forward (K(p, p+k)) and backward (K(p, p-k))."""
    return offset_profiles(K), offset_profiles(K.flip((0, 1)))


def translation_deviation(K: Tensor) -> float:
    """max over offsets k of (max - min) of K(p, p+k) over p: 0 when K depends on p-q only.
    Offsets whose pairs are not scored (NaN) do not count; NaN if none is."""
    n = K.shape[0]
    spreads = []
    for k in range(-(n - 1), n):
        diagonal = torch.diagonal(K, k)
        if not diagonal.isnan().any():
            spreads.append(diagonal.max() - diagonal.min())
    return torch.stack(spreads).max().item() if spreads else math.nan


def symmetry_deviation(K: Tensor) -> float:
    """max |K(p, q) - K(q, p)| over pairs p != q scored both ways; NaN if none is (a causal
    model scores no key after its query, so it has no symmetry to measure)."""
    both = ~(K.isnan() | K.T.isnan())
    both.fill_diagonal_(False)  # K(p, p) - K(p, p) = 0 says nothing
    return (K - K.T)[both].abs().max().item() if both.any() else math.nan


def _mean_defined(values: Iterable[float]) -> float:
    defined = [v for v in values if not math.isnan(v)]
    return sum(defined) / len(defined) if defined else math.nan


def kernel_properties(K: Tensor, window: int) -> dict[str, float]:
    """Wang et al.'s three properties of K, over the pairs it defines (NaN: not scored). The
    concordance averages the directions with rows long enough for the window."""
    forward, backward = both_directions(K)
    return {
        "monotone_range": min(monotone_range(forward), monotone_range(backward)),
        "concordance": _mean_defined((concordance(forward, window), concordance(backward, window))),
        "translation_deviation": translation_deviation(K),
        "symmetry_deviation": symmetry_deviation(K),
    }


def spread(values: list[float]) -> dict[str, Any]:
    """Mean, min and max over seeds of one property, NaN values left out (n counts the rest);
    mean, min and max are NaN when nothing is left."""
    defined = [v for v in values if not math.isnan(v)]
    if not defined:
        return {"n": 0, "mean": math.nan, "min": math.nan, "max": math.nan}
    return {
        "n": len(defined),
        "mean": sum(defined) / len(defined),
        "min": min(defined),
        "max": max(defined),
    }


def trained_summary(rows: list[dict]) -> dict[str, Any]:
    """The trained models' settings (one set of model settings serves every encoding) for
    the captions, and each property's spread over seeds per encoding."""
    trained = [r for r in rows if r["source"] == TRAINED]
    seeds = sorted({r["seed"] for r in trained})
    first = trained[0] if trained else {}
    settings = {
        "seeds": seeds,
        "seed": seeds[0] if seeds else None,  # the seed the kernels figure shows
        **{key: first.get(key) for key in ("d_model", "n_heads", "n_positions")},
    }
    by_encoding = {}
    for encoding in dict.fromkeys(r["encoding"] for r in trained):
        mine = [r for r in trained if r["encoding"] == encoding]
        by_encoding[encoding] = {
            "seeds": [r["seed"] for r in mine],
            **{name: spread([r[name] for r in mine]) for name in PROPERTIES},
        }
    return {**settings, "properties": by_encoding}
