"""Three toy encodings from outside the registry file, registered through the public API
exactly as a user's plugin would: the platform test runs the whole workflow with them as plugins
and checks that each reaches every analysis and the report with no other edit.

Two are the registry's classes with hyper-parameters of their own, declared here with their
defaults (which the config may set under ``encoding: {toy_rotary: {...}}``), so they inherit
what the wave-based analyses ask of them (``frequencies``, ``angle_table``): a sinusoidal table
with base 500 (an input encoding) and RoPE with base 500 in the half-split layout (a qk one).
The third declares its heads (``heads``): RoPE whose head h turns with base·ratio^h, head 0
exactly RoPE's, so an analysis that reads one head of it measures plain RoPE.
"""

from dataclasses import dataclass

import torch

from posenc.encodings import (
    EncodingSpec,
    Rotary,
    RotaryParams,
    Sinusoidal,
    apply_rope,
    inverse_frequencies,
    register,
    rope_cos_sin,
    setting,
)

TOY_BASE = 500.0


@dataclass(frozen=True)
class ShortBase:
    """Vaswani et al.'s table with base 500 instead of 10000: a shorter longest wavelength."""

    base: float = setting(TOY_BASE, "the table's base", exclusiveMinimum=1)


@dataclass(frozen=True)
class ShortHalfSplit(RotaryParams):
    """RoPE with base 500 and the half-split (GPT-NeoX) pairing."""

    base: float = setting(TOY_BASE, "RoPE's base", exclusiveMinimum=1)
    interleaved: bool = setting(False, "pairs (x[i], x[i + d/2]): the half split")


register(
    EncodingSpec(
        "toy_sinusoidal",
        "input",
        Sinusoidal,
        relative=False,
        learned=False,
        citation="a test's toy",
        summary="Sinusoidal with base 500.",
        params=ShortBase,
        waves=True,
    )
)
register(
    EncodingSpec(
        "toy_rotary",
        "qk",
        Rotary,
        relative=True,
        learned=False,
        citation="a test's toy",
        summary="RoPE with base 500, half split.",
        params=ShortHalfSplit,
        waves=True,
        planar_rotation=True,
        rescalable=True,
    )
)


@dataclass(frozen=True)
class HeadBase(RotaryParams):
    """RoPE's settings, and the ratio of one head's base to the previous head's."""

    ratio: float = setting(16.0, "head h turns with base * ratio^h", exclusiveMinimum=1)


class HeadBaseRotary(Rotary):
    """RoPE whose head h has base b·r^h: every head its own group, its own spectrum. Asked to
    turn fewer heads than it was built with, it would measure as plain RoPE: it refuses, so an
    analysis that reads one head of it fails rather than measuring RoPE under its name."""

    def heads(self, n_heads: int) -> tuple[int, ...]:
        return tuple(range(n_heads))

    def group_base(self, group: int) -> float:
        return self.base * self.params.hyper.ratio**group

    def frequencies(self, group: int = 0):
        return inverse_frequencies(self.params.head_dim, self.group_base(group))

    def angle_table(self, positions, dtype, group: int = 0):
        return torch.cat(
            rope_cos_sin(positions, self.params.head_dim, self.group_base(group), dtype), -1
        )

    def rotate(self, q, k, q_pos, k_pos):
        p = self.params
        if q.shape[-3] != p.n_heads:
            # Read with fewer heads, it would be RoPE: say so rather than measure that.
            raise ValueError(f"toy_head_base turns {p.n_heads} heads, given {q.shape[-3]}")

        def cos_sin(pos):  # (H, L, Dh/2) each
            per_head = [
                rope_cos_sin(pos, p.head_dim, self.group_base(h), p.angle_dtype)
                for h in range(p.n_heads)
            ]
            return torch.stack([c for c, _ in per_head]), torch.stack([s for _, s in per_head])

        interleaved = p.hyper.interleaved
        return apply_rope(q, *cos_sin(q_pos), interleaved), apply_rope(
            k, *cos_sin(k_pos), interleaved
        )


register(
    EncodingSpec(
        "toy_head_base",
        "qk",
        HeadBaseRotary,
        relative=True,
        learned=False,
        citation="a test's toy",
        summary="RoPE whose head h has base 10000 * 16^h.",
        params=HeadBase,
        waves=True,
        planar_rotation=True,
    )
)
