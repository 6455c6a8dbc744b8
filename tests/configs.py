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


# A plugin registering one encoding through the public API; {summary} varies its source.
PLUGIN = textwrap.dedent(
    """\
    import dataclasses

    from posenc.encodings import EncodingSpec, Sinusoidal, register


    class Base500(Sinusoidal):
        def __init__(self, params):
            super().__init__(dataclasses.replace(params, base=500.0))


    register(EncodingSpec("plugin_sin500", "input", Base500, relative=False, learned=False,
                          citation="a test's plugin", summary="{summary}"))
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
