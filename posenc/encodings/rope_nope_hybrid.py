"""RoPE layers with a NoPE layer every k-th layer: Llama 4's iRoPE (k = 4, its NoPE layers
also temperature-scaled) and SmolLM3 (k = 4) ship it; Yang et al. 2025 ("Rope to Nope and
Back Again") study it and find the hybrid extrapolates better than RoPE alone.

The layout is declared per layer (:meth:`PositionalEncoding.layers`); the model applies the
encoding in its RoPE layers only. At the study's two layers, k = 2 makes layer 2 NoPE: one
RoPE layer that must carry every positional feature, under one layer that sees none. That is
the hybrid's mechanism (a layer free to attend by content at any distance, above one that
knows order) at the smallest depth that has both; it is not Llama 4's ratio of three RoPE
layers per NoPE layer, nor its chunked attention in the RoPE layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from posenc.encodings.naive import rope_reference
from posenc.encodings.places import EncodingParams
from posenc.encodings.registry import EncodingSpec, register, setting
from posenc.encodings.rotary import Rotary, RotaryParams


@dataclass(frozen=True)
class HybridParams(RotaryParams):
    nope_every: int = setting(
        2,
        "k: layers k, 2k, ... (counted from 1) have no positional encoding, the others RoPE "
        "(Llama 4 and SmolLM3: 4; at the study's 2 layers, 2 makes layer 2 NoPE)",
        minimum=2,
    )


class RopeNopeHybrid(Rotary):
    """RoPE (:class:`~posenc.encodings.rotary.Rotary`) in every layer but each k-th."""

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.every = params.hyper.nope_every

    def layers(self, n_layers: int) -> tuple[bool, ...]:
        return tuple((i + 1) % self.every != 0 for i in range(n_layers))


register(
    EncodingSpec(
        "rope_nope_hybrid",
        "qk",
        RopeNopeHybrid,
        relative=True,
        learned=False,
        citation="yang2025",
        summary="RoPE layers with a NoPE layer every k-th layer (Llama 4's iRoPE, SmolLM3).",
        params=HybridParams,
        waves=True,
        planar_rotation=True,
        rescalable=True,  # its RoPE layers share one scaling hook
        color="teal",
        marker="d",
        reference=rope_reference,  # its rotation, in the layers where it acts
    )
)
