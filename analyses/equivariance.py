"""Permutation equivariance of self-attention, and what breaks it.

Self-attention without positions is permutation-equivariant: Attn(PX) = P Attn(X) for every
permutation matrix P, because the same W_Q, W_K, W_V act on every row and the softmax sums over
keys in any order. Adding position breaks it; so does a causal mask, which tells a decoder where
it is even with no encoding (Haviv et al. 2022). Encodings that enter attention only through
p - q (RoPE, ALiBi, T5) instead leave the model invariant to shifting every position by the
same constant.

Every error is reported relative to the output scale, e = max|f(PX) - P f(X)| / max|f(X)|, so
one tolerance per dtype works for any model: "equal" means e <= ulps * eps(dtype), "broken"
means e > broken_min (in the shipped config the seed's own atol, at unit scale).
"""

import itertools
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from posenc.claims import claim
from posenc.device import device_name, dtype_from_name, resolve_device
from posenc.encodings import REGISTRY, sinusoidal_table
from posenc.io import save_figure, write_csv
from posenc.model import TransformerStack, make_stack
from posenc.workflow import Timer, setup, write_section

SECTION = "equivariance"
SEED_SOURCE = "seed snippet (000); seed article (003)"

# The seed snippet's check, reproduced exactly as written there.
SEED_TORCH_SEED = 0
SEED_EMBED_DIM, SEED_HEADS, SEED_LEN = 16, 2, 5
SEED_PERM = (3, 0, 4, 1, 2)
SEED_TABLE_LEN, SEED_TABLE_DIM = 100, 64


def relative_error(a: Tensor, b: Tensor) -> float:
    """max|a - b| / max|b|: the error in units of the output's scale."""
    return ((a - b).abs().max() / b.abs().max()).item()


def tolerance(dtype: torch.dtype, ulps: float) -> float:
    """The largest relative error still called 'equal': ulps machine epsilons of ``dtype``.

    Reordering the softmax sum over L keys changes each output by a few rounding errors, so a
    few dozen eps covers any exactly equivariant model of our size (Higham 2002, ch. 3).
    """
    return ulps * torch.finfo(dtype).eps


def seed_check(device: torch.device, atol_equal: float, atol_broken: float) -> dict[str, Any]:
    """The seed's snippet: nn.MultiheadAttention(16, 2) on x (1, 5, 16), permutation [3,0,4,1,2].

    Without positions the output is only permuted; after adding the first 16 dimensions of a
    d=64 sinusoidal table (here from the registry) it is not. ``torch.allclose`` is called with
    the seed's arguments, its default rtol=1e-5 included.
    """
    torch.manual_seed(SEED_TORCH_SEED)
    attn = nn.MultiheadAttention(SEED_EMBED_DIM, SEED_HEADS, batch_first=True)
    x = torch.randn(1, SEED_LEN, SEED_EMBED_DIM)  # (1, L, D), drawn on the CPU like the seed
    attn, x = attn.to(device).eval(), x.to(device)
    perm = torch.tensor(SEED_PERM, device=device)
    pe = sinusoidal_table(torch.arange(SEED_TABLE_LEN), SEED_TABLE_DIM).to(device)  # (100, 64)
    with torch.no_grad():
        out, _ = attn(x, x, x)
        out_p, _ = attn(x[:, perm], x[:, perm], x[:, perm])
        xp = x + pe[:SEED_LEN, :SEED_EMBED_DIM]
        out2, _ = attn(xp, xp, xp)
        xpp = x[:, perm] + pe[:SEED_LEN, :SEED_EMBED_DIM]  # shuffled tokens, positions in place
        out2_p, _ = attn(xpp, xpp, xpp)
    return {
        "no_pe_max_abs": (out[:, perm] - out_p).abs().max().item(),
        "pe_max_abs": (out2[:, perm] - out2_p).abs().max().item(),
        "no_pe_allclose": torch.allclose(out[:, perm], out_p, atol=atol_equal),
        "pe_allclose": torch.allclose(out2[:, perm], out2_p, atol=atol_broken),
    }


@dataclass(frozen=True)
class Case:
    encoding: str
    causal: bool
    n_layers: int
    dtype: str
    seed: int

    @property
    def attention(self) -> str:
        return "causal" if self.causal else "bidirectional"


def build_stack(
    case: Case, cfg: dict, encoding_cfg: dict, device: torch.device
) -> TransformerStack:
    """A stack for ``case``, initialised on the CPU so every device gets the same weights.

    Learned encoding parameters are redrawn from N(0, learned_init_std^2): the registry starts
    T5's bias at zero (it is NoPE until trained), and a trained model's bias is not zero.
    """
    dtype = dtype_from_name(case.dtype)
    torch.manual_seed(case.seed)
    stack = make_stack(
        case.encoding,
        d_model=cfg["d_model"],
        n_heads=cfg["n_heads"],
        n_layers=case.n_layers,
        causal=case.causal,
        max_len=cfg["seq_len"] + max(cfg["shifts"]),  # the learned table must cover the shifts
        # Angles in float32 or wider: a float64 model gets float64 angles.
        angle_dtype=torch.promote_types(dtype, torch.float32),
        **encoding_cfg,
    )
    if REGISTRY[case.encoding].learned:
        for p in stack.encoding.parameters():
            nn.init.normal_(p, std=cfg["learned_init_std"])
    return stack.to(device=device, dtype=dtype).eval()


def permutation_errors(stack: TransformerStack, x: Tensor, perms: list[Tensor]) -> list[float]:
    """Relative error max|f(PX) - P f(X)| / max|f(X)| for each permutation of the L axis."""
    with torch.no_grad():
        y = stack(x)  # (B, L, D)
        return [relative_error(stack(x[:, perm]), y[:, perm]) for perm in perms]


def shift_errors(stack: TransformerStack, x: Tensor, shifts: list[int]) -> list[float]:
    """Relative error max|f(X; p + c) - f(X; p)| / max|f(X; p)| for each constant shift c."""
    positions = torch.arange(x.shape[1], device=x.device)
    with torch.no_grad():
        y = stack(x, positions)
        return [relative_error(stack(x, positions + c), y) for c in shifts]


def random_permutations(n: int, length: int, generator: torch.Generator) -> list[Tensor]:
    """``n`` random permutations of ``length`` items, neither the identity (it proves nothing)
    nor the reversal (every model sees it on its own)."""
    if length < 3:
        raise ValueError(
            f"need at least 3 items for a permutation other than the identity and "
            f"the reversal, got {length}"
        )
    identity = torch.arange(length)
    perms = []
    while len(perms) < n:
        perm = torch.randperm(length, generator=generator)
        if not (torch.equal(perm, identity) or torch.equal(perm, identity.flip(0))):
            perms.append(perm)
    return perms


def run_cases(
    cfg: dict, seed: int, encodings: list[str], encoding_cfg: dict, device: torch.device
) -> tuple[list[dict], list[dict]]:
    """Every encoding x attention x depth x dtype x seed: tidy rows of permutation and shift
    errors. Inputs and permutations come from a CPU generator seeded per model seed.

    Besides the random permutations every model also sees the reversal, on its own:
    bidirectional ALiBi's bias -m|i - j| is unchanged by it.
    """
    perm_rows, shift_rows = [], []
    grid = itertools.product(
        encodings, (False, True), sorted({1, cfg["n_layers"]}), cfg["dtypes"], range(cfg["n_seeds"])
    )
    length = cfg["seq_len"]
    reversal = torch.arange(length - 1, -1, -1)
    for encoding, causal, n_layers, dtype, i in grid:
        case = Case(encoding, causal, n_layers, dtype, seed + i)
        stack = build_stack(case, cfg, encoding_cfg, device)
        g = torch.Generator().manual_seed(case.seed)
        x = torch.randn(cfg["batch"], length, cfg["d_model"], generator=g)  # (B, L, D)
        x = x.to(device=device, dtype=dtype_from_name(dtype))
        perms = [*random_permutations(cfg["n_perms"], length, g), reversal]
        names = [f"random {j}" for j in range(cfg["n_perms"])] + ["reversal"]
        common = {
            "encoding": encoding,
            "attention": case.attention,
            "n_layers": n_layers,
            "dtype": dtype,
            "seed": case.seed,
        }
        errors = permutation_errors(stack, x, [p.to(device) for p in perms])
        for name, err in zip(names, errors):
            perm_rows.append({**common, "permutation": name, "relative_error": err})
        for c, err in zip(cfg["shifts"], shift_errors(stack, x, cfg["shifts"])):
            shift_rows.append({**common, "shift": c, "relative_error": err})
    return perm_rows, shift_rows


def _select(rows: list[dict], **where) -> list[float]:
    return [r["relative_error"] for r in rows if all(r.get(k) == v for k, v in where.items())]


def _ulps(rows: list[dict], dtypes: list[str], **where) -> float:
    """The largest error of the selected rows in units of eps(dtype), over every dtype."""
    return max(
        max(_select(rows, dtype=dt, **where)) / torch.finfo(dtype_from_name(dt)).eps
        for dt in dtypes
    )


def _weakest(rows: list[dict], **where) -> float:
    """min over models of (max over that model's permutations or shifts) of the error.

    Equivariance is a statement about every P, so one P that moves the output breaks it; a
    model counts as broken when its worst case exceeds the threshold, and this is the least
    broken model of the selection.
    """
    worst: dict[tuple, float] = {}
    for r in rows:
        if all(r[k] == v for k, v in where.items()):
            model = (r["attention"], r["n_layers"], r["dtype"], r["seed"])
            worst[model] = max(worst.get(model, 0.0), r["relative_error"])
    return min(worst.values())


def summarise(perm_rows, shift_rows, cfg, encodings) -> dict[str, Any]:
    """Per encoding (x attention for permutations): per dtype the largest error over every
    model and transform, the weakest model's worst error, and a verdict."""
    th, dtypes = cfg["thresholds"], cfg["dtypes"]
    tol = {dt: tolerance(dtype_from_name(dt), th["equal_ulps"]) for dt in dtypes}

    def row(rows, equal: str, broken: str, **where) -> dict[str, Any]:
        largest = {dt: max(_select(rows, dtype=dt, **where)) for dt in dtypes}
        weakest = {dt: _weakest(rows, dtype=dt, **where) for dt in dtypes}
        if all(largest[dt] <= tol[dt] for dt in dtypes):
            verdict = equal
        elif all(w > th["broken_min"] for w in weakest.values()):
            verdict = broken
        else:
            verdict = "mixed"
        return {
            **{f"max_{dt}": v for dt, v in largest.items()},
            **{f"weakest_{dt}": v for dt, v in weakest.items()},
            "verdict": verdict,
        }

    perm = [
        {
            "encoding": encoding,
            "attention": attention,
            "reversal": max(
                _select(perm_rows, encoding=encoding, attention=attention, permutation="reversal")
            ),
            **row(perm_rows, "equivariant", "broken", encoding=encoding, attention=attention),
        }
        for encoding, attention in itertools.product(encodings, ("bidirectional", "causal"))
    ]
    shift = [
        {
            "encoding": encoding,
            "relative": REGISTRY[encoding].relative,
            **row(shift_rows, "invariant", "changes", encoding=encoding),
        }
        for encoding in encodings
    ]
    return {"tolerance": tol, "permutation": perm, "shift": shift}


def make_claims(seed_result: dict, perm_rows, shift_rows, cfg, encodings) -> list[dict]:
    th, dtypes = cfg["thresholds"], cfg["dtypes"]
    ulps, broken = th["equal_ulps"], th["broken_min"]
    claims = [
        claim(
            "equivariance.seed_check",
            "The seed's check: nn.MultiheadAttention(16, 2) without positions only permutes its "
            "output (allclose at the seed's atol), and after adding sinusoidal PE it does not.",
            {
                "no PE max|diff|": seed_result["no_pe_max_abs"],
                "with PE max|diff|": seed_result["pe_max_abs"],
            },
            f"no PE: allclose(atol={th['seed_atol_equal']:g}) is True; with PE: "
            f"allclose(atol={th['seed_atol_broken']:g}) is False (the seed prints True, True)",
            seed_result["no_pe_allclose"] and not seed_result["pe_allclose"],
            "seed snippet (000)",
            SECTION,
        )
    ]
    has_none = "none" in encodings
    no_pe = (
        {
            f"{dt} (× eps)": _ulps(perm_rows, [dt], encoding="none", attention="bidirectional")
            for dt in dtypes
        }
        if has_none
        else {}
    )
    claims.append(
        claim(
            "equivariance.no_pe_bidirectional",
            "Without positions, bidirectional attention (one layer and a stack) is permutation-"
            "equivariant: Attn(PX) = P Attn(X) up to rounding.",
            no_pe or "none not in config encodings",
            f"max relative error <= {ulps:g} eps(dtype) over every model and permutation",
            all(v <= ulps for v in no_pe.values()) if has_none else None,
            SEED_SOURCE,
            SECTION,
        )
    )
    positional = [e for e in encodings if REGISTRY[e].acts_on != "none"]
    pe = {e: _weakest(perm_rows, encoding=e, attention="bidirectional") for e in positional}
    claims.append(
        claim(
            "equivariance.pe_breaks",
            "Every positional encoding breaks permutation equivariance of bidirectional "
            "attention, in every random model tried; each number is the least broken model's "
            "largest error over its permutations.",
            pe or "no positional encoding in config encodings",
            f"> {broken:g} for each encoding",
            all(v > broken for v in pe.values()) if pe else None,
            SEED_SOURCE,
            SECTION,
        )
    )
    causal = (
        {dt: _weakest(perm_rows, encoding="none", attention="causal", dtype=dt) for dt in dtypes}
        if has_none
        else {}
    )
    claims.append(
        claim(
            "equivariance.causal_breaks",
            "A causal mask alone breaks permutation equivariance, with no positional encoding: "
            "a NoPE decoder can still tell positions apart; each number is the least broken "
            "model's largest error over its permutations.",
            causal or "none not in config encodings",
            f"> {broken:g}",
            all(v > broken for v in causal.values()) if has_none else None,
            "Haviv et al. 2022",
            SECTION,
        )
    )
    relative = [e for e in encodings if REGISTRY[e].relative and REGISTRY[e].acts_on != "none"]
    absolute = [e for e in encodings if not REGISTRY[e].relative]
    measured = {f"{e} (× eps)": _ulps(shift_rows, dtypes, encoding=e) for e in relative}
    measured |= {e: _weakest(shift_rows, encoding=e) for e in absolute}
    claims.append(
        claim(
            "equivariance.relative_shift_invariance",
            "Shifting every position by the same constant leaves the output of relative schemes "
            f"({', '.join(relative) or 'none configured'}) unchanged and changes that of absolute "
            f"ones ({', '.join(absolute) or 'none configured'}).",
            measured,
            f"relative: largest relative error <= {ulps:g} eps(dtype); absolute: the least "
            f"changed model's largest error over its shifts > {broken:g}",
            all(measured[f"{e} (× eps)"] <= ulps for e in relative)
            and all(measured[e] > broken for e in absolute)
            if relative and absolute
            else None,
            "Su et al. 2021; Press et al. 2022; Raffel et al. 2020",
            SECTION,
        )
    )
    return claims


def compute(
    cfg: dict, seed: int, encodings: list[str], encoding_cfg: dict, device: torch.device
) -> dict[str, Any]:
    """Every number of the analysis: the seed check, per-case errors, summaries and claims."""
    th = cfg["thresholds"]
    seed_result = seed_check(device, th["seed_atol_equal"], th["seed_atol_broken"])
    perm_rows, shift_rows = run_cases(cfg, seed, encodings, encoding_cfg, device)
    return {
        "seed_check": seed_result,
        "permutation_rows": perm_rows,
        "shift_rows": shift_rows,
        "summary": summarise(perm_rows, shift_rows, cfg, encodings),
        "claims": make_claims(seed_result, perm_rows, shift_rows, cfg, encodings),
    }


def _error_panel(ax, rows, encodings, dtypes, depths, floor: float) -> None:
    """One vertical bar (min to max over models and transforms) per encoding x dtype x depth,
    and a cross at the reversal's largest error where the rows have one."""
    combos = list(itertools.product(dtypes, depths))
    width = 0.7 / len(combos)
    colors = {dt: c for dt, c in zip(dtypes, ("tab:blue", "tab:orange", "tab:green"))}
    for k, (dt, depth) in enumerate(combos):
        for i, encoding in enumerate(encodings):
            errors = _select(rows, encoding=encoding, dtype=dt, n_layers=depth)
            lo, hi = max(min(errors), floor), max(max(errors), floor)
            x = i - 0.35 + width * (k + 0.5)
            ax.plot([x, x], [lo, hi], color=colors[dt], lw=2)
            ax.plot(
                x,
                hi,
                marker="o" if depth == 1 else "s",
                color=colors[dt],
                mfc=colors[dt] if depth == 1 else "white",
                ms=4,
                label=f"{dt}, {depth} layer{'s' if depth > 1 else ''}" if i == 0 else None,
            )
            reversal = _select(
                rows, encoding=encoding, dtype=dt, n_layers=depth, permutation="reversal"
            )
            if reversal:
                ax.plot(
                    x,
                    max(max(reversal), floor),
                    marker="x",
                    color="black",
                    ms=4,
                    label="reversal" if i == 0 and k == 0 else None,
                )
    ax.set_yscale("log")
    ax.set_xticks(range(len(encodings)), encodings, rotation=30)
    ax.grid(axis="y", alpha=0.3)


def _thresholds(ax, tol: dict[str, float], broken_min: float) -> None:
    for (dt, t), color in zip(tol.items(), ("tab:blue", "tab:orange", "tab:green")):
        ax.axhline(t, color=color, ls="--", lw=0.8, label=f"{dt} tolerance")
    ax.axhline(broken_min, color="black", ls=":", lw=0.8, label="broken above")


def plot(result: dict, cfg: dict, encodings: list[str]):
    """Two figures: the permutation error per case, and the error after a constant shift."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    th, dtypes = cfg["thresholds"], cfg["dtypes"]
    depths = sorted({1, cfg["n_layers"]})
    tol = result["summary"]["tolerance"]
    floor = min(tol.values()) / 100  # exact zeros are drawn here, below every tolerance
    perm_rows, shift_rows = result["permutation_rows"], result["shift_rows"]

    fig_perm, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True, layout="constrained")
    for ax, attention in zip(axes, ("bidirectional", "causal")):
        rows = [r for r in perm_rows if r["attention"] == attention]
        _error_panel(ax, rows, encodings, dtypes, depths, floor)
        _thresholds(ax, tol, th["broken_min"])
        ax.set_title(f"{attention} attention")
    axes[0].set_ylabel("max|f(PX) − P f(X)| / max|f(X)|")
    fig_perm.legend(*axes[0].get_legend_handles_labels(), fontsize=7, loc="outside right upper")

    fig_shift, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
    _error_panel(ax, shift_rows, encodings, dtypes, depths, floor)
    _thresholds(ax, tol, th["broken_min"])
    ax.set_ylabel("max|f(X; p+c) − f(X; p)| / max|f(X)|")
    ax.set_title("shifting every position by the same c")
    fig_shift.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="outside right upper")
    return fig_perm, fig_shift


def tables(result: dict, cfg: dict, csv: dict[str, str]) -> list[dict]:
    """The report's three tables; the CSVs (``csv`` by table id) hold every model, permutation
    and shift."""
    s, dtypes = result["seed_check"], cfg["dtypes"]
    th = cfg["thresholds"]
    seed_rows = [
        ["no positions", s["no_pe_max_abs"], th["seed_atol_equal"], str(s["no_pe_allclose"])],
        ["sinusoidal PE added", s["pe_max_abs"], th["seed_atol_broken"], str(s["pe_allclose"])],
    ]
    stats = [f"{k}_{dt}" for k in ("max", "weakest") for dt in dtypes]
    headers = [
        f"{'largest' if k == 'max' else 'weakest model'} {dt}"
        for k in ("max", "weakest")
        for dt in dtypes
    ]
    summary = result["summary"]
    return [
        {
            "id": "seed",
            "title": "The seed's check (nn.MultiheadAttention(16, 2), 5 tokens): "
            "max |Attn(PX) − P Attn(X)| and torch.allclose as the seed calls it.",
            "csv": None,
            "columns": ["input", "max |difference|", "atol", "allclose"],
            "rows": seed_rows,
        },
        {
            "id": "permutation",
            "title": "Relative permutation error per encoding and attention: the largest over "
            "every model and permutation, the weakest model's largest, and the largest under "
            "the reversal.",
            "csv": csv["permutation"],
            "columns": ["encoding", "attention", *headers, "reversal", "verdict"],
            "rows": [
                [r["encoding"], r["attention"], *(r[k] for k in stats), r["reversal"], r["verdict"]]
                for r in summary["permutation"]
            ],
        },
        {
            "id": "shift",
            "title": "Relative change of the output when every position is shifted by the same "
            "constant: the largest over every model and shift, and the weakest model's largest.",
            "csv": csv["shift"],
            "columns": ["encoding", "relative (registry)", *headers, "verdict"],
            "rows": [
                [r["encoding"], str(r["relative"]), *(r[k] for k in stats), r["verdict"]]
                for r in summary["shift"]
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
    log.info(
        "%d permutation and %d shift cases in %.1f s",
        len(result["permutation_rows"]),
        len(result["shift_rows"]),
        timer.seconds,
    )
    write_csv(out.permutation_csv, result["permutation_rows"])
    write_csv(out.shift_csv, result["shift_rows"])
    fig_perm, fig_shift = plot(result, p.cfg, list(p.encodings))
    save_figure(fig_perm, out.permutation_png, out.permutation_svg)
    save_figure(fig_shift, out.shift_png, out.shift_svg)
    tabs = tables(result, p.cfg, {"permutation": out.permutation_csv, "shift": out.shift_csv})
    cfg = p.cfg
    n_cases = len(result["permutation_rows"])
    metrics = {
        "device": device_name(device),
        "seed_check": result["seed_check"],
        "tolerance": result["summary"]["tolerance"],
        "broken_min": cfg["thresholds"]["broken_min"],
        "n_permutation_cases": n_cases,
        "n_shift_cases": len(result["shift_rows"]),
        "shifts": cfg["shifts"],
        "summary": result["summary"],
        "figures": [
            {
                "id": "permutation",
                "png": out.permutation_png,
                "svg": out.permutation_svg,
                "caption": f"Relative permutation error of {n_cases} (model, input, "
                "permutation) cases: bars span min to max over models and permutations, markers "
                "show the max (circles one layer, squares the stack), crosses the reversal; "
                "dashed lines are the per-dtype tolerance, the dotted line the 'broken' "
                "threshold; exact zeros sit at the bottom.",
            },
            {
                "id": "shift",
                "png": out.shift_png,
                "svg": out.shift_svg,
                "caption": f"Relative change of the output when every position is shifted by "
                f"c in {cfg['shifts']}, bidirectional and causal pooled; lines as in the "
                "permutation figure.",
            },
        ],
        "tables": tabs,
    }
    write_section(out, metrics, result["claims"], log)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
