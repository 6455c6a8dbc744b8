"""Each encoding's positional kernel K(p, q): built from the formula (learned parameters drawn
at random, the contrast), or read from a trained LM over the pairs it scores."""

import math
from typing import Any

import torch
from torch import Tensor, nn

from posenc.encodings import REGISTRY, PositionalEncoding, build, head_groups, head_layout
from posenc.train import load_checkpoint


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
    module = build(
        encoding,
        encoding_cfg,
        d_model=d_model,
        n_heads=n_heads,
        max_len=n_positions,
        angle_dtype=torch.float64,
    )
    if REGISTRY[encoding].learned:
        for p in module.parameters():
            nn.init.normal_(p, std=learned_init_std)
    return module.to(device=device, dtype=torch.float64)


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
        "head_groups": head_layout(module, cfg.n_heads),
    }
    return module, info


def scored_kernel(
    module: PositionalEncoding, positions: Tensor, causal: bool, group: int | None = None
) -> Tensor:
    """K(p, q) over the pairs a model scores: every pair under bidirectional attention; under
    causal attention only keys at or before the query (q <= p), NaN above the diagonal, where
    the model never looks. Shape (N, N).

    :meth:`PositionalEncoding.kernel` scores pairs bidirectionally. A score bias can depend on
    the direction (T5's buckets: bidirectional attention spends half of them on later keys, so
    a causally trained table read bidirectionally is read at the wrong buckets), so a causal
    model's bias is read as the model reads it: causally, then as that kernel (exp of the bias,
    averaged over heads, or over the heads of ``group``)."""
    K = module.kernel(positions) if group is None else module.kernel(positions, group)
    if not causal:
        return K
    bias = module.score_bias(positions, positions, causal=True)  # (H, N, N) or None
    if bias is not None:
        heads = slice(None) if group is None else module.group_heads(group)
        K = bias[heads].double().exp().mean(dim=0)
    later = torch.ones_like(K, dtype=torch.bool).triu(1)
    return K.masked_fill(later, math.nan)


def trained_kernels(
    paths: str | list[str], order: list[str], max_positions: int, device
) -> list[tuple[dict[str, Any], Tensor]]:
    """(model info, scored kernel, {group: its heads' scored kernel}) of every trained
    checkpoint in ``paths``, by encoding (in ``order``) and seed, over positions
    0..min(max_positions, the model's trained length)-1: a learned table has no row past its
    trained length. The groups are those of an encoding whose heads differ (empty otherwise)."""
    # Snakemake hands a named input of one file over as that file, not a list of one.
    paths = [paths] if isinstance(paths, str) else list(paths)
    out = []
    for path in paths:
        module, info = load_trained(path, device)
        n = min(max_positions, info["train_len"])
        positions = torch.arange(n, device=device)
        with torch.no_grad():
            K = scored_kernel(module, positions, info["causal"])
            by_group = {
                g: scored_kernel(module, positions, info["causal"], g).cpu()
                for g in head_groups(module)
            }
        out.append(({**info, "n_positions": n}, K.cpu(), by_group))
    return sorted(out, key=lambda item: (order.index(item[0]["encoding"]), item[0]["seed"]))
