"""Algorithmic tasks with exact answers (Delétang et al. 2023's Chomsky-hierarchy tasks, as
Ruoss et al. 2023 train them), trained at lengths 1..N and tested to 8N with every configured
encoding and with randomized positions, held beside what Ruoss et al. report. Torch-free: read by
the workflow at parse time."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import yaml

from posenc import paths
from posenc.analyses.tasks.claims import CLAIMS
from posenc.analysis import AnalysisSpec, Figure, Resources, Table
from posenc.variants import model_name, split_model

PUBLISHED = Path(__file__).resolve().parent / "published.yaml"


def published() -> dict:
    """Ruoss et al.'s numbers or stated findings, with their exact source (published.yaml)."""
    return yaml.safe_load(PUBLISHED.read_text())


def encodings_of(config: dict) -> list[str]:
    """The configured encodings the section trains: all, or those of them that
    ``tasks.encodings`` lists (a name not configured is skipped, as a report card's config
    names fewer encodings; a name no encoding has is refused: :func:`check_registry`)."""
    asked = config["tasks"]["encodings"]
    return (
        list(config["encodings"])
        if asked == "all"
        else [e for e in config["encodings"] if e in asked]
    )


def randomized_of(config: dict) -> list[str]:
    """The encodings the section also trains with randomized positions: those of
    ``tasks.randomized`` it trains at all."""
    trained = encodings_of(config)
    return [e for e in config["tasks"]["randomized"] if e in trained]


def models_of(config: dict) -> list[str]:
    """The encodings the section trains, then their randomized variants it configures."""
    return [*encodings_of(config), *(model_name(e, True) for e in randomized_of(config))]


def in_published(config: dict, encoding: str) -> bool:
    """Whether Ruoss et al. trained the encoding (their names mapped to the registry's)."""
    return encoding in set(published()["encoding_map"].values())


def seeds_of(config: dict, model: str) -> list[int]:
    """All seeds for an encoding Ruoss et al. trained (and every randomized variant); the
    first ``absent_seeds`` for one they did not (the budget's order of cuts)."""
    cfg = config["tasks"]
    base, randomized = split_model(model)
    if randomized or in_published(config, base):
        return list(cfg["seeds"])
    return list(cfg["seeds"][: cfg["absent_seeds"]])


def run_settings(config: dict, model: str) -> dict:
    """All a run of ``model`` depends on; a plain model's settings do not name L_rand."""
    cfg = config["tasks"]
    base, randomized = split_model(model)
    settings = {
        "model": config["extrapolation"]["model"],
        "train": cfg["train"] | {"progress_interval_s": 1e9},
        "encoding": {base: config["encoding"].get(base, {})},
        "n": cfg["train_length"],
        "multipliers": cfg["test_multipliers"],
        "sequences": cfg["test_sequences"],
    }
    if randomized:
        settings["max_position"] = cfg["max_position"]
    return settings


def inputs(config: dict) -> dict[str, list[str]]:
    runs = [(t, m) for t in config["tasks"]["tasks"] for m in models_of(config)]
    return {
        "runs": [paths.TASK_RUN.format(task=t, model=m) for t, m in runs],
        "timings": [paths.TASK_TIMING.format(task=t, model=m) for t, m in runs],
    }


def check_config(config: dict) -> list[str]:
    cfg = config.get("tasks")
    if not cfg:
        return []
    from posenc.analyses.tasks.catalogue import MAX_DRAWS, SHAPES, input_space, sequence_length

    problems = []
    unknown = [t for t in cfg["tasks"] if t not in SHAPES]
    if unknown:
        problems.append(
            f"config key tasks.tasks: {', '.join(map(repr, unknown))} not a task "
            f"({', '.join(sorted(SHAPES))})"
        )
    multipliers = cfg["test_multipliers"]
    if 1 not in multipliers or max(multipliers) < 8:
        problems.append(
            f"config key tasks.test_multipliers = {multipliers}: must include 1 (the training "
            "length) and reach 8 (tests to 8N)"
        )
    if cfg["absent_seeds"] > len(cfg["seeds"]):
        problems.append(
            f"config key tasks.absent_seeds = {cfg['absent_seeds']}: more than the "
            f"{len(cfg['seeds'])} seeds of tasks.seeds"
        )
    if not unknown:
        # At N, the test scores sequences training never drew: there must be enough of them.
        n, train = cfg["train_length"], cfg["train"]
        drawn = train["steps"] * train["batch_size"] / n  # draws at length N, in expectation
        for task in cfg["tasks"]:
            space = input_space(task, n)
            unseen = math.exp(-drawn / space)  # the share of inputs training never drew
            if space * unseen < cfg["test_sequences"] or unseen < 2 / MAX_DRAWS:
                problems.append(
                    f"config key tasks.train_length = {n}: {task} has {space} inputs of length "
                    f"{n} and training draws about {drawn:.0f} there, too few left unseen for "
                    f"tasks.test_sequences = {cfg['test_sequences']}: raise tasks.train_length"
                )
    if not unknown and randomized_of(config):
        longest = max(
            sequence_length(t, cfg["train_length"] * max(multipliers)) for t in cfg["tasks"]
        )
        if cfg["max_position"] < longest:
            problems.append(
                f"config key tasks.max_position = {cfg['max_position']}: below the longest "
                f"test sequence ({longest} positions): randomized positions draw distinct ones"
            )
    return problems


def check_registry(config: dict, encodings: dict) -> list[str]:
    cfg = config.get("tasks")
    if not cfg:
        return []
    problems = []
    for key in ("encodings", "randomized"):
        unknown = [e for e in cfg[key] if e not in encodings] if cfg[key] != "all" else []
        if unknown:
            problems.append(
                f"config key tasks.{key}: {', '.join(map(repr, unknown))} not a registered "
                f"encoding ({', '.join(encodings)})"
            )
    return problems


SPEC = AnalysisSpec(
    id="tasks",
    title="Algorithmic tasks beside a published study",
    inputs=inputs,
    uses=("seed", "device", "encodings", "encoding", "extrapolation"),
    figures={
        "accuracy": Figure(
            "Per-token accuracy (teacher-forced argmax over the answer) against input length, "
            "one panel per task and one colour per encoding (dashed: randomized positions); "
            "trained on lengths 1 to {n} (grey line), tested to {longest}; line: mean over "
            "seeds, {test_sequences} fresh sequences per length and seed."
        ),
        "exact": Figure(
            "Exact match (every answer token right under greedy decoding) against input "
            "length, as the per-token figure.",
            placement="appendix",
        ),
    },
    tables={
        "learners": Table(
            "Per task and encoding: seeds whose exact match at the training length {n} "
            "reaches {thresholds[learned_exact]}, the exact match there (mean over seeds), and "
            "the per-token accuracy over the test lengths (above {n}): mean over seeds, and "
            "best seed.",
            csv="cells",
            placement="appendix",
        ),
        "randomized": Table(
            "Randomized positions against the same encoding's plain positions, per task: the "
            "per-token accuracy over the test lengths and at the training length, and their "
            "difference (mean over seeds).",
            csv="randomized",
            placement="appendix",
        ),
        "runs": Table(
            "Every run: task, model, seed, input length, exact match and per-token accuracy.",
            csv="runs",
            placement="appendix",
        ),
    },
    csvs=("runs", "cells", "randomized"),
    claims=CLAIMS,
    references=("ruoss2023", "deletang2023", "vaswani2017", "su2021", "press2022"),
    resources=Resources(threads=1, mem_mb=2000, runtime=10),
    checks=(check_config,),
    registry_checks=(check_registry,),
    encodings_of=encodings_of,
    # The published numbers are package data, not a rule input: their digest reruns the section.
    data=lambda config: {"published.yaml": hashlib.sha256(PUBLISHED.read_bytes()).hexdigest()},
)
