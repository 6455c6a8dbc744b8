"""The bibliography (``references.yaml``): key -> full citation. Torch-free.

A paper's entry may carry a ``scale`` block: what the paper itself trained or evaluated
(parameters, layers, heads and their width, training length in tokens, the length a method
extends to, seeds) and the ``source`` of those numbers (a table, a section, the authors' code),
so that the report can set the scale a claim was measured at beside the paper's. A value the
sources do not state is left out, and the block's ``note`` says so."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

PATH = Path(__file__).with_name("references.yaml")

# The numbers a scale block may give, each a positive whole number; ``parameters`` may also be
# ``[smallest, largest]``, for a paper that trained a range of sizes.
SCALE_NUMBERS = ("parameters", "layers", "heads", "head_width", "train_len", "extended_to", "seeds")
SCALE_TEXTS = ("source", "note")


class BibliographyError(ValueError):
    """A malformed entry in the bibliography, named by its key."""


@cache
def bibliography() -> dict[str, dict]:
    entries = yaml.safe_load(PATH.read_text())
    for key, entry in entries.items():
        if "scale" in entry:
            check_scale(entry["scale"], f"{PATH.name}: {key}.scale")
    return entries


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def check_scale(scale, origin: str) -> dict:
    """A scale block as documented above; anything else is a :class:`BibliographyError` naming
    ``origin`` and the key at fault."""
    if not isinstance(scale, dict):
        raise BibliographyError(f"{origin} must be a mapping, got {type(scale).__name__}")
    unknown = [k for k in scale if k not in SCALE_NUMBERS + SCALE_TEXTS]
    if unknown:
        raise BibliographyError(
            f"{origin}: unknown key {', '.join(map(repr, unknown))} "
            f"(allowed: {', '.join(SCALE_NUMBERS + SCALE_TEXTS)})"
        )
    if not isinstance(scale.get("source"), str) or not scale["source"].strip():
        raise BibliographyError(
            f"{origin}.source: say where the numbers come from (a non-empty text)"
        )
    if "note" in scale and not isinstance(scale["note"], str):
        raise BibliographyError(f"{origin}.note must be text, got {scale['note']!r}")
    for key in SCALE_NUMBERS:
        if key not in scale:
            continue
        value = scale[key]
        ranged = (
            key == "parameters"
            and isinstance(value, list)
            and len(value) == 2
            and all(map(_whole, value))
            and value[0] < value[1]
        )
        if not (_whole(value) or ranged):
            wanted = "a positive whole number" + (
                " or [smallest, largest]" if key == "parameters" else ""
            )
            raise BibliographyError(f"{origin}.{key} must be {wanted}, got {value!r}")
    return scale


def scale(key: str) -> dict | None:
    """The ``scale`` block of ``key``'s entry (None: none given, or not in the bibliography)."""
    return bibliography().get(key, {}).get("scale")


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
