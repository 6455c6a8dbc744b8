"""The tasks study's runs gathered into rows and the claims' evidence: who learned each task at
the training length, per-token accuracy over the test lengths (mean over seeds, and the best
seed, Ruoss et al.'s statistic), and randomized against plain positions.

This module measures; the claims (claims.py) judge.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import mean

from posenc.analyses.tasks.generators import task_of
from posenc.analyses.tasks.spec import published
from posenc.analysis import Context, Measurements
from posenc.tdist import t_quantile
from posenc.variants import model_name, split_model
from posenc.verdicts import interval


def t_interval(values: list[float], level: float) -> dict | None:
    """Mean and Student-t interval of ``values`` (None for none; a point for one)."""
    if not values:
        return None
    m = mean(values)
    if len(values) == 1:
        return interval(m, m, m)
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))
    se, df = sd / math.sqrt(len(values)), len(values) - 1
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return interval(m, m - half, m + half, se=se, df=df, level=level)


def seed_scores(run: dict) -> list[dict]:
    """Per seed: exact match at N, and per-token accuracy over the lengths above N."""
    out = []
    for s in run["seeds"]:
        at_n = next(r for r in s["by_length"] if r["length"] == run["n"])
        test = [r["token_accuracy"] for r in s["by_length"] if r["length"] > run["n"]]
        out.append(
            {
                "seed": s["seed"],
                "exact_at_n": at_n["exact_match"],
                "token_at_n": at_n["token_accuracy"],
                "test_token": mean(test),
                "test_exact": mean(
                    r["exact_match"] for r in s["by_length"] if r["length"] > run["n"]
                ),
            }
        )
    return out


def far(task: str) -> bool:
    """A task whose answer needs a specific far position (a copy, reversal or sort of the
    input), not a regular language's running state."""
    return task_of(task).level != "regular"


def compute(ctx: Context) -> Measurements:
    cfg, thr = ctx.cfg, ctx.cfg["thresholds"]
    level = cfg["interval_level"]
    runs = {}
    for path in ctx.inputs["runs"]:
        run = json.loads(Path(path).read_text())
        runs[run["task"], run["model"]] = run
    rows = {"runs": [], "cells": [], "randomized": []}
    learned, scores = {}, {}
    for (task, model), run in runs.items():
        seeds = seed_scores(run)
        scores[task, model] = seeds
        passed = sum(s["exact_at_n"] >= thr["learned_exact"] for s in seeds)
        learned[f"{model} on {task}"] = passed * 2 > len(seeds)
        for s in run["seeds"]:
            for r in s["by_length"]:
                rows["runs"].append({"task": task, "model": model, "seed": s["seed"], **r})
        rows["cells"].append(
            {
                "task": task,
                "model": model,
                "seeds": len(seeds),
                "seeds_learned": passed,
                "learned": learned[f"{model} on {task}"],
                "exact_at_n": mean(s["exact_at_n"] for s in seeds),
                "test_token_mean": mean(s["test_token"] for s in seeds),
                "test_token_best": max(s["test_token"] for s in seeds),
                "test_exact_mean": mean(s["test_exact"] for s in seeds),
            }
        )
    tasks = cfg["tasks"]
    # The encodings the section trained (tasks.encodings), as its runs name them.
    encodings = [m for t, m in runs if t == tasks[0] and not split_model(m)[1]]
    randomized = [split_model(m)[0] for t, m in runs if t == tasks[0] and split_model(m)[1]]
    share = {
        task: sum(learned[f"{e} on {task}"] for e in encodings) / len(encodings) for task in tasks
    }
    plain_far = {
        f"{e} on {t}": t_interval([s["test_token"] for s in scores[t, e]], level)
        for t in tasks
        if far(t)
        for e in encodings
    }
    gains, drops = [], {}
    for t in tasks:
        for e in randomized:
            plain, rand = scores[t, e], scores[t, model_name(e, True)]
            by_seed = {s["seed"]: s for s in plain}
            paired = [(by_seed[s["seed"]], s) for s in rand if s["seed"] in by_seed]
            gain = mean(r["test_token"] - p["test_token"] for p, r in paired)
            drop = [p["exact_at_n"] - r["exact_at_n"] for p, r in paired]
            both = learned[f"{e} on {t}"] and learned[f"{model_name(e, True)} on {t}"]
            if both:
                gains.append(gain)
            drops[f"{e} on {t}"] = t_interval(drop, level)
            rows["randomized"].append(
                {
                    "task": t,
                    "encoding": e,
                    "plain_test_token": mean(p["test_token"] for p, _ in paired),
                    "randomized_test_token": mean(r["test_token"] for _, r in paired),
                    "gain": gain,
                    "plain_exact_at_n": mean(p["exact_at_n"] for p, _ in paired),
                    "randomized_exact_at_n": mean(r["exact_at_n"] for _, r in paired),
                    "both_learned": both,
                }
            )
    model = ctx.config["extrapolation"]["model"]
    # The scale the claims were measured at, set beside the cited papers' in the report.
    scope = {
        "task": "tasks",
        "parameters": max(r["n_params"] for r in runs.values()),
        "layers": model["n_layers"],
        "heads": model["n_heads"],
        "head_width": model["d_model"] // model["n_heads"],
        "train_len": cfg["train_length"],
        "seeds": len(cfg["seeds"]),
    }
    evidence = {
        "learned": learned,
        "learner_share": share,
        "plain_far_test_accuracy": plain_far,
        "randomized_gain": t_interval(gains, level) if len(gains) > 1 else None,
        "randomized_cells": len(gains),
        "in_domain_drop": drops,
        "model_size": f"{model['n_layers']} layers, d_model {model['d_model']}",
        "scope": scope,
    }
    if evidence["randomized_gain"] is None:
        del evidence["randomized_gain"]  # too few cells: the claim's precondition says so
    summary = {
        "tasks": [
            {"task": t, "level": task_of(t).level, "far": far(t), "source": task_of(t).source}
            for t in tasks
        ],
        "models": [m for t, m in runs if t == tasks[0]],
        "randomized": randomized,
        "smoke_test": cfg["smoke_test"],
        "n": cfg["train_length"],
        "lengths": [cfg["train_length"] * k for k in sorted(cfg["test_multipliers"])],
        "steps": cfg["train"]["steps"],
        "batch_size": cfg["train"]["batch_size"],
        "longest": cfg["train_length"] * max(cfg["test_multipliers"]),
        "test_sequences": cfg["test_sequences"],
        "published": published(),
        "thresholds": thr,
    }
    return Measurements(rows=rows, evidence=evidence, summary=summary)
