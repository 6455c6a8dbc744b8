"""How alike do two positions look? Similarity of positional encodings versus offset.

For the sinusoidal encoding, PE(p) . PE(q) = sum_i cos(omega_i (p - q)) and |PE(p)|^2 = d/2,
so the cosine similarity is a function of the offset alone:

    cos(PE(p), PE(p + k)) = (2/d) sum_i cos(omega_i k),   omega_i = base^(-2i/d).

Every encoding gets one "positional kernel" K(p, q) that says how alike it makes positions p
and q look to attention:

* input encodings (sinusoidal, learned): the cosine similarity of PE(p) and PE(q);
* query/key rotations (RoPE): the cosine of R_p u and R_q u averaged over isotropic u, i.e.
  tr(R_p^T R_q) / d_head, which for RoPE is the sinusoidal kernel of the head dimension;
* score biases (ALiBi, T5): exp(b_h(p, q)) averaged over heads, the factor the bias multiplies
  an attention weight by (1 on the diagonal for ALiBi);
* none: 1 everywhere, since every position looks the same.

On K we measure the three properties of Wang et al. (ICLR 2021): monotonicity (K falls with
|p - q|), translation invariance (K depends on p - q only) and symmetry (K(p, q) = K(q, p)).
Finally RoPE's long-term decay (Su et al. 2021, section 3.4.3 and Fig. 2): the relative upper
bound (1/(d/2)) sum_{j=1}^{d/2} |S_j| with S_j = sum_{i<j} exp(i r theta_i) falls with the
relative distance r.

Kernels are computed in float64: this analysis is about the formulas; what float32 angles do
at large positions is the aliasing analysis' subject.
"""

import itertools
import math
from typing import Any

import torch
from torch import Tensor, nn

from posenc.claims import claim
from posenc.device import device_name, resolve_device
from posenc.encodings import REGISTRY, EncodingParams, build, inverse_frequencies, sinusoidal_table
from posenc.io import save_figure, write_csv
from posenc.workflow import Timer, setup, write_section

SECTION = "similarity"


def cosine_matrix(v: Tensor) -> Tensor:
    """Cosine similarity of every pair of rows of ``v`` (N, d). Shape (N, N)."""
    unit = v / v.norm(dim=-1, keepdim=True)
    return unit @ unit.T


def kernel(
    encoding: str,
    n_positions: int,
    d_model: int,
    n_heads: int,
    encoding_cfg: dict,
    learned_init_std: float,
    seed: int,
    device: torch.device,
) -> Tensor:
    """The positional kernel K(p, q) of ``encoding`` over positions 0..N-1. Shape (N, N).

    Learned parameters are redrawn from N(0, learned_init_std^2) to stand in for a trained
    model (the registry starts T5's bias at zero, where it is NoPE).
    """
    torch.manual_seed(seed)
    params = EncodingParams(
        d_model=d_model,
        n_heads=n_heads,
        max_len=n_positions,
        angle_dtype=torch.float64,
        **encoding_cfg,
    )
    module = build(encoding, params)
    if REGISTRY[encoding].learned:
        for p in module.parameters():
            nn.init.normal_(p, std=learned_init_std)
    module = module.to(device=device, dtype=torch.float64)
    positions = torch.arange(n_positions, device=device)
    acts_on = REGISTRY[encoding].acts_on
    with torch.no_grad():
        if acts_on == "input":
            return cosine_matrix(module.input_encoding(positions).double())
        if acts_on == "qk":
            # Rotate every basis vector e_j at every position: rows R_p e_j, shape (Dh, 1, N, Dh).
            dh = params.head_dim
            basis = torch.eye(dh, dtype=torch.float64, device=device)[:, None, None, :]
            rotated, _ = module.rotate(
                basis.expand(dh, 1, n_positions, dh),
                basis.expand(dh, 1, n_positions, dh),
                positions,
                positions,
            )
            return torch.einsum("jpd,jqd->pq", rotated[:, 0], rotated[:, 0]) / dh
        if acts_on == "bias":
            bias = module.score_bias(positions, positions, causal=False).double()  # (H, N, N)
            return bias.exp().mean(dim=0)
        return torch.ones(n_positions, n_positions, dtype=torch.float64, device=device)


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
    """max over offsets k of (max - min) of K(p, p+k) over p: 0 when K depends on p-q only."""
    n = K.shape[0]
    spreads = []
    for k in range(-(n - 1), n):
        diagonal = torch.diagonal(K, k)
        spreads.append(diagonal.max() - diagonal.min())
    return torch.stack(spreads).max().item()


def symmetry_deviation(K: Tensor) -> float:
    return (K - K.T).abs().max().item()


def kernel_properties(K: Tensor, window: int) -> dict[str, float]:
    forward, backward = both_directions(K)
    return {
        "monotone_range": min(monotone_range(forward), monotone_range(backward)),
        "concordance": (concordance(forward, window) + concordance(backward, window)) / 2,
        "translation_deviation": translation_deviation(K),
        "symmetry_deviation": symmetry_deviation(K),
    }


def sinusoidal_profile(d: int, base: float, max_offset: int, device) -> tuple[Tensor, Tensor]:
    """cos(PE(0), PE(k)) and |PE(0) - PE(k)| / sqrt(d) for k = 0..max_offset, float64.
    By translation invariance (measured on the kernels) position 0 stands for any."""
    pe = sinusoidal_table(torch.arange(max_offset + 1, device=device), d, base, torch.float64)
    similarity = torch.nn.functional.cosine_similarity(pe[:1], pe, dim=-1)
    distance = (pe - pe[:1]).norm(dim=-1) / math.sqrt(d)
    return similarity, distance


def rope_upper_bound(d: int, base: float, max_distance: int, device) -> Tensor:
    """Su et al. 2021, eq. (37): (1/(d/2)) sum_{j=1}^{d/2} |S_j(r)|, S_j = sum_{i<j} e^{i r theta_i},
    for r = 0..max_distance. Shape (max_distance + 1,)."""
    theta = inverse_frequencies(d, base).to(device)  # (d/2,), float64
    r = torch.arange(max_distance + 1, dtype=torch.float64, device=device)
    partial_sums = torch.cumsum(torch.exp(1j * r[:, None] * theta[None, :]), dim=1)  # (R, d/2)
    return partial_sums.abs().mean(dim=1)


def spearman(x: Tensor, y: Tensor) -> float:
    """Spearman's rank correlation (no ties expected in continuous data)."""
    rx, ry = (t.argsort().argsort().double() for t in (x, y))
    return torch.corrcoef(torch.stack((rx, ry)))[0, 1].item()


def decay_summary(bound: Tensor) -> dict[str, float]:
    """How the RoPE bound falls: rank correlation with distance, and its largest value over the
    far half of the range relative to its value at distance 0."""
    r = torch.arange(len(bound), dtype=torch.float64, device=bound.device)
    far = bound[len(bound) // 2 :]
    return {
        "at_zero": bound[0].item(),
        "spearman": spearman(r, bound),
        "far_max_ratio": (far.max() / bound[0]).item(),
    }


def near_window(ladders: list[tuple[int, float]], half_periods: float) -> int:
    """Offsets within ``half_periods`` half periods of the fastest sinusoid, floor(h pi/omega_max),
    over every frequency ladder (d, base) the analysis uses.

    Every term cos(omega_i k) falls on k in [0, pi/omega_i], so within one half period of the
    fastest frequency the sum (the kernel) falls strictly: monotonicity is guaranteed there.
    """
    omega_max = max(inverse_frequencies(d, base).max().item() for d, base in ladders)
    return math.floor(half_periods * math.pi / omega_max)


def compute(
    cfg: dict, seed: int, encodings: list[str], encoding_cfg: dict, device: torch.device
) -> dict[str, Any]:
    """Every number of the analysis: seed values, sweep profiles, kernels, RoPE bound, claims."""
    sc, kc, th = cfg["seed"], cfg["kernels"], cfg["thresholds"]

    # The seed's table, as the seed builds it: float32, 100 positions, d=64.
    pe = sinusoidal_table(torch.arange(sc["n_positions"]), sc["d_model"], sc["base"]).to(device)
    seed_values = [
        torch.nn.functional.cosine_similarity(pe[sc["position"]], pe[j], dim=0).item()
        for j in sc["others"]
    ]

    offsets = [abs(j - sc["position"]) for j in sc["others"]]
    profile_rows, sweep = [], []
    for d, base in itertools.product(cfg["dims"], cfg["bases"]):
        similarity, distance = sinusoidal_profile(d, base, cfg["max_offset"], device)
        profile_rows += [
            {"d": d, "base": base, "offset": k, "similarity": s, "distance": dist}
            for k, (s, dist) in enumerate(zip(similarity.tolist(), distance.tolist()))
        ]
        sweep.append(
            {
                "d": d,
                "base": base,
                "monotone_range": monotone_range(similarity[None, :]),
                "concordance": concordance(similarity[None, :], cfg["window"]),
                **{f"cos_at_{k}": similarity[k].item() for k in offsets},
            }
        )

    kernels, properties = {}, []
    for encoding in encodings:
        K = kernel(
            encoding,
            kc["n_positions"],
            kc["d_model"],
            kc["n_heads"],
            encoding_cfg,
            kc["learned_init_std"],
            seed,  # one seed for every encoding: a subset of encodings changes nothing
            device,
        )
        kernels[encoding] = K.cpu()
        properties.append({"encoding": encoding, **kernel_properties(K, cfg["window"])})

    rc = cfg["rope_decay"]
    bounds = {
        d: rope_upper_bound(d, encoding_cfg["rope_base"], rc["max_distance"], device).cpu()
        for d in rc["dims"]
    }
    decay = {d: decay_summary(b) for d, b in bounds.items()}

    ladders = [
        *itertools.product(cfg["dims"], cfg["bases"]),
        (kc["d_model"], encoding_cfg["base"]),
        (kc["d_model"] // kc["n_heads"], encoding_cfg["rope_base"]),
    ]
    window = near_window(ladders, th["monotone_half_periods"])
    result = {
        "seed_values": seed_values,
        "seed_table": pe.cpu(),
        "profile_rows": profile_rows,
        "sweep": sweep,
        "kernels": kernels,
        "properties": properties,
        "rope_bounds": bounds,
        "rope_decay": decay,
        "near_window": window,
        "translation_tolerance": th["translation_ulps"]
        * torch.finfo(torch.float64).eps
        * kc["n_positions"],
    }
    result["claims"] = make_claims(result, cfg, encodings)
    return result


def make_claims(result: dict, cfg: dict, encodings: list[str]) -> list[dict]:
    sc, th = cfg["seed"], cfg["thresholds"]
    claims = []
    errors = [abs(m - e) for m, e in zip(result["seed_values"], sc["expected"])]
    claims.append(
        claim(
            "similarity.seed_values",
            f"Cosine similarity of sinusoidal PE (d={sc['d_model']}, base {sc['base']:g}) "
            f"between position {sc['position']} and positions "
            f"{', '.join(map(str, sc['others']))}.",
            result["seed_values"],
            f"{sc['expected']} within {th['seed_abs_tol']:g} (the seed prints three decimals)",
            all(e <= th["seed_abs_tol"] for e in errors),
            "seed snippet (000)",
            SECTION,
        )
    )

    # Monotonicity applies to fixed encodings with a position signal; learned ones only have
    # the structure training gives them.
    fixed = [e for e in encodings if not REGISTRY[e].learned and REGISTRY[e].acts_on != "none"]
    props = {p["encoding"]: p for p in result["properties"]}
    window = result["near_window"]
    measured = {
        f"sinusoidal d={r['d']} base={r['base']:g}": r["monotone_range"] for r in result["sweep"]
    }
    measured |= {f"{e} kernel": props[e]["monotone_range"] for e in fixed}
    claims.append(
        claim(
            "similarity.monotone_near",
            "Nearby positions are more alike: the kernel falls strictly with the offset over the "
            "near window (half a period of the fastest wave), for the sinusoidal encoding at "
            "every d and base swept and for the kernels of "
            f"{', '.join(fixed) or 'no fixed encoding'}; each number is the largest offset up "
            "to which it falls strictly.",
            measured,
            f"every range >= {window} offsets",
            all(v >= window for v in measured.values()),
            "seed article (003); Wang et al. 2021",
            SECTION,
        )
    )

    # Translation invariance applies to every encoding but a learned absolute table: relative
    # ones by construction, the sinusoidal one by the angle-addition identity.
    invariant = [
        e
        for e in encodings
        if (REGISTRY[e].relative or not REGISTRY[e].learned) and REGISTRY[e].acts_on != "none"
    ]
    tol = result["translation_tolerance"]
    deviations = {e: props[e]["translation_deviation"] for e in invariant}
    claims.append(
        claim(
            "similarity.translation_invariance",
            "The kernel depends on the offset p - q only (not on p) for "
            f"{', '.join(invariant) or 'no applicable encoding'}: max over offsets of the spread "
            "of K(p, p+k) over p.",
            deviations or "no applicable encoding in config encodings",
            f"<= {th['translation_ulps']:g} eps(float64) x N = {tol:.2e}",
            all(v <= tol for v in deviations.values()) if deviations else None,
            "seed article (003); Wang et al. 2021",
            SECTION,
        )
    )

    decay = result["rope_decay"]
    measured = {}
    for d, s in decay.items():
        measured[f"d={d} spearman"] = s["spearman"]
        measured[f"d={d} far/zero"] = s["far_max_ratio"]
    claims.append(
        claim(
            "similarity.rope_long_term_decay",
            "RoPE's relative upper bound (1/(d/2)) sum_j |S_j| decays with the relative distance "
            f"(0..{cfg['rope_decay']['max_distance']}).",
            measured,
            f"Spearman correlation with distance <= {th['decay_max_spearman']:g} and the largest "
            f"value over the far half <= {th['decay_max_far_ratio']:g} x its value at 0",
            all(
                s["spearman"] <= th["decay_max_spearman"]
                and s["far_max_ratio"] <= th["decay_max_far_ratio"]
                for s in decay.values()
            ),
            "Su et al. 2021, Fig. 2",
            SECTION,
        )
    )
    return claims


def plot(result: dict, cfg: dict):
    """Four figures: the seed's heatmap, offset curves, kernels per encoding, RoPE's bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sc = cfg["seed"]
    fig_seed, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
    im = ax.imshow(result["seed_table"].T, aspect="auto", cmap="RdBu")
    ax.set_xlabel("position")
    ax.set_ylabel("dimension")
    ax.set_title(
        f"Sinusoidal positional encoding ({sc['n_positions']} positions, d={sc['d_model']})"
    )
    fig_seed.colorbar(im, ax=ax)

    fig_curves, axes = plt.subplots(
        2,
        len(cfg["bases"]),
        figsize=(4.5 * len(cfg["bases"]), 6),
        sharex=True,
        sharey="row",
        layout="constrained",
        squeeze=False,
    )
    rows = result["profile_rows"]
    for col, base in enumerate(cfg["bases"]):
        for d in cfg["dims"]:
            sel = [r for r in rows if r["d"] == d and r["base"] == base]
            k = [r["offset"] for r in sel]
            axes[0, col].plot(k, [r["similarity"] for r in sel], lw=1, label=f"d={d}")
            axes[1, col].plot(k, [r["distance"] for r in sel], lw=1, label=f"d={d}")
        axes[0, col].set_title(f"base {base:g}")
        axes[1, col].set_xlabel("offset k")
    axes[0, 0].set_ylabel("cos(PE(p), PE(p+k))")
    axes[1, 0].set_ylabel("|PE(p) − PE(p+k)| / √d")
    axes[0, -1].legend(fontsize=8)

    kernels = result["kernels"]
    n = len(kernels)
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    fig_k, axes = plt.subplots(
        nrows, ncols, figsize=(3.6 * ncols, 3.2 * nrows), layout="constrained", squeeze=False
    )
    for ax, (encoding, K) in zip(axes.flat, kernels.items()):
        vmax = K.abs().max().item()
        im = ax.imshow(K, cmap="RdBu", vmin=-vmax, vmax=vmax)
        ax.set_title(encoding)
        ax.set_xlabel("position q")
        ax.set_ylabel("position p")
        fig_k.colorbar(im, ax=ax, shrink=0.8)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)

    fig_rope, ax = plt.subplots(figsize=(6.5, 3.6), layout="constrained")
    for d, bound in result["rope_bounds"].items():
        ax.plot(range(len(bound)), bound, lw=1, label=f"d={d}")
    ax.set_xlabel("relative distance")
    ax.set_ylabel("relative upper bound")
    ax.set_title("RoPE long-term decay")
    ax.legend(fontsize=8)
    return fig_seed, fig_curves, fig_k, fig_rope


def tables(result: dict, cfg: dict, csv: dict[str, str]) -> list[dict]:
    """The report's four tables; the CSVs (``csv`` by table id) hold the full curves."""
    sc = cfg["seed"]
    offsets = [abs(j - sc["position"]) for j in sc["others"]]
    return [
        {
            "id": "seed_values",
            "title": f"Cosine similarity of sinusoidal PE (d={sc['d_model']}) "
            "between position pairs: this run and the seed's printed value.",
            "csv": None,
            "columns": ["positions", "measured", "seed", "|difference|"],
            "rows": [
                [f"{sc['position']}, {j}", m, e, abs(m - e)]
                for j, m, e in zip(sc["others"], result["seed_values"], sc["expected"])
            ],
        },
        {
            "id": "sweep",
            "title": "Sinusoidal encoding per dimension d and base: the largest "
            f"offset up to which similarity falls strictly, the concordance within {cfg['window']} "
            "offsets (1 = strictly monotone), and the similarity at the seed's offsets.",
            "csv": csv["sweep"],
            "columns": [
                "d",
                "base",
                "monotone up to",
                f"concordance ≤ {cfg['window']}",
                *(f"cos at offset {k}" for k in offsets),
            ],
            "rows": [
                [
                    r["d"],
                    r["base"],
                    r["monotone_range"],
                    r["concordance"],
                    *(r[f"cos_at_{k}"] for k in offsets),
                ]
                for r in result["sweep"]
            ],
        },
        {
            "id": "properties",
            "title": "Wang et al.'s properties of each encoding's positional "
            f"kernel over {cfg['kernels']['n_positions']} positions.",
            "csv": csv["properties"],
            "columns": [
                "encoding",
                "monotone up to",
                f"concordance ≤ {cfg['window']}",
                "translation deviation",
                "symmetry deviation",
            ],
            "rows": [
                [
                    p["encoding"],
                    p["monotone_range"],
                    p["concordance"],
                    p["translation_deviation"],
                    p["symmetry_deviation"],
                ]
                for p in result["properties"]
            ],
        },
        {
            "id": "rope_decay",
            "title": "RoPE's relative upper bound: its value at distance 0, its "
            "rank correlation with distance, and its largest far-half value relative to 0.",
            "csv": csv["rope_decay"],
            "columns": ["d", "bound at 0", "Spearman", "far max / at 0"],
            "rows": [
                [d, s["at_zero"], s["spearman"], s["far_max_ratio"]]
                for d, s in result["rope_decay"].items()
            ],
        },
    ]


def main(snakemake) -> None:
    log = setup(snakemake, SECTION)
    p, out = snakemake.params, snakemake.output
    device = resolve_device(p.device)
    log.info("device %s", device)
    with Timer() as timer:
        result = compute(p.cfg, p.seed, list(p.encodings), dict(p.encoding), device)
    log.info("computed in %.1f s", timer.seconds)
    cfg = p.cfg

    write_csv(out.profiles_csv, result["profile_rows"])
    write_csv(out.properties_csv, result["properties"])
    write_csv(
        out.rope_csv,
        [
            {"d": d, "distance": r, "bound": v}
            for d, b in result["rope_bounds"].items()
            for r, v in enumerate(b.tolist())
        ],
    )
    figs = plot(result, cfg)
    names = ("seed_heatmap", "offset_curves", "kernels", "rope_decay")
    for fig, name in zip(figs, names):
        save_figure(fig, out[f"{name}_png"], out[f"{name}_svg"])

    tabs = tables(
        result,
        cfg,
        {"sweep": out.profiles_csv, "properties": out.properties_csv, "rope_decay": out.rope_csv},
    )
    sc, kc = cfg["seed"], cfg["kernels"]
    captions = {
        "seed_heatmap": f"The sinusoidal encoding of {sc['n_positions']} positions in "
        f"d={sc['d_model']} dimensions (base {sc['base']:g}), as the seed draws it: fast waves in "
        "the low dimensions, slow ones in the high.",
        "offset_curves": "Cosine similarity (top) and scaled distance (bottom) between the "
        f"sinusoidal encodings of positions k apart, for d in {cfg['dims']} and each base.",
        "kernels": f"Positional kernel K(p, q) of each encoding over {kc['n_positions']} "
        f"positions (d={kc['d_model']}, {kc['n_heads']} heads); learned parameters drawn at "
        "random to stand in for a trained model.",
        "rope_decay": "RoPE's relative upper bound versus relative distance (Su et al. 2021, "
        f"Fig. 2), base {p.encoding['rope_base']:g}.",
    }
    metrics = {
        "device": device_name(device),
        "seed_values": result["seed_values"],
        "sweep": result["sweep"],
        "properties": result["properties"],
        "rope_decay": {str(d): s for d, s in result["rope_decay"].items()},
        "near_window": result["near_window"],
        "translation_tolerance": result["translation_tolerance"],
        "figures": [
            {
                "id": name,
                "png": out[f"{name}_png"],
                "svg": out[f"{name}_svg"],
                "caption": captions[name],
            }
            for name in names
        ],
        "tables": tabs,
    }
    write_section(out, metrics, result["claims"], log)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
