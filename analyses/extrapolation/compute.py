"""Train short, test long: every model's evaluation and training log, aggregated.

Inputs are the per-model evaluation records (``workflow/scripts/evaluate_model.py``) and
training logs (``workflow/scripts/train_model.py``), listed by the spec's ``inputs``; nothing is
trained or evaluated here, so the report can change without touching a model. Seeds are
summarised by their mean and spread (half the min-max range).

Length evidence uses the ``segment`` scoring mode: the same tokens are scored at every length,
so a difference between lengths is the effect of context length alone (Press et al. 2022,
App. B). In-distribution parity and the train/validation gap use mode ``all`` at L_train.

This module measures; the claims (spec.py) judge. Encodings are told apart by what the registry
says of them (their context extensions, ``EncodingSpec.extensions``), never by name.
"""

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from posenc.analysis import Context, Measurements
from posenc.encodings import REGISTRY
from posenc.io import read_json

LN2 = math.log(2)


def series_name(encoding: str, method: str) -> str:
    """Curve name: the encoding, or ``<encoding>+PI`` / ``<encoding>+NTK`` for one of the
    context extensions the registry declares for it."""
    return encoding if method == "plain" else f"{encoding}+{method.upper()}"


def spread(values: list[float]) -> dict[str, Any]:
    """Mean, min, max and n over seeds."""
    return {
        "mean": sum(values) / len(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def lm_table(evals: list[dict]) -> list[dict[str, Any]]:
    """Tidy rows of every language-model evaluation."""
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
                }
            )
    return rows


def summarise_lm(rows: list[dict]) -> dict[tuple[str, str, int], dict | None]:
    """{(series, mode, multiplier): spread over seeds} on validation text; None where any seed
    is undefined (a learned table past L_max)."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in rows:
        if r["split"] == "val":
            groups[(r["series"], r["mode"], r["multiplier"])].append(r)
    return {
        key: spread([r["bits_per_char"] for r in group])
        if all(r["defined"] for r in group)
        else None
        for key, group in groups.items()
    }


def _encoding_index(name: str) -> int:
    """Registry order (built-ins, then plugins, as registered), unknown names last."""
    names = list(REGISTRY)
    return names.index(name) if name in names else len(names)


def _model_order(item) -> tuple:
    (enc, seed, _), _ = item
    return (_encoding_index(enc), seed)


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
        for (enc, seed, split), bits in sorted(at_train.items(), key=_model_order)
        if split == "train"
    ]


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
                    "defined": r["defined"],
                    "chance": ev["chance"],
                }
            )
    return rows


def summarise_passkey(rows: list[dict]) -> dict[tuple[str, int], dict | None]:
    """{(encoding, multiplier): spread over seeds}; None where any seed is undefined."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in rows:
        groups[(r["encoding"], r["multiplier"])].append(r)
    return {
        key: spread([r["accuracy"] for r in group]) if all(r["defined"] for r in group) else None
        for key, group in groups.items()
    }


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


def _mean(summary: dict, key) -> float | None:
    entry = summary.get(key)
    return None if entry is None else entry["mean"]


def _finite(x: float | None) -> bool:
    return isinstance(x, float) and math.isfinite(x)


def evidence(
    lm: dict,
    gaps: list[dict],
    passkey: dict,
    encodings: list[str],
    multipliers: list[int],
    passkey_multipliers: list[int],
    chance: float | None,
    train_len: int,
) -> dict[str, Any]:
    """The named values the claims read, per encoding where the claims name one; each is a
    measured number or a yes/no fact, never a verdict."""
    longest = max(multipliers)

    def bits(series, mode, m):
        return _mean(lm, (series, mode, m))

    # In distribution (mode all at L_train): how far each encoding is behind the best.
    at_train = {e: bits(e, "all", 1) for e in encodings if bits(e, "all", 1) is not None}
    best = min(at_train, key=at_train.get)
    # Beyond L_train (mode segment): the change from 1x to the longest length, and at the
    # longest length how much lower one encoding's loss is than another's.
    one = {e: bits(e, "segment", 1) for e in encodings}
    far = {e: bits(e, "segment", longest) for e in encodings}
    defined_far = [e for e in encodings if one[e] is not None and far[e] is not None]
    # Every curve at 2x (the plain models and each context extension evaluated): the losses
    # behind the extensions' gains.
    curves = list(encodings) + [
        series_name(e, method)
        for e in encodings
        if e in REGISTRY
        for method in REGISTRY[e].extensions
    ]
    at_2x = {s: bits(s, "segment", 2) for s in curves} if 2 in multipliers else {}
    # At 2x: how much each context extension the registry declares lowers the plain loss.
    extension_gain = {
        e: {
            method: bits(e, "segment", 2) - bits(series_name(e, method), "segment", 2)
            for method in REGISTRY[e].extensions
            if bits(e, "segment", 2) is not None
            and bits(series_name(e, method), "segment", 2) is not None
        }
        for e in encodings
        if e in REGISTRY and REGISTRY[e].extensions and 2 in multipliers
    }
    # Passkey: accuracy at 4N (the longest tested if 4N is not), the best encodings named.
    # Each accuracy up to that length appears once: the best encodings' at it (what the claim
    # reads) and every other one beside it.
    at = 4 if 4 in passkey_multipliers else max(passkey_multipliers, default=None)
    at_long = {e: _mean(passkey, (e, at)) for e in encodings}
    at_long = {e: v for e, v in at_long.items() if v is not None}
    top = max(at_long.values()) if at_long else None
    best_long = [e for e, v in at_long.items() if v == top]
    shown = [m for m in passkey_multipliers if at is not None and m <= at]
    accuracy = {e: {m: _mean(passkey, (e, m)) for m in shown} for e in encodings}
    other_accuracies = {
        e: {f"{m}N": v for m, v in a.items() if v is not None and not (m == at and e in best_long)}
        for e, a in accuracy.items()
    }
    worst_gap: dict[str, float] = {}
    for g in gaps:
        worst_gap[g["encoding"]] = max(worst_gap.get(g["encoding"], -math.inf), g["gap_bits"])
    return {
        "train_len": train_len,
        "longest": longest,
        "parity_best": best,
        "parity_best_bits": at_train[best],
        "behind_best": {e: v - at_train[best] for e, v in at_train.items()},
        "defined_at_train": {e: _finite(bits(e, "segment", 1)) for e in encodings},
        "defined_beyond_train": {
            e: {f"{m}x": _finite(bits(e, "segment", m)) for m in multipliers if m > 1}
            for e in encodings
        },
        # Mode b at 1x, at the longest length and at 2x: the losses behind each difference.
        "bits_at_1x": {e: v for e, v in one.items() if v is not None},
        "bits_at_longest": {e: v for e, v in far.items() if v is not None},
        "bits_at_2x": {s: v for s, v in at_2x.items() if v is not None},
        "far_change": {e: far[e] - one[e] for e in defined_far},
        "far_lead": {a: {b: far[b] - far[a] for b in defined_far if b != a} for a in defined_far},
        "extension_gain": extension_gain,
        "passkey_at": at,
        "passkey_chance": chance,
        "passkey_best": best_long,
        "passkey_best_accuracy": {e: at_long[e] for e in best_long},
        "passkey_other_accuracies": {e: a for e, a in other_accuracies.items() if a},
        "worst_gap": worst_gap,
    }


def series_of(lm: dict, encodings: list[str], multipliers: list[int]) -> list[dict[str, Any]]:
    """The curves to show: each encoding, then each context extension evaluated, with its
    place among its encoding's extensions (0 for the plain model) and whether it has no value
    past L_train."""
    found = {key[0] for key in lm}
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
            "undefined_beyond_train": any(
                (series_name(e, method), "segment", m) in lm
                and lm[(series_name(e, method), "segment", m)] is None
                for m in multipliers
                if m > 1
            ),
        }
        for e, method, variant in plain + extended
    ]


def ngram_baselines(train: Sequence[int], val: Sequence[int], vocab_size: int) -> dict[str, float]:
    """Reference bits/char of the validation text: what a model with no context (uniform), or
    one that counts single characters (unigram) or pairs (bigram) of the TRAINING text, scores.

    * uniform: log2 V, every one of the V characters equally likely;
    * unigram: p(c) = (n(c) + 1) / (N + V), n(c) the count of c among the N training characters;
    * bigram:  p(b | a) = (n(a b) + 1) / (n(a ·) + V), n(a ·) the number of training pairs that
      start with a;

    both with add-one (Laplace) smoothing, so a character or pair unseen in training still has
    a probability (Jurafsky & Martin, Speech and Language Processing, ch. 3). Each is the mean
    of -log2 p over every validation character; the first one's bigram context is the last
    training character, which precedes it in the (contiguous) text.
    """
    if not train or not val:
        raise ValueError("ngram_baselines needs a non-empty training and validation text")
    unigram, pairs = Counter(train), Counter(zip(train[:-1], train[1:]))
    starts = Counter(train[:-1])
    n, v = len(train), vocab_size
    uni = -sum(math.log2((unigram[c] + 1) / (n + v)) for c in val) / len(val)
    contexts = [train[-1], *val[:-1]]
    bi = -sum(
        math.log2((pairs[(a, b)] + 1) / (starts[a] + v)) for a, b in zip(contexts, val)
    ) / len(val)
    return {"uniform": math.log2(v), "unigram": uni, "bigram": bi}


def corpus_baselines(data: dict) -> dict[str, float]:
    """:func:`ngram_baselines` of the corpus a training log describes (``data``: its path or
    None, validation fraction and SHA-256), split as the models' training split it."""
    from posenc.data import load_corpus

    corpus = load_corpus(data["corpus"], data["val_fraction"])
    if corpus.sha256 != data["sha256"]:
        raise ValueError(
            f"corpus {data['corpus'] or 'pydoc_data.topics'} differs from the text the models "
            "trained on (SHA-256 mismatch): its baselines would describe another text"
        )
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
    return aggregate(evals, train_logs, ctx.cfg["smoke_test"], baselines)


def aggregate(
    evals: list[dict],
    train_logs: list[dict],
    smoke_test: bool,
    baselines: dict[str, float] | None = None,
) -> Measurements:
    """The measurements from evaluation records and training logs (timings merged in);
    ``baselines`` are the corpus' reference bits/char (:func:`ngram_baselines`)."""
    lm_rows, passkey_rows = lm_table(evals), passkey_table(evals)
    lm, passkey = summarise_lm(lm_rows), summarise_passkey(passkey_rows)
    lm_evals = [e for e in evals if e["task"] == "lm"]
    passkey_evals = [e for e in evals if e["task"] == "passkey"]
    encodings = sorted({e["encoding"] for e in evals}, key=_encoding_index)
    multipliers = sorted({r["multiplier"] for r in lm_rows if r["split"] == "val"})
    passkey_multipliers = sorted({r["multiplier"] for r in passkey_rows})
    train_len = lm_evals[0]["train_len"]
    gaps = memorisation_gaps(lm_rows)
    chance = passkey_evals[0]["chance"] if passkey_evals else None
    lm_log = next(t for t in train_logs if t["task"] == "lm")
    corpus = lm_log["data"]
    summary = {
        "model": lm_log["model_config"],
        "corpus_name": corpus["corpus"] or "pydoc_data.topics",
        "corpus_characters": corpus["characters"],
        "vocab_size": lm_log.get("vocab_size"),
        # Reference bits/char of the validation text: uniform, unigram, bigram.
        "baselines": baselines or {},
        # What the limitations paragraph names: the training steps and parameter count of
        # each task's models (every seed and encoding of a task trains as long).
        "training_steps": {t["task"]: t["log"]["steps"] for t in train_logs},
        "n_params": {
            task: {"min": min(counts), "max": max(counts)}
            for task in sorted({t["task"] for t in train_logs})
            for counts in [[t["n_params"] for t in train_logs if t["task"] == task]]
        },
        "train_fraction_percent": round(100 * (1 - corpus["val_fraction"]), 1),
        "segment": lm_evals[0]["settings"]["segment"],
        "segment_windows": lm_evals[0]["settings"]["segment_windows"],
        "checkpoint_every": lm_log["log"]["config"]["checkpoint_every"],
        "encodings": encodings,
        "series": series_of(lm, encodings, multipliers),
        "multipliers": multipliers,
        "passkey_multipliers": passkey_multipliers,
        "passkey_train_len": passkey_evals[0]["train_len"] if passkey_evals else None,
        "seeds": sorted({e["seed"] for e in evals}),
        "smoke_test": smoke_test,
        "devices": sorted({e["device"] for e in evals} | {t["device"] for t in train_logs}),
        "lm": [
            {"series": k[0], "mode": k[1], "multiplier": k[2], **(v or {"defined": False})}
            for k, v in sorted(lm.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2]))
        ],
        "passkey": [
            {"encoding": k[0], "multiplier": k[1], **(v or {"defined": False})}
            for k, v in sorted(passkey.items())
        ],
        "gaps": gaps,
        "max_gap_bits": max(g["gap_bits"] for g in gaps),
    }
    return Measurements(
        rows={
            "lm_bits": lm_rows,
            "passkey_accuracy": passkey_rows,
            "training_timing": training_table(train_logs),
            "training_curves": training_curves(train_logs),  # the figure's, not written
        },
        evidence=evidence(
            lm, gaps, passkey, encodings, multipliers, passkey_multipliers, chance, train_len
        ),
        summary=summary,
    )
