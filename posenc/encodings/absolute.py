"""Absolute position vectors added to the input: NoPE's absence of one, Vaswani et al.'s fixed
sinusoidal table and the learned table of BERT and GPT-2, each registered beside its class."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from posenc.encodings import naive
from posenc.encodings.functional import (
    PositionOutOfRange,
    check_even,
    inverse_frequencies,
    sinusoidal_table,
)
from posenc.encodings.places import EncodingParams, InputEncoding, NoPE
from posenc.encodings.registry import EncodingSpec, register, setting


@dataclass(frozen=True)
class SinusoidalParams:
    base: float = setting(
        10000.0, "PE(p, 2i) = sin(p / base^(2i/d)): Vaswani et al.'s 10000", exclusiveMinimum=1
    )


class Sinusoidal(InputEncoding):
    def __init__(self, params: EncodingParams):
        super().__init__(params)
        check_even(params.d_model, "sinusoidal d_model")

    def input_encoding(self, positions: Tensor) -> Tensor:
        p = self.params
        return sinusoidal_table(positions, p.d_model, p.hyper.base, p.angle_dtype)

    def frequencies(self, group: int = 0) -> Tensor:
        return inverse_frequencies(self.params.d_model, self.params.hyper.base)

    def angle_table(self, positions: Tensor, dtype: torch.dtype, group: int = 0) -> Tensor:
        return sinusoidal_table(positions, self.params.d_model, self.params.hyper.base, dtype)


class Learned(InputEncoding):
    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.table = nn.Embedding(params.max_len, params.d_model)
        # GPT-2 initialisation: small, so the table starts as a perturbation of the tokens.
        nn.init.normal_(self.table.weight, std=0.02)

    def input_encoding(self, positions: Tensor) -> Tensor:
        if positions.numel() and int(positions.max()) >= self.params.max_len:
            raise PositionOutOfRange(
                f"learned positional table has {self.params.max_len} rows (L_max); position "
                f"{int(positions.max())} has no encoding (a learned table cannot extrapolate)"
            )
        if torch.is_floating_point(positions) and not torch.equal(positions, positions.round()):
            raise PositionOutOfRange("learned positional table needs integer positions")
        return self.table(positions.long())


register(
    EncodingSpec(
        "none",
        "none",
        NoPE,
        relative=True,
        learned=False,
        citation="haviv2022; kazemnejad2023",
        summary="No positional information (NoPE).",
        color="tab:gray",
        marker="o",
    )
)
register(
    EncodingSpec(
        "sinusoidal",
        "input",
        Sinusoidal,
        relative=False,
        learned=False,
        citation="vaswani2017",
        summary="Fixed sin/cos waves of geometric wavelengths added to the input.",
        params=SinusoidalParams,
        waves=True,
        color="tab:blue",
        marker="s",
        reference=naive.sinusoidal_reference,
    )
)
register(
    EncodingSpec(
        "learned",
        "input",
        Learned,
        relative=False,
        learned=True,
        citation="devlin2019; radford2019",
        summary="A trainable table of L_max absolute position vectors.",
        color="tab:orange",
        marker="D",
        reference=naive.learned_reference,
    )
)
