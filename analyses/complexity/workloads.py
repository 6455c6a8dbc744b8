"""What the complexity analysis times: each encoding's own work and one attention layer, at
every width and length, interleaved in rounds (:func:`measure`)."""

import numpy as np
import torch

from posenc.encodings import (
    REGISTRY,
    EncodingParams,
    PositionalEncoding,
    PositionOutOfRange,
    build,
)
from posenc.model import Attention, ModelConfig

from .timing import clock, summarise, time_blocks

ATTENTION = "attention"  # the workload name of the attention layer, beside the encodings'
Point = tuple[str, int]  # (workload, d_model): one encoding, or attention, at one width


def heads(cfg: dict, d_model: int) -> int:
    """Heads of width ``head_dim`` at model width ``d_model``."""
    return d_model // cfg["head_dim"]


def encoding_module(name: str, cfg: dict, d_model: int, encoding_cfg: dict, length: int, device):
    """Encoding ``name`` at width ``d_model``, built for L = ``length`` positions (a learned
    table has L rows)."""
    module = build(name, encoding_cfg, d_model=d_model, n_heads=heads(cfg, d_model), max_len=length)
    return module.to(device)


def encoding_workload(enc: PositionalEncoding, cfg: dict, length: int, device):
    """A zero-argument call doing ``enc``'s own work for L = ``length`` positions, as its
    place of action defines it (:meth:`~posenc.encodings.PositionalEncoding.workload`): the
    (L, D) table, the rotation of (B, H, L, Dh) queries and keys, the (H, L, L) score bias.
    None for an encoding that does no work (NoPE)."""
    positions = torch.arange(length, device=device)
    return enc.workload(positions, cfg["batch"], cfg["causal"])


def attention_workload(cfg: dict, d_model: int, length: int, seed: int, device):
    """One forward pass of the model's attention layer (no positional encoding) on (B, L, D)."""
    torch.manual_seed(seed)
    mcfg = ModelConfig(d_model=d_model, n_heads=heads(cfg, d_model), causal=cfg["causal"])
    layer = Attention(mcfg, PositionalEncoding(EncodingParams(d_model=d_model)))
    layer = layer.to(device).eval()
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(cfg["batch"], length, d_model, generator=g, device=device)  # (B, L, D)
    positions = torch.arange(length, device=device)
    return lambda: layer(x, positions)


def label(workload: str, d_model: int) -> str:
    """The evidence label of a workload at one width: ``rope d=128``."""
    return f"{workload} d={d_model}"


def measure(
    cfg: dict, encodings: list[str], encoding_cfg: dict, seed: int, device
) -> tuple[list[dict], list[str], list[str], dict[tuple[str, int, int], list[float]]]:
    """Time every workload at every configured width, at L = 1 (its fixed per-call cost) and
    at every configured length it is run at, interleaved in time: ``rounds`` passes over every
    point, each timing a share of ``min_run_time``, so that a burst of load on the machine
    falls on all points alike rather than on the few being timed then. Passes alternate their
    direction, so that a drift over a pass does not track L. Each pass builds a point's
    workload afresh and warms it up, so the memory held at once is one point's.

    Returns tidy rows (the median over all of a point's blocks), the encodings that compute a
    positional table (those acting on the input), those whose work is
    quadratic in L (timed only up to ``bias_max_len``), and each point's block times, for the
    bootstrap. An encoding that has no encoding of L positions (PositionOutOfRange: xPos's
    scales past the span its dtype holds, say) is not timed from that L on
    (:func:`refused_lengths`)."""
    tables: dict[str, None] = {}
    quadratic: dict[str, None] = {}
    refused: dict[tuple[str, int], int] = {}  # (encoding, d) -> the L it refused
    timer, _ = clock(device)
    rounds = cfg["rounds"]
    share = cfg["min_run_time"] / rounds
    per_round = -(-cfg["min_blocks"] // rounds)  # so that the rounds give min_blocks at least
    plan = [
        (d, length, name)
        for d in cfg["d_models"]
        for length in [1, *cfg["lengths"]]
        for name in [ATTENTION, *encodings]
        if name != ATTENTION or length <= cfg["attention_max_len"]
    ]
    blocks: dict[tuple[str, int, int], list[float]] = {}
    seen: dict[tuple[str, int, int], dict] = {}  # per point: first round's facts

    def workload(d: int, length: int, name: str):
        if name == ATTENTION:
            return attention_workload(cfg, d, length, seed, device), "layer"
        if (name, d) in refused and length >= refused[name, d]:
            return None, None
        enc = encoding_module(name, cfg, d, encoding_cfg, length, device)
        if REGISTRY[name].acts_on == "input":
            tables[name] = None
        if enc.quadratic_cost:
            quadratic[name] = None
            if length > cfg["bias_max_len"]:
                return None, None  # an (H, L, L) bias outgrows memory long before a table
        return encoding_workload(enc, cfg, length, device), enc.acts_on

    with torch.no_grad():
        for r in range(rounds):
            # The first pass runs in increasing L, where a refused L is found first.
            for d, length, name in plan if r % 2 == 0 else plan[::-1]:
                fn, acts_on = workload(d, length, name)
                if fn is None:
                    continue
                key = (name, d, length)
                # Warmed up in every round: the workload is built afresh, and its first call
                # touches its memory (a learned table of 2^20 rows) for the first time.
                try:
                    t = time_blocks(
                        fn,
                        cfg["warmup"],
                        share,
                        timer,
                        per_round,
                        number=seen.get(key, {}).get("number"),
                    )
                except PositionOutOfRange:  # and so at every longer L (lengths increase)
                    refused[name, d] = min(length, refused.get((name, d), length))
                    continue
                finally:
                    del fn  # a learned table of 2^20 rows is a GiB: free it first
                blocks.setdefault(key, []).extend(t["times"])
                first = seen.setdefault(key, {**t, "acts_on": acts_on, "fresh": [], "rounds": []})
                first["fresh"].append(t["fresh_bytes"])
                first["rounds"].append(len(t["times"]))
    rows = []
    for (name, d, length), times in blocks.items():
        facts = seen[name, d, length]
        fresh = [f for f in facts["fresh"] if f is not None]
        rows.append(
            {
                "workload": name,
                "acts_on": facts["acts_on"],
                "d_model": d,
                "heads": heads(cfg, d),
                "length": length,
                **summarise(times),
                "out_bytes": facts["out_bytes"],
                "fresh_bytes": float(np.mean(fresh)) if fresh else None,
                # How many of its blocks each round timed, in order: the bootstrap resamples
                # rounds, then blocks within them (a rebuilt workload may sit differently in
                # memory from round to round).
                "round_blocks": facts["rounds"],
            }
        )
    return rows, list(tables), list(quadratic), blocks


def refused_lengths(rows: list[dict], lengths: list[int], quadratic: list[str]) -> dict[str, int]:
    """Per encoding timed whose work is not quadratic, the shortest configured L it has no
    timing at: where it refused the positions (PositionOutOfRange). None missing: not listed."""
    out = {}
    for name in dict.fromkeys(r["workload"] for r in rows if r["workload"] != ATTENTION):
        timed = {r["length"] for r in rows if r["workload"] == name}
        missing = [n for n in lengths if n not in timed]
        if missing and name not in quadratic:
            out[name] = min(missing)
    return out
