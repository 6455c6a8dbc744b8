"""The rotation identity behind sinusoidal encodings and RoPE, checked in every dtype: the
measurement.

Sinusoidal shift is a rotation (Vaswani et al. 2017, §3.5): for each frequency pair,
(PE(p+k, 2i), PE(p+k, 2i+1)) = R_i(k) (PE(p, 2i), PE(p, 2i+1)) with

    R_i(k) = [[cos ω_i k, sin ω_i k], [−sin ω_i k, cos ω_i k]],

which depends on k only. So PE(p+k) = M(k) PE(p) for one block-diagonal matrix M(k) per offset,
a linear map a projection can learn; and RoPE scores ⟨R(p)q, R(p')k⟩ = ⟨q, R(p'−p)k⟩ depend on
p' − p only (Su et al. 2021). In floating point the angles p·ω_i are rounded, with an error up
to eps·p·ω_i, so each identity holds up to a rounding bound that grows with the position; every
check below is reported against that bound. For the scores the bound is derived per (q, k) and
position pair (:func:`shift_tolerance`): each pair's angle rounding weighted by that pair's share
of the score, so it stays a few times the error actually made, and the naive case (positions
and angles in the storage dtype) is held to the same bound, the one the registry's angles meet.

Encodings are chosen by what they are, never by name: the identity and the offset map are
measured for every fixed input table (an :class:`InputEncoding` that is not learned), the
learned tables (learned input encodings) are fitted as a contrast, and the score shift test
runs on every encoding that transforms queries and keys (:class:`QKEncoding`). R(k) is read
off each table's own row PE(k), so a table from outside the registry needs nothing more. This
module measures; the claims (spec.py) judge.
"""

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from posenc.analysis import Context, Measurements
from posenc.device import dtype_from_name
from posenc.encodings import (
    REGISTRY,
    EncodingParams,
    InputEncoding,
    PositionalEncoding,
    QKEncoding,
    build,
    inverse_frequencies,
    sinusoidal_table,
)
from posenc.numerics import apply_rotation_blocks, rotation_blocks

PARAM_FIELDS = {f.name for f in dataclasses.fields(EncodingParams)}


def angle_dtype(dtype: torch.dtype) -> torch.dtype:
    """The registry's rule: angles in float32 or wider, whatever the model dtype."""
    return torch.promote_types(dtype, torch.float32)


def eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


def params(encoding_cfg: dict, **fields) -> EncodingParams:
    """Encoding parameters: the shared ``encoding`` config, with ``fields`` on top."""
    shared = {k: v for k, v in encoding_cfg.items() if k in PARAM_FIELDS}
    return EncodingParams(**{**shared, **fields})


def select(
    encodings: list[str], probe: EncodingParams, kind: type, learned: bool | None = None
) -> list[str]:
    """The configured encodings whose module is a ``kind`` (and, unless None, whose registry
    entry is ``learned`` or not), in config order. Modules are built to be asked."""
    return [
        e
        for e in encodings
        if (learned is None or REGISTRY[e].learned == learned) and isinstance(build(e, probe), kind)
    ]


def log_positions(max_log2: int, per_octave: int, generator: torch.Generator) -> Tensor:
    """0, and ``per_octave`` uniform draws in every octave [2^e, 2^(e+1)), e < max_log2."""
    draws = [torch.zeros(1, dtype=torch.int64)]
    for e in range(max_log2):
        draws.append(torch.randint(2**e, 2 ** (e + 1), (per_octave,), generator=generator))
    return torch.cat(draws).unique()


def blocks_from_row(pe_k: Tensor) -> Tensor:
    """R_i(k) read off a table's own row PE(k), (..., d) -> (..., d/2, 2, 2).

    A sinusoidal table starts every pair at angle zero, PE(0) = (0, 1, 0, 1, ...), so pair i
    of PE(k) is (sin ω_i k, cos ω_i k): the entries of R_i(k) (the angle-addition identities,
    sin(a + b) = sin a cos b + cos a sin b and cos(a + b) = cos a cos b − sin a sin b). The
    row holds exactly the rounded cos and sin a direct evaluation of R_i(k) would.
    """
    s, c = pe_k[..., 0::2], pe_k[..., 1::2]  # (..., d/2) each
    return torch.stack((torch.stack((c, s), -1), torch.stack((-s, c), -1)), -2)


def shift_matrix_from_table(encode: Callable[[Tensor], Tensor], k: int) -> Tensor:
    """M(k), block diagonal with the R_i(k) of :func:`blocks_from_row`: PE(p + k) = M(k) PE(p)
    for a sinusoidal table. Shape (d, d)."""
    row = encode(torch.tensor([k]))[0]
    return torch.block_diag(*blocks_from_row(row.cpu()))


def table_frequencies(encode: Callable[[Tensor], Tensor]) -> Tensor:
    """ω_i of a sinusoidal table, read off its row PE(1): pair i is (sin ω_i, cos ω_i), and
    every ω_i ≤ 1 < π, so atan2 gives ω_i itself. Shape (d/2,), float64."""
    row = encode(torch.tensor([1]))[0].double().cpu()
    return torch.atan2(row[0::2], row[1::2])


def identity_errors(
    encoding: str,
    make: Callable[[torch.dtype], PositionalEncoding],
    d: int,
    base: float,
    dtype: torch.dtype,
    positions: Tensor,
    offsets: Tensor,
    ulps: float,
) -> list[dict]:
    """|R(k) PE(p) − PE(p+k)|_max for every (p, k), everything stored and rotated in ``dtype``.

    ``make(angle_dtype)`` builds the table; PE and R(k) (read off PE(k)) are computed with
    angles in ``angle_dtype(dtype)`` and cast, as a model in ``dtype`` would. The rounding
    bound: casting each of PE(p), R(k), PE(p+k) and the two products and one sum of the
    rotation cost a few eps of the storage dtype (``ulps`` counts them, with those of sin/cos
    in the angle dtype), and each angle p·ω_i is off by at most eps_a·p·ω_i ≤ eps_a·p
    (ω_0 = 1), for p, k and p + k:

        tol(p, k) = ulps · (eps(dtype) + eps_a) + 2 (p + k) eps_a.

    ``base`` is the parameter the table was built with (a table with a base of its own
    ignores it).
    """
    a = angle_dtype(dtype)
    table = make(a).to(positions.device)
    p, k = torch.meshgrid(positions, offsets, indexing="ij")
    p, k = p.flatten(), k.flatten()
    with torch.no_grad():
        pe = table.input_encoding(p).to(dtype)  # (n, d)
        rotated = apply_rotation_blocks(pe, blocks_from_row(table.input_encoding(k)).to(dtype))
        target = table.input_encoding(p + k).to(dtype)
    err = (rotated.double() - target.double()).abs().amax(-1)  # (n,)
    tol = ulps * (eps(dtype) + eps(a)) + 2 * (p + k).double().to(err.device) * eps(a)
    return [
        {
            "encoding": encoding,
            "d": d,
            "base": base,
            "dtype": str(dtype).removeprefix("torch."),
            "position": pi,
            "offset": ki,
            "max_abs_error": e,
            "tolerance": t,
            "error_over_tolerance": e / t,
        }
        for pi, ki, e, t in zip(p.tolist(), k.tolist(), err.tolist(), tol.tolist())
    ]


def hand_trace(cfg: dict) -> dict[str, Any]:
    """The article's d = 4 example: PE(0..3), and PE(1) rotated by R(1) against PE(2).

    The article's own formula (Vaswani et al.'s table), three ways: the float64 table; exact
    rotation R(k) PE(p) in float64; and the article's arithmetic, which rounds PE(p) and
    cos/sin(ω_i k) to ``decimals`` before multiplying (it uses cos 1 = 0.540, sin 1 = 0.841).
    """
    d, base, k, p0 = cfg["d"], cfg["base"], cfg["offset"], cfg["from_position"]
    decimals = cfg["decimals"]
    positions = torch.arange(cfg["n_positions"])
    table = sinusoidal_table(positions, d, base, torch.float64)  # (n, d)
    omega = inverse_frequencies(d, base).tolist()
    blocks = rotation_blocks(torch.tensor([k]), d, base)[0]  # (d/2, 2, 2)
    exact = apply_rotation_blocks(table[p0], blocks)
    rounded_pe = table[p0].round(decimals=decimals)
    rounded_blocks = blocks.round(decimals=decimals)
    by_hand = apply_rotation_blocks(rounded_pe, rounded_blocks)
    article_target = torch.tensor(cfg["article_target"], dtype=torch.float64)
    return {
        "d": d,
        "base": base,
        "omega": omega,
        "positions": positions.tolist(),
        "table": table.tolist(),
        "offset": k,
        "from_position": p0,
        "target": table[p0 + k].tolist(),
        "rotated_exact": exact.tolist(),
        "rotated_by_hand": by_hand.tolist(),
        "cos_sin_first_pair": [blocks[0, 0, 0].item(), blocks[0, 0, 1].item()],
        "exact_error": (exact - table[p0 + k]).abs().max().item(),
        "by_hand_error": (by_hand - table[p0 + k]).abs().max().item(),
        "article_target": cfg["article_target"],
        "article_cos_sin": cfg["article_cos_sin"],
        "article_error": (article_target - table[p0 + k]).abs().max().item(),
        "article_cos_sin_error": max(
            abs(cfg["article_cos_sin"][0] - blocks[0, 0, 0].item()),
            abs(cfg["article_cos_sin"][1] - blocks[0, 0, 1].item()),
        ),
    }


def printed_rounding(decimals: int) -> float:
    """How far a value printed to ``decimals`` may be from the true one: half a unit of its
    last place, u = 0.5·10^−decimals. Each by-hand output a·c + b·s multiplies four such
    inputs of size ≤ 1, so it is off by at most 4u (to first order)."""
    return 0.5 * 10.0**-decimals


def qk_scores(module: QKEncoding, q: Tensor, k: Tensor, pq: Tensor, pk: Tensor, x_dtype):
    """⟨T(pq_j) q_i, T(pk_j) k_i⟩ for every vector pair i and position pair j. Shape (n, m).

    T is the module's own transform of queries and keys (:meth:`QKEncoding.rotate`), run on
    inputs in ``x_dtype`` laid out as (batch n, 1 head, m positions, head width); its angles
    are those of the module's ``angle_dtype``. The dot product of the transformed vectors is
    formed in float64, so that what is measured is the transform's rounding and not the
    order of a d-term sum in the storage dtype, which every encoding shares (its worst case,
    d·eps, is 1/2 for d = 64 in bfloat16 and would hide everything else).
    """
    n, m = q.shape[0], pq.shape[0]
    qx = q.to(x_dtype)[:, None, None, :].expand(n, 1, m, q.shape[-1])  # (n, 1, m, d)
    kx = k.to(x_dtype)[:, None, None, :].expand(n, 1, m, k.shape[-1])
    with torch.no_grad():
        rq, rk = module.rotate(qx, kx, pq, pk)
    return (rq.double() * rk.double()).sum(-1)[:, 0]


def rotation_pairs(module: QKEncoding, d: int, device) -> tuple[Tensor, Tensor]:
    """The coordinate pairs a transform rotates together and their angular frequencies, read
    off the module itself: each basis vector e_j moved by one position (the module's angles,
    float64 for an exact reading) has its weight on e_j and on its partner only, turned by
    the angle ω of their pair (ω ≤ 1 < π, so atan2 gives ω itself). Returns the pair of every
    pair as (d/2, 2) indices and ω as (d/2,), float64; a coordinate that is not turned is a
    pair of one (both indices the same, ω = 0). Raises ValueError for a transform that is not
    made of such planar rotations (each possibly scaled, :func:`pair_gains`): the bound of
    :func:`score_shifts` is derived for those.
    """
    basis = torch.eye(d, dtype=torch.float64, device=device)[:, None, None, :]  # (d, 1, 1, d)
    one = torch.ones(1, dtype=torch.int64, device=device)
    with torch.no_grad():
        moved = module.rotate(basis, basis, one, one)[0][:, 0, 0, :].cpu()  # row j: T(1) e_j
    pairs, omega, seen = [], [], set()
    for j in range(d):
        support = moved[j].nonzero().flatten().tolist()
        partner = next((c for c in support if c != j), j)
        back = moved[partner].nonzero().flatten().tolist()
        if set(support) - {j, partner} or set(back) - {j, partner}:
            raise ValueError(
                f"{type(module).__name__} does not rotate coordinates in pairs (e_{j} moves to "
                f"{support}): the score-shift rounding bound is derived for planar rotations"
            )
        if j in seen:
            continue
        seen |= {j, partner}
        pairs.append((j, partner))
        omega.append(
            torch.atan2(moved[j, partner].abs(), moved[j, j]).item() if partner != j else 0.0
        )
    return torch.tensor(pairs), torch.tensor(omega, dtype=torch.float64)


def _pair_norms(x: Tensor, pairs: Tensor) -> Tensor:
    """‖(x_c, x_c')‖ of every pair (a pair of one counted once), (n, d) -> (n, d/2)."""
    both = x[:, pairs] ** 2  # (n, d/2, 2)
    alone = (pairs[:, 0] == pairs[:, 1]).to(x.dtype)  # (d/2,)
    return (both[..., 0] + both[..., 1] * (1 - alone)).sqrt()


def exact_angle_free(positions: Tensor, omega: Tensor, dtype: torch.dtype) -> Tensor:
    """θ = p·ω for every position and pair, 0 where ``dtype`` computes it with no rounding at
    all: p held exactly (an integer within 2^digits) and ω̂ (ω in ``dtype``) a power of two.
    (m, d/2), float64."""
    p = positions.double()[:, None]  # (m, 1)
    held = (p == p.round()) & (p.abs() <= 2 / eps(dtype))  # 2/eps: the last of them
    w = omega.to(dtype).double()[None, :]  # (1, d/2)
    power_of_two = torch.frexp(w).mantissa == 0.5
    return torch.where(held & power_of_two, 0.0, p * omega[None, :])


def shift_tolerance(
    q: Tensor,
    k: Tensor,
    pairs: Tensor,
    omega: Tensor,
    positions: tuple[Tensor, ...],
    x_dtype: torch.dtype,
    ulps: float,
    angle_ulps: float,
    gains: tuple[Tensor, Tensor] | None = None,
    untouched: Tensor | None = None,
) -> Tensor:
    """The rounding bound of |s(p+s, p'+s) − s(p, p')| / ‖q‖‖k‖ for every vector pair i and
    position pair j, from the inputs alone, with angles in the registry's dtype for
    ``x_dtype`` (:func:`angle_dtype`, eps_a) and storage in ``x_dtype`` (eps_x). Shape (n, m).

    Pair c of a rotated vector is R(θ_c) applied to (q_c, q_c'), so an error of δ in its
    angle moves it by at most |δ|·‖q_c‖, and the score changes by at most
    Σ_c ‖q_c‖‖k_c‖ (error of the four rotated vectors in pair c). With w_c = ‖q_c‖‖k_c‖ /
    ‖q‖‖k‖ (Σ w_c ≤ 1 by Cauchy-Schwarz):

        tol = Σ_c w_c (ulps·(eps_x + eps_a) + angle_ulps·eps_a·Θ_c) + d·eps(float64),

    * ``ulps``: per rotated vector, cos and sin within an ulp in the angle dtype, their cast
      to the storage dtype and the two products and one sum of the rotation (≤ (2 + √2)/2
      eps_x): at most 2(eps_x + eps_a) each, for four vectors;
    * ``angle_ulps``: each angle θ = p·ω is rounded twice, the position to the angle dtype
      and the product, half an eps_a each; Θ_c = ω_c (p + p' + (p+s) + (p'+s)) sums the four.
      The rounding of ω itself is the same at every position, so it cancels: both scores see
      the relative angle (p' − p)·ω̂ exactly. An angle with neither rounding counts 0: a
      position the angle dtype holds exactly, times an ω̂ that is a power of two (RoPE's
      ω_0 = 1), is exact;
    * d·eps(float64): the two float64 dot products of d terms (Higham's γ_d, twice).

    q and k are cast to the storage dtype once, for both scores, so their rounding cancels.

    A transform that also scales pair c, by g_c(p) at position p (``gains``: queries' and
    keys', (m, d/2) each, the largest over both position sets; :func:`pair_gains`), moves it
    by |δ|·g_c‖q_c‖: w_c takes the factor g_c(p) g_c(p') of its position pair, and the
    float64 term Σ_c w_c if that exceeds 1. A scale that is the same in both scores (xPos's,
    which moves with a shift of every position) has no rounding of its own there; multiplied
    into cos and sin, it adds half an eps_a to each, within ``ulps``' 2 eps_a. Coordinates the
    transform leaves exactly as they are (``untouched``, (d/2,) bool: partial RoPE's
    position-free part) carry no rounding but the dot product's.
    """
    a = angle_dtype(x_dtype)
    norms = q.norm(dim=-1) * k.norm(dim=-1)  # (n,)
    w = _pair_norms(q, pairs) * _pair_norms(k, pairs) / norms[:, None]  # (n, d/2)
    theta = sum(exact_angle_free(p, omega, a) for p in positions)  # (m, d/2)
    per_pair = ulps * (eps(x_dtype) + eps(a)) + angle_ulps * eps(a) * theta  # (m, d/2)
    if untouched is not None:
        per_pair = per_pair.masked_fill(untouched[None, :], 0.0)
    if gains is None:
        return w @ per_pair.T + q.shape[-1] * eps(torch.float64)  # (n, m)
    w = w[:, None, :] * (gains[0] * gains[1])[None, :, :]  # (n, m, d/2)
    dot = q.shape[-1] * eps(torch.float64) * w.sum(-1).clamp(min=1.0)  # (n, m)
    return (w * per_pair[None]).sum(-1) + dot  # (n, m)


def _basis_moved(module: QKEncoding, d: int, pq: Tensor, pk: Tensor) -> tuple[Tensor, Tensor]:
    """T(pq_j) e_i and T(pk_j) e_i for every basis vector e_i and position pair j, from one
    call of the module on those positions (a transform may depend on all of them: xPos
    centres its scales on their midpoint). (d, m, d) each, float64."""
    m = pq.shape[0]
    basis = torch.eye(d, dtype=torch.float64, device=pq.device)[:, None, None, :]
    basis = basis.expand(d, 1, m, d)  # (d, 1, m, d): e_i at every position pair
    with torch.no_grad():
        tq, tk = module.rotate(basis, basis, pq, pk)
    return tq[:, 0], tk[:, 0]


def pair_gains(module: QKEncoding, pairs: Tensor, pq: Tensor, pk: Tensor) -> tuple[Tensor, Tensor]:
    """g_c: how much ``module`` scales each pair at each position pair (pq_j, pk_j), as the
    scores see it: ‖T(pq_j) e_c‖ for queries and ‖T(pk_j) e_c‖ for keys, c the pair's first
    coordinate; 1 for a rotation. (m, d/2) each, float64 (the module's angles should be)."""
    tq, tk = _basis_moved(module, int(pairs.max()) + 1, pq, pk)
    first = pairs[:, 0]
    return tq[first].norm(dim=-1).T, tk[first].norm(dim=-1).T


def untouched_pairs(module: QKEncoding, pairs: Tensor, pq: Tensor, pk: Tensor) -> Tensor:
    """Which pairs are single coordinates that ``module`` leaves exactly as they are, in
    queries and in keys, at every position pair (pq_j, pk_j). (d/2,) bool."""
    d = int(pairs.max()) + 1
    first = pairs[:, 0]
    unit = torch.eye(d, dtype=torch.float64, device=pq.device)[first][:, None, :]  # (d/2, 1, d)
    same = [(t[first] == unit).flatten(1).all(dim=1) for t in _basis_moved(module, d, pq, pk)]
    return (pairs[:, 0] == pairs[:, 1]).to(pq.device) & same[0] & same[1]


def past_exact_integers(dtype: torch.dtype, shift: int, window: int) -> bool:
    """Whether a shift moves every position of a window where ``dtype`` no longer holds every
    integer (at and above 2/eps: 256 for bfloat16, 2048 for float16) while keeping it finite."""
    return shift >= 2 / eps(dtype) and shift + window - 1 <= torch.finfo(dtype).max


def score_shifts(
    cfg: dict,
    qk: list[str],
    encoding_cfg: dict,
    dtypes: list[str],
    ulps: float,
    angle_ulps: float,
    generator: torch.Generator,
    device,
) -> list[dict]:
    """Max deviation |s(p+s, p'+s) − s(p, p')| / (‖q‖‖k‖) per encoding, dtype case and shift,
    and its largest ratio to the rounding bound of :func:`shift_tolerance`.

    Cases: each model dtype with the registry's angle dtype (float32 or wider), plus each
    ``naive_dtypes`` entry with the angles also in that dtype (positions built in the input's
    dtype). Every case is held to the same bound, the one the registry's angles guarantee for
    its storage dtype, so the naive case shows whether its angles break it. ``tolerance`` is
    the bound at the (vector, position pair) of the largest ratio.

    The random draws are made whatever is configured, so the numbers after them do not
    depend on which qk encodings there are; every encoding sees the same (q, k) and positions.
    """
    d = cfg["head_dim"]
    q = torch.randn(cfg["n_vectors"], d, generator=generator, dtype=torch.float64).to(device)
    k = torch.randn(cfg["n_vectors"], d, generator=generator, dtype=torch.float64).to(device)
    norms = (q.norm(dim=-1) * k.norm(dim=-1))[:, None]  # (n, 1)
    pq = torch.randint(0, cfg["window"], (cfg["n_pairs"],), generator=generator).to(device)
    pk = torch.randint(0, cfg["window"], (cfg["n_pairs"],), generator=generator).to(device)
    shifts = [0] + [2**e for e in range(cfg["max_log2_shift"] + 1)]
    cases = [(dt, angle_dtype(dtype_from_name(dt))) for dt in dtypes]
    cases += [(dt, dtype_from_name(dt)) for dt in cfg["naive_dtypes"]]
    rows = []
    for encoding in qk:
        exact = build(
            encoding, params(encoding_cfg, d_model=d, n_heads=1, angle_dtype=torch.float64)
        )
        exact = exact.to(device)
        pairs, omega = rotation_pairs(exact, d, device)
        pairs, omega = pairs.to(device), omega.to(device)
        # What the transform does besides turning pairs: scales them (the larger gain of the
        # two position sets of each shift), or leaves coordinates as they are (at both ends).
        untouched = untouched_pairs(exact, pairs, pq, pk) & untouched_pairs(
            exact, pairs, pq + shifts[-1], pk + shifts[-1]
        )
        before, gains = pair_gains(exact, pairs, pq, pk), {}
        for s in shifts:
            after = pair_gains(exact, pairs, pq + s, pk + s)
            gains[s] = (torch.maximum(before[0], after[0]), torch.maximum(before[1], after[1]))
        for name, a in cases:
            x = dtype_from_name(name)
            module = build(encoding, params(encoding_cfg, d_model=d, n_heads=1, angle_dtype=a))
            module = module.to(device)
            reference = qk_scores(module, q, k, pq, pk, x)
            for s in shifts:
                shifted = qk_scores(module, q, k, pq + s, pk + s, x)
                dev = (shifted - reference).abs() / norms  # (n, m)
                tol = shift_tolerance(
                    q,
                    k,
                    pairs,
                    omega,
                    (pq, pk, pq + s, pk + s),
                    x,
                    ulps,
                    angle_ulps,
                    gains[s],
                    untouched,
                )
                ratio = dev / tol
                worst = ratio.argmax()
                rows.append(
                    {
                        "encoding": encoding,
                        "dtype": name,
                        "angles": str(a).removeprefix("torch."),
                        "bound_angles": str(angle_dtype(x)).removeprefix("torch."),
                        "naive": a == x and x not in (torch.float32, torch.float64),
                        "shift": s,
                        "max_position": int(torch.maximum(pq, pk).max()) + s,
                        "past_exact_integers": past_exact_integers(x, s, cfg["window"]),
                        "max_deviation": dev.max().item(),
                        "tolerance": tol.flatten()[worst].item(),
                        "deviation_over_tolerance": ratio.flatten()[worst].item(),
                    }
                )
    return rows


def resolution_span(omega: Tensor) -> float:
    """2π / Δω: the positions needed to tell every frequency ``omega`` of a table apart.

    Δω is the smallest gap among the frequencies and 0 (a pair seen over a small part of its
    period looks constant). By the Rayleigh criterion of spectral analysis, two waves of
    frequencies Δω apart are resolved only over a span of 2π/Δω or more; for ω_i = base^(−2i/d)
    the closest are the two slowest pairs, ω_{d/2−2} − ω_{d/2−1} = ω_{d/2−1} (base^(2/d) − 1).
    """
    omega = omega.sort(descending=True).values
    gaps = torch.cat((omega[:-1] - omega[1:], omega[-1:]))
    return 2 * torch.pi / gaps.min().item()


def fit_offset_map(encode: Callable[[Tensor], Tensor], train: Tensor, test: Tensor, k: int):
    """Least squares W with PE(p) W ≈ PE(p + k) over the training positions (minimum norm,
    SVD driver on the CPU); returns W, the condition number of the training rows, and the
    largest held-out relative row error max_p ‖PE(p) W − PE(p+k)‖ / ‖PE(p+k)‖."""
    x_train, y_train = encode(train), encode(train + k)  # (n, d) each
    x_test, y_test = encode(test), encode(test + k)
    driver = "gelsd" if x_train.device.type == "cpu" else None
    w = torch.linalg.lstsq(x_train, y_train, driver=driver).solution  # (d, d)
    rel = ((x_test @ w - y_test).norm(dim=-1) / y_test.norm(dim=-1)).max().item()
    return w, torch.linalg.cond(x_train).item(), rel


def _rows_of(table: PositionalEncoding) -> Callable[[Tensor], Tensor]:
    def encode(positions: Tensor) -> Tensor:
        with torch.no_grad():
            return table.input_encoding(positions).double()

    return encode


def linear_offset_maps(
    cfg: dict,
    fixed: list[str],
    learned: list[str],
    encoding_cfg: dict,
    d_values: list[int],
    bases: list[float],
    ulps: float,
    generator: torch.Generator,
    device,
) -> list[dict]:
    """One least-squares map per (table, d, base, offset) from PE(p) to PE(p+k), in float64.

    Training positions are drawn over ``train_span`` × :func:`resolution_span` positions (over
    less, the slowest pairs cannot be told apart, so their rotations are not determined by the
    data and the minimum-norm fit is wrong elsewhere), held-out positions from the next,
    disjoint range of the same width. A second fit sees only ``short_span`` of it, to show
    that failure. The tolerance follows the angle rounding of positions up to P in float64:
    ulps · eps · (1 + P + k). Learned tables, at their (random) initialisation, are fitted the
    same way as a contrast.
    """
    rows = []
    n_train, n_test = cfg["n_train"], cfg["n_test"]
    for encoding, d, base, k in itertools.product(fixed, d_values, bases, cfg["offsets"]):
        table = build(
            encoding, params(encoding_cfg, d_model=d, base=base, angle_dtype=torch.float64)
        )
        encode = _rows_of(table.to(device))
        resolved = resolution_span(table_frequencies(encode))
        for label, factor in (("full", cfg["train_span"]), ("short", cfg["short_span"])):
            span = max(n_train, int(factor * resolved))
            train = torch.randint(0, span, (n_train,), generator=generator).to(device)
            test = torch.randint(span, 2 * span, (n_test,), generator=generator).to(device)
            w, cond, rel = fit_offset_map(encode, train, test, k)
            exact = shift_matrix_from_table(encode, k).to(device)  # W should be M(k)ᵀ
            tol = ulps * eps(torch.float64) * (1 + 2 * span + k)
            rows.append(
                {
                    "encoding": encoding,
                    "d": d,
                    "base": base,
                    "offset": k,
                    "training": label,
                    "train_span": span,
                    "max_position": 2 * span + k,
                    "condition_number": cond,
                    "held_out_rel_error": rel,
                    "map_error": (w - exact.T).abs().max().item(),
                    "tolerance": tol,
                    "error_over_tolerance": rel / tol,
                }
            )
    n = cfg["learned_len"]
    for encoding, d, k in itertools.product(learned, d_values, cfg["offsets"]):
        if k >= n // 2 or n_train <= d:
            continue
        # The table's initialisation draws from the global generator: seed it from ours.
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=generator)))
        table = build(encoding, params(encoding_cfg, d_model=d, max_len=n)).to(device)
        train = torch.randint(0, n // 2 - k, (n_train,), generator=generator).to(device)
        test = torch.randint(n // 2, n - k, (n_test,), generator=generator).to(device)
        _, cond, rel = fit_offset_map(_rows_of(table), train, test, k)
        rows.append(
            {
                "encoding": encoding,
                "d": d,
                "base": None,
                "offset": k,
                "training": "full",
                "train_span": n // 2,
                "max_position": n - 1,
                "condition_number": cond,
                "held_out_rel_error": rel,
                "map_error": None,
                "tolerance": None,
                "error_over_tolerance": None,
            }
        )
    return rows


def _worst(rows: list[dict], key: str, group: tuple[str, ...], pick=max) -> dict:
    """``pick`` (max, or min) of ``key`` per value of the ``group`` columns, nested in that
    order."""
    out: dict = {}
    for r in rows:
        node = out
        for g in group[:-1]:
            node = node.setdefault(r[g], {})
        last = r[group[-1]]
        node[last] = pick(node.get(last, r[key]), r[key])
    return out


def evidence(result: dict, cfg: dict, groups: dict) -> dict[str, Any]:
    """The named values the claims read, and the context their ledger entries show beside
    them; encodings grouped by what they are."""
    fixed, relative_qk = groups["fixed_tables"], groups["relative_qk"]
    h = result["hand_trace"]
    u = printed_rounding(cfg["hand_trace"]["decimals"])
    rope = [r for r in result["score_shift"] if not r["naive"] and r["encoding"] in relative_qk]
    naive = [r for r in result["score_shift"] if r["naive"] and r["encoding"] in relative_qk]
    last = max((r["shift"] for r in naive), default=None)
    full = [r for r in result["linear_map"] if r["encoding"] in fixed and r["training"] == "full"]
    learned = [r for r in result["linear_map"] if r["encoding"] in groups["learned_tables"]]
    naive_deviation: dict = {}
    for r in naive:
        if r["shift"] == last:
            label = f"{r['dtype']} with {r['angles']} angles, position {r['max_position']}"
            naive_deviation.setdefault(r["encoding"], {})[label] = r["max_deviation"]
    # Where the naive dtype no longer holds every integer: there its positions round.
    broken = [r for r in naive if r["past_exact_integers"]]
    return {
        "identity_over_bound": _worst(
            result["identity"], "error_over_tolerance", ("encoding", "dtype")
        ),
        "identity_max_error": _worst(result["identity"], "max_abs_error", ("encoding", "dtype")),
        # The hand trace: the table's row PE(p + k), the article's printed values and the two
        # rotations, with the rounding each may carry.
        "table_row": h["target"],
        "rotated_exact": h["rotated_exact"],
        "rotated_by_hand": h["rotated_by_hand"],
        "printed_cos_sin_rounded": [
            round(v, cfg["hand_trace"]["decimals"]) for v in h["cos_sin_first_pair"]
        ]
        == list(h["article_cos_sin"]),
        "printed_rounding": u,
        "by_hand_rounding": 4 * u,
        "two_eps_float64": 2 * eps(torch.float64),
        "shift_over_bound": _worst(rope, "deviation_over_tolerance", ("encoding", "dtype")),
        "shift_max_deviation": _worst(rope, "max_deviation", ("encoding", "dtype")),
        # The naive case against the same bound, at every shift past its exact integers: the
        # smallest ratio is checked, the largest and the deviation at the largest shift shown.
        "naive_over_bound": _worst(broken, "deviation_over_tolerance", ("encoding", "dtype"), min),
        "naive_largest_over_bound": _worst(
            broken, "deviation_over_tolerance", ("encoding", "dtype")
        ),
        "naive_angle_deviation": naive_deviation,
        "naive_dtypes": cfg["rope"]["naive_dtypes"],
        "naive_exact_integers": [
            f"{dt}: {2 / eps(dtype_from_name(dt)):g}" for dt in cfg["rope"]["naive_dtypes"]
        ],
        "offset_map_over_bound": _worst(full, "error_over_tolerance", ("encoding",)),
        "offset_map_max_error": _worst(full, "held_out_rel_error", ("encoding",)),
        "offset_map_max_w_error": _worst(full, "map_error", ("encoding",)),
        "learned_min_error": {
            e: min(r["held_out_rel_error"] for r in learned if r["encoding"] == e)
            for e in groups["learned_tables"]
            if any(r["encoding"] == e for r in learned)
        },
        # Named in the statements.
        "fixed_tables": fixed,
        "relative_qk": relative_qk,
        "trace_d": h["d"],
        "trace_omega": h["omega"],
        "trace_from": h["from_position"],
        "trace_offset": h["offset"],
        "trace_to": h["from_position"] + h["offset"],
        "printed_target": h["article_target"],
    }


def summarise(result: dict, cfg: dict, ctx: Context, groups: dict) -> dict[str, Any]:
    """What the section and the tables show besides the evidence."""
    identity = result["identity"]
    naive = [r for r in result["score_shift"] if r["naive"]]
    last = max((r["shift"] for r in naive), default=None)
    last_shift = max((r["shift"] for r in result["score_shift"]), default=None)
    th = cfg["thresholds"]
    return {
        **groups,
        "hand_trace": result["hand_trace"],
        "naive_deviation": [
            {
                k: r[k]
                for k in (
                    "encoding",
                    "dtype",
                    "angles",
                    "max_position",
                    "max_deviation",
                    "tolerance",
                    "deviation_over_tolerance",
                )
            }
            for r in naive
            if r["shift"] == last
        ],
        "d_values": cfg["d_values"],
        "identity_figure_d": max(cfg["d_values"]),  # the width the identity figure shows
        "bases": cfg["bases"],
        "offsets": cfg["offsets"],
        "dtypes": cfg["dtypes"],
        "max_position": 2 ** cfg["max_log2_position"],
        "n_identity_checks": len(identity),
        "rope_head_dim": cfg["rope"]["head_dim"],
        "rope_n_vectors": cfg["rope"]["n_vectors"],
        "rope_n_pairs": cfg["rope"]["n_pairs"],
        "rope_base": ctx.encoding.get("rope_base"),
        "naive_exact_integers": {
            dt: 2 / eps(dtype_from_name(dt)) for dt in cfg["rope"]["naive_dtypes"]
        },
        # The careful cases at the largest shift, and the parts of the bound the prose names.
        "shift_largest": [
            {
                k: r[k]
                for k in (
                    "encoding",
                    "dtype",
                    "max_position",
                    "max_deviation",
                    "deviation_over_tolerance",
                )
            }
            for r in result["score_shift"]
            if not r["naive"] and r["shift"] == last_shift
        ],
        "bound_storage_term": {
            dt: th["rope_ulps"] * (eps(x) + eps(angle_dtype(x)))
            for dt, x in ((dt, dtype_from_name(dt)) for dt in cfg["dtypes"])
        },
        "naive_below_over_bound": _worst(
            [r for r in naive if not r["past_exact_integers"] and r["shift"]],
            "deviation_over_tolerance",
            ("encoding", "dtype"),
        ),
        "naive_angle_eps_ratio": {
            dt: eps(x) / eps(angle_dtype(x))
            for dt, x in ((dt, dtype_from_name(dt)) for dt in cfg["rope"]["naive_dtypes"])
        },
        "thresholds": cfg["thresholds"],
    }


def compute(ctx: Context) -> Measurements:
    """Every number of the analysis; random draws from CPU generators seeded by ``ctx.seed``
    (in the same order whatever is configured: positions, (q, k), then the fits)."""
    cfg, th, device = ctx.cfg, ctx.cfg["thresholds"], ctx.device
    probe = params(ctx.encoding, d_model=max(cfg["d_values"]))
    head = params(ctx.encoding, d_model=cfg["rope"]["head_dim"], n_heads=1)
    qk = select(ctx.encodings, head, QKEncoding)
    groups = {
        "fixed_tables": select(ctx.encodings, probe, InputEncoding, learned=False),
        "learned_tables": select(ctx.encodings, probe, InputEncoding, learned=True),
        "qk": qk,
        "relative_qk": [e for e in qk if REGISTRY[e].relative],
    }
    g = torch.Generator().manual_seed(ctx.seed)
    positions = log_positions(cfg["max_log2_position"], cfg["positions_per_octave"], g)
    offsets = torch.tensor(cfg["offsets"])
    identity = []
    for e, d, base, dt in itertools.product(
        groups["fixed_tables"], cfg["d_values"], cfg["bases"], cfg["dtypes"]
    ):

        def make(a, e=e, d=d, base=base):
            return build(e, params(ctx.encoding, d_model=d, base=base, angle_dtype=a))

        identity += identity_errors(
            e,
            make,
            d,
            base,
            dtype_from_name(dt),
            positions.to(device),
            offsets.to(device),
            th["identity_ulps"],
        )
    score_shift = score_shifts(
        cfg["rope"],
        qk,
        ctx.encoding,
        cfg["dtypes"],
        th["rope_ulps"],
        th["rope_angle_ulps"],
        g,
        device,
    )
    linear = linear_offset_maps(
        cfg["linear_map"],
        groups["fixed_tables"],
        groups["learned_tables"],
        ctx.encoding,
        cfg["d_values"],
        cfg["bases"],
        th["linear_map_ulps"],
        g,
        device,
    )
    result = {
        "identity": identity,
        "hand_trace": hand_trace(cfg["hand_trace"]),
        "score_shift": score_shift,
        "linear_map": linear,
    }
    if ctx.log:
        ctx.log.info(
            "%d identity checks, %d score shifts, %d offset maps",
            len(identity),
            len(score_shift),
            len(linear),
        )
    return Measurements(
        rows={"identity": identity, "score_shift": score_shift, "linear_map": linear},
        evidence=evidence(result, cfg, groups),
        summary=summarise(result, cfg, ctx, groups),
    )
