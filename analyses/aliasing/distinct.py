"""Floating point, what positions keep: how many of L positions keep a distinct row in each
variant (counted exactly, by hashing rows in chunks), and whether each position's encoding
still decodes to itself (nearest row of the exact table)."""

import torch

from posenc.device import dtype_from_name
from posenc.distinct import distinct_rows_many
from posenc.numerics import nearest_neighbour_decode

from .tables import AngleTable, Variant


def count_distinct(
    tables: dict[str, AngleTable], variants: list[Variant], lengths: list[int], cfg: dict, device
) -> tuple[list[dict], list[dict]]:
    """Exact distinct-row counts per table × variant: a summary row each, and the prefix curve.

    Variants sharing an angle dtype are counted in one pass: the angle table is computed once
    per chunk and cast to each storage dtype.
    """
    summary, curve = [], []
    n = lengths[-1]
    for name, table in tables.items():
        for angle_name in dict.fromkeys(v.angles for v in variants):
            group = [v for v in variants if v.angles == angle_name]
            exact = table.rows_fn(Variant(angle_name, angle_name))
            stores = [dtype_from_name(v.store) for v in group]
            results = distinct_rows_many(
                lambda idx, exact=exact, stores=stores: [exact(idx).to(s) for s in stores],
                len(group),
                n,
                chunk=cfg["chunk_rows"],
                device=device,
            )
            for v, res in zip(group, results):
                summary.append(
                    {
                        "encoding": name,
                        "variant": v.name,
                        "angles": v.angles,
                        "store": v.store,
                        "length": n,
                        "distinct": res.n_distinct,
                        "distinct_fraction": res.n_distinct / n,
                        "first_repeat": res.first_repeat,
                        "first_repeat_of": res.first_repeat_of,
                        "nonfinite_rows": res.n_nonfinite,
                        "first_nonfinite": res.first_nonfinite,
                        "hash_collisions": res.hash_collisions,
                    }
                )
                for length, count in zip(lengths, res.distinct_below(lengths)):
                    curve.append(
                        {
                            "encoding": name,
                            "variant": v.name,
                            "length": length,
                            "distinct": count,
                            "distinct_fraction": count / length,
                        }
                    )
    order = {(t, v.name): i for i, (t, v) in enumerate((t, v) for t in tables for v in variants)}
    summary.sort(key=lambda r: order[(r["encoding"], r["variant"])])
    return summary, curve


def decode_accuracy(
    tables: dict[str, AngleTable],
    variants: list[Variant],
    lengths: list[int],
    cfg: dict,
    generator: torch.Generator,
    device,
) -> list[dict]:
    """Does each encoding decode to its own position among the exact encodings of 0..L-1?

    For every L, ``decode_samples`` positions uniform in [0, L) (with replacement); each is
    encoded by every variant and matched to its nearest row of the exact (float64) table among
    the first L rows. Correct iff that row is the position itself; a non-finite encoding
    decodes to nothing. One chunked pass over the table serves every variant and length.
    """
    n_samples = cfg["decode_samples"]
    positions = torch.cat([torch.randint(0, n, (n_samples,), generator=generator) for n in lengths])
    limits = torch.tensor(lengths).repeat_interleave(n_samples)
    positions, limits = positions.to(device), limits.to(device)
    rows = []
    for name, table in tables.items():
        queries = torch.cat([table.rows_fn(v)(positions).to(torch.float64) for v in variants])
        finite = queries.isfinite().all(-1)
        nearest, _ = nearest_neighbour_decode(
            queries.nan_to_num(),
            limits.repeat(len(variants)),
            table.exact_fn(),
            lengths[-1],
            max_elements=cfg["decode_block_elements"],
        )
        correct = (finite & (nearest == positions.repeat(len(variants)))).view(len(variants), -1)
        for v, ok in zip(variants, correct):
            for i, n in enumerate(lengths):
                hits = ok[i * n_samples : (i + 1) * n_samples]
                rows.append(
                    {
                        "encoding": name,
                        "variant": v.name,
                        "length": n,
                        "samples": n_samples,
                        "accuracy": hits.double().mean().item(),
                    }
                )
    return rows
