"""The rotation identity behind sinusoidal encodings and RoPE, checked in every dtype: the
measurement.

Sinusoidal shift is a rotation (Vaswani et al. 2017, §3.5): for each frequency pair,
(PE(p+k, 2i), PE(p+k, 2i+1)) = R_i(k) (PE(p, 2i), PE(p, 2i+1)) with

    R_i(k) = [[cos ω_i k, sin ω_i k], [−sin ω_i k, cos ω_i k]],

which depends on k only. So PE(p+k) = M(k) PE(p) for one block-diagonal matrix M(k) per offset,
a linear map a projection can learn; and RoPE scores ⟨R(p)q, R(p')k⟩ = ⟨q, R(p'−p)k⟩ depend on
p' − p only (Su et al. 2021). In floating point the angles p·ω_i are rounded, with an error up
to eps·p·ω_i, so each identity holds up to a rounding bound that grows with the position; every
check below is reported against that bound. For the scores the bound is derived per (q, k) and
position pair (:func:`posenc.rounding.shift_tolerance`): each pair's angle rounding weighted by
that pair's share of the score, so it stays a few times the error actually made, and the naive
case (positions and angles in the storage dtype) is held to the same bound, the one the
registry's angles meet.

Encodings are chosen by what they declare, never by name (encodings.py): the identity and the
offset map are measured for every fixed input table with waves (not learned), the learned
tables (learned input encodings) are fitted as a contrast, and the score shift test runs on
every encoding whose query/key transform is made of planar rotations; any other encoding is
n/a here, with the reason. R(k) is read off each table's own row PE(k), so a table from
outside the registry needs nothing more. This
module gathers the measurements (the tables' identity and offset maps in tables.py, the worked
example in hand_trace.py, the score shifts in scores.py, what the claims read in evidence.py);
the claims (spec.py) judge.
"""

import itertools

import torch
from torch import Tensor

from posenc.analyses.rotation.encodings import groups as measured
from posenc.analyses.rotation.evidence import evidence, summarise
from posenc.analyses.rotation.hand_trace import hand_trace
from posenc.analyses.rotation.scores import head_bases, score_shifts
from posenc.analyses.rotation.tables import identity_errors, linear_offset_maps
from posenc.analysis import Context, Measurements
from posenc.device import dtype_from_name
from posenc.encodings import build, override


def log_positions(max_log2: int, per_octave: int, generator: torch.Generator) -> Tensor:
    """0, and ``per_octave`` uniform draws in every octave [2^e, 2^(e+1)), e < max_log2."""
    draws = [torch.zeros(1, dtype=torch.int64)]
    for e in range(max_log2):
        draws.append(torch.randint(2**e, 2 ** (e + 1), (per_octave,), generator=generator))
    return torch.cat(draws).unique()


def compute(ctx: Context) -> Measurements:
    """Every number of the analysis; random draws from CPU generators seeded by ``ctx.seed``
    (in the same order whatever is configured: positions, then (q, k); each fit draws from
    a generator keyed by its table, :func:`posenc.seeding.keyed_generator`)."""
    cfg, th, device = ctx.cfg, ctx.cfg["thresholds"], ctx.device
    groups = measured(ctx.encodings)
    g = torch.Generator().manual_seed(ctx.seed)
    positions = log_positions(cfg["max_log2_position"], cfg["positions_per_octave"], g)
    offsets = torch.tensor(cfg["offsets"])
    identity = []
    for e, d, base, dt in itertools.product(
        groups["fixed_tables"], cfg["d_values"], cfg["bases"], cfg["dtypes"]
    ):

        def make(a, e=e, d=d, base=base):
            return build(e, override(ctx.encoding, e, base=base), d_model=d, angle_dtype=a)

        identity += identity_errors(
            e,
            make,
            d,
            base,
            dtype_from_name(dt),
            positions.to(device),
            offsets.to(device),
            th["identity_ulps"],
        )
    score_shift = score_shifts(
        cfg["qk"],
        groups["qk"],
        ctx.encoding,
        cfg["dtypes"],
        th["rope_ulps"],
        th["rope_angle_ulps"],
        g,
        device,
    )
    linear = linear_offset_maps(
        cfg["linear_map"],
        groups["fixed_tables"],
        groups["learned_tables"],
        ctx.encoding,
        cfg["d_values"],
        cfg["bases"],
        th["linear_map_ulps"],
        ctx.seed,
        device,
    )
    result = {
        "head_bases": head_bases(cfg["qk"], groups["qk"], ctx.encoding),
        "identity": identity,
        "hand_trace": hand_trace(cfg["hand_trace"]),
        "score_shift": score_shift,
        "linear_map": linear,
    }
    if ctx.log:
        ctx.log.info(
            "%d identity checks, %d score shifts, %d offset maps",
            len(identity),
            len(score_shift),
            len(linear),
        )
    return Measurements(
        rows={"identity": identity, "score_shift": score_shift, "linear_map": linear},
        evidence=evidence(result, cfg, groups),
        summary=summarise(result, cfg, ctx, groups),
    )
