"""Config validation: a wrong key or value fails before any job runs, naming the key.

The schema (``config/schema.yaml``, with one ``$ref``'d file per analysis under
``config/schema/``) sets ``additionalProperties: false`` everywhere, so a misspelt key is an
error rather than a silently ignored setting. What a JSON schema cannot say (an evaluation
length below the training length, say) is checked by :data:`SEMANTIC_CHECKS`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

import yaml


class ConfigError(ValueError):
    """A config value the workflow cannot run with; the message names the key."""


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _validator(schema_path: Path):
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    schema_path = schema_path.resolve()
    schema = _load(schema_path)
    schema["$id"] = schema_path.as_uri()

    def retrieve(uri: str) -> Resource:
        from urllib.parse import urlparse
        from urllib.request import url2pathname

        # Every schema file declares $schema (Snakemake's own validate needs it too).
        return Resource.from_contents(_load(Path(url2pathname(urlparse(uri).path))))

    registry = Registry(retrieve=retrieve).with_resource(schema["$id"], Resource.from_contents(schema))
    return Draft202012Validator(schema, registry=registry)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _describe(error) -> str:
    """One line per error: the key, the bad value, and what was expected."""
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        keys = ", ".join(_key([*error.absolute_path, k]) for k in extra)
        return f"unknown config key {keys} (allowed here: {', '.join(allowed)})"
    if error.validator == "required":
        return f"config key {_key(error.absolute_path)}: {error.message}"
    return f"config key {_key(error.absolute_path)} = {error.instance!r}: {error.message}"


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Raise :class:`ConfigError` listing every schema and semantic violation."""
    validator = _validator(Path(schema_path))
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    problems = [_describe(e) for e in errors]
    if not problems:
        for check in SEMANTIC_CHECKS:
            problems += check(config)
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
    return config


def config_hash(config: dict) -> str:
    """A short, stable hash of the config (key order does not matter)."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


# ----------------------------------------------------------------------------- semantic checks
# Each takes the whole config and returns a list of problems, each naming its key.


def _check_encodings_fit(config: dict) -> list[str]:
    problems = []
    for section in ("equivariance",):
        cfg = config.get(section, {})
        d, h = cfg.get("d_model"), cfg.get("n_heads")
        if d and h and d % h:
            problems.append(f"config key {section}.d_model = {d}: not divisible by n_heads = {h}")
        elif d and h and (d // h) % 2:
            problems.append(
                f"config key {section}.d_model = {d}: head width d_model/n_heads = {d // h} "
                "must be even for RoPE"
            )
    return problems


def _check_similarity(config: dict) -> list[str]:
    """The seed's positions fit its table, one expected value per position, kernels fit RoPE."""
    cfg = config.get("similarity", {})
    problems = []
    seed = cfg.get("seed", {})
    n, others = seed.get("n_positions"), seed.get("others", [])
    for key, values in (("position", [seed.get("position")]), ("others", others)):
        if n and any(v is not None and v >= n for v in values):
            problems.append(
                f"config key similarity.seed.{key} = {seed.get(key)}: positions must be < "
                f"similarity.seed.n_positions = {n}"
            )
    if len(seed.get("expected", [])) != len(others):
        problems.append(
            f"config key similarity.seed.expected = {seed.get('expected')}: needs one value per "
            f"entry of similarity.seed.others = {others}"
        )
    kernels = cfg.get("kernels", {})
    d, h = kernels.get("d_model"), kernels.get("n_heads")
    if d and h and (d % h or (d // h) % 2):
        problems.append(
            f"config key similarity.kernels.d_model = {d}: must split into n_heads = {h} heads "
            "of even width (RoPE rotates pairs)"
        )
    window, n_kernel = cfg.get("window"), kernels.get("n_positions")
    if window and n_kernel and window >= n_kernel:
        problems.append(
            f"config key similarity.window = {window}: must be < similarity.kernels.n_positions "
            f"= {n_kernel}"
        )
    max_offset = cfg.get("max_offset")
    seed_offsets = [abs(j - seed["position"]) for j in others if seed.get("position") is not None]
    if max_offset and seed_offsets and max(seed_offsets) > max_offset:
        problems.append(
            f"config key similarity.max_offset = {max_offset}: must reach the seed's largest "
            f"offset |others - position| = {max(seed_offsets)}"
        )
    if window and cfg.get("max_offset") and window > cfg["max_offset"]:
        problems.append(
            f"config key similarity.window = {window}: must be <= similarity.max_offset = "
            f"{cfg['max_offset']}"
        )
    return problems


SEMANTIC_CHECKS: list[Callable[[dict], list[str]]] = [_check_encodings_fit, _check_similarity]
