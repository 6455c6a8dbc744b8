"""The bibliography (``references.yaml``): key -> full citation. Torch-free."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

PATH = Path(__file__).with_name("references.yaml")


@cache
def bibliography() -> dict[str, dict]:
    return yaml.safe_load(PATH.read_text())


def keys(cited: str | tuple | list) -> list[str]:
    """``"a; b"`` or ``("a", "b")`` -> ``["a", "b"]``."""
    if isinstance(cited, str):
        cited = cited.split(";")
    return [k.strip() for k in cited if k.strip()]


def check(cited, origin: str) -> list[str]:
    """The keys of ``cited``; an unknown one is an error naming ``origin``."""
    found = keys(cited)
    unknown = [k for k in found if k not in bibliography()]
    if unknown:
        raise KeyError(
            f"{origin}: unknown reference {', '.join(map(repr, unknown))} (not in {PATH.name})"
        )
    return found


def label(key: str) -> str:
    """How a work is named in running text: its short form, or a source document's title."""
    entry = bibliography().get(key)
    if entry is None:
        return key  # free text (a plugin's citation), shown as given
    return f"“{entry['title']}”" if entry.get("kind") == "source" else entry["short"]
