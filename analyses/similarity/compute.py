"""How alike do two positions look? Similarity of positional encodings versus offset: the
measurement.

For the sinusoidal encoding, PE(p) . PE(q) = sum_i cos(omega_i (p - q)) and |PE(p)|^2 = d/2,
so the cosine similarity is a function of the offset alone:

    cos(PE(p), PE(p + k)) = (2/d) sum_i cos(omega_i k),   omega_i = base^(-2i/d).

Every encoding gets one "positional kernel" K(p, q) that says how alike it makes positions p
and q look to attention (``PositionalEncoding.kernel``, by where the encoding acts):

* input encodings (sinusoidal, learned): the cosine similarity of PE(p) and PE(q);
* query/key transforms (RoPE): the cosine of R_p u and R_q u averaged over isotropic u, i.e.
  tr(R_p^T R_q) / d_head, which for RoPE is the sinusoidal kernel of the head dimension;
* score biases (ALiBi, T5): exp(b_h(p, q)) averaged over heads, the factor the bias multiplies
  an attention weight by (1 on the diagonal for ALiBi);
* none: 1 everywhere, since every position looks the same.

On K we measure the three properties of Wang et al. (ICLR 2021): monotonicity (K falls with
|p - q|), translation invariance (K depends on p - q only) and symmetry (K(p, q) = K(q, p)).
Finally the long-term decay of rotary encodings (Su et al. 2021, section 3.4.3 and Fig. 2):
the relative upper bound (1/(d/2)) sum_{j=1}^{d/2} |S_j| with S_j = sum_{i<j} exp(i r theta_i)
falls with the relative distance r.

A learned encoding has the structure its training gives it, so its kernel is read from the
character LMs the extrapolation study trains (one per seed; Wang et al. analysed trained
tables too), over the pairs those causal models score. Its parameters drawn at random,
N(0, sigma^2), stay as a labelled contrast: what the properties look like before training.

Kernels are computed in float64: this analysis is about the formulas; what float32 angles do
at large positions is the aliasing analysis' subject. This module measures; the claims
(spec.py) judge.
"""

import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor, nn

from posenc.analysis import Context, Measurements
from posenc.encodings import (
    REGISTRY,
    EncodingParams,
    PositionalEncoding,
    QKEncoding,
    build,
    inverse_frequencies,
    sinusoidal_table,
)
from posenc.train import load_checkpoint

# What each kernel of the properties table is: a formula with no learned parameter, a table
# trained in a language model, or learned parameters drawn at random (the contrast).
FIXED, TRAINED, RANDOM_INIT = "fixed", "trained", "random init"
# Wang et al.'s properties, as kernel_properties names them.
PROPERTIES = ("monotone_range", "concordance", "translation_deviation", "symmetry_deviation")


def kernel_module(
    encoding: str,
    n_positions: int,
    d_model: int,
    n_heads: int,
    encoding_cfg: dict,
    learned_init_std: float,
    seed: int,
    device: torch.device,
) -> PositionalEncoding:
    """The module of ``encoding`` built from the formula: float64 angles and weights, learned
    parameters redrawn from N(0, learned_init_std^2), the untrained contrast to the trained
    modules of :func:`load_trained` (the registry starts T5's bias at zero, where it is NoPE)."""
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
    return module.to(device=device, dtype=torch.float64)


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
    """The positional kernel K(p, q) of ``encoding`` over positions 0..N-1. Shape (N, N)."""
    module = kernel_module(
        encoding, n_positions, d_model, n_heads, encoding_cfg, learned_init_std, seed, device
    )
    with torch.no_grad():
        return module.kernel(torch.arange(n_positions, device=device))


def load_trained(path: str, device: torch.device) -> tuple[PositionalEncoding, dict[str, Any]]:
    """The encoding module of a trained LM checkpoint, in float64, and what its kernel depends
    on: encoding, seed, trained length, width, heads and whether attention is causal."""
    model, meta = load_checkpoint(path, device)
    cfg = model.stack.cfg
    module = model.stack.encoding.to(dtype=torch.float64)
    info = {
        "encoding": meta["encoding"],
        "seed": meta["seed"],
        "train_len": meta["train_len"],
        "d_model": cfg.d_model,
        "n_heads": cfg.n_heads,
        "causal": cfg.causal,
    }
    return module, info


def scored_kernel(module: PositionalEncoding, positions: Tensor, causal: bool) -> Tensor:
    """K(p, q) over the pairs a model scores: every pair under bidirectional attention; under
    causal attention only keys at or before the query (q <= p), NaN above the diagonal, where
    the model never looks. Shape (N, N).

    :meth:`PositionalEncoding.kernel` scores pairs bidirectionally. A score bias can depend on
    the direction (T5's buckets: bidirectional attention spends half of them on later keys, so
    a causally trained table read bidirectionally is read at the wrong buckets), so a causal
    model's bias is read as the model reads it: causally, then as that kernel (exp of the bias,
    averaged over heads)."""
    K = module.kernel(positions)
    if not causal:
        return K
    bias = module.score_bias(positions, positions, causal=True)  # (H, N, N) or None
    if bias is not None:
        K = bias.double().exp().mean(dim=0)
    later = torch.ones_like(K, dtype=torch.bool).triu(1)
    return K.masked_fill(later, math.nan)


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


def sinusoidal_profile(d: int, base: float, max_offset: int, device) -> tuple[Tensor, Tensor]:
    """cos(PE(0), PE(k)) and |PE(0) - PE(k)| / sqrt(d) for k = 0..max_offset, float64.
    By translation invariance (measured on the kernels) position 0 stands for any."""
    pe = sinusoidal_table(torch.arange(max_offset + 1, device=device), d, base, torch.float64)
    similarity = torch.nn.functional.cosine_similarity(pe[:1], pe, dim=-1)
    distance = (pe - pe[:1]).norm(dim=-1) / math.sqrt(d)
    return similarity, distance


def relative_upper_bound(
    theta: Tensor, max_distance: int, device, decay: Callable[[Tensor], Tensor | None] | None = None
) -> Tensor:
    """Su et al. 2021, eq. (37): (1/(d/2)) sum_{j=1}^{d/2} |S_j(r)| with
    S_j = sum_{i<j} a_i(r) e^{i r theta_i}, for the rotation frequencies ``theta`` (d/2,) and
    r = 0..max_distance. Shape (max_distance + 1,). a_i(r) = 1 for a pure rotation (RoPE);
    ``decay`` gives each pair's scale at distance r where the encoding has one
    (:meth:`~posenc.encodings.PositionalEncoding.pair_decay`: xPos's zeta_i^(r/gamma), Sun et
    al. 2022), so that the bound is of the scores the encoding really gives."""
    theta = theta.to(device=device, dtype=torch.float64)
    r = torch.arange(max_distance + 1, dtype=torch.float64, device=device)
    terms = torch.exp(1j * r[:, None] * theta[None, :])  # (R, d/2)
    scale = decay(r) if decay is not None else None
    if scale is not None:
        terms = terms * scale.to(device=device, dtype=torch.float64)
    return torch.cumsum(terms, dim=1).abs().mean(dim=1)


def spearman(x: Tensor, y: Tensor) -> float:
    """Spearman's rank correlation (no ties expected in continuous data)."""
    rx, ry = (t.argsort().argsort().double() for t in (x, y))
    return torch.corrcoef(torch.stack((rx, ry)))[0, 1].item()


def decay_summary(bound: Tensor) -> dict[str, float]:
    """How the bound falls: rank correlation with distance, and its largest value over the far
    half of the range relative to its value at distance 0."""
    r = torch.arange(len(bound), dtype=torch.float64, device=bound.device)
    far = bound[len(bound) // 2 :]
    return {
        "at_zero": bound[0].item(),
        "spearman": spearman(r, bound),
        "far_max_ratio": (far.max() / bound[0]).item(),
    }


def fastest_frequency(ladders: list[tuple[int, float]], modules: list[PositionalEncoding]) -> float:
    """omega_max over every frequency ladder (d, base) swept and every wave an encoding writes
    positions into (:meth:`PositionalEncoding.frequencies`). omega_0 = base^0 = 1 on any
    geometric ladder, so in practice this is 1."""
    waves = [inverse_frequencies(d, base) for d, base in ladders]
    waves += [f for f in (m.frequencies() for m in modules) if f is not None]
    return max(w.max().item() for w in waves)


def near_window(omega_max: float, half_periods: float) -> int:
    """Offsets within ``half_periods`` half periods of the fastest sinusoid, floor(h pi/omega_max).

    Every term cos(omega_i k) falls on k in [0, pi/omega_i], so within one half period of the
    fastest frequency the sum (the kernel) falls strictly: monotonicity is guaranteed there.
    """
    return math.floor(half_periods * math.pi / omega_max)


def reach(monotone: int, omega_max: float) -> float:
    """The first offset at which a profile does not fall (``monotone`` + 1; one past the end
    when it never rises), in half periods pi/omega_max of the fastest wave. A profile falls at
    every integer offset within h half periods exactly when this exceeds h."""
    return (monotone + 1) * omega_max / math.pi


def seed_values(sc: dict, device) -> tuple[Tensor, list[float]]:
    """The seed's table, as the seed builds it (float32, its positions and width), and the
    cosine similarity of its ``position`` with each of ``others``."""
    pe = sinusoidal_table(torch.arange(sc["n_positions"]), sc["d_model"], sc["base"]).to(device)
    values = [
        torch.nn.functional.cosine_similarity(pe[sc["position"]], pe[j], dim=0).item()
        for j in sc["others"]
    ]
    return pe.cpu(), values


def sweep(cfg: dict, offsets: list[int], device) -> tuple[list[dict], list[dict]]:
    """Sinusoidal profiles for every (d, base): tidy curve rows, and one summary row each."""
    profile_rows, rows = [], []
    for d, base in itertools.product(cfg["dims"], cfg["bases"]):
        similarity, distance = sinusoidal_profile(d, base, cfg["max_offset"], device)
        profile_rows += [
            {"d": d, "base": base, "offset": k, "similarity": s, "distance": dist}
            for k, (s, dist) in enumerate(zip(similarity.tolist(), distance.tolist()))
        ]
        rows.append(
            {
                "d": d,
                "base": base,
                "monotone_range": monotone_range(similarity[None, :]),
                "concordance": concordance(similarity[None, :], cfg["window"]),
                **{f"cos_at_{k}": similarity[k].item() for k in offsets},
            }
        )
    return profile_rows, rows


def _matrix_rows(matrix: Tensor, row: str, col: str, value: str, **fixed) -> list[dict]:
    """A matrix as tidy rows {**fixed, row: i, col: j, value: M[i, j]}."""
    return [
        {**fixed, row: i, col: j, value: v}
        for i, line in enumerate(matrix.tolist())
        for j, v in enumerate(line)
    ]


def trained_kernels(
    paths: str | list[str], order: list[str], max_positions: int, device
) -> list[tuple[dict[str, Any], Tensor]]:
    """(model info, scored kernel) of every trained checkpoint in ``paths``, by encoding (in
    ``order``) and seed, over positions 0..min(max_positions, the model's trained length)-1: a
    learned table has no row past its trained length."""
    # Snakemake hands a named input of one file over as that file, not a list of one.
    paths = [paths] if isinstance(paths, str) else list(paths)
    out = []
    for path in paths:
        module, info = load_trained(path, device)
        n = min(max_positions, info["train_len"])
        with torch.no_grad():
            K = scored_kernel(module, torch.arange(n, device=device), info["causal"])
        out.append(({**info, "n_positions": n}, K.cpu()))
    return sorted(out, key=lambda item: (order.index(item[0]["encoding"]), item[0]["seed"]))


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


def compute(ctx: Context) -> Measurements:
    """Seed values, sweep profiles, every configured encoding's kernel and its properties
    (learned encodings as trained, with their random draws as a contrast), and the relative
    upper bound of every rotary encoding (a QK encoding with frequencies)."""
    cfg, kc, rc = ctx.cfg, ctx.cfg["kernels"], ctx.cfg["rope_decay"]
    sc, device = cfg["seed"], ctx.device

    seed_table, values = seed_values(sc, device)
    offsets = [abs(j - sc["position"]) for j in sc["others"]]
    profile_rows, sweep_rows = sweep(cfg, offsets, device)

    modules, kernels, properties = {}, [], []
    for encoding in ctx.encodings:
        module = kernel_module(
            encoding,
            kc["n_positions"],
            kc["d_model"],
            kc["n_heads"],
            ctx.encoding,
            kc["learned_init_std"],
            ctx.seed,  # one seed for every encoding: a subset of encodings changes nothing
            device,
        )
        with torch.no_grad():
            K = module.kernel(torch.arange(kc["n_positions"], device=device))
        learned = REGISTRY[encoding].learned
        row = {
            "encoding": encoding,
            "source": RANDOM_INIT if learned else FIXED,
            "seed": ctx.seed if learned else None,
            "n_positions": kc["n_positions"],
            "d_model": kc["d_model"],
            "n_heads": kc["n_heads"],
        }
        modules[encoding] = module
        kernels.append((row, K.cpu()))
        properties.append({**row, **kernel_properties(K, cfg["window"])})

    trained = trained_kernels(
        ctx.inputs.get("trained_models", []), ctx.encodings, kc["n_positions"], device
    )
    for info, K in trained:
        row = {
            "encoding": info["encoding"],
            "source": TRAINED,
            **{key: info[key] for key in ("seed", "n_positions", "d_model", "n_heads")},
        }
        kernels.append((row, K))
        properties.append({**row, **kernel_properties(K, cfg["window"])})

    # Su et al.'s bound reads the rotation frequencies of a query/key transform: every rotary
    # encoding configured, at each head width d (one head of width d).
    rotary = [
        e for e, m in modules.items() if isinstance(m, QKEncoding) and m.frequencies() is not None
    ]
    bounds = {}
    for encoding in rotary:
        for d in rc["dims"]:
            module = build(encoding, EncodingParams(d_model=d, n_heads=1, **ctx.encoding))
            bounds[encoding, d] = relative_upper_bound(
                module.frequencies(), rc["max_distance"], device, module.pair_decay
            ).cpu()
    decay = {key: decay_summary(b) for key, b in bounds.items()}

    ladders = list(itertools.product(cfg["dims"], cfg["bases"]))
    omega_max = fastest_frequency(ladders, list(modules.values()))
    props = {p["encoding"]: p for p in properties if p["source"] == FIXED}
    trained_props = [p for p in properties if p["source"] == TRAINED]
    # Monotonicity applies to fixed encodings with a position signal; learned ones only have
    # the structure training gives them.
    fixed = [e for e in ctx.encodings if REGISTRY[e].positional and not REGISTRY[e].learned]
    # Translation invariance applies to every encoding but a learned absolute table: relative
    # ones by construction, the sinusoidal one by the angle-addition identity. A learned one
    # is judged as trained (every seed), never by its random draw; untrained, it is left out.
    invariant = [
        e
        for e in ctx.encodings
        if REGISTRY[e].positional
        and (REGISTRY[e].relative or not REGISTRY[e].learned)
        and (e in props or any(p["encoding"] == e for p in trained_props))
    ]
    spreads = {e: props[e]["translation_deviation"] for e in invariant if e in props}
    spreads |= {
        f"{p['encoding']} trained seed {p['seed']}": p["translation_deviation"]
        for p in trained_props
        if p["encoding"] in invariant
    }
    eps_n = torch.finfo(torch.float64).eps * kc["n_positions"]

    pairs = [
        {"position": sc["position"], "other": j, "similarity": v, "printed": e, "difference": v - e}
        for j, v, e in zip(sc["others"], values, sc["expected"])
    ]
    evidence: dict[str, Any] = {
        "seed_similarity": [p["similarity"] for p in pairs],
        "printed_values": [p["printed"] for p in pairs],
        "monotone_reach": {
            **{
                f"PE d={r['d']} base={r['base']:g}": reach(r["monotone_range"], omega_max)
                for r in sweep_rows
            },
            **{f"{e} kernel": reach(props[e]["monotone_range"], omega_max) for e in fixed},
        },
        "fixed": fixed,
        "translation_spread": spreads,
        "eps_float64_times_N": eps_n,
        "invariant": invariant,
        "decay_spearman": {f"{e} d={d}": s["spearman"] for (e, d), s in decay.items()},
        "decay_far_ratio": {f"{e} d={d}": s["far_max_ratio"] for (e, d), s in decay.items()},
        "rotary": rotary,
    }
    summary = {
        "seed_pairs": pairs,
        "seed_offsets": offsets,
        "sweep": sweep_rows,
        "long_term_decay": {e: {str(d): decay[e, d] for d in rc["dims"]} for e in rotary},
        "omega_max": omega_max,
        "near_window": near_window(omega_max, cfg["thresholds"]["monotone_half_periods"]),
        "trained": trained_summary(properties),
        "random_init_std": kc["learned_init_std"],
    }
    rows = {
        "offset_profiles": profile_rows,
        "kernel_properties": properties,
        "rotary_upper_bound": [
            {"encoding": e, "d": d, "distance": r, "bound": v}
            for (e, d), b in bounds.items()
            for r, v in enumerate(b.tolist())
        ],
        # For the figures only (not in the spec's csvs, so never written): the seed's table
        # and each kernel, as tidy rows.
        "seed_table": _matrix_rows(seed_table, "position", "dimension", "value"),
        "kernels": [
            row
            for about, K in kernels
            # The figure shows one trained seed, the first (the properties cover them all).
            if about["source"] != TRAINED or about["seed"] == summary["trained"]["seed"]
            for row in _matrix_rows(
                K,
                "p",
                "q",
                "kernel",
                encoding=about["encoding"],
                source=about["source"],
                seed=about["seed"],
            )
        ],
    }
    if ctx.log:
        ctx.log.info(
            "%d kernels (%d trained), %d rotary encodings", len(kernels), len(trained), len(rotary)
        )
    return Measurements(rows=rows, evidence=evidence, summary=summary)
