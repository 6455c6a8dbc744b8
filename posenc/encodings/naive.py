"""The naive references (``EncodingSpec.reference``): each encoding's hook computed one Python
float at a time, from its paper's formula, sharing no code with the vectorised modules; the
tests hold each hook to its own (``tests/test_encodings.py``). Each reads what it needs from the
built module: its hyper-parameters (``module.params.hyper``), a trained table."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from posenc.encodings.functional import FIRE_EPS, PositionOutOfRange
from posenc.encodings.places import PositionalEncoding


def sinusoidal_reference(module: PositionalEncoding, positions: Tensor) -> Tensor:
    """Vaswani et al. 2017, entry by entry: PE(p, 2i) = sin(p / base^(2i/d)) and
    PE(p, 2i+1) = cos(p / base^(2i/d)), with d and base from ``module.params``. (L, d)."""
    d, base = module.params.d_model, module.params.hyper.base
    rows = []
    for p in positions.tolist():
        row = []
        for i in range(d // 2):
            angle = p / base ** (2 * i / d)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64).reshape(len(rows), d)


def learned_reference(module: PositionalEncoding, positions: Tensor) -> Tensor:
    """Devlin et al. 2019 / Radford et al. 2019: position p's vector is row p of the trained
    table, read here entry by entry; only integer positions 0 <= p < L_max have a row. (L, d)."""
    weight = module.table.weight.detach()
    rows = []
    for p in positions.tolist():
        if p != int(p) or not 0 <= p < weight.shape[0]:
            raise PositionOutOfRange(f"position {p} has no row in a table of {weight.shape[0]}")
        rows.append([weight[int(p), j].item() for j in range(weight.shape[1])])
    return torch.tensor(rows, dtype=torch.float64).reshape(len(rows), weight.shape[1])


def _turn_pairs_by_hand(
    x: Tensor, positions: Tensor, width: int, interleaved: bool, base: float, scale=None
) -> Tensor:
    """The naive loop behind the rotary references: in each vector of ``x`` (..., L, Dh) at
    position p, pair i of the first ``width`` dimensions, (x[2i], x[2i+1]) interleaved or
    (x[i], x[i + width/2]) half split, turns by t = p * base^(-2i/width) to
    (a cos t - b sin t, a sin t + b cos t), times ``scale(i, p)`` if given; the other
    dimensions stay. float64, x's shape."""
    pairs = [(2 * i, 2 * i + 1) if interleaved else (i, i + width // 2) for i in range(width // 2)]
    d = x.shape[-1]
    rows = x.detach().double().reshape(-1, x.shape[-2], d).tolist()  # (N, L, Dh)
    for matrix in rows:
        for vector, p in zip(matrix, positions.tolist(), strict=True):
            for i, (ia, ib) in enumerate(pairs):
                t = p * base ** (-2 * i / width)
                factor = 1.0 if scale is None else scale(i, p)
                a, b = vector[ia], vector[ib]
                vector[ia] = factor * (a * math.cos(t) - b * math.sin(t))
                vector[ib] = factor * (a * math.sin(t) + b * math.cos(t))
    return torch.tensor(rows, dtype=torch.float64).reshape(x.shape)


def rope_reference(
    module: PositionalEncoding, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor
) -> tuple[Tensor, Tensor]:
    """Su et al. 2021, eq. (34), pair by pair: the pair (a, b) of a vector at position p turns
    by t = p * base^(-2i/Dh) to (a cos t - b sin t, a sin t + b cos t). Pair i is
    (x[2i], x[2i+1]) interleaved, (x[i], x[i + Dh/2]) half split (``hyper.interleaved``);
    base is ``module.base``, which NTK-aware scaling rescales. q (..., Lq, Dh), k (..., Lk, Dh)."""
    interleaved, base = module.params.hyper.interleaved, module.base
    return (
        _turn_pairs_by_hand(q, q_pos, q.shape[-1], interleaved, base),
        _turn_pairs_by_hand(k, k_pos, k.shape[-1], interleaved, base),
    )


def xpos_reference(
    module: PositionalEncoding, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor
) -> tuple[Tensor, Tensor]:
    """Sun et al. 2022, pair by pair: pair i of a vector at position p turns by
    t = p * base^(-2i/Dh) as in RoPE, then is multiplied by zeta_i^(s (p - c)/gamma), s = +1
    for a query and -1 for a key, zeta_i = (2i/Dh + 0.4)/1.4, c = (lowest + highest position
    of queries and keys)/2. Pairs, base and gamma from the module. q (..., Lq, Dh), k (..., Lk,
    Dh)."""
    interleaved, base = module.params.hyper.interleaved, module.base
    gamma = module.params.hyper.scale_base
    every = q_pos.tolist() + k_pos.tolist()
    centre = (min(every) + max(every)) / 2

    def turn(x: Tensor, positions: Tensor, sign: int) -> Tensor:
        d = x.shape[-1]

        def scale(i: int, p: float) -> float:
            return ((2 * i / d + 0.4) / 1.4) ** (sign * (p - centre) / gamma)

        return _turn_pairs_by_hand(x, positions, d, interleaved, base, scale)

    return turn(q, q_pos, 1), turn(k, k_pos, -1)


def rope_partial_reference(
    module: PositionalEncoding, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor
) -> tuple[Tensor, Tensor]:
    """GPT-NeoX's partial rotary, pair by pair: with r = int(f * Dh) (f from the module's
    params), pair i < r/2 of the first r dimensions, (x[2i], x[2i+1]) interleaved or
    (x[i], x[i + r/2]) half split, turns by t = p * base^(-2i/r); dimensions r .. Dh-1 stay as
    they are. q (..., Lq, Dh), k (..., Lk, Dh)."""
    interleaved, base = module.params.hyper.interleaved, module.base

    def turn(x: Tensor, positions: Tensor) -> Tensor:
        r = int(x.shape[-1] * module.params.hyper.fraction)
        return _turn_pairs_by_hand(x, positions, r, interleaved, base)

    return turn(q, q_pos), turn(k, k_pos)


def _alibi_slopes_by_hand(n: int) -> list[float]:
    """Press et al. 2022, section 3: for n a power of two, m_h = 2^(-8h/n), h = 1 .. n; else
    the slopes of the largest power of two below n, then every other slope of twice as many
    heads, until there are n (the paper's reference code)."""
    if n & (n - 1) == 0:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]
    below = 1
    while 2 * below < n:
        below *= 2
    return _alibi_slopes_by_hand(below) + _alibi_slopes_by_hand(2 * below)[0::2][: n - below]


def alibi_reference(
    module: PositionalEncoding, q_pos: Tensor, k_pos: Tensor, causal: bool
) -> Tensor:
    """Press et al. 2022, pair by pair: bias(h, i, j) = -m_h (i - j) for query i and key j, or
    -m_h |i - j| bidirectionally. (H, Lq, Lk)."""
    slopes = _alibi_slopes_by_hand(module.params.n_heads)
    bias = [
        [[-m * ((i - j) if causal else abs(i - j)) for j in k_pos.tolist()] for i in q_pos.tolist()]
        for m in slopes
    ]
    return torch.tensor(bias, dtype=torch.float64).reshape(len(slopes), len(q_pos), len(k_pos))


def t5_bucket_by_hand(relative: int, bidirectional: bool, num_buckets: int, max_distance: int):
    """Raffel et al. 2020 (mesh-tensorflow's _relative_position_bucket), one offset
    ``relative = key - query`` at a time: with n = query - key, offsets 0 .. max_exact-1 get a
    bucket each, farther ones max_exact + floor(log(n / max_exact) / log(max_distance /
    max_exact) * (num_buckets - max_exact)), capped at the last bucket; bidirectional
    attention gives keys after the query the upper half of the buckets."""
    bucket, n = 0, -relative
    if bidirectional:
        num_buckets //= 2
        if n < 0:
            bucket += num_buckets
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return bucket + n
    far = max_exact + int(
        math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    )
    return bucket + min(far, num_buckets - 1)


def t5_reference(module: PositionalEncoding, q_pos: Tensor, k_pos: Tensor, causal: bool) -> Tensor:
    """Raffel et al. 2020, pair by pair: bias(h, i, j) is the learned scalar of head h for the
    bucket of the offset round(j) - round(i). (H, Lq, Lk)."""
    p, weight = module.params.hyper, module.bias.weight.detach()  # (num_buckets, H)
    n_heads = weight.shape[1]
    bias = [[[0.0] * len(k_pos) for _ in q_pos.tolist()] for _ in range(n_heads)]
    for a, i in enumerate(q_pos.tolist()):
        for b, j in enumerate(k_pos.tolist()):
            bucket = t5_bucket_by_hand(
                round(j) - round(i), not causal, p.num_buckets, p.max_distance
            )
            for h in range(n_heads):
                bias[h][a][b] = weight[bucket, h].item()
    return torch.tensor(bias, dtype=torch.float64).reshape(n_heads, len(q_pos), len(k_pos))


def kerple_reference(
    module: PositionalEncoding, q_pos: Tensor, k_pos: Tensor, causal: bool
) -> Tensor:
    """Chi et al. 2022, the logarithmic kernel pair by pair: bias(h, i, j) =
    -r1_h log(1 + r2_h |i - j|), with r = log(1 + e^raw) from the module's raw parameters,
    causal or not. (H, Lq, Lk)."""
    r1 = [math.log(1 + math.exp(raw)) for raw in module.r1_raw.tolist()]
    r2 = [math.log(1 + math.exp(raw)) for raw in module.r2_raw.tolist()]
    bias = [
        [[-a * math.log(1 + b * abs(i - j)) for j in k_pos.tolist()] for i in q_pos.tolist()]
        for a, b in zip(r1, r2, strict=True)
    ]
    return torch.tensor(bias, dtype=torch.float64).reshape(len(r1), len(q_pos), len(k_pos))


def fire_reference(
    module: PositionalEncoding, q_pos: Tensor, k_pos: Tensor, causal: bool
) -> Tensor:
    """Li et al. 2024, pair by pair: x = log(|c (i - j)| + 1) / (log(|c max(L, i)| + 1) + eps)
    with L = |s| threshold, then head h's output of the MLP, sum_w w2[h, w] max(0,
    w1[w] x + b1[w]) + b2[h], causal or not. (H, Lq, Lk)."""
    c, s = module.c.item(), module.threshold_scale.item()
    threshold = abs(s * module.params.hyper.threshold)
    w1 = module.hidden.weight.detach()[:, 0].tolist()
    b1 = module.hidden.bias.tolist()
    w2, b2 = module.out.weight.tolist(), module.out.bias.tolist()
    bias = [[[0.0] * len(k_pos) for _ in q_pos.tolist()] for _ in b2]
    for a, i in enumerate(q_pos.tolist()):
        normaliser = math.log(abs(c * max(threshold, i)) + 1) + FIRE_EPS
        for b, j in enumerate(k_pos.tolist()):
            x = math.log(abs(c * (i - j)) + 1) / normaliser
            hidden = [max(0.0, w * x + v) for w, v in zip(w1, b1, strict=True)]
            for h, (row, bh) in enumerate(zip(w2, b2, strict=True)):
                bias[h][a][b] = sum(w * z for w, z in zip(row, hidden, strict=True)) + bh
    return torch.tensor(bias, dtype=torch.float64).reshape(len(b2), len(q_pos), len(k_pos))
