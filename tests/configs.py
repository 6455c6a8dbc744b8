"""The shipped configs as the workflow sees them, and a plugin file the config tests write."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


def merged(override: dict) -> dict:
    """config.yaml with ``override`` merged in, recursively (as snakemake --configfile does)."""

    def update(base, new):
        for k, v in new.items():
            if isinstance(v, dict) and isinstance(base.get(k), dict):
                update(base[k], v)
            else:
                base[k] = v
        return base

    return update(copy.deepcopy(load("config.yaml")), override)


# A plugin registering one encoding, with a hyper-parameter of its own, through the public API;
# {summary} varies its source.
PLUGIN = textwrap.dedent(
    """\
    from dataclasses import dataclass

    from posenc.encodings import EncodingSpec, Sinusoidal, register, setting


    @dataclass(frozen=True)
    class Base500:
        base: float = setting(500.0, "the table's base", exclusiveMinimum=1)


    register(EncodingSpec("plugin_sin500", "input", Sinusoidal, relative=False, learned=False,
                          citation="a test's plugin", summary="{summary}", params=Base500,
                          waves=True))
    """
)


def encoding_block(**values) -> dict:
    """An ``encoding:`` block that sets each of ``values`` for every registered encoding that
    declares it (``base=500.0``: the sinusoidal table's base and every rotary one's)."""
    from posenc.encodings import REGISTRY, override

    block: dict = {}
    for name in REGISTRY:
        block = override(block, name, **values)
    return block


def encoding_meta(names=None) -> dict:
    """``{name: EncodingSpec.metadata()}`` of the registry in this process (every encoding, or
    ``names``): what the workflow reads through ``posenc.encoding_metadata`` at parse time, and
    what ``posenc.config.workflow_schema`` takes."""
    from posenc.encodings import REGISTRY

    return {n: REGISTRY[n].metadata() for n in (REGISTRY if names is None else names)}
