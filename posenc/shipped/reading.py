"""Reading a shipped config: the file, the checks transformers would skip or fail on obscurely,
transformers' config object (offline) and the text rotary class of its model type. Bad input
raises :class:`ModelError` with one line naming the key."""

from __future__ import annotations

import importlib
import json
import math
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
        hub = not path.exists() and len(path.parts) == 2 and not path.suffix
        hint = " (posenc model reads files on disk; it does not download hub ids)" if hub else ""
        raise ModelError(f"{path}: no such file{hint}")
    try:
        text = path.read_bytes()
    except OSError as error:
        raise ModelError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        entry = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ModelError(f"{path}: not JSON ({error})") from None
    except RecursionError:
        raise ModelError(f"{path}: not JSON a config could be (nested too deep)") from None
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


# Keys that hold a number, with the range a value must fall in: (low, low_open, high, whole).
# Checked before transformers is imported, so a refusal costs no import and names the key.
_POSITIVE = (0.0, True, math.inf, False)
_POSITIVE_INT = (0.0, True, math.inf, True)
NUMBER_KEYS = {
    "rope_theta": _POSITIVE,
    "rotary_emb_base": _POSITIVE,
    "rope_local_base_freq": _POSITIVE,
    "factor": _POSITIVE,
    "attention_factor": _POSITIVE,
    "beta_fast": _POSITIVE,
    "beta_slow": _POSITIVE,
    "low_freq_factor": _POSITIVE,
    "high_freq_factor": _POSITIVE,
    "mscale": (0.0, False, math.inf, False),
    "mscale_all_dim": (0.0, False, math.inf, False),
    "partial_rotary_factor": (0.0, True, 1.0, False),
    "rotary_pct": (0.0, True, 1.0, False),
    "max_position_embeddings": _POSITIVE_INT,
    "original_max_position_embeddings": _POSITIVE_INT,
    "advertised_context": _POSITIVE_INT,
    "n_positions": _POSITIVE_INT,
    "head_dim": _POSITIVE_INT,
    "qk_rope_head_dim": _POSITIVE_INT,
    "rotary_dim": _POSITIVE_INT,
    "hidden_size": _POSITIVE_INT,
    "num_attention_heads": _POSITIVE_INT,
    "n_embd": _POSITIVE_INT,
    "n_head": _POSITIVE_INT,
    "num_heads": _POSITIVE_INT,
    "num_hidden_layers": _POSITIVE_INT,
    "num_layers": _POSITIVE_INT,
    "n_layer": _POSITIVE_INT,
}
# Counts transformers builds per-layer or per-head lists from (and the page lists per head):
# past these the config cannot be a shipped model (the largest have about 128 heads and layers)
# and building it would take minutes.
COUNT_LIMITS = {
    key: 4096
    for key in (
        "num_attention_heads",
        "n_head",
        "num_heads",
        "num_hidden_layers",
        "num_layers",
        "n_layer",
    )
}
# Keys transformers reads as they are: null leaves it without a base, where leaving the key out
# would give its default.
NOT_NULL = ("rope_theta", "rotary_emb_base", "rope_local_base_freq")
# What a valid value looks like, for the message.
RANGE_WORDS = {
    _POSITIVE: "a finite number > 0",
    _POSITIVE_INT: "a whole number > 0",
    (0.0, False, math.inf, False): "a finite number ≥ 0",
    (0.0, True, 1.0, False): "a number in (0, 1]",
}
# Keys that say how long a context is, in the file (transformers' defaults are not the model's).
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "advertised_context")
# Keys whose presence says the model rotates (so it needs a context to be measured at).
ROTARY_HINTS = (
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "rotary_emb_base",
    "rotary_pct",
    "rotary_dim",
    "partial_rotary_factor",
    "qk_rope_head_dim",
)
# Largest head width measured: the widest shipped rotary head is 256 dims; past this the exact
# scans would take minutes and the config is almost surely mistyped.
MAX_HEAD = 4096
# Positions past 2^53 are not whole numbers in float64, the truth every error is measured from.
MAX_CONTEXT = 2**53


def _describe(value) -> str:
    kind = {bool: "true/false", str: "a string", list: "a list", dict: "an object"}
    if value is None:
        return "null"
    name = kind.get(type(value))
    return f"{value!r} ({name})" if name else repr(value)


def check_number(where: str, key: str, value, rule=None) -> None:
    """One value against its key's rule; a ModelError naming the key and the valid range."""
    low, low_open, high, whole = rule or NUMBER_KEYS[key.rsplit(".", 1)[-1]]
    words = RANGE_WORDS[(low, low_open, high, whole)]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"{where}: key {key} = {_describe(value)}: must be {words}")
    if not math.isfinite(value):
        raise ModelError(f"{where}: key {key} = {value!r}: must be {words}, not infinite or NaN")
    if whole and not isinstance(value, int):
        raise ModelError(f"{where}: key {key} = {value!r}: must be {words}")
    if value < low or (low_open and value == low) or value > high:
        raise ModelError(f"{where}: key {key} = {value!r}: must be {words}")


def _scopes(entry: dict) -> list[tuple[str, dict]]:
    """The dicts whose keys configure the text model: the file itself, then text_config."""
    out = [("", entry)]
    text = entry.get("text_config")
    if isinstance(text, dict):
        out.append(("text_config.", text))
    return out


def _first(entry: dict, *keys):
    """(key as written, value) of the first of ``keys`` set in the text config or the file."""
    for prefix, scope in reversed(_scopes(entry)):
        for key in keys:
            if scope.get(key) is not None:
                return prefix + key, scope[key]
    return None, None


def rotary_hint(entry: dict) -> bool:
    return any(scope.get(k) is not None for _, scope in _scopes(entry) for k in ROTARY_HINTS)


def stated_context(entry: dict) -> bool:
    return _first(entry, *CONTEXT_KEYS)[0] is not None


def _rotated_width(entry: dict, where: str, rope: dict | None) -> int | None:
    """The rotated width transformers will build, where the file decides it (else None): the
    head (qk_rope_head_dim, head_dim, or hidden / heads) times the rotated share."""
    head_key, head = _first(entry, "qk_rope_head_dim", "head_dim")
    if head is None:
        hk, hidden = _first(entry, "hidden_size", "n_embd")
        nk, heads = _first(entry, "num_attention_heads", "n_head")
        if hidden is None or heads is None:
            return None
        head, head_key = hidden // heads, f"{hk} / {nk}"
        if head < 2:
            raise ModelError(
                f"{where}: keys {hk} = {hidden} and {nk} = {heads}: a head of {head} dims "
                "(hidden / heads) leaves no pair to rotate"
            )
    if head > MAX_HEAD:
        raise ModelError(
            f"{where}: key {head_key}: a head of {head} dims; more than {MAX_HEAD} is not a "
            "shipped model (the widest rotary head is 256)"
        )
    if head % 2:
        key = (
            _first(entry, "qk_rope_head_dim", "head_dim")[0] or "hidden_size / num_attention_heads"
        )
        raise ModelError(
            f"{where}: key {key}: a head of {head} dims is odd; the rotated width must be even "
            "(RoPE turns pairs)"
        )
    share_key, share = None, None
    if rope is not None and rope.get("partial_rotary_factor") is not None:
        share_key, share = "partial_rotary_factor", rope["partial_rotary_factor"]
    if share is None:
        share_key, share = _first(entry, "partial_rotary_factor", "rotary_pct")
    if share is None:
        dim_key, dim = _first(entry, "rotary_dim")
        if dim is not None:
            if dim > head or dim % 2:
                raise ModelError(
                    f"{where}: key {dim_key} = {dim}: the rotated width must be even and at "
                    f"most the head's {head} dims"
                )
            return dim
        return head
    width = int(head * share)
    if width % 2 or width < 2:
        raise ModelError(
            f"{where}: key {share_key} = {share!r}: rotates int({head} × {share}) = {width} "
            f"dims of a {head}-dim head; the rotated width must be even and ≥ 2 (RoPE turns pairs)"
        )
    return width


def validate(entry: dict, where: str, context_given: bool) -> list[str]:
    """Refuse what would be nonsense (a ModelError naming the key and what is valid), before
    transformers is imported; return the warnings for what is measured but flagged."""
    if not isinstance(entry.get("model_type"), str) or not entry.get("model_type"):
        got = _describe(entry["model_type"]) if "model_type" in entry else "missing"
        raise ModelError(
            f"{where}: key model_type {'= ' + got if got != 'missing' else got}: "
            'must name a model type transformers knows (e.g. "llama")'
        )
    for key in ("text_config", "rope_scaling", "rope_parameters"):
        for prefix, scope in _scopes(entry):
            value = scope.get(key)
            if value is not None and not isinstance(value, dict):
                raise ModelError(
                    f"{where}: key {prefix}{key} = {_describe(value)}: must be an object or null"
                )
    for prefix, scope in _scopes(entry):
        for key, rule in NUMBER_KEYS.items():
            if scope.get(key) is not None:
                check_number(where, prefix + key, scope[key], rule)
        for key, limit in COUNT_LIMITS.items():
            if isinstance(scope.get(key), int) and scope[key] > limit:
                raise ModelError(
                    f"{where}: key {prefix}{key} = {scope[key]}: must be at most {limit} (no "
                    "shipped model comes near it)"
                )
        for key in NOT_NULL:
            if key in scope and scope[key] is None:
                raise ModelError(
                    f"{where}: key {prefix}{key} = null: must be a finite number > 0 (or left "
                    "out, for transformers' default)"
                )
    warnings = []
    rope_dicts = _rope_dicts(entry)
    for key, d in rope_dicts:
        kind = d.get("rope_type", d.get("type", "default"))
        if not isinstance(kind, str) or kind not in KNOWN_ROPE_TYPES:
            raise ModelError(
                f"{where}: key {key}.rope_type = "
                f"{repr(kind) if isinstance(kind, str) else _describe(kind)} is unknown; known: "
                f"{', '.join(KNOWN_ROPE_TYPES)}"
            )
        for needed in REQUIRED.get(kind, ()):
            if d.get(needed) is None:
                raise ModelError(f"{where}: key {key}.{needed} missing (rope_type {kind!r})")
        for name, value in d.items():
            if name in NUMBER_KEYS and value is not None:
                check_number(where, f"{key}.{name}", value)
            if name in NOT_NULL and value is None:
                raise ModelError(f"{where}: key {key}.{name} = null: must be a finite number > 0")
        if "truncate" in d and not isinstance(d["truncate"], bool):
            raise ModelError(
                f"{where}: key {key}.truncate = {_describe(d['truncate'])}: must be true or false"
            )
        factor = d.get("factor")
        if factor is not None and factor < 1 and kind not in ("default", "mrope"):
            warnings.append(
                f"{where}: key {key}.factor = {factor!r} is below 1: {kind} scaling then "
                "shrinks the context instead of extending it; measured and flagged"
            )
        width = _rotated_width(entry, where, d)
        if kind == "longrope":
            for name in ("short_factor", "long_factor"):
                values = d[name]
                if not isinstance(values, list):
                    raise ModelError(
                        f"{where}: key {key}.{name} = {_describe(values)}: must be a list of "
                        "numbers > 0, one per rotated pair"
                    )
                if width is not None and len(values) != width // 2:
                    raise ModelError(
                        f"{where}: key {key}.{name} has {len(values)} numbers: must have one per "
                        f"rotated pair, {width // 2} (rotated width {width} / 2)"
                    )
                for i, v in enumerate(values):
                    check_number(where, f"{key}.{name}[{i}]", v, _POSITIVE)
        section = d.get("mrope_section")
        if section is not None:
            ok = isinstance(section, list) and all(
                isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in section
            )
            if not ok or len(section) != 3 or (width is not None and sum(section) != width // 2):
                pairs = "" if width is None else f" summing to the {width // 2} rotated pairs"
                raise ModelError(
                    f"{where}: key {key}.mrope_section = {_describe(section)}: must be three "
                    f"whole numbers > 0 (t, h, w){pairs}"
                )
    if not rope_dicts:
        _rotated_width(entry, where, None)
    for prefix, scope in _scopes(entry):
        for key, d in [("", scope)] + [(k + ".", v) for k, v in _rope_dicts(scope)]:
            original = d.get("original_max_position_embeddings")
            longest = scope.get("max_position_embeddings")
            if original is not None and longest is not None and original > longest:
                warnings.append(
                    f"{where}: key {prefix}{key}original_max_position_embeddings = {original} "
                    f"exceeds {prefix}max_position_embeddings = {longest}: the trained length "
                    "is longer than the context; measured and flagged"
                )
    if rotary_hint(entry) and not stated_context(entry) and not context_given:
        raise ModelError(
            f"{where}: key max_position_embeddings missing: give the context to measure at "
            "with --context N (transformers' default would be a guess)"
        )
    return list(dict.fromkeys(warnings))


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
