"""RoPE-style scores under a common shift of both positions: s(p+s, p'+s) against s(p, p'),
for every encoding that transforms queries and keys, held to the rounding bound of
:func:`posenc.rounding.shift_tolerance`."""

import functools

import torch
from torch import Tensor

from posenc.device import dtype_from_name
from posenc.encodings import (
    QKEncoding,
    base_of,
    build,
    head_groups,
    head_layout,
    heads_label,
)
from posenc.rounding import (
    angle_dtype,
    pair_gains,
    past_exact_integers,
    rotation_pairs,
    shift_tolerance,
    untouched_pairs,
)


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
        for label, make in _views(encoding, encoding_cfg, d, cfg["n_heads"], device):
            rows += [
                {**row, **label}
                for row in _shift_rows(
                    encoding, make, d, cases, shifts, q, k, norms, pq, pk, ulps, angle_ulps, cfg
                )
            ]
    return rows


class HeadView:
    """One head of a query/key transform built with several, seen as a one-head transform:
    vectors laid out (..., 1 head, L, Dh) are given to every head and the chosen head's
    result is returned, so what reads a one-head transform reads that head."""

    def __init__(self, module: QKEncoding, head: int):
        self.module, self.head = module, head

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor):
        n_heads = self.module.params.n_heads
        widen = [-1] * q.dim()
        widen[-3] = n_heads
        rq, rk = self.module.rotate(q.expand(widen), k.expand(widen), q_pos, k_pos)
        return rq[..., self.head : self.head + 1, :, :], rk[..., self.head : self.head + 1, :, :]


def _views(encoding: str, encoding_cfg: dict, d: int, n_heads: int, device) -> list:
    """({label columns}, angle dtype -> transform) of what is measured of ``encoding`` at head
    width ``d``: the transform at one head when its heads are alike (as it always was), else
    the first head of each group of ``n_heads`` heads, named ``encoding+heads …`` (as the
    similarity and aliasing sections name them)."""

    def one(a, head=None):
        if head is None:
            return build(encoding, encoding_cfg, d_model=d, angle_dtype=a).to(device)
        wide = build(encoding, encoding_cfg, d_model=d * n_heads, n_heads=n_heads, angle_dtype=a)
        return HeadView(wide.to(device), head)

    wide = build(encoding, encoding_cfg, d_model=d * n_heads, n_heads=n_heads)
    return [
        ({"encoding": label}, functools.partial(one, head=wide.group_heads(g)[0]))
        for g, label in head_groups(wide).items()
    ] or [({}, one)]


def _shift_rows(encoding, make, d, cases, shifts, q, k, norms, pq, pk, ulps, angle_ulps, cfg):
    """The rows of :func:`score_shifts` for one transform, ``make(angle_dtype)``."""
    rows = []
    exact = make(torch.float64)
    pairs, omega = rotation_pairs(exact, d, q.device)
    pairs, omega = pairs.to(q.device), omega.to(q.device)
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
        module = make(a)
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


def head_bases(cfg: dict, qk: list[str], encoding_cfg: dict) -> dict[str, dict[str, float]]:
    """{encoding: {heads: base}} for each transform whose heads differ, at head width
    ``head_dim`` among ``n_heads``: b of ω_i = b^(-2i/d) read back from each group's first two
    frequencies (ω_0 / ω_1 = b^(2/d)), to 12 digits (the round trip costs a few ulps)."""
    d, n_heads, found = cfg["head_dim"], cfg["n_heads"], {}
    for encoding in qk:
        wide = build(encoding, encoding_cfg, d_model=d * n_heads, n_heads=n_heads)
        layout = head_layout(wide, n_heads)
        for g in head_groups(wide):
            base = base_of(wide.frequencies(g))
            if base is not None:
                found.setdefault(encoding, {})[heads_label(layout, g)] = base
    return found
