"""Two toy encodings from outside the registry file, registered through the public API exactly
as a user's plugin would: the platform test runs the whole workflow with them as plugins and
checks that both reach every analysis and the report with no other edit.

Both are built on the registry's classes with other settings, so they inherit what the
wave-based analyses ask of them (``frequencies``, ``angle_table``): a sinusoidal table with
base 500 (an input encoding) and RoPE with base 500 in the half-split layout (a qk one).
"""

from dataclasses import replace

from posenc.encodings import EncodingSpec, Rotary, Sinusoidal, register

TOY_BASE = 500.0


class ShortSinusoidal(Sinusoidal):
    """Vaswani et al.'s table with base 500 instead of 10000: a shorter longest wavelength."""

    def __init__(self, params):
        super().__init__(replace(params, base=TOY_BASE))


class ShortRotary(Rotary):
    """RoPE with base 500 and the half-split (GPT-NeoX) pairing."""

    def __init__(self, params):
        super().__init__(replace(params, rope_base=TOY_BASE, rope_interleaved=False))


register(
    EncodingSpec(
        "toy_sinusoidal",
        "input",
        ShortSinusoidal,
        relative=False,
        learned=False,
        citation="a test's toy",
        summary="Sinusoidal with base 500.",
    )
)
register(
    EncodingSpec(
        "toy_rotary",
        "qk",
        ShortRotary,
        relative=True,
        learned=False,
        citation="a test's toy",
        summary="RoPE with base 500, half split.",
    )
)
