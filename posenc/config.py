"""Config validation: a wrong key or value fails before any job runs, naming the key.

The schema (``config/schema.yaml``, with one ``$ref``'d file per analysis under
``config/schema/``) sets ``additionalProperties: false`` everywhere, so a misspelt key is an
error rather than a silently ignored setting. What a JSON schema cannot say (an evaluation
length below the training length, say) is checked by :data:`SEMANTIC_CHECKS`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _check_extrapolation(config: dict) -> list[str]:
    """Cross-field rules of the extrapolation section (the schema checks each field alone)."""
    cfg = config.get("extrapolation")
    if not cfg:
        return []
    problems = []
    model = cfg["model"]
    d, h = model["d_model"], model["n_heads"]
    if d % h or (d // h) % 2 or d // h <= 2:
        problems.append(
            f"config key extrapolation.model.d_model = {d}: must split into n_heads = {h} heads "
            "of even width > 2 (RoPE rotates pairs; NTK scaling divides by head_dim - 2)"
        )
    seq_len, t5_max = cfg["lm"]["seq_len"], config.get("encoding", {}).get("t5_max_distance")
    if t5_max and seq_len < t5_max:
        problems.append(
            f"config key extrapolation.lm.seq_len = {seq_len}: below encoding.t5_max_distance = "
            f"{t5_max}, so T5's far buckets would never be trained and T5 would look as bad as "
            "RoPE for the wrong reason (issue 4)"
        )
    for task in ("lm", "passkey"):
        multipliers = cfg[task]["eval"]["multipliers"]
        if 1 not in multipliers:
            problems.append(
                f"config key extrapolation.{task}.eval.multipliers = {multipliers}: must include "
                "1 (the training length, the reference for every comparison)"
            )
    if 2 not in cfg["lm"]["eval"]["multipliers"]:
        problems.append(
            f"config key extrapolation.lm.eval.multipliers = {cfg['lm']['eval']['multipliers']}: "
            "must include 2 (NTK scaling is claimed at 2x L_train)"
        )
    segment = cfg["lm"]["eval"]["segment"]
    if segment > seq_len:
        problems.append(
            f"config key extrapolation.lm.eval.segment = {segment}: must be <= "
            f"extrapolation.lm.seq_len = {seq_len} (the scored segment fits the shortest window)"
        )
    task = cfg["passkey"]["task"]
    if task["min_len"] > task["max_len"]:
        problems.append(
            f"config key extrapolation.passkey.task.min_len = {task['min_len']}: must be <= "
            f"extrapolation.passkey.task.max_len = {task['max_len']}"
        )
    corpus = cfg["corpus"]
    if corpus is not None and not Path(corpus).is_file():
        problems.append(f"config key extrapolation.corpus = {corpus!r}: no such file")
    return problems


SEMANTIC_CHECKS.append(_check_extrapolation)


def _check_numerics(config: dict) -> list[str]:
    """Cross-field rules of the rotation, aliasing and complexity sections."""
    problems = []
    rot = config.get("rotation")
    if rot:
        hand = rot["hand_trace"]
        if hand["from_position"] + hand["offset"] >= hand["n_positions"]:
            problems.append(
                f"config key rotation.hand_trace.from_position = {hand['from_position']}: plus "
                f"offset = {hand['offset']} must be < rotation.hand_trace.n_positions = "
                f"{hand['n_positions']} (the rotated position is a row of the table shown)"
            )
        if len(hand["article_target"]) != hand["d"]:
            problems.append(
                f"config key rotation.hand_trace.article_target = {hand['article_target']}: needs "
                f"rotation.hand_trace.d = {hand['d']} values"
            )
        widest = max(rot["d_values"])
        if rot["linear_map"]["n_train"] < widest:
            problems.append(
                f"config key rotation.linear_map.n_train = {rot['linear_map']['n_train']}: must be "
                f">= the widest rotation.d_values = {widest}, or the least-squares map of "
                "PE(p) -> PE(p+k) is not determined"
            )
    ali = config.get("aliasing")
    if ali:
        if ali["min_log2_len"] >= ali["max_log2_len"]:
            problems.append(
                f"config key aliasing.min_log2_len = {ali['min_log2_len']}: must be < "
                f"aliasing.max_log2_len = {ali['max_log2_len']}"
            )
        fit_min = ali["thresholds"]["angle_fit_min_position"]
        if 2 * fit_min >= 2 ** ali["max_log2_len"]:
            problems.append(
                f"config key aliasing.thresholds.angle_fit_min_position = {fit_min}: leaves fewer "
                f"than two octaves below 2^aliasing.max_log2_len to fit a slope"
            )
    cx = config.get("complexity")
    if cx:
        lengths = cx["lengths"]
        if lengths != sorted(lengths):
            problems.append(f"config key complexity.lengths = {lengths}: must be increasing")
        d, h = cx["d_model"], cx["n_heads"]
        if d % h or (d // h) % 2:
            problems.append(
                f"config key complexity.d_model = {d}: must split into n_heads = {h} heads of "
                "even width (RoPE rotates pairs)"
            )
        fitted = [n for n in lengths if cx["attention_fit_min_len"] <= n <= cx["attention_max_len"]]
        if len(fitted) < 2:
            problems.append(
                f"config key complexity.attention_fit_min_len = {cx['attention_fit_min_len']}: "
                "fewer than two complexity.lengths between it and complexity.attention_max_len "
                f"= {cx['attention_max_len']} to fit a slope"
            )
        if sum(n >= cx["encoding_fit_min_len"] for n in lengths) < 2:
            problems.append(
                f"config key complexity.encoding_fit_min_len = {cx['encoding_fit_min_len']}: "
                "fewer than two complexity.lengths at or above it to fit a slope"
            )
    return problems


SEMANTIC_CHECKS.append(_check_numerics)
