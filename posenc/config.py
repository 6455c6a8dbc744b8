"""Config validation: a wrong key or value fails before any job runs, naming the key.

The schema (``config/schema.yaml`` for the shared keys, each analysis' own
``analyses/<id>/schema.yaml``, and the ``encoding:`` block generated from the hyper-parameters
each registered encoding declares, assembled by :func:`workflow_schema`) sets
``additionalProperties: false`` everywhere, so a misspelt key is an error rather than a
silently ignored setting. What a JSON schema cannot say (an evaluation length below the
training length, say) is checked by each analysis' spec (``AnalysisSpec.checks``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A config value the workflow cannot run with; the message names the key."""


# libyaml's loader where PyYAML has it: the schemas are read on every parse of the workflow,
# and the pure-Python loader spends a quarter of a no-op run on them.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(path: Path) -> Any:
    return yaml.load(path.read_text(), Loader=_LOADER)  # noqa: S506 -- a safe loader


ENCODING_NAME = "urn:posenc:encoding-name"  # $ref of an encoding name: the registry's enum


def workflow_schema(
    root: str | Path, analyses: list[str], encodings: Mapping[str, Mapping]
) -> dict:
    """The whole config's schema: ``config/schema.yaml`` (the shared keys), one property per
    analysis ``$ref``-ing ``analyses/<id>/schema.yaml``, and from the registry's metadata
    (``encodings``, ``{name: EncodingSpec.metadata()}``, plugins' included) the encoding
    names and one block of the ``encoding:`` key per encoding that declares hyper-parameters,
    its ``params`` schema: nothing here is a hand-kept copy."""
    root = Path(root).resolve()
    schema = _load(root / "config" / "schema.yaml")
    schema["$id"] = (root / "config" / "schema.yaml").as_uri()
    for name in analyses:
        schema["properties"][name] = {"$ref": (root / "analyses" / name / "schema.yaml").as_uri()}
    schema["properties"]["encoding"]["properties"] = {
        name: meta["params"] for name, meta in encodings.items() if meta.get("params")
    }
    schema["x-encodings"] = list(encodings)  # not a keyword: read by the $ref below
    return schema


def _validator(schema: dict):
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    def retrieve(uri: str) -> Resource:
        from urllib.parse import urlparse
        from urllib.request import url2pathname

        if uri == ENCODING_NAME:
            return Resource.from_contents(
                {"$schema": schema["$schema"], "enum": schema["x-encodings"]}
            )
        # Every schema file declares $schema.
        return Resource.from_contents(_load(Path(url2pathname(urlparse(uri).path))))

    registry = Registry(retrieve=retrieve).with_resource(
        schema["$id"], Resource.from_contents(schema)
    )
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


def validate_config(config: dict, schema: dict, checks=()) -> dict:
    """Raise :class:`ConfigError` listing every schema and semantic violation (the shared
    each analysis' own ``checks``)."""
    validator = _validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    problems = [_describe(e) for e in errors]
    if not problems:
        for check in checks:
            problems += check(config)
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
    return config


def config_hash(config: dict) -> str:
    """A short, stable hash of the config (key order does not matter)."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]
