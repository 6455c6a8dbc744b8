"""The rotation identity behind sinusoidal encodings and RoPE, checked in every dtype.

Sinusoidal shift is a rotation (Vaswani et al. 2017, §3.5): for each frequency pair,
(PE(p+k, 2i), PE(p+k, 2i+1)) = R_i(k) (PE(p, 2i), PE(p, 2i+1)) with

    R_i(k) = [[cos ω_i k, sin ω_i k], [−sin ω_i k, cos ω_i k]],

which depends on k only. So PE(p+k) = M(k) PE(p) for one block-diagonal matrix M(k) per offset,
a linear map a projection can learn; and RoPE scores ⟨R(p)q, R(p')k⟩ = ⟨q, R(p'−p)k⟩ depend on
p' − p only (Su et al. 2021). In floating point the angles p·ω_i are rounded, with an error up
to eps·p·ω_i, so each identity holds up to a rounding bound that grows with the position; every
check below is reported against that bound.
"""

import itertools
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch import Tensor

from posenc.claims import claim
from posenc.device import device_name, dtype_from_name, resolve_device
from posenc.encodings import (
    EncodingParams,
    apply_rope,
    build,
    inverse_frequencies,
    rope_cos_sin,
    sinusoidal_table,
)
from posenc.io import save_figure, write_csv
from posenc.numerics import apply_rotation_blocks, rotation_blocks, shift_matrix
from posenc.workflow import Timer, setup, write_section

SECTION = "rotation"


def angle_dtype(dtype: torch.dtype) -> torch.dtype:
    """The registry's rule: angles in float32 or wider, whatever the model dtype."""
    return torch.promote_types(dtype, torch.float32)


def eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


def log_positions(max_log2: int, per_octave: int, generator: torch.Generator) -> Tensor:
    """0, and ``per_octave`` uniform draws in every octave [2^e, 2^(e+1)), e < max_log2."""
    draws = [torch.zeros(1, dtype=torch.int64)]
    for e in range(max_log2):
        draws.append(torch.randint(2**e, 2 ** (e + 1), (per_octave,), generator=generator))
    return torch.cat(draws).unique()


def identity_errors(
    d: int, base: float, dtype: torch.dtype, positions: Tensor, offsets: Tensor, ulps: float
) -> list[dict]:
    """|R(k) PE(p) − PE(p+k)|_max for every (p, k), everything stored and rotated in ``dtype``.

    PE and R(k) are computed with angles in ``angle_dtype(dtype)`` and cast, as a model in
    ``dtype`` would. The rounding bound: casting each of PE(p), R(k), PE(p+k) and the two
    products and one sum of the rotation cost a few eps of the storage dtype (ulps counts them,
    with those of sin/cos in the angle dtype), and each angle p·ω_i is off by at most
    eps_a·p·ω_i ≤ eps_a·p (ω_0 = 1), for p, k and p + k:

        tol(p, k) = ulps · (eps(dtype) + eps_a) + 2 (p + k) eps_a.
    """
    a = angle_dtype(dtype)
    p, k = torch.meshgrid(positions, offsets, indexing="ij")
    p, k = p.flatten(), k.flatten()
    pe = sinusoidal_table(p, d, base, a).to(dtype)  # (n, d)
    rotated = apply_rotation_blocks(pe, rotation_blocks(k, d, base, a).to(dtype))
    target = sinusoidal_table(p + k, d, base, a).to(dtype)
    err = (rotated.double() - target.double()).abs().amax(-1)  # (n,)
    tol = ulps * (eps(dtype) + eps(a)) + 2 * (p + k).double().to(err.device) * eps(a)
    return [
        {
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

    Three ways: the registry's float64 table; exact rotation R(k) PE(p) in float64; and the
    article's arithmetic, which rounds PE(p) and cos/sin(ω_i k) to ``decimals`` before
    multiplying (it uses cos 1 = 0.540, sin 1 = 0.841).
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
        "article_error": (torch.tensor(cfg["article_target"], dtype=torch.float64) - table[p0 + k])
        .abs()
        .max()
        .item(),
        "article_cos_sin_error": max(
            abs(cfg["article_cos_sin"][0] - blocks[0, 0, 0].item()),
            abs(cfg["article_cos_sin"][1] - blocks[0, 0, 1].item()),
        ),
    }


def rope_scores(q: Tensor, k: Tensor, pq: Tensor, pk: Tensor, base: float, x_dtype, a_dtype):
    """⟨R(pq_j) q_i, R(pk_j) k_i⟩ for every vector pair i and position pair j. Shape (n, m).

    Rotation through the registry (:func:`apply_rope`, interleaved pairs) in ``x_dtype``,
    angles from :func:`rope_cos_sin` in ``a_dtype``; the dot product runs in ``x_dtype`` too.
    """
    cq, sq = rope_cos_sin(pq, q.shape[-1], base, a_dtype)  # (m, d/2)
    ck, sk = rope_cos_sin(pk, k.shape[-1], base, a_dtype)
    rq = apply_rope(q.to(x_dtype)[:, None, :], cq, sq)  # (n, m, d)
    rk = apply_rope(k.to(x_dtype)[:, None, :], ck, sk)
    return (rq * rk).sum(-1)


def rope_relative(
    cfg: dict, dtypes: list[str], ulps: float, base: float, generator: torch.Generator, device
) -> list[dict]:
    """Max deviation |s(p+s, p'+s) − s(p, p')| / (‖q‖‖k‖) per dtype case and shift s.

    Cases: each model dtype with the registry's angle dtype (float32 or wider), plus bfloat16
    with the angles also in bfloat16 (positions built in the input's dtype). Rounding bound,
    from the two scores' rotations and sums (about d eps of the storage dtype, ``ulps``) and
    the four angles of positions up to P (each off by eps_a·P):

        tol = ulps · d · eps(dtype) + 4 P eps_a.
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
    for name, a in cases:
        x = dtype_from_name(name)
        reference = rope_scores(q, k, pq, pk, base, x, a).double()
        for s in shifts:
            shifted = rope_scores(q, k, pq + s, pk + s, base, x, a).double()
            dev = ((shifted - reference).abs() / norms).max().item()
            top = int(torch.maximum(pq, pk).max()) + s
            tol = ulps * d * eps(x) + 4 * top * eps(a)
            rows.append(
                {
                    "dtype": name,
                    "angles": str(a).removeprefix("torch."),
                    "naive": a == x and x not in (torch.float32, torch.float64),
                    "shift": s,
                    "max_position": top,
                    "max_deviation": dev,
                    "tolerance": tol,
                    "deviation_over_tolerance": dev / tol,
                }
            )
    return rows


def resolution_span(d: int, base: float) -> float:
    """2π / Δω: the positions needed to tell every frequency of the encoding apart.

    Δω is the smallest gap among the frequencies ω_i = base^(−2i/d) and 0 (a pair seen over
    a small part of its period looks constant). By the Rayleigh criterion of spectral analysis,
    two waves of frequencies Δω apart are resolved only over a span of 2π/Δω or more; the
    closest are the two slowest pairs, ω_{d/2−2} − ω_{d/2−1} = ω_{d/2−1} (base^(2/d) − 1).
    """
    omega = inverse_frequencies(d, base)
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


def _learned_rows(table: torch.nn.Module, positions: Tensor) -> Tensor:
    with torch.no_grad():
        return table.input_encoding(positions).double()


def linear_offset_maps(
    cfg: dict,
    d_values: list[int],
    bases: list[float],
    ulps: float,
    generator: torch.Generator,
    device,
) -> list[dict]:
    """One least-squares map per (d, base, offset) from PE(p) to PE(p+k), in float64.

    Training positions are drawn over ``train_span`` × :func:`resolution_span` positions (over
    less, the slowest pairs cannot be told apart, so their rotations are not determined by the
    data and the minimum-norm fit is wrong elsewhere), held-out positions from the next,
    disjoint range of the same width. A second fit sees only ``short_span`` of it, to show
    that failure. The
    tolerance follows the angle rounding of positions up to P in float64:
    ulps · eps · (1 + P + k). A learned (random) table is fitted the same way as a contrast.
    """
    rows = []
    n_train, n_test = cfg["n_train"], cfg["n_test"]
    for d, base, k in itertools.product(d_values, bases, cfg["offsets"]):
        resolved = resolution_span(d, base)
        for label, factor in (("full", cfg["train_span"]), ("short", cfg["short_span"])):
            span = max(n_train, int(factor * resolved))
            train = torch.randint(0, span, (n_train,), generator=generator).to(device)
            test = torch.randint(span, 2 * span, (n_test,), generator=generator).to(device)
            encode = partial(sinusoidal_table, d=d, base=base, dtype=torch.float64)
            w, cond, rel = fit_offset_map(encode, train, test, k)
            exact = shift_matrix(k, d, base).to(device)  # PE(p+k) = M PE(p): W should be Mᵀ
            rows.append(
                {
                    "encoding": "sinusoidal",
                    "d": d,
                    "base": base,
                    "offset": k,
                    "training": label,
                    "train_span": span,
                    "max_position": 2 * span + k,
                    "condition_number": cond,
                    "held_out_rel_error": rel,
                    "map_error": (w - exact.T).abs().max().item(),
                    "tolerance": ulps * eps(torch.float64) * (1 + 2 * span + k),
                }
            )
    n = cfg["learned_len"]
    for d, k in itertools.product(d_values, cfg["offsets"]):
        if k >= n // 2 or n_train <= d:
            continue
        # The table's initialisation draws from the global generator: seed it from ours.
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=generator)))
        table = build("learned", EncodingParams(d_model=d, max_len=n)).to(device)
        train = torch.randint(0, n // 2 - k, (n_train,), generator=generator).to(device)
        test = torch.randint(n // 2, n - k, (n_test,), generator=generator).to(device)
        _, cond, rel = fit_offset_map(partial(_learned_rows, table), train, test, k)
        rows.append(
            {
                "encoding": "learned",
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
            }
        )
    return rows


def make_claims(result: dict, cfg: dict) -> list[dict]:
    th = cfg["thresholds"]
    ident = result["identity"]
    worst = {
        dt: max(r["error_over_tolerance"] for r in ident if r["dtype"] == dt)
        for dt in cfg["dtypes"]
    }
    maxerr = {
        dt: max(r["max_abs_error"] for r in ident if r["dtype"] == dt) for dt in cfg["dtypes"]
    }
    claims = [
        claim(
            "rotation.sinusoidal_identity",
            "Shifting a sinusoidal encoding by k rotates each frequency pair by a 2×2 matrix "
            "R_i(k) that depends on k only: R(k) PE(p) = PE(p + k) for every p, k, d and base "
            "tried, up to rounding.",
            {
                **{f"{dt} max error": maxerr[dt] for dt in cfg["dtypes"]},
                **{f"{dt} error / bound": worst[dt] for dt in cfg["dtypes"]},
            },
            f"error ≤ {th['identity_ulps']:g}·(eps + eps_angles) + 2(p + k)·eps_angles in every "
            "dtype (error / bound ≤ 1)",
            all(v <= 1.0 for v in worst.values()),
            "Vaswani et al. 2017, §3.5; seed article (003)",
            SECTION,
        )
    ]

    h, tol = result["hand_trace"], 0.5 * 10.0 ** -cfg["hand_trace"]["decimals"]
    hand_ok = (
        h["article_error"] <= tol
        and h["article_cos_sin_error"] <= tol
        and h["exact_error"] <= th["identity_ulps"] * 2 * eps(torch.float64)
        and h["by_hand_error"] <= 4 * tol  # four inputs rounded by ≤ tol, |values| ≤ 1
    )
    claims.append(
        claim(
            "rotation.hand_trace",
            f"The article's hand trace (d = {h['d']}, base {h['base']:g}, ω = "
            f"{', '.join(f'{w:g}' for w in h['omega'])}): rotating PE({h['from_position']}) by "
            f"k = {h['offset']} gives PE({h['from_position'] + h['offset']}) = "
            f"({', '.join(f'{v:.3f}' for v in cfg['hand_trace']['article_target'])}) up to "
            "rounding.",
            {
                f"PE({h['from_position'] + h['offset']})": h["target"],
                "rotated (exact)": h["rotated_exact"],
                "rotated (3 decimals, by hand)": h["rotated_by_hand"],
            },
            f"article values within {tol:g} of the registry's; exact rotation within "
            f"{th['identity_ulps']:g}·2 eps; by-hand rotation within 4 × {tol:g}",
            hand_ok,
            "seed article (003)",
            SECTION,
        )
    )

    rope = [r for r in result["rope"] if not r["naive"]]
    worst = {
        dt: max(r["deviation_over_tolerance"] for r in rope if r["dtype"] == dt)
        for dt in cfg["dtypes"]
    }
    naive = [r for r in result["rope"] if r["naive"]]
    measured = {f"{dt} deviation / bound": v for dt, v in worst.items()}
    measured |= {
        f"{r['dtype']} with {r['angles']} angles, position {r['max_position']}: deviation": r[
            "max_deviation"
        ]
        for r in naive
        if r["shift"] == max(x["shift"] for x in naive)
    }
    claims.append(
        claim(
            "rotation.rope_relative_only",
            "RoPE attention scores depend on the offset only: ⟨R(p)q, R(p')k⟩ equals the score "
            "at (p + s, p' + s) for every shift s, up to rounding that grows with the absolute "
            "position.",
            measured,
            f"deviation ≤ {th['rope_ulps']:g}·d·eps + 4·P·eps_angles for every dtype with "
            "the registry's angles (float32 or wider)",
            all(v <= 1.0 for v in worst.values()),
            "Su et al. 2021, eq. 16",
            SECTION,
        )
    )

    sin_full = [
        r for r in result["linear"] if r["encoding"] == "sinusoidal" and r["training"] == "full"
    ]
    ratio = max(r["held_out_rel_error"] / r["tolerance"] for r in sin_full)
    learned = [r["held_out_rel_error"] for r in result["linear"] if r["encoding"] == "learned"]
    claims.append(
        claim(
            "rotation.linear_offset_map",
            "For each offset k one linear map, fitted by least squares on PE(p) → PE(p + k) over "
            "some positions, is exact on held-out positions: a projection can learn relative "
            "offsets from sinusoidal encodings (a random learned table has no such map).",
            {
                "max held-out relative error": max(r["held_out_rel_error"] for r in sin_full),
                "error / bound": ratio,
                "max |W − M(k)ᵀ|": max(r["map_error"] for r in sin_full),
                "learned table: min held-out relative error": min(learned) if learned else None,
            },
            f"held-out relative error ≤ {th['linear_map_ulps']:g}·eps·(1 + P + k) when "
            "training spans 2π/Δω, enough to resolve every frequency (error / bound ≤ 1)",
            ratio <= 1.0,
            "seed article (003); Vaswani et al. 2017, §3.5",
            SECTION,
        )
    )
    return claims


def compute(cfg: dict, seed: int, encoding_cfg: dict, device: torch.device) -> dict[str, Any]:
    """Every number of the analysis; random draws from CPU generators seeded by ``seed``."""
    g = torch.Generator().manual_seed(seed)
    positions = log_positions(cfg["max_log2_position"], cfg["positions_per_octave"], g)
    offsets = torch.tensor(cfg["offsets"])
    identity = []
    for d, base, dt in itertools.product(cfg["d_values"], cfg["bases"], cfg["dtypes"]):
        identity += identity_errors(
            d,
            base,
            dtype_from_name(dt),
            positions.to(device),
            offsets.to(device),
            cfg["thresholds"]["identity_ulps"],
        )
    th = cfg["thresholds"]
    rope = rope_relative(
        cfg["rope"], cfg["dtypes"], th["rope_ulps"], encoding_cfg["rope_base"], g, device
    )
    bases = cfg["bases"]
    linear = linear_offset_maps(
        cfg["linear_map"], cfg["d_values"], bases, th["linear_map_ulps"], g, device
    )
    result = {
        "identity": identity,
        "hand_trace": hand_trace(cfg["hand_trace"]),
        "rope": rope,
        "linear": linear,
    }
    result["claims"] = make_claims(result, cfg)
    return result


def plot(result: dict, cfg: dict):
    """Two figures: the identity's error against the position, and RoPE's shift deviation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {
        "float64": "tab:green",
        "float32": "tab:blue",
        "bfloat16": "tab:red",
        "float16": "tab:orange",
    }
    floor = eps(torch.float64) / 8  # exact zeros are drawn here, below every error
    d = max(cfg["d_values"])
    bases = cfg["bases"]
    fig_id, axes = plt.subplots(
        1,
        len(bases),
        figsize=(5.5 * len(bases), 3.8),
        sharey=True,
        layout="constrained",
        squeeze=False,
    )
    for ax, base in zip(axes[0], bases):
        for dt in cfg["dtypes"]:
            rows = [
                r
                for r in result["identity"]
                if r["d"] == d and r["base"] == base and r["dtype"] == dt
            ]
            by_p: dict[int, tuple[float, float]] = {}
            for r in rows:
                e, t = by_p.get(r["position"], (0.0, 0.0))
                by_p[r["position"]] = (max(e, r["max_abs_error"]), max(t, r["tolerance"]))
            ps = sorted(p for p in by_p if p > 0)
            ax.plot(
                ps,
                [max(by_p[p][0], floor) for p in ps],
                color=colors.get(dt),
                lw=1,
                label=f"{dt} error",
            )
            ax.plot(
                ps,
                [by_p[p][1] for p in ps],
                color=colors.get(dt),
                lw=1,
                ls="--",
                label=f"{dt} bound",
            )
        ax.set(xscale="log", yscale="log", xlabel="position p", title=f"d = {d}, base {base:g}")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("max |R(k) PE(p) − PE(p+k)| over k")
    fig_id.legend(*axes[0][0].get_legend_handles_labels(), fontsize=7, loc="outside right upper")

    fig_rope, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
    cases = sorted({(r["dtype"], r["angles"]) for r in result["rope"]})
    for x, a in cases:
        rows = [r for r in result["rope"] if r["dtype"] == x and r["angles"] == a and r["shift"]]
        style = {"color": colors.get(x), "ls": ":" if x == a and x == "bfloat16" else "-"}
        ax.plot(
            [r["max_position"] for r in rows],
            [max(r["max_deviation"], floor) for r in rows],
            marker=".",
            lw=1,
            label=f"{x}, {a} angles",
            **style,
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="largest absolute position P",
        ylabel="max |s(p+s, p'+s) − s(p, p')| / ‖q‖‖k‖",
        title=f"RoPE, head width {cfg['rope']['head_dim']}",
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    return fig_id, fig_rope


def tables(result: dict, cfg: dict, csv: dict[str, str]) -> list[dict]:
    """The report's tables; the CSVs hold every (p, k), shift and fit."""
    h = result["hand_trace"]
    hand_rows = [[p, *row] for p, row in zip(h["positions"], h["table"])]
    hand_rows.append([f"R({h['offset']}) PE({h['from_position']}), exact", *h["rotated_exact"]])
    hand_rows.append(
        [f"R({h['offset']}) PE({h['from_position']}), 3 decimals", *h["rotated_by_hand"]]
    )
    summary = []
    for d, base, dt in itertools.product(cfg["d_values"], cfg["bases"], cfg["dtypes"]):
        rows = [
            r for r in result["identity"] if r["d"] == d and r["base"] == base and r["dtype"] == dt
        ]
        summary.append(
            [
                d,
                base,
                dt,
                max(r["max_abs_error"] for r in rows),
                max(r["error_over_tolerance"] for r in rows),
            ]
        )
    rope = []
    for x, a in sorted({(r["dtype"], r["angles"]) for r in result["rope"]}):
        rows = [r for r in result["rope"] if r["dtype"] == x and r["angles"] == a]
        small = min((r for r in rows if r["shift"]), key=lambda r: r["shift"])
        large = max(rows, key=lambda r: r["shift"])
        rope.append(
            [
                x,
                a,
                small["max_deviation"],
                large["max_position"],
                large["max_deviation"],
                max(r["deviation_over_tolerance"] for r in rows),
            ]
        )
    return [
        {
            "id": "hand_trace",
            "title": f"The article's hand trace: PE(p) for d = {h['d']}, base {h['base']:g} "
            f"(ω = {', '.join(f'{w:g}' for w in h['omega'])}), and PE({h['from_position']}) "
            f"rotated by k = {h['offset']}, exactly and with every input rounded to 3 decimals "
            "as the article does.",
            "csv": None,
            "columns": [
                "p",
                *(f"PE(p, {j}) = {('sin', 'cos')[j % 2]} ω{j // 2}·p" for j in range(h["d"])),
            ],
            "rows": hand_rows,
        },
        {
            "id": "identity",
            "title": "R(k) PE(p) = PE(p + k): largest error over every position and offset, "
            "and the largest ratio to the rounding bound.",
            "csv": csv["identity"],
            "columns": ["d", "base", "dtype", "max error", "error / bound"],
            "rows": summary,
        },
        {
            "id": "rope",
            "title": "RoPE: largest score change under a common shift of both positions, at the "
            "smallest and the largest shift, and the largest ratio to the rounding bound.",
            "csv": csv["rope"],
            "columns": [
                "dtype",
                "angles",
                "deviation, shift 1",
                "largest position",
                "deviation there",
                "deviation / bound",
            ],
            "rows": rope,
        },
        {
            "id": "linear_map",
            "title": "Least-squares maps PE(p) → PE(p + k): condition number of the training "
            "rows, held-out relative error, its bound, and the distance to the exact M(k)ᵀ. "
            "Training spans 2π/Δω positions (every frequency resolved); 'short' sees a "
            "fraction of that span.",
            "csv": csv["linear"],
            "columns": [
                "encoding",
                "d",
                "base",
                "k",
                "training",
                "span",
                "cond",
                "held-out error",
                "bound",
                "max |W − Mᵀ|",
            ],
            "rows": [
                [
                    r["encoding"],
                    r["d"],
                    r["base"] if r["base"] is not None else "—",
                    r["offset"],
                    r["training"],
                    r["train_span"],
                    r["condition_number"],
                    r["held_out_rel_error"],
                    r["tolerance"],
                    r["map_error"],
                ]
                for r in result["linear"]
                if r["offset"]
                in (cfg["linear_map"]["offsets"][0], cfg["linear_map"]["offsets"][-1])
            ],
        },
    ]


def main(snakemake) -> None:
    log = setup(snakemake, SECTION)
    p, out = snakemake.params, snakemake.output
    device = resolve_device(p.device)
    log.info("device %s", device)
    with Timer() as timer:
        result = compute(p.cfg, p.seed, dict(p.encoding), device)
    log.info("computed in %.1f s", timer.seconds)
    write_csv(out.identity_csv, result["identity"])
    write_csv(out.rope_csv, result["rope"])
    write_csv(out.linear_csv, result["linear"])
    fig_id, fig_rope = plot(result, p.cfg)
    save_figure(fig_id, out.identity_png, out.identity_svg)
    save_figure(fig_rope, out.rope_png, out.rope_svg)
    cfg = p.cfg
    csv = {"identity": out.identity_csv, "rope": out.rope_csv, "linear": out.linear_csv}
    metrics = {
        "device": device_name(device),
        "d_values": cfg["d_values"],
        "bases": cfg["bases"],
        "offsets": cfg["offsets"],
        "dtypes": cfg["dtypes"],
        "max_position": 2 ** cfg["max_log2_position"],
        "n_identity_checks": len(result["identity"]),
        "identity_ulps": cfg["thresholds"]["identity_ulps"],
        "rope_head_dim": cfg["rope"]["head_dim"],
        "rope_base": p.encoding["rope_base"],
        "rope_ulps": cfg["thresholds"]["rope_ulps"],
        "linear_ulps": cfg["thresholds"]["linear_map_ulps"],
        "hand_trace": result["hand_trace"],
        "figures": [
            {
                "id": "identity",
                "png": out.identity_png,
                "svg": out.identity_svg,
                "caption": f"Largest error of R(k) PE(p) = PE(p + k) over the offsets "
                f"{cfg['offsets']} at each sampled position (d = {max(cfg['d_values'])}), per "
                "dtype (solid), with the rounding bound (dashed). Angles are computed in float32 "
                "or wider, so the float32 and bfloat16 errors grow with p once the angle "
                "rounding dominates; exact zeros sit at the bottom.",
            },
            {
                "id": "rope",
                "png": out.rope_png,
                "svg": out.rope_svg,
                "caption": f"RoPE: largest change of ⟨R(p)q, R(p')k⟩ / ‖q‖‖k‖ when both "
                f"positions move by the same shift, over {cfg['rope']['n_vectors']} random "
                f"(q, k) and {cfg['rope']['n_pairs']} position pairs, against the largest "
                "absolute position; dotted: angles computed in bfloat16 too.",
            },
        ],
        "tables": tables(result, cfg, csv),
    }
    write_section(out, metrics, result["claims"], log)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
