"""Floating point, what it holds and how far it rounds: the facts IEEE arithmetic fixes for a
dtype (:func:`significand_bits`, :func:`first_overflowing_integer`), and rounding bounds for
rotations, how far a rotated vector, and a score of two, may be from the exact one when angles
and storage are rounded.

Pair c of a vector rotated by θ_c = p·ω_c moves by at most |δ|·‖x_c‖ for an error δ in its
angle, and an angle p·ω is rounded to within eps·p·ω in its dtype, so every bound here grows
with the position. The bound of a score-shift test (:func:`shift_tolerance`) is derived per
(q, k) and position pair, from the pairs and frequencies a transform turns (read off the
transform itself: :func:`rotation_pairs`, :func:`pair_gains`, :func:`untouched_pairs`), so it
stays a few times the error actually made. Pure functions, no I/O.
"""

import math

import torch
from torch import Tensor

from posenc.encodings import QKEncoding


def angle_dtype(dtype: torch.dtype) -> torch.dtype:
    """The registry's rule: angles in float32 or wider, whatever the model dtype."""
    return torch.promote_types(dtype, torch.float32)


def eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


def rotation_pairs(module: QKEncoding, d: int, device) -> tuple[Tensor, Tensor]:
    """The coordinate pairs a transform rotates together and their angular frequencies, read
    off the module itself: each basis vector e_j moved by one position (the module's angles,
    float64 for an exact reading) has its weight on e_j and on its partner only, turned by
    the angle ω of their pair (ω ≤ 1 < π, so atan2 gives ω itself). Returns the pair of every
    pair as (d/2, 2) indices and ω as (d/2,), float64; a coordinate that is not turned is a
    pair of one (both indices the same, ω = 0). Raises ValueError for a transform that is not
    made of such planar rotations (each possibly scaled, :func:`pair_gains`): the bound of
    :func:`shift_tolerance` is derived for those.
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


def significand_bits(dtype: torch.dtype) -> int:
    """t, the significand precision with the implicit bit: eps = 2^(1 - t). Every integer up to
    2^t is exact, and 2^t + 1 is the first that is not (it rounds to 2^t, ties to even)."""
    return 1 - round(math.log2(torch.finfo(dtype).eps))


def first_overflowing_integer(dtype: torch.dtype) -> int:
    """The smallest integer that ``dtype`` rounds to infinity: its largest finite value plus
    half the spacing 2^(e + 1 - t) of the binade [2^e, 2^(e+1)) it lies in; that tie rounds to
    the even neighbour 2^(e+1), which overflows (IEEE 754, round to nearest)."""
    top = int(torch.finfo(dtype).max)
    e = top.bit_length() - 1  # exact for integers of any size
    return top + 2 ** (e + 1 - significand_bits(dtype)) // 2
