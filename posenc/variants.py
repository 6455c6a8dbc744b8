"""The trained models' names: a registry encoding, or an encoding with a training option.

Randomized positions (Ruoss et al. 2023) are a way to train and evaluate any encoding that
takes positions, not an encoding of their own: the model ``rope+randomized`` is RoPE trained
(and evaluated) on a sorted random subset of [0, L_rand) in place of 0..n-1. The config lists,
per task, which encodings get it (``extrapolation.randomized_positions``); each such encoding
is trained both ways, so the comparison is with the same encoding, seeds and data.

Torch-free: the workflow reads these names at parse time, as the paths of the models' jobs.
"""

from __future__ import annotations

import re

RANDOMIZED = "randomized"


def name_pattern(encodings: list[str]) -> str:
    """A regular expression matching every model name of ``encodings`` (a wildcard's)."""
    names = "|".join(map(re.escape, encodings))
    return rf"(?:{names})(?:\+{RANDOMIZED})?"


def model_name(encoding: str, randomized: bool = False) -> str:
    """The name a model is shown and stored under: ``rope`` or ``rope+randomized``."""
    return f"{encoding}+{RANDOMIZED}" if randomized else encoding


def split_model(name: str) -> tuple[str, bool]:
    """(registry encoding, whether its positions are randomized) of a model name."""
    base, plus, option = name.rpartition("+")
    if plus and option == RANDOMIZED:
        return base, True
    return name, False


def models(config: dict, task: str) -> list[str]:
    """Every model name ``task`` trains under ``config``, per seed: each listed encoding, then
    each one the config randomizes for the task."""
    randomized = config["extrapolation"].get("randomized_positions") or {}
    extra = (randomized.get("encodings") or {}).get(task, [])
    return [*config["encodings"], *(model_name(e, True) for e in extra)]


def stretched_lms(config: dict) -> list[str]:
    """The trained LMs the context-extension section stretches zero-shot (temperatures,
    LongRoPE's transplant): every encoding the extrapolation section trains, or those
    ``extension.stretch.encodings`` lists. Here because two analyses read it: the extension
    stretches them, and the extrapolation section judges log-n scaling on its stretch."""
    chosen = config["extension"]["stretch"]["encodings"]
    return list(config["encodings"]) if chosen == "all" else list(chosen)


def randomized_max_position(config: dict, name: str) -> int | None:
    """L_rand for model ``name`` (None: plain positions)."""
    if not split_model(name)[1]:
        return None
    return config["extrapolation"]["randomized_positions"]["max_position"]
