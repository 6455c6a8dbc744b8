"""p-RoPE (Barbero et al. 2024, "Round and Round We Go!"), shipped as Gemma 4's
``proportional`` rope type: the fastest share p of RoPE's pairs turn at their usual
frequencies, and the rest do not turn at all (frequency 0).

Not GPT-NeoX's partial RoPE (``rope_partial``): that one recomputes the whole spectrum over a
narrower rotated width, base^(-2i/r) for i < r/2, so its slowest pair still turns at about
1/base, in fewer, coarser steps. p-RoPE keeps full RoPE's frequencies base^(-2i/d) for the
first k = int(p d / 2) pairs and stops the slower ones, which Barbero et al. find trained
models use as semantic channels that rotation makes unreliable over long distances. The
report's spectrum figure draws the two side by side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from posenc.encodings.functional import inverse_frequencies
from posenc.encodings.places import EncodingParams, PositionalEncoding
from posenc.encodings.registry import EncodingSpec, register, setting
from posenc.encodings.rotary import Rotary, RotaryParams
from posenc.rope_methods import proportional_rotated_pairs


@dataclass(frozen=True)
class ProportionalParams(RotaryParams):
    # 0.5, not Gemma 4's 0.25: at 0.25 every kept pair is faster than 2 pi base^0.25 (62.8
    # positions at base 10^4) at any head width, so a model trained on 64 positions or more
    # meets no angle past its training length that it has not seen, and a length comparison
    # with RoPE holds by construction (config/config.yaml says more).
    proportion: float = setting(
        0.5,
        "p: the share of RoPE's pairs, fastest first, that turn at their usual frequencies "
        "(k = int(p x head width // 2) pairs); the rest stay still (Gemma 4's global layers: "
        "0.25)",
        exclusiveMinimum=0,
        maximum=1,
    )


def check(params: EncodingParams) -> list[str]:
    """The config check: at least one pair turns at the head width an analysis builds (with
    none, as transformers allows, the encoding is NoPE, which the study has by its name)."""
    p = params.hyper.proportion
    if proportional_rotated_pairs(params.head_dim, p) < 1:
        return [
            f"config key encoding.rope_proportional.proportion = {p:g} turns int({p:g} x "
            f"{params.head_dim} // 2) = 0 pairs of a head of {params.head_dim}: at least one "
            "must turn"
        ]
    return []


class ProportionalRotary(Rotary):
    """RoPE (:class:`~posenc.encodings.rotary.Rotary`) on pairs i < k = int(p Dh / 2), each
    at its own frequency base^(-2i/Dh) and rounded exactly as RoPE rounds it; pairs i >= k
    pass unchanged (angle 0: cos 1, sin 0). Scores stay relative."""

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.kept = proportional_rotated_pairs(params.head_dim, params.hyper.proportion)

    def frequencies(self, group: int = 0) -> Tensor:
        omega = inverse_frequencies(self.params.head_dim, self.base)
        omega[self.kept :] = 0.0
        return omega

    def _cos_sin(self, positions: Tensor, width: int, dtype: torch.dtype):
        # As angles(): frequencies in float64, cast once, one rounding of the product; a still
        # pair's angle is p * 0 (so a position that overflows ``dtype`` is NaN there too, as
        # the aliasing analysis computes it).
        omega = self.frequencies().to(device=positions.device, dtype=dtype)
        theta = positions.to(dtype)[:, None] * omega[None, :]
        return theta.cos(), theta.sin()

    def angle_table(self, positions: Tensor, dtype: torch.dtype, group: int = 0) -> Tensor:
        return torch.cat(self._cos_sin(positions, self.params.head_dim, dtype), -1)


def reference(
    module: PositionalEncoding, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor
) -> tuple[Tensor, Tensor]:
    """Barbero et al.'s p-RoPE pair by pair: pair i (interleaved (x[2i], x[2i+1]); half split
    (x[i], x[i + Dh/2])) of a vector at position p turns by t = p * base^(-2i/Dh) when
    i < int(p_share * Dh // 2), and not at all otherwise. float64."""
    hyper, base = module.params.hyper, module.base

    def turn(x: Tensor, positions: Tensor) -> Tensor:
        d = x.shape[-1]
        kept = int(hyper.proportion * d // 2)
        flat = x.to(torch.float64).reshape(-1, x.shape[-2], d)
        out = flat.clone()
        for b in range(flat.shape[0]):
            for row, p in enumerate(positions.tolist()):
                for i in range(d // 2):
                    a_at, b_at = (2 * i, 2 * i + 1) if hyper.interleaved else (i, i + d // 2)
                    t = p * base ** (-2 * i / d) if i < kept else 0.0
                    a, c = flat[b, row, a_at].item(), flat[b, row, b_at].item()
                    out[b, row, a_at] = a * math.cos(t) - c * math.sin(t)
                    out[b, row, b_at] = a * math.sin(t) + c * math.cos(t)
        return out.reshape(x.shape)

    return turn(q, q_pos), turn(k, k_pos)


register(
    EncodingSpec(
        "rope_proportional",
        "qk",
        ProportionalRotary,
        relative=True,
        learned=False,
        citation="barbero2024",
        summary="p-RoPE: the fastest share of RoPE's pairs turn, the slowest stay still.",
        params=ProportionalParams,
        waves=True,
        planar_rotation=True,  # the still pairs turn by angle 0
        # Not rescalable: the context extensions rescale a full spectrum over the rotated
        # width, which here would be rope_partial's, not p-RoPE's.
        color="goldenrod",
        marker="h",
        reference=reference,
        checks=(check,),
    )
)
