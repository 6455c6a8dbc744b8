"""The one registry of positional encodings, as a package.

Each encoding is defined once: its math as pure functions (:mod:`.functional`, formula and
citation in each docstring), its module in its family's file (:mod:`.absolute`, :mod:`.rotary`,
:mod:`.score_bias`), which registers it beside its class with its own hyper-parameters and its
capabilities (:mod:`.registry`), and a deliberately naive reference loop the tests hold it to
(:mod:`.naive`). Every encoding acts in one place (:mod:`.places`): nowhere, the input, the
queries and keys, or the attention scores.

The config schema, the Snakemake wildcards, the analyses, the report and the tests all read the
encoding names from :data:`REGISTRY`; adding an encoding is one new :class:`EncodingSpec`, here
or in a plugin, through the same :func:`register`.

Positions and angles are computed in float32 or wider whatever the model dtype
(``angle_dtype``), except where the aliasing analysis asks for low precision on purpose.
"""

import importlib
import pkgutil

# The families register in the study's order (the order of every table and legend): the
# import sorter keeps them alphabetical, which is that order.
from posenc.encodings.absolute import Learned, Sinusoidal, SinusoidalParams
from posenc.encodings.functional import (
    FIRE_EPS,
    FIRE_INIT_C,
    PositionOutOfRange,
    alibi_bias,
    alibi_slopes,
    angles,
    apply_rope,
    base_of,
    fire_bias,
    inverse_frequencies,
    kerple_log_bias,
    rope_cos_sin,
    sinusoidal_table,
    t5_relative_bucket,
    xpos_max_span,
    xpos_scales,
    xpos_zeta,
)
from posenc.encodings.naive import (
    alibi_reference,
    fire_reference,
    kerple_reference,
    learned_reference,
    rope_partial_reference,
    rope_reference,
    sinusoidal_reference,
    t5_bucket_by_hand,
    t5_reference,
    xpos_reference,
)
from posenc.encodings.places import (
    PLACES,
    ActsOn,
    BiasEncoding,
    EncodingParams,
    InputEncoding,
    NoPE,
    PositionalEncoding,
    QKEncoding,
    group_calls,
    head_groups,
    head_layout,
    heads_label,
)
from posenc.encodings.registry import (
    REGISTRY,
    EncodingSpec,
    build,
    encoding_params,
    encodings,
    lookup,
    override,
    params_schema,
    register,
    setting,
)
from posenc.encodings.rotary import (
    PartialRotary,
    PartialRotaryParams,
    Rotary,
    RotaryParams,
    XPos,
    XPosParams,
    rope_partial_check,
    rope_partial_width,
)
from posenc.encodings.score_bias import FIRE, ALiBi, FireParams, KerpleLog, T5Bias, T5Params

__all__ = [
    "FIRE",
    "FIRE_EPS",
    "FIRE_INIT_C",
    "PLACES",
    "REGISTRY",
    "ALiBi",
    "ActsOn",
    "BiasEncoding",
    "EncodingParams",
    "EncodingSpec",
    "FireParams",
    "InputEncoding",
    "KerpleLog",
    "Learned",
    "NoPE",
    "PartialRotary",
    "PartialRotaryParams",
    "PositionOutOfRange",
    "PositionalEncoding",
    "QKEncoding",
    "Rotary",
    "RotaryParams",
    "Sinusoidal",
    "SinusoidalParams",
    "T5Bias",
    "T5Params",
    "XPos",
    "XPosParams",
    "alibi_bias",
    "alibi_reference",
    "alibi_slopes",
    "angles",
    "apply_rope",
    "base_of",
    "build",
    "encoding_params",
    "encodings",
    "fire_bias",
    "fire_reference",
    "group_calls",
    "head_groups",
    "head_layout",
    "heads_label",
    "inverse_frequencies",
    "kerple_log_bias",
    "kerple_reference",
    "learned_reference",
    "lookup",
    "override",
    "params_schema",
    "register",
    "rope_cos_sin",
    "rope_partial_check",
    "rope_partial_reference",
    "rope_partial_width",
    "rope_reference",
    "setting",
    "sinusoidal_reference",
    "sinusoidal_table",
    "t5_bucket_by_hand",
    "t5_reference",
    "t5_relative_bucket",
    "xpos_max_span",
    "xpos_reference",
    "xpos_scales",
    "xpos_zeta",
]

# Every module of the package is imported, so a family of encodings added as a new file
# registers them with no other edit, after those above (posenc.codegraph counts the modules
# of a package that lists its folder this way as imported by it).
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def __getattr__(name: str):
    # ENCODINGS follows the registry as plugins add to it, rather than freezing its first state.
    if name == "ENCODINGS":
        return encodings()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
