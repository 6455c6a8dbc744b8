"""Train short, test long: every model's evaluation and training log, aggregated.

Inputs are the per-model evaluation records (``workflow/scripts/evaluate_model.py``) and
training logs (``workflow/scripts/train_model.py``), listed by the spec's ``inputs``; nothing is
trained or evaluated here, so the report can change without touching a model.

Every mean comes with a confidence interval from a two-level bootstrap (``posenc.stats``): over
seeds, and within each model over its evaluation windows (LM) or test sequences (passkey).
Comparisons resample what they share jointly: a change with length is paired by window (mode
b scores the same windows at every length), a comparison of encodings by text. The claims read
these intervals, so a verdict rests on the whole interval. Where a model's own interval (its
windows only) does not overlap another seed's, the seeds disagree, and the tables show each.

Length evidence uses the ``segment`` scoring mode: the same tokens are scored at every length,
so a difference between lengths is the effect of context length alone (Press et al. 2022,
App. B). In-distribution parity and the train/validation gap use mode ``all`` at L_train.

This module measures; the claims (spec.py) judge. Encodings are told apart by what the registry
says of them (their context extensions, ``EncodingSpec.extensions``), never by name.
"""

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from posenc import ngram
from posenc.analysis import Context, Measurements
from posenc.encodings import REGISTRY
from posenc.io import read_json
from posenc.stats import Bootstrap, Resampled, disagree
from posenc.variants import split_model

LN2 = math.log(2)
# Interval settings when a caller gives none (the config's extrapolation.intervals).
DEFAULT_INTERVALS = {"level": 0.95, "resamples": 2000}


def series_name(encoding: str, method: str) -> str:
    """Curve name: the encoding, or ``<encoding>+PI`` / ``<encoding>+NTK`` for one of the
    context extensions the registry declares for it."""
    return encoding if method == "plain" else f"{encoding}+{method.upper()}"


def _encoding_index(name: str) -> tuple[int, bool]:
    """Registry order (built-ins, then plugins, as registered), unknown names last; a model
    with randomized positions right after its encoding's plain one."""
    base, randomized = split_model(name)
    names = list(REGISTRY)
    return (names.index(base) if base in names else len(names), randomized)


def lm_table(evals: list[dict]) -> list[dict[str, Any]]:
    """Tidy rows of every language-model evaluation (one per model, split, mode and length;
    the per-window values stay in the evaluation records)."""
    rows = []
    for ev in evals:
        if ev["task"] != "lm":
            continue
        for r in ev["rows"]:
            rows.append(
                {
                    "encoding": ev["encoding"],
                    "series": series_name(ev["encoding"], r["method"]),
                    "seed": ev["seed"],
                    "split": r["split"],
                    "mode": r["mode"],
                    "multiplier": r["multiplier"],
                    "length": r["length"],
                    "bits_per_char": r["bits_per_char"],
                    "defined": r["defined"],
                    "tokens_scored": r["tokens_scored"],
                    "windows": r["windows"],
                }
            )
    return rows


def passkey_table(evals: list[dict]) -> list[dict[str, Any]]:
    """Tidy rows of every passkey evaluation."""
    rows = []
    for ev in evals:
        if ev["task"] != "passkey":
            continue
        for r in ev["rows"]:
            rows.append(
                {
                    "encoding": ev["encoding"],
                    "seed": ev["seed"],
                    "multiplier": r["multiplier"],
                    "length": r["length"],
                    "accuracy": r["accuracy"],
                    "token_accuracy": r.get("token_accuracy"),
                    "defined": r["defined"],
                    "sequences": r["sequences"],
                    "key_len": r.get("key_len"),
                    "chance": ev["chance"],
                    "position_blind_bound": r.get("position_blind_bound"),
                }
            )
    return rows


def _units(ev: dict, r: dict) -> tuple[list[float] | None, tuple]:
    """One evaluation row's per-unit values and the name of the units they are measured on:
    the same name wherever the units are the same, so the bootstrap pairs them."""
    if ev["task"] == "lm":
        # Mode b scores the same windows at every length and for every model; mode a scores
        # tokens / L windows of the same text at length L for every model.
        units = ("segment",) if r["mode"] == "segment" else (r["mode"], r["split"], r["length"])
        return r.get("window_bits"), units
    return r.get("correct"), ("passkey", r["length"])


class Scores:
    """Every model's per-unit scores, by (task, series, split, mode, multiplier), resampled
    with one :class:`Bootstrap` so that every interval drawn from it is paired where the data
    are. A key whose models are undefined (a learned table past L_max) has no scores."""

    def __init__(self, evals: list[dict], bootstrap: Bootstrap, level: float):
        self.bootstrap, self.level = bootstrap, level
        groups: dict[tuple, dict] = defaultdict(lambda: {"seeds": {}, "defined": True})
        for ev in evals:
            for r in ev["rows"]:
                method = r.get("method", "plain")
                key = (
                    ev["task"],
                    series_name(ev["encoding"], method),
                    r.get("split", "val"),
                    r.get("mode", "all"),
                    r["multiplier"],
                )
                group = groups[key]
                group["encoding"] = ev["encoding"]
                values, group["units"] = _units(ev, r)
                if not r["defined"] or not values:
                    group["defined"] = False
                else:
                    group["seeds"][ev["seed"]] = values
        self.groups = dict(groups)
        self._resampled: dict[tuple, Resampled | None] = {}

    def get(self, task, series, mode, multiplier, split="val") -> Resampled | None:
        """The resampled mean over seeds and units; None where undefined or not evaluated."""
        key = (task, series, split, mode, multiplier)
        if key not in self._resampled:
            group = self.groups.get(key)
            if group is None or not group["defined"] or not group["seeds"]:
                self._resampled[key] = None
            else:
                values = np.array([group["seeds"][s] for s in sorted(group["seeds"])])
                self._resampled[key] = self.bootstrap.mean(
                    values, seeds_of=(task, group["encoding"]), units_of=group["units"]
                )
        return self._resampled[key]

    def interval(self, resampled: Resampled | None) -> dict[str, float] | None:
        return None if resampled is None else resampled.interval(self.level)

    def cell(self, key: tuple) -> dict[str, Any]:
        """What a table cell shows: the estimate and interval over seeds, each seed's mean
        and whether the seeds disagree (their own intervals do not overlap)."""
        task, series, split, mode, m = key
        group = self.groups[key]
        if not group["defined"] or not group["seeds"]:
            return {"defined": False}
        per_seed = {
            seed: self.bootstrap.within(np.array(values), group["units"]).interval(self.level)
            for seed, values in sorted(group["seeds"].items())
        }
        return {
            "defined": True,
            **self.interval(self.get(task, series, mode, m, split)),
            "per_seed": {str(seed): i["estimate"] for seed, i in per_seed.items()},
            "seeds_disagree": disagree(list(per_seed.values())),
            "n_seeds": len(per_seed),
            "units_per_model": len(next(iter(group["seeds"].values()))),
        }

    def cells(self, task: str) -> list[dict[str, Any]]:
        return [
            {"series": k[1], "split": k[2], "mode": k[3], "multiplier": k[4], **self.cell(k)}
            for k in sorted(
                (k for k in self.groups if k[0] == task),
                key=lambda k: (k[2], k[3], _encoding_index(self.groups[k]["encoding"]), k[1], k[4]),
            )
        ]


def training_table(train_logs: list[dict]) -> list[dict[str, Any]]:
    """Per model: device, throughput, wall time, peak memory, final loss (timings)."""
    rows = []
    for t in sorted(
        train_logs, key=lambda t: (t["task"], _encoding_index(t["encoding"]), t["seed"])
    ):
        log = t["log"]
        rows.append(
            {
                "task": t["task"],
                "encoding": t["encoding"],
                "seed": t["seed"],
                "device": t["device"],
                "params": t["n_params"],
                "steps": log["steps"],
                "tokens_per_s": log["tokens_per_s"],
                "wall_s": log["wall_s"],
                "peak_memory_mb": log["peak_memory_mb"],
                "peak_memory_kind": log["peak_memory_kind"],
                "resumed_from_step": log["resumed_from_step"],
                "final_train_loss_bits": t["final_train_loss_nats"] / LN2,
            }
        )
    return rows


def smooth(values: list[float], window: int) -> list[float]:
    """Trailing moving average over ``window`` steps (fewer at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def training_curves(train_logs: list[dict]) -> list[dict[str, Any]]:
    """Per task and encoding: the per-step training loss averaged over seeds, in bits (per
    character for the LM, per answer token for passkey: one unit throughout the report), and
    its moving average over a 50th of the run, one row per step."""
    runs: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    for t in train_logs:
        runs[(t["task"], t["encoding"])].append([x / LN2 for x in t["log"]["losses"]])
    rows = []
    for (task, enc), losses in sorted(
        runs.items(), key=lambda kv: (kv[0][0], _encoding_index(kv[0][1]))
    ):
        mean = [sum(v) / len(v) for v in zip(*losses)]
        smoothed = smooth(mean, max(1, len(mean) // 50))
        rows += [
            {"task": task, "encoding": enc, "step": i, "loss": x, "smoothed": s}
            for i, (x, s) in enumerate(zip(mean, smoothed), start=1)
        ]
    return rows


def late_change(train_logs: list[dict], fraction: float = 0.1) -> dict[str, dict[str, float]]:
    """Per task and encoding: the mean training loss (bits, mean over seeds) over the last
    ``fraction`` of the steps minus that over the ``fraction`` before it. Near zero: the curve
    has flattened; clearly negative: the models were still improving when training stopped."""
    runs: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    for t in train_logs:
        runs[(t["task"], t["encoding"])].append([x / LN2 for x in t["log"]["losses"]])
    out: dict[str, dict[str, float]] = {}
    for (task, enc), losses in sorted(runs.items(), key=lambda kv: _encoding_index(kv[0][1])):
        change = tenth_change([sum(v) / len(v) for v in zip(*losses)], fraction)
        if change is not None:
            out.setdefault(task, {})[enc] = change
    return out


def tenth_change(losses: list[float], fraction: float = 0.1) -> float | None:
    """The mean of the last ``fraction`` of ``losses`` minus that of the ``fraction`` before
    it (negative: still falling); None for a curve too short to have both."""
    n = max(1, int(len(losses) * fraction))
    if len(losses) < 2 * n:
        return None
    return sum(losses[-n:]) / n - sum(losses[-2 * n : -n]) / n


def evidence(
    scores: Scores,
    encodings: list[str],
    multipliers: list[int],
    passkey_multipliers: list[int],
    chance: float | None,
    train_len: int,
    passkey_encodings: list[str] | None = None,
    learned_scores: Scores | None = None,
    learners: dict[str, int] | None = None,
    references: dict[str, float] | None = None,
    min_learners: int = 0,
) -> dict[str, Any]:
    """The named values the claims read, per encoding where the claims name one; each is an
    interval (estimate and bounds), a measured number or a yes/no fact, never a verdict.
    ``encodings``: the LM's models, ``passkey_encodings`` the passkey task's (default: the
    same), randomized ones (``rope+randomized``) included.

    Passkey accuracies are means over the seeds that learned the task at N
    (``learned_scores``; all seeds without it), and ``learners`` counts them per encoding, for
    the claims' preconditions. ``references`` are the n-gram bits/char of the validation text:
    how far each LM is below :data:`LEARNED_REFERENCE` at L_train is whether it learned."""
    passkey_encodings = encodings if passkey_encodings is None else passkey_encodings
    learners = learners or {}
    references = references or {}
    passkey_scores = learned_scores or scores
    longest = max(multipliers)
    ci = scores.interval

    def bits(series, mode, m, split="val"):
        return scores.get("lm", series, mode, m, split)

    # In distribution (mode a at L_train): how far each encoding is behind the best one (by
    # its estimate), paired by text.
    at_train = {e: bits(e, "all", 1) for e in encodings if bits(e, "all", 1) is not None}
    best = min(at_train, key=lambda e: at_train[e].point)
    # Beyond L_train (mode b): the change from 1x to the longest length, paired by window,
    # and at the longest length how much lower one encoding's loss is than another's.
    one = {e: bits(e, "segment", 1) for e in encodings}
    far = {e: bits(e, "segment", longest) for e in encodings}
    defined_far = [e for e in encodings if one[e] is not None and far[e] is not None]
    curves = list(encodings) + [
        series_name(e, method)
        for e in encodings
        if e in REGISTRY
        for method in REGISTRY[e].extensions
    ]
    at_2x = {s: bits(s, "segment", 2) for s in curves} if 2 in multipliers else {}
    # At every length past L_train: how much each context extension the registry declares
    # lowers the plain model's loss (the whole curve, not one point).
    extension_gain = {
        e: {
            method: {
                f"{m}x": ci(bits(e, "segment", m) - bits(series_name(e, method), "segment", m))
                for m in multipliers
                if m > 1
                and bits(e, "segment", m) is not None
                and bits(series_name(e, method), "segment", m) is not None
            }
            for method in REGISTRY[e].extensions
        }
        for e in encodings
        if e in REGISTRY and REGISTRY[e].extensions
    }
    # Passkey: accuracy at 4N (the longest tested if 4N is not), the best encodings named (by
    # estimate); every encoding's accuracy at every length, for the claims that name one.
    at = 4 if 4 in passkey_multipliers else max(passkey_multipliers, default=None)

    def accuracy(e, m):
        return passkey_scores.get("passkey", e, "all", m)

    at_long = {e: accuracy(e, at) for e in passkey_encodings if accuracy(e, at) is not None}
    # The best among the encodings whose seeds learned the task often enough to judge
    # (``min_learners``); among all where none did, and the claim's precondition says so.
    judged = {
        e: r for e, r in at_long.items() if learners.get(e, min_learners) >= min_learners
    } or at_long
    top = max((r.point for r in judged.values()), default=None)
    best_long = [e for e, r in judged.items() if r.point == top]
    other_accuracies = {
        e: {
            f"{m}N": ci(accuracy(e, m))
            for m in passkey_multipliers
            if m <= at and accuracy(e, m) is not None and not (m == at and e in best_long)
        }
        for e in passkey_encodings
    }
    passkey_accuracy = {
        e: {f"{m}N": ci(accuracy(e, m)) for m in passkey_multipliers if accuracy(e, m)}
        for e in passkey_encodings
    }
    # Randomized positions: how much they raise the accuracy at passkey_at N over the same
    # encoding trained plainly (paired by test sequence), where both are defined.
    randomized_gain = {
        base: ci(at_long[e] - at_long[base])
        for e in passkey_encodings
        for base, randomized in [split_model(e)]
        if randomized and e in at_long and base in at_long
    }
    # Validation minus training bits/char at L_train (mode a), paired by seed: the mean gap
    # over an encoding's models, and the largest gap of any one of them.
    gap = {
        e: bits(e, "all", 1) - bits(e, "all", 1, "train")
        for e in encodings
        if bits(e, "all", 1) is not None and bits(e, "all", 1, "train") is not None
    }
    # What repeated passes over the training text added to that gap: the final model's gap
    # minus its own after one pass (same windows, paired), so that the text sampling, which
    # gives the gap alone an interval wider than any threshold of interest, cancels.
    first = {e: series_name(e, "first_epoch") for e in gap}
    gap_growth = {
        e: gap[e] - (bits(first[e], "all", 1) - bits(first[e], "all", 1, "train"))
        for e in gap
        if bits(first[e], "all", 1) is not None and bits(first[e], "all", 1, "train") is not None
    }
    reference = references.get(LEARNED_REFERENCE)
    learned_margin = (
        {e: ci(Resampled(reference - r.point, reference - r.draws)) for e, r in at_train.items()}
        if reference is not None
        else {}
    )
    # Retention: accuracy at kN over accuracy at 1N, over the same (learning) seeds and test
    # sequences resampled together.
    retention = {
        e: {
            f"{m}N": ci(Resampled(a.point / one_n.point, a.draws / one_n.draws))
            for m in passkey_multipliers
            if m > 1 and (a := accuracy(e, m)) is not None
        }
        for e in passkey_encodings
        if (one_n := accuracy(e, 1)) is not None and one_n.point > 0 and np.all(one_n.draws > 0)
    }
    return {
        "train_len": train_len,
        "longest": longest,
        # How far each LM's bits/char at L_train (mode a, mean over seeds) is below the
        # reference it must beat to have learned: positive, it learned.
        "lm_learned_margin": learned_margin,
        "learned_reference": LEARNED_REFERENCE if reference is not None else None,
        "passkey_learners": dict(learners),
        "passkey_best_learners": {e: learners[e] for e in best_long if e in learners},
        "passkey_retention": {e: r for e, r in retention.items() if r},
        # Randomized positions against the same encoding without: both must have learned.
        "randomized_pair_learners": {
            base: min(learners.get(e, 0), learners.get(base, 0))
            for e in passkey_encodings
            for base, randomized in [split_model(e)]
            if randomized and base in passkey_encodings
        },
        "parity_best": best,
        "parity_best_bits": ci(at_train[best]),
        "behind_best": {e: ci(r - at_train[best]) for e, r in at_train.items()},
        "defined_at_train": {e: bits(e, "segment", 1) is not None for e in encodings},
        "defined_beyond_train": {
            e: {f"{m}x": bits(e, "segment", m) is not None for m in multipliers if m > 1}
            for e in encodings
        },
        # Mode b at 1x, at the longest length and at 2x: the losses behind each difference.
        "bits_at_1x": {e: ci(r) for e, r in one.items() if r is not None},
        "bits_at_longest": {e: ci(r) for e, r in far.items() if r is not None},
        "bits_at_2x": {s: ci(r) for s, r in at_2x.items() if r is not None},
        "far_change": {e: ci(far[e] - one[e]) for e in defined_far},
        # How much less one encoding's loss rises from 1x to the longest length than another's.
        "far_change_lead": {
            a: {b: ci((far[b] - one[b]) - (far[a] - one[a])) for b in defined_far if b != a}
            for a in defined_far
        },
        "far_lead": {
            a: {b: ci(far[b] - far[a]) for b in defined_far if b != a} for a in defined_far
        },
        # The same lead at every length past L_train (mode b), by length: a claim judged at one
        # length shows the others beside it.
        "lead_by_length": {
            a: {
                b: {
                    f"{m}x": ci(bits(b, "segment", m) - bits(a, "segment", m))
                    for m in multipliers
                    if m > 1
                    and bits(a, "segment", m) is not None
                    and bits(b, "segment", m) is not None
                }
                for b in defined_far
                if b != a
            }
            for a in defined_far
        },
        # Mode a's change from 1x to the longest length: every token of longer windows, whose
        # early tokens get more context (Press et al. 2022, App. B), beside mode b's far_change
        # on the same scored tokens, where only the context before them grows.
        "far_change_all": {
            e: ci(bits(e, "all", longest) - bits(e, "all", 1))
            for e in encodings
            if bits(e, "all", 1) is not None and bits(e, "all", longest) is not None
        },
        "extension_gain": extension_gain,
        "passkey_at": at,
        "passkey_chance": chance,
        "passkey_best": best_long,
        "passkey_best_accuracy": {e: ci(at_long[e]) for e in best_long},
        "passkey_other_accuracies": {e: a for e, a in other_accuracies.items() if a},
        "passkey_accuracy": {e: a for e, a in passkey_accuracy.items() if a},
        "memorisation_gap": {e: ci(r) for e, r in gap.items()},
        "memorisation_growth": {e: ci(r) for e, r in gap_growth.items()},
        "randomized_gain": randomized_gain,
        "randomized_accuracy": {
            e: ci(at_long[e]) for e in passkey_encodings if split_model(e)[1] and e in at_long
        },
    }


def series_of(scores: Scores, encodings: list[str], multipliers: list[int]) -> list[dict]:
    """The curves to show: each encoding, then each context extension evaluated, with its
    place among its encoding's extensions (0 for the plain model) and whether it has no value
    past L_train."""
    found = {k[1] for k in scores.groups if k[0] == "lm"}
    plain = [(e, "plain", 0) for e in encodings]
    extended = [
        (e, method, i)
        for e in encodings
        if e in REGISTRY
        for i, method in enumerate(REGISTRY[e].extensions, start=1)
        if series_name(e, method) in found
    ]
    return [
        {
            "name": series_name(e, method),
            "encoding": e,
            "variant": variant,
            "randomized": split_model(e)[1],
            "undefined_beyond_train": any(
                ("lm", series_name(e, method), "val", "segment", m) in scores.groups
                and scores.get("lm", series_name(e, method), "segment", m) is None
                for m in multipliers
                if m > 1
            ),
        }
        for e, method, variant in plain + extended
    ]


def ngram_baselines(train: Sequence[int], val: Sequence[int], vocab_size: int) -> dict[str, float]:
    """Reference bits/char of the validation text, counted on the TRAINING text: the n-gram
    ladder of :mod:`posenc.ngram` (uniform; unigram and bigram with add-one smoothing;
    interpolated Kneser–Ney 3-, 4- and 5-grams)."""
    return ngram.ladder(train, val, vocab_size)


def corpus_baselines(data: dict) -> dict[str, float]:
    """:func:`ngram_baselines` of the corpus a training log describes (``data``: its path or
    None, validation fraction and SHA-256), split as the models' training split it."""
    from posenc.data import trained_corpus

    corpus = trained_corpus(data)
    return ngram_baselines(corpus.train.tolist(), corpus.val.tolist(), corpus.vocab_size)


def compute(ctx: Context) -> Measurements:
    """Tables, summaries and evidence from every model's evaluation and training log."""
    evals = [read_json(f) for f in ctx.inputs["evaluations"]]
    train_logs = [read_json(f) for f in ctx.inputs["train_logs"]]
    timings = {t["label"]: t for t in map(read_json, ctx.inputs["timings"])}
    for t in train_logs:
        t["log"].update(timings[t["log"]["label"]])
    ctx.log.info("%d evaluations, %d training logs", len(evals), len(train_logs))
    lm_logs = [t for t in train_logs if t["task"] == "lm"]
    baselines = corpus_baselines(lm_logs[0]["data"]) if lm_logs else None
    return aggregate(
        evals,
        train_logs,
        ctx.cfg["smoke_test"],
        baselines,
        ctx.cfg["intervals"],
        ctx.seed,
        learned_at=ctx.cfg["thresholds"]["passkey_min_accuracy"],
        min_learners=ctx.cfg["thresholds"]["passkey_min_learners"],
        learned_margin=ctx.cfg["thresholds"]["lm_learned_margin_bits"],
        plateau_bits=ctx.cfg["thresholds"]["plateau_bits"],
    )


# An LM has learned its task when its bits/char at L_train beat this reference, counted on the
# same training text and scored on the same validation text: a model no better than a trigram
# has used two characters of context, and says nothing about positions far away.
LEARNED_REFERENCE = "3-gram"
# What the training recipe aims for (every encoding but NoPE): shown per model, decides nothing.
TARGET_REFERENCE = "4-gram"


def passkey_learners(evals: list[dict], learned_at: float) -> dict[str, list[int]]:
    """Per passkey encoding, the seeds whose exact match at 1N is at least ``learned_at``:
    those that learned the task at the training length."""
    out: dict[str, list[int]] = {}
    for ev in evals:
        seeds = out.setdefault(ev["encoding"], [])  # every encoding listed, learners or not
        at_n = next((r for r in ev["rows"] if r["multiplier"] == 1 and r["defined"]), None)
        if at_n is not None and at_n["accuracy"] >= learned_at:
            seeds.append(ev["seed"])
    return {e: sorted(seeds) for e, seeds in out.items()}


def lm_status(
    rows: list[dict],
    train_logs: list[dict],
    references: dict[str, float],
    learned_margin: float,
    plateau_bits: float,
) -> list[dict[str, Any]]:
    """Per LM (encoding and seed): its validation bits/char at L_train (mode a), the n-gram
    reference it must beat by more than ``learned_margin`` to have learned
    (:data:`LEARNED_REFERENCE`) and whether it did, whether it beats :data:`TARGET_REFERENCE`
    too (what the recipe aims for), how much its training loss fell over the last tenth of the
    steps (bits/char) and whether that is under ``plateau_bits`` (plateaued)."""
    reference = references.get(LEARNED_REFERENCE)
    target = references.get(TARGET_REFERENCE)
    at_train = {
        (r["encoding"], r["seed"]): r["bits_per_char"]
        for r in rows
        if r["mode"] == "all"
        and r["multiplier"] == 1
        and r["split"] == "val"
        and r["series"] == r["encoding"]
    }
    out = []
    for t in sorted(
        (t for t in train_logs if t["task"] == "lm"),
        key=lambda t: (_encoding_index(t["encoding"]), t["seed"]),
    ):
        change = tenth_change([x / LN2 for x in t["log"]["losses"]])
        fell = None if change is None else -change
        bits = at_train.get((t["encoding"], t["seed"]))
        out.append(
            {
                "encoding": t["encoding"],
                "seed": t["seed"],
                "bits": bits,
                "reference": reference,
                "learned": (
                    None if bits is None or reference is None else reference - bits > learned_margin
                ),
                "target": target,
                "beats_target": None if bits is None or target is None else bits < target,
                "late_fall_bits": fell,
                "plateaued": None if fell is None else fell < plateau_bits,
            }
        )
    return out


def aggregate(
    evals: list[dict],
    train_logs: list[dict],
    smoke_test: bool,
    baselines: dict[str, float] | None = None,
    intervals: dict[str, Any] | None = None,
    seed: int = 0,
    learned_at: float = 0.9,
    min_learners: int = 0,
    *,
    learned_margin: float,
    plateau_bits: float,
) -> Measurements:
    """The measurements from evaluation records and training logs (timings merged in);
    ``baselines`` are the corpus' reference bits/char (:func:`ngram_baselines`); ``intervals``
    the bootstrap's level and resamples, seeded by ``seed``; ``learned_at`` the exact match at
    1N from which a passkey seed has learned the task (the config's
    ``thresholds.passkey_min_accuracy``) and ``min_learners`` how many must have for an
    encoding to be judged (``thresholds.passkey_min_learners``)."""
    intervals = intervals or DEFAULT_INTERVALS
    scores = Scores(evals, Bootstrap(intervals["resamples"], seed), intervals["level"])
    lm_rows, passkey_rows = lm_table(evals), passkey_table(evals)
    lm_evals = [e for e in evals if e["task"] == "lm"]
    passkey_evals = [e for e in evals if e["task"] == "passkey"]
    encodings = sorted({e["encoding"] for e in lm_evals}, key=_encoding_index)
    passkey_encodings = sorted({e["encoding"] for e in passkey_evals}, key=_encoding_index)
    multipliers = sorted({r["multiplier"] for r in lm_rows if r["split"] == "val"})
    passkey_multipliers = sorted({r["multiplier"] for r in passkey_rows})
    train_len = lm_evals[0]["train_len"]
    chance = passkey_evals[0]["chance"] if passkey_evals else None
    lm_log = next(t for t in train_logs if t["task"] == "lm")
    corpus = lm_log["data"]
    lm_cells = scores.cells("lm")
    summary = {
        "model": lm_log["model_config"],
        "corpus_name": corpus["corpus"] or "pydoc_data.topics",
        "corpus_characters": corpus["characters"],
        "val_fraction_percent": round(100 * corpus["val_fraction"], 1),
        "split_block": corpus.get("split_block"),
        "val_blocks": corpus.get("val_blocks"),
        # What was cut from validation because it repeats training text verbatim.
        "val_verbatim_removed": corpus.get("val_verbatim_removed", 0),
        "val_characters": corpus.get("val_characters"),
        "verbatim": corpus.get("verbatim"),
        "vocab_size": lm_log.get("vocab_size"),
        # Reference bits/char of the validation text: uniform, unigram, bigram.
        "baselines": baselines or {},
        "interval_percent": round(100 * intervals["level"], 1),
        "resamples": intervals["resamples"],
        # What the limitations paragraph names: the training steps and parameter count of
        # each task's models (every seed and encoding of a task trains as long), and how much
        # the training loss still fell over the last tenth of training.
        "training_steps": {t["task"]: t["log"]["steps"] for t in train_logs},
        "n_params": {
            task: {"min": min(counts), "max": max(counts)}
            for task in sorted({t["task"] for t in train_logs})
            for counts in [[t["n_params"] for t in train_logs if t["task"] == task]]
        },
        "late_change": late_change(train_logs),
        # The largest fall over the last tenth of training, per task (bits, negative: falling).
        "late_change_min": {
            task: min(by_encoding.values()) for task, by_encoding in late_change(train_logs).items()
        },
        "segment": lm_evals[0]["settings"]["segment"],
        "segment_windows": lm_evals[0]["settings"]["segment_windows"],
        "tokens": lm_evals[0]["settings"].get("tokens"),
        "checkpoint_every": lm_log["log"]["config"]["checkpoint_every"],
        "encodings": encodings,
        "passkey_encodings": passkey_encodings,
        # L_rand of the models trained with randomized positions (None: there are none).
        "randomized_max_position": max(
            (e["randomized_positions"] for e in evals if e.get("randomized_positions")),
            default=None,
        ),
        "series": series_of(scores, encodings, multipliers),
        "multipliers": multipliers,
        "passkey_multipliers": passkey_multipliers,
        "passkey_train_len": passkey_evals[0]["train_len"] if passkey_evals else None,
        "passkey_sequences": max((r["sequences"] for r in passkey_rows), default=None),
        # The task as trained (symbols, key length, lengths), and the most any predictor blind
        # to order can score at each length (exact match), beside chance.
        "passkey_task": next((t["data"] for t in train_logs if t["task"] == "passkey"), {}),
        "passkey_blind_bound": {
            f"{r['multiplier']}N": r["position_blind_bound"]
            for r in passkey_rows
            if r.get("position_blind_bound") is not None
        },
        "seeds": {
            task: sorted({e["seed"] for e in evals if e["task"] == task})
            for task in sorted({e["task"] for e in evals})
        },
        "smoke_test": smoke_test,
        "devices": sorted({e["device"] for e in evals} | {t["device"] for t in train_logs}),
        "lm": [c for c in lm_cells if c["split"] == "val"],
        "lm_train": [c for c in lm_cells if c["split"] == "train"],
        "passkey": scores.cells("passkey"),
        "gaps": memorisation_gaps(lm_rows),
    }
    # Passkey claims are decided on the seeds that learned the task at N; the raw means over
    # every seed stay in the tables. One bootstrap seed for both, so that intervals pair alike.
    learned = passkey_learners(passkey_evals, learned_at)
    learned_scores = Scores(
        [e for e in passkey_evals if e["seed"] in learned[e["encoding"]]],
        Bootstrap(intervals["resamples"], seed),
        intervals["level"],
    )
    summary["passkey_learned_seeds"] = {e: learned[e] for e in passkey_encodings}
    summary["passkey_learned_at"] = learned_at
    summary["passkey_min_learners"] = min_learners
    summary["plateau_bits"] = plateau_bits
    summary["lm_status"] = lm_status(
        lm_rows, train_logs, baselines or {}, learned_margin, plateau_bits
    )
    ev = evidence(
        scores,
        encodings,
        multipliers,
        passkey_multipliers,
        chance,
        train_len,
        passkey_encodings,
        learned_scores=learned_scores,
        learners={e: len(learned[e]) for e in passkey_encodings},
        references=baselines or {},
        min_learners=min_learners,
    )
    summary["max_gap_bits"] = max((g["gap_bits"] for g in summary["gaps"]), default=None)
    if corpus.get("files"):  # a text of whole files (python-stdlib): what the prose describes
        summary["file_split"] = file_split(corpus, lm_log)
    return Measurements(
        rows={
            "lm_bits": lm_rows,
            "passkey_accuracy": passkey_rows,
            "training_timing": training_table(train_logs),
            "training_curves": training_curves(train_logs),  # the figure's, not written
        },
        evidence=ev,
        summary=summary,
    )


def file_split(corpus: dict, lm_log: dict) -> dict[str, Any]:
    """A corpus split by whole files (``corpus``: a training log's data description): how many
    files, how many of them and what share of the characters validate, the CPython version
    whose library it is, and how many passes over the training text a model made."""
    train = lm_log["log"]["config"]
    tokens = lm_log["log"]["steps"] * train["batch_size"] * corpus["seq_len"]
    return {
        "files": corpus["files"],
        "val_files": corpus["val_files"],
        "val_characters": corpus["val_characters"],
        "val_characters_percent": round(100 * corpus["val_characters"] / corpus["characters"], 1),
        "python": corpus["python"],
        "training_passes": tokens / corpus["train_characters"],
    }


def memorisation_gaps(rows: list[dict]) -> list[dict[str, Any]]:
    """Per model: bits/char on training and validation text at L_train (mode all), and the gap."""
    at_train = {
        (r["encoding"], r["seed"], r["split"]): r["bits_per_char"]
        for r in rows
        if r["mode"] == "all" and r["multiplier"] == 1 and r["series"] == r["encoding"]
    }
    return [
        {
            "encoding": enc,
            "seed": seed,
            "train_bits": bits,
            "val_bits": at_train[(enc, seed, "val")],
            "gap_bits": at_train[(enc, seed, "val")] - bits,
        }
        for (enc, seed, split), bits in sorted(
            at_train.items(), key=lambda kv: (_encoding_index(kv[0][0]), kv[0][1])
        )
        if split == "train"
    ]
