"""The rotation identity on the fixed input tables: PE(p+k) = M(k) PE(p) checked in every dtype
against its rounding bound, and the offset map M(k) fitted by least squares from the rows, as
a projection would learn it (learned tables fitted the same way, as a contrast)."""

import itertools
from collections.abc import Callable

import torch
from torch import Tensor

from posenc.encodings import PositionalEncoding, build, override
from posenc.numerics import apply_rotation_blocks
from posenc.rounding import angle_dtype, eps
from posenc.seeding import keyed_generator


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
    seed: int,
    device,
) -> list[dict]:
    """One least-squares map per (table, d, base, offset) from PE(p) to PE(p+k), in float64.

    Training positions are drawn over ``train_span`` × :func:`resolution_span` positions (over
    less, the slowest pairs cannot be told apart, so their rotations are not determined by the
    data and the minimum-norm fit is wrong elsewhere), held-out positions from the next,
    disjoint range of the same width. A second fit sees only ``short_span`` of it, to show
    that failure. The tolerance follows the angle rounding of positions up to P in float64:
    ulps · eps · (1 + P + k). Learned tables, at their (random) initialisation, are fitted the
    same way as a contrast. Each map draws from a generator of its own (``seed`` and the
    map's name), so its numbers do not depend on which other tables are configured.
    """
    rows = []
    n_train, n_test = cfg["n_train"], cfg["n_test"]
    for encoding, d, base, k in itertools.product(fixed, d_values, bases, cfg["offsets"]):
        config = override(encoding_cfg, encoding, base=base)
        table = build(encoding, config, d_model=d, angle_dtype=torch.float64)
        encode = _rows_of(table.to(device))
        resolved = resolution_span(table_frequencies(encode))
        generator = keyed_generator(seed, "linear_map", encoding, d, base, k)
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
        generator = keyed_generator(seed, "linear_map", encoding, d, k)
        # The table's initialisation draws from the global generator: seed it from ours.
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=generator)))
        table = build(encoding, encoding_cfg, d_model=d, max_len=n).to(device)
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
