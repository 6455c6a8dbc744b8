"""Permutation equivariance of self-attention, and what breaks it: the measurement.

Self-attention without positions is permutation-equivariant: Attn(PX) = P Attn(X) for every
permutation matrix P, because the same W_Q, W_K, W_V act on every row and the softmax sums over
keys in any order. Adding position breaks it; so does a causal mask, which tells a decoder where
it is even with no encoding (Haviv et al. 2022). Encodings that enter attention only through
p - q (RoPE, ALiBi, T5) instead leave the model invariant to shifting every position by the
same constant.

Every error is reported relative to the output scale, e = max|f(PX) - P f(X)| / max|f(X)|, so
one tolerance per dtype works for any model: "equal" means e <= ulps * eps(dtype), "broken"
means e > broken_min (in the shipped config the seed's own atol, at unit scale). This module
measures; the claims (spec.py) judge.
"""

import itertools
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from posenc.analysis import Context, Measurements
from posenc.device import dtype_from_name
from posenc.encodings import REGISTRY, sinusoidal_table
from posenc.model import TransformerStack, make_stack

from .spec import SEED_EMBED_DIM, SEED_HEADS, SEED_LEN, SEED_TABLE_DIM

# The check of "Transformers · Positional encoding", reproduced exactly as written there (the
# sizes its prose and claim quote are in spec.py).
SEED_TORCH_SEED = 0
SEED_PERM = (3, 0, 4, 1, 2)
SEED_TABLE_LEN = 100


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
        encoding_cfg,
        d_model=cfg["d_model"],
        n_heads=cfg["n_heads"],
        n_layers=case.n_layers,
        causal=case.causal,
        max_len=cfg["seq_len"] + max(cfg["shifts"]),  # the learned table must cover the shifts
        # Angles in float32 or wider: a float64 model gets float64 angles.
        angle_dtype=torch.promote_types(dtype, torch.float32),
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
    """Per encoding (x attention for permutations), per dtype: the largest error over every
    model and transform, and the weakest model's worst error."""
    dtypes = cfg["dtypes"]
    tol = {dt: tolerance(dtype_from_name(dt), cfg["thresholds"]["equal_ulps"]) for dt in dtypes}

    def row(rows, **where) -> dict[str, Any]:
        return {
            **{f"max_{dt}": max(_select(rows, dtype=dt, **where)) for dt in dtypes},
            **{f"weakest_{dt}": _weakest(rows, dtype=dt, **where) for dt in dtypes},
        }

    perm = [
        {
            "encoding": encoding,
            "attention": attention,
            "reversal": max(
                _select(perm_rows, encoding=encoding, attention=attention, permutation="reversal")
            ),
            **row(perm_rows, encoding=encoding, attention=attention),
        }
        for encoding, attention in itertools.product(encodings, ("bidirectional", "causal"))
    ]
    shift = [
        {
            "encoding": encoding,
            "relative": REGISTRY[encoding].relative,
            **row(shift_rows, encoding=encoding),
        }
        for encoding in encodings
    ]
    return {"tolerance": tol, "permutation": perm, "shift": shift}


def evidence(seed_result, perm_rows, shift_rows, cfg, encodings) -> dict[str, Any]:
    """The named values the claims read. Encodings are grouped by what the registry says of
    them (positional or not, relative or absolute), never by name."""
    dtypes = cfg["dtypes"]
    free = [e for e in encodings if not REGISTRY[e].positional]
    positional = [e for e in encodings if REGISTRY[e].positional]
    relative = [e for e in positional if REGISTRY[e].relative]
    absolute = [e for e in encodings if not REGISTRY[e].relative]
    return {
        "seed": seed_result,
        "no_pe_ulps": {
            dt: max(_ulps(perm_rows, [dt], encoding=e, attention="bidirectional") for e in free)
            for dt in dtypes
        }
        if free
        else {},
        "pe_weakest": {
            e: _weakest(perm_rows, encoding=e, attention="bidirectional") for e in positional
        },
        "causal_weakest": {
            dt: min(_weakest(perm_rows, encoding=e, attention="causal", dtype=dt) for e in free)
            for dt in dtypes
        }
        if free
        else {},
        "relative_shift_ulps": {e: _ulps(shift_rows, dtypes, encoding=e) for e in relative},
        "absolute_shift_weakest": {e: _weakest(shift_rows, encoding=e) for e in absolute},
        "relative": relative,
        "absolute": absolute,
    }


def compute(ctx: Context) -> Measurements:
    """The seed check, every case's permutation and shift errors, and their summaries."""
    cfg, th = ctx.cfg, ctx.cfg["thresholds"]
    seed_result = seed_check(ctx.device, th["seed_atol_equal"], th["seed_atol_broken"])
    perm_rows, shift_rows = run_cases(cfg, ctx.seed, ctx.encodings, ctx.encoding, ctx.device)
    ctx.log.info("%d permutation and %d shift cases", len(perm_rows), len(shift_rows))
    return Measurements(
        rows={"permutation_errors": perm_rows, "shift_errors": shift_rows},
        evidence=evidence(seed_result, perm_rows, shift_rows, cfg, ctx.encodings),
        summary={
            **summarise(perm_rows, shift_rows, cfg, ctx.encodings),
            "n_permutation_cases": len(perm_rows),
            "n_shift_cases": len(shift_rows),
        },
    )
