"""Two toy encodings from outside the registry file, registered through the public API exactly
as a user's plugin would: the platform test runs the whole workflow with them as plugins and
checks that both reach every analysis and the report with no other edit.

Both are the registry's classes with hyper-parameters of their own, declared here with their
defaults (which the config may set under ``encoding: {toy_rotary: {...}}``), so they inherit
what the wave-based analyses ask of them (``frequencies``, ``angle_table``): a sinusoidal table
with base 500 (an input encoding) and RoPE with base 500 in the half-split layout (a qk one).
"""

from dataclasses import dataclass

from posenc.encodings import EncodingSpec, Rotary, RotaryParams, Sinusoidal, register, setting

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
