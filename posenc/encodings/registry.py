"""The registry: one :class:`EncodingSpec` per encoding, added by :func:`register`, and
:func:`build`, the one way from the config's ``encoding:`` block to a module.

An encoding declares here, as data, everything the rest of the study asks of it: where it acts,
its own hyper-parameters (a small frozen dataclass whose defaults are written once, and from
which the config schema is generated), and its capabilities (whether its frequencies can be
rescaled, whether its query/key transform is made of planar rotations, whether it writes
positions into waves). Analyses, the extension stages and the tests read those, never a class
or a name.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from posenc.encodings.places import PLACES, ActsOn, EncodingParams, PositionalEncoding

# The JSON-schema type of each Python type a hyper-parameter may have.
JSON_TYPES = {float: "number", int: "integer", bool: "boolean", str: "string"}


def setting(default: Any, description: str, **schema: Any) -> Any:
    """A field of an encoding's hyper-parameters: its default (the one place it is written),
    what it means, and the JSON-schema constraints on its value (``exclusiveMinimum=1``, say),
    which the generated config schema enforces before any job."""
    return field(default=default, metadata={"description": description, "schema": schema})


def params_schema(params: type) -> dict:
    """The JSON schema of an encoding's block of the config's ``encoding:`` (every key
    optional: its default stands in), from its hyper-parameters' dataclass."""
    if not (dataclasses.is_dataclass(params) and isinstance(params, type)):
        raise TypeError(f"params must be a dataclass, got {params!r}")
    types = typing.get_type_hints(params)
    properties = {}
    for f in dataclasses.fields(params):
        if f.default is dataclasses.MISSING or types[f.name] not in JSON_TYPES:
            raise TypeError(
                f"{params.__name__}.{f.name}: a hyper-parameter needs a default and one of the "
                f"types {', '.join(t.__name__ for t in JSON_TYPES)}"
            )
        properties[f.name] = {
            "type": JSON_TYPES[types[f.name]],
            **f.metadata.get("schema", {}),
            "default": f.default,
            "description": f.metadata.get("description", ""),
        }
    return {"type": "object", "additionalProperties": False, "properties": properties}


@dataclass(frozen=True)
class EncodingSpec:
    """Everything the study knows about one encoding; :func:`register` adds it.

    ``module`` builds it from :class:`EncodingParams`; ``acts_on`` must agree with the
    module's own (its base class). ``params`` is the frozen dataclass of its own
    hyper-parameters (each field made with :func:`setting`), or None for an encoding without
    any: the config sets them under ``encoding: {<name>: {...}}``, and the module reads them
    as ``params.hyper``. ``citation`` is a key, or ``; ``-separated keys, of
    ``posenc/references.yaml``, or free text for an encoding from outside. ``color`` and
    ``marker`` fix its style in every figure; left out, one is assigned by registry order.

    Its capabilities, declared (an analysis that needs one the encoding lacks says n/a):

    * ``waves``: it writes a position p into waves of angles p * omega_i (``frequencies()``
      and ``angle_table()`` are not None): the aliasing and decay analyses read them;
    * ``planar_rotation``: its query/key transform turns coordinate pairs, each pair by its
      own angle and possibly scaled: the rotation analysis' score-shift bound holds for it;
    * ``rescalable``: its frequencies can be stretched by a context extension (the module has
      RoPE's scaling hook: ``base``, ``scaling``, ``rotated_width``);
    * ``extensions``: the context-extension methods (``pi``, ``ntk``) the extrapolation
      analysis evaluates with every model of the encoding (rescalable ones only);
    * ``windowed``: its module declares an attention window in some layer
      (:meth:`~posenc.encodings.places.PositionalEncoding.windows`); the tests hold the two
      to each other for every registered encoding;
    * ``positional`` (derived: it acts somewhere), ``additive_bias`` (derived: its scores are
      q.k + b(i, j), a bias added to the content logits), ``relative``, ``learned``.

    ``reference`` is a deliberately naive per-element Python loop that computes the encoding's
    hook output from its formula, sharing no code with the module: the tests hold every
    registered encoding's hook to it (``tests/test_encodings.py``). It takes the built module
    (to read its parameters: ``module.params``, a trained table) and returns float64, with one
    calling convention per place of action, mirroring the hook it checks:

    * ``input``: ``reference(module, positions) -> (L, d_model)``, as ``input_encoding``;
    * ``qk``:    ``reference(module, q, k, q_pos, k_pos) -> (q, k)``, as ``rotate``, with q of
      shape (..., Lq, Dh) and k of shape (..., Lk, Dh);
    * ``bias``:  ``reference(module, q_pos, k_pos, causal) -> (H, Lq, Lk)``, as ``score_bias``;
    * ``none``:  None; the tests check that every hook is then neutral.

    ``checks`` are what the module cannot be built with, said before any job: each takes the
    :class:`EncodingParams` of one model an analysis builds (the config at one width,
    ``AnalysisSpec.encoding_shapes``) and returns problems naming the config key, as
    ``AnalysisSpec.checks`` do. The workflow runs them at parse time for every configured
    encoding (:func:`posenc.encoding_metadata.encoding_problems`).
    """

    name: str
    acts_on: ActsOn
    module: Callable[[EncodingParams], PositionalEncoding]
    relative: bool  # attention scores depend on positions only through p - q
    learned: bool  # has trainable parameters
    citation: str
    summary: str
    params: type | None = None
    waves: bool = False
    planar_rotation: bool = False
    rescalable: bool = False
    extensions: tuple[str, ...] = ()
    windowed: bool = False
    color: str | None = None
    marker: str | None = None
    reference: Callable | None = None  # the naive loop the tests compare the hook with
    checks: tuple[Callable[[EncodingParams], list[str]], ...] = ()

    @property
    def positional(self) -> bool:
        """Whether it gives the model any position at all (NoPE does not)."""
        return self.acts_on != "none"

    @property
    def additive_bias(self) -> bool:
        """Whether its attention scores are q.k + b(i, j): a score bias added beside the
        content logits (ALiBi, T5, KERPLE, FIRE), which a query temperature may scale or not."""
        return self.acts_on == "bias"

    def hyper(self, own: Mapping[str, Any] | None = None) -> Any:
        """Its hyper-parameters, with ``own`` (its block of the ``encoding:`` config) over the
        defaults; None for an encoding that declares none. A key it does not have is a
        ValueError naming it."""
        own = dict(own or {})
        known = {f.name for f in dataclasses.fields(self.params)} if self.params else set()
        unknown = sorted(set(own) - known)
        if unknown:
            raise ValueError(
                f"unknown config key {', '.join(f'encoding.{self.name}.{k}' for k in unknown)}"
                f" (allowed here: {', '.join(sorted(known)) or 'none'})"
            )
        return self.params(**own) if self.params else None

    def settings(self, own: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Its hyper-parameters as ``own`` resolves them, as a plain dict (empty for an
        encoding that declares none): what a report shows it was built with."""
        return dataclasses.asdict(self.hyper(own)) if self.params else {}

    def metadata(self) -> dict:
        """The JSON-serialisable part: what the workflow reads at parse time, without torch
        (:mod:`posenc.encoding_metadata`), the schema of its config block included."""
        return {
            "acts_on": self.acts_on,
            "relative": self.relative,
            "learned": self.learned,
            "positional": self.positional,
            "waves": self.waves,
            "planar_rotation": self.planar_rotation,
            "rescalable": self.rescalable,
            "extensions": list(self.extensions),
            "windowed": self.windowed,
            "additive_bias": self.additive_bias,
            "citation": self.citation,
            "summary": self.summary,
            "color": self.color,
            "marker": self.marker,
            "checks": len(self.checks),  # the workflow asks the registry only if there are any
            "params": params_schema(self.params) if self.params else None,
        }


REGISTRY: dict[str, EncodingSpec] = {}


def _placed(spec: EncodingSpec) -> EncodingSpec:
    """A module written on the bare :class:`PositionalEncoding` (a plugin's, overriding one
    hook) gets the rest of its place of action from that place's class: what the analyses ask
    of it (its similarity kernel, its timed workload, its cost) then follows its ``acts_on``,
    exactly as for a built-in. A module that already names its place is left as it is."""
    module = spec.module
    if (
        isinstance(module, type)
        and issubclass(module, PositionalEncoding)
        and module.acts_on == PositionalEncoding.acts_on
        and spec.acts_on != PositionalEncoding.acts_on
        and not issubclass(module, PLACES[spec.acts_on])
    ):
        placed = type(module.__name__, (module, PLACES[spec.acts_on]), {})
        placed.__module__, placed.__qualname__ = module.__module__, module.__qualname__
        placed.__doc__ = module.__doc__
        return dataclasses.replace(spec, module=placed)
    return spec


def _capability_problem(spec: EncodingSpec) -> str | None:
    """What its declared capabilities contradict: each needs the place, or the other
    capability, that gives its hooks."""
    if spec.planar_rotation and spec.acts_on != "qk":
        return "planar_rotation=True needs acts_on='qk' (it describes a query/key transform)"
    if spec.rescalable and not (spec.acts_on == "qk" and spec.waves):
        return "rescalable=True needs acts_on='qk' and waves=True (frequencies to stretch)"
    if spec.extensions and not spec.rescalable:
        return f"extensions={spec.extensions} need rescalable=True (they stretch frequencies)"
    return None


def register(spec: EncodingSpec) -> EncodingSpec:
    """Add ``spec`` to the registry: the one path for built-in encodings, the tests' toy ones
    and users' plugins. A name may be registered once; the module must act where it says, and
    its capabilities must fit together."""
    if not isinstance(spec, EncodingSpec):
        raise TypeError(f"register() takes an EncodingSpec, got {type(spec).__name__}")
    if not spec.name.isidentifier():
        raise ValueError(f"encoding name {spec.name!r} must be an identifier (a-z, 0-9, _)")
    if spec.name in REGISTRY:
        raise ValueError(f"encoding {spec.name!r} is registered already")
    if spec.acts_on not in PLACES:
        raise ValueError(
            f"encoding {spec.name!r}: acts_on={spec.acts_on!r} is not one of {', '.join(PLACES)}"
        )
    problem = _capability_problem(spec)
    if problem:
        raise ValueError(f"encoding {spec.name!r}: {problem}")
    if spec.params is not None:
        params_schema(spec.params)  # a field without a default or a config type fails now
    spec = _placed(spec)
    declared = getattr(spec.module, "acts_on", None)
    if declared is not None and declared != spec.acts_on:
        raise ValueError(
            f"encoding {spec.name!r}: EncodingSpec says acts_on={spec.acts_on!r}, its module "
            f"{spec.module.__name__} acts on {declared!r}"
        )
    REGISTRY[spec.name] = spec
    return spec


def encodings() -> tuple[str, ...]:
    """Every registered name, in registration order (built-ins first, then plugins)."""
    return tuple(REGISTRY)


def lookup(name: str) -> EncodingSpec:
    """The spec of encoding ``name``; an unknown name lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(REGISTRY)}") from None


def encoding_params(
    name: str,
    config: Mapping[str, Mapping] | None = None,
    /,
    *,
    d_model: int,
    n_heads: int = 1,
    max_len: int = EncodingParams.max_len,
    angle_dtype: torch.dtype = EncodingParams.angle_dtype,
) -> EncodingParams:
    """What :func:`build` builds encoding ``name`` with: the model's shape, and its own
    hyper-parameters from ``config`` (the ``encoding:`` block: one block per encoding, each
    reading only its own) over their defaults. The encodings' config checks take these too."""
    for key, block in (config or {}).items():
        if not isinstance(block, Mapping):
            raise ValueError(
                f"config key encoding.{key} = {block!r}: the encoding block holds one block "
                "of hyper-parameters per encoding (encoding: {rope: {base: 10000}})"
            )
    hyper = lookup(name).hyper((config or {}).get(name))
    return EncodingParams(d_model, n_heads, max_len, angle_dtype, hyper)


def build(name: str, config: Mapping[str, Mapping] | None = None, /, **shape) -> PositionalEncoding:
    """The module of encoding ``name`` at the width ``shape`` gives (``d_model``, and
    ``n_heads``, ``max_len``, ``angle_dtype`` where they matter), with its hyper-parameters
    from ``config``, the ``encoding:`` block (:func:`encoding_params`). The one way every
    analysis, the training and the tests build an encoding."""
    spec = lookup(name)
    module = spec.module(encoding_params(name, config, **shape))
    module.spec = spec
    return module


def override(config: Mapping[str, Mapping] | None, name: str, **values: Any) -> dict:
    """``config`` (an ``encoding:`` block) with ``values`` set in the block of ``name``, for
    the hyper-parameters it has: an analysis that sweeps a setting (a base, say) sets it where
    the encoding has it, and an encoding with none of its own (a plugin's table with a base
    fixed in its code) is built as it is."""
    spec = lookup(name)
    known = {f.name for f in dataclasses.fields(spec.params)} if spec.params else set()
    mine = {k: v for k, v in values.items() if k in known}
    if not mine:
        return dict(config or {})
    return {**(config or {}), name: {**(config or {}).get(name, {}), **mine}}
