"""RoPE layers with a NoPE layer every k-th layer, the RoPE layers attending within a sliding
window: Yang et al. 2025 ("Rope to Nope and Back Again: A New Hybrid Attention Strategy")'s
RNoPE-SWA, shipped in Cohere's Command A; Llama 4's iRoPE (k = 4, its RoPE layers in chunks of
8192 tokens, its NoPE layers temperature-scaled) and SmolLM3 (k = 4) are the same layout.

The layout is declared per layer (:meth:`PositionalEncoding.layers`), and so is the window
(:meth:`PositionalEncoding.windows`); the model applies the encoding in its RoPE layers only,
and the window there. The window is what the design relies on: RoPE then never scores a
distance longer than the window, at any evaluation length, so its layers stay where they were
trained, while the NoPE layers, free of position, carry retrieval at any distance. At the
study's two layers, k = 2 makes layer 2 NoPE: one windowed RoPE layer that must carry every
positional feature, under one full-attention layer that sees none. That is the hybrid's
mechanism at the smallest depth that has both; it is not the published ratio of three RoPE
layers per NoPE layer.
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
    # Yang et al. window their RoPE layers at 4096 tokens while pre-training at 8192 (Command A,
    # the paper's architecture in production, ships the same 4096): half the training length.
    # The same proportion at the study's L_train = 128 gives 64. Kept below L_train on purpose:
    # a window at or above it would train the RoPE layer as full attention and cut it only at
    # evaluation, the opposite of the design (RoPE trained on every distance it will see).
    window: int = setting(
        64,
        "attention window of the RoPE layers, in tokens: a key is visible from a query at most "
        "window - 1 tokens back (Yang et al.: 4096 at a pre-training length of 8192; half the "
        "study's L_train = 128); the NoPE layers attend to every earlier token",
        minimum=1,
    )


class RopeNopeHybrid(Rotary):
    """RoPE (:class:`~posenc.encodings.rotary.Rotary`) in every layer but each k-th."""

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.every = params.hyper.nope_every
        self.window = params.hyper.window

    def layers(self, n_layers: int) -> tuple[bool, ...]:
        return tuple((i + 1) % self.every != 0 for i in range(n_layers))

    def windows(self, n_layers: int) -> tuple[int | None, ...]:
        """The RoPE layers windowed, the NoPE layers full (RNoPE-SWA)."""
        return tuple(self.window if rope else None for rope in self.layers(n_layers))


register(
    EncodingSpec(
        "rope_nope_hybrid",
        "qk",
        RopeNopeHybrid,
        relative=True,
        learned=False,
        citation="yang2025",
        summary="Windowed RoPE layers with a full-attention NoPE layer every k-th layer "
        "(RNoPE-SWA; Llama 4's iRoPE, SmolLM3).",
        params=HybridParams,
        waves=True,
        planar_rotation=True,
        rescalable=True,  # its RoPE layers share one scaling hook
        windowed=True,
        color="teal",
        marker="d",
        reference=rope_reference,  # its rotation, in the layers where it acts
    )
)
