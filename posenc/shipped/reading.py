"""Reading a shipped config: the file, the checks transformers would skip or fail on obscurely,
transformers' config object (offline) and the text rotary class of its model type. Bad input
raises :class:`ModelError` with one line naming the key."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

# Keys a zoo file adds to a model's config.json.
ZOO_KEYS = ("source", "advertised_context", "confirmed", "notes")
# posenc's name for transformers' rope types ("default" is plain RoPE).
POSENC_METHOD = {
    "linear": "pi",
    "dynamic": "dynamic",
    "yarn": "yarn",
    "llama3": "llama3",
    "longrope": "longrope",
    "proportional": "proportional",
}
KNOWN_ROPE_TYPES = ("default", "mrope", *POSENC_METHOD)
# What each scaling type needs that transformers cannot infer.
REQUIRED = {
    "longrope": ("short_factor", "long_factor"),
    "llama3": ("factor",),
    "linear": ("factor",),
}


class ModelError(ValueError):
    """Bad input: the message is the one line shown."""


def read_config_file(path: Path) -> dict:
    """A config.json (or a folder holding one) as a dict; one-line errors naming the file."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ModelError(f"{path}: no such file")
    try:
        entry = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ModelError(f"{path}: not JSON ({error})") from None
    if not isinstance(entry, dict):
        raise ModelError(f"{path}: not a JSON object")
    return entry


def model_name(path: Path) -> str:
    """The config's folder name, or the file's stem when it is not named config.json."""
    path = Path(path)
    if path.is_dir():
        return path.resolve().name
    return path.resolve().parent.name if path.name == "config.json" else path.stem


def _rope_dicts(entry: dict) -> list[tuple[str, dict]]:
    """Every rope dict the file carries, with the key it sits under."""
    found = []
    for key in ("rope_scaling", "rope_parameters"):
        value = entry.get(key)
        if isinstance(value, dict):
            nested = all(isinstance(v, dict) for v in value.values()) and value
            for sub, d in value.items() if nested else [(None, value)]:
                found.append((f"{key}.{sub}" if sub else key, d))
    text = entry.get("text_config")
    if isinstance(text, dict):
        found += [(f"text_config.{k}", d) for k, d in _rope_dicts(text)]
    return found


def check_entry(entry: dict, where: str) -> None:
    """What transformers would accept silently or fail on obscurely: one line naming the key."""
    if "model_type" not in entry:
        raise ModelError(f"{where}: key model_type missing")
    for key, d in _rope_dicts(entry):
        kind = d.get("rope_type", d.get("type", "default"))
        if kind not in KNOWN_ROPE_TYPES:
            raise ModelError(
                f"{where}: key {key}.rope_type = {kind!r} is unknown; known: "
                f"{', '.join(KNOWN_ROPE_TYPES)}"
            )
        for needed in REQUIRED.get(kind, ()):
            if d.get(needed) is None:
                raise ModelError(f"{where}: key {key}.{needed} missing (rope_type {kind!r})")
        for name in ("short_factor", "long_factor"):
            if kind == "longrope" and not isinstance(d[name], list):
                raise ModelError(f"{where}: key {key}.{name} must be a list of numbers")
    for key in ("head_dim", "qk_rope_head_dim"):
        width = entry.get(key)
        if width is not None and (not isinstance(width, int) or width % 2 or width < 2):
            raise ModelError(f"{where}: key {key} = {width!r}: the rotated width must be even")


def build_config(entry: dict, where: str = "config"):
    """transformers' config object for the entry (zoo keys dropped), offline."""
    from transformers import AutoConfig

    check_entry(entry, where)
    fields = {k: v for k, v in entry.items() if k not in (*ZOO_KEYS, "model_type")}
    try:
        return AutoConfig.for_model(entry["model_type"], **fields)
    except ValueError as error:
        if "Unrecognized model identifier" in str(error) or "model_type" in str(error):
            raise ModelError(
                f"{where}: key model_type = {entry['model_type']!r} is not a model type "
                "transformers knows"
            ) from None
        raise ModelError(f"{where}: {str(error).splitlines()[0]}") from None
    except Exception as error:  # transformers' strict dataclass validation names the field
        raise ModelError(f"{where}: {str(error).splitlines()[0]}") from None


def rotary_class(config):
    """The text rotary embedding class of the config's model type (vision ones excluded)."""
    package = type(config).__module__.split(".")[-2]
    module = importlib.import_module(f"transformers.models.{package}.modeling_{package}")
    names = [n for n in dir(module) if n.endswith("RotaryEmbedding") and "Vision" not in n]
    return getattr(module, names[0]) if names else None
