"""Train short, test long: every model's evaluation and training log, aggregated.

Inputs are the per-model evaluation records (``workflow/scripts/evaluate_model.py``) and
training logs (``workflow/scripts/train_model.py``), listed by the spec's ``inputs``; nothing is
trained or evaluated here, so the report can change without touching a model.

Every mean comes with a Student-t interval (``posenc.estimates``) whose variance has a seed
part and a text part: over seeds, and over the fragments of validation text its evaluation
windows fall in (LM) or its test sequences (passkey).
Comparisons resample what they share jointly: a change with length is paired by window (mode
b scores the same windows at every length), a comparison of encodings by text. The claims read
these intervals, so a verdict rests on the whole interval. Where a model's own interval (its
windows only) does not overlap another seed's, the seeds disagree, and the tables show each.

Length evidence uses the ``segment`` scoring mode: the same tokens are scored at every length,
so a difference between lengths is the effect of context length alone (Press et al. 2022,
App. B). In-distribution parity and the train/validation gap use mode ``all`` at L_train.

The rows are in rows.py, the resampled scores in scores.py, the training logs' facts in
training.py, which models learned in learned.py, what the claims read in evidence.py; this module
gathers them. The modules measure; the claims (spec.py) judge. Encodings are told apart by what
the registry says of them (their context extensions, ``EncodingSpec.extensions``), never by
name.
"""

from collections.abc import Sequence
from typing import Any

from posenc import ngram
from posenc.analysis import Context, Measurements
from posenc.estimates import Design
from posenc.io import read_json

from .context import effective_context, text_parts
from .evidence import evidence
from .learned import lm_status, passkey_learners
from .mechanism import (
    flat_rows,
    logn_stretch_gain,
    mechanism,
    readout_clusters,
    readout_summary,
    stretch_clusters,
)
from .rows import _encoding_index, lm_table, memorisation_gaps, passkey_table
from .scores import Scores, series_of
from .training import file_split, late_change, training_curves, training_table
from .wavelengths import kept_wavelength_evidence, wavelength_rows

# Interval settings when a caller gives none (the config's extrapolation.intervals).
DEFAULT_INTERVALS = {"level": 0.95, "resamples": 2000}


def ngram_baselines(train: Sequence[int], val: Sequence[int], vocab_size: int) -> dict[str, float]:
    """Reference bits/char of the validation text, counted on the TRAINING text: the n-gram
    ladder of :mod:`posenc.ngram` (uniform; unigram and bigram with add-one smoothing;
    interpolated Kneser–Ney 3-, 4- and 5-grams)."""
    return ngram.ladder(train, val, vocab_size)


def corpus_baselines(data: dict) -> dict[str, float]:
    """:func:`ngram_baselines` of the corpus a training log describes (``data``: its path or
    None, validation fraction and SHA-256), split as the models' training split it."""
    from posenc.data import trained_corpus

    return baselines_of(trained_corpus(data))


def baselines_of(corpus) -> dict[str, float]:
    """:func:`ngram_baselines` of a loaded corpus, counted on its training split."""
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
    # The extension section's zero-shot stretch, where the config runs it: log-n's gain.
    stretched = [read_json(f) for f in ctx.inputs.get("stretch", [])]
    baselines, clusters, text, readout_units = None, None, {}, {}
    near_verbatim = None
    if lm_logs:
        from posenc.data import NEAR_VERBATIM, trained_corpus, verbatim_share

        corpus = trained_corpus(lm_logs[0]["data"])
        baselines = baselines_of(corpus)
        near_verbatim = {"width": NEAR_VERBATIM, "share": verbatim_share(corpus.train, corpus.val)}
        clusters = window_clusters(corpus, [e for e in evals if e["task"] == "lm"])
        readout_units = readout_clusters(corpus, [e for e in evals if e["task"] == "lm"])
        readout_units |= stretch_clusters(corpus, stretched)
        text = text_parts(corpus, [e for e in evals if e["task"] == "lm"])
    measured = aggregate(
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
        clusters=clusters,
        stretched=stretched,
        readout_units=readout_units,
        context_margin=ctx.cfg["thresholds"]["effective_context_margin_bits"],
        context_text=text,
    )
    # The share of validation characters inside a shorter verbatim repeat of training.
    measured.summary["near_verbatim"] = near_verbatim
    return measured


def scope_of(log: dict, seeds: list[int]) -> dict[str, Any]:
    """A task's models as the claims on them were measured: parameters, layers, heads and
    their width, the training length and the seeds."""
    model = log["model_config"]
    return {
        "task": log["task"],
        "parameters": log["n_params"],
        "layers": model["n_layers"],
        "heads": model["n_heads"],
        "head_width": model["d_model"] // model["n_heads"],
        "train_len": log["train_len"],
        "seeds": len(seeds),
    }


def window_clusters(corpus, lm_evals: list[dict]) -> dict[tuple, Any]:
    """Which fragment of validation text each scored window of the LMs' evaluations falls in,
    by the units' name in :class:`.scores.Scores` (mode b's windows, the same at every length,
    and mode a's at each length). Training-text windows stay units of their own."""
    from posenc.evaluate import window_fragments

    settings = lm_evals[0]["settings"]
    lengths = sorted({r["length"] for ev in lm_evals for r in ev["rows"] if r["split"] == "val"})
    common = {
        "longest": max(lengths),
        "tokens": settings["tokens"],
        "segment": settings["segment"],
        "windows": settings["segment_windows"],
    }
    clusters = {("segment",): window_fragments(corpus, "segment", max(lengths), **common)}
    for length in lengths:
        clusters["all", "val", length] = window_fragments(corpus, "all", length, **common)
    return clusters


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
    clusters: dict[tuple, Any] | None = None,
    stretched: list[dict] | None = None,
    readout_units: dict[tuple, Any] | None = None,
    context_margin: float | None = None,
    context_text: dict[str, Any] | None = None,
) -> Measurements:
    """The measurements from evaluation records and training logs (timings merged in);
    ``baselines`` are the corpus' reference bits/char (:func:`ngram_baselines`); ``intervals``
    the bootstrap's level and resamples, seeded by ``seed``; ``learned_at`` the exact match at
    1N from which a passkey seed has learned the task (the config's
    ``thresholds.passkey_min_accuracy``) and ``min_learners`` how many must have for an
    encoding to be judged (``thresholds.passkey_min_learners``). ``context_margin``
    (``thresholds.effective_context_margin_bits``; None: not measured) and ``context_text``
    (:func:`.context.text_parts`) give the LMs' effective context. ``stretched``: the
    extension section's zero-shot stretch records (log-n's gain); ``readout_units``: the
    fragments the readout's and the stretch's windows fall in (:mod:`.mechanism`)."""
    intervals = intervals or DEFAULT_INTERVALS
    design = Design(clusters)
    scores = Scores(evals, design, intervals["level"])
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
        # The tuning span, neither trained on nor scored: the recipe pilots' text.
        "tune_characters": corpus.get("tune_characters", 0),
        "tune_fraction_percent": round(100 * corpus.get("tune_fraction", 0.0), 1),
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
    # every seed stay in the tables. One design for both, so that intervals pair alike.
    learned = passkey_learners(passkey_evals, learned_at)
    learned_scores = Scores(
        [e for e in passkey_evals if e["seed"] in learned[e["encoding"]]],
        design,
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
        lm_parameters={t["encoding"]: t["n_params"] for t in train_logs if t["task"] == "lm"},
        train_characters=corpus.get("train_characters"),
    )
    # The scale the claims were measured at, set beside the cited papers' in the report.
    for task, key in (("lm", "scope"), ("passkey", "scope_passkey")):
        log = next((t for t in train_logs if t["task"] == task), None)
        if log is not None:
            ev[key] = scope_of(log, summary["seeds"].get(task, []))
    # The attention read out of the seeds the config names, ranked against the loss across
    # the encodings whose LMs learned (the whole margin interval above the threshold); and
    # log-n scaling's gain, from the extension section's stretch of every LM seed.
    margin = ev.get("lm_learned_margin", {})
    learned_lms = {e for e, r in margin.items() if r and r["low"] > learned_margin}
    readout_design = Design(readout_units)
    readout_rows, readout_ev = mechanism(
        lm_evals, learned_lms, readout_design, intervals["level"], seed
    )
    ev |= readout_ev
    ev |= logn_stretch_gain(stretched or [], readout_design, intervals["level"])
    # Which fragment of text each scored window falls in, for the sections that score the
    # same windows (the extension's zero-shot and fine-tuned evaluations).
    summary["window_fragments"] = {
        " ".join(map(str, key)): list(map(int, labels)) for key, labels in (clusters or {}).items()
    }
    summary |= readout_summary(lm_evals)
    # How much of its context each LM uses, and its full-context loss against the 5-gram's.
    context_rows: list[dict] = []
    if context_margin is not None:
        context_rows, summary["context"], context_ev = effective_context(
            lm_evals, level=intervals["level"], margin=context_margin, **(context_text or {})
        )
        ev |= context_ev
    # Memorisation needs a text read more than once: a model that stops within its first pass
    # has no later passes whose effect the growth measures.
    lm_train = [t for t in train_logs if t["task"] == "lm"]
    ev["repeated_passes"] = bool(lm_train) and all(
        t.get("first_epoch_step") is not None and t["first_epoch_step"] < t["log"]["steps"]
        for t in lm_train
    )
    ev["training_passes"] = (
        min(t["log"]["steps"] / t["first_epoch_step"] for t in lm_train)
        if lm_train and all(t.get("first_epoch_step") for t in lm_train)
        else None
    )
    # Each rotary LM's pairs against L_train: which meet angles training never showed.
    summary["wavelengths"] = wavelength_rows(train_logs)
    ev |= kept_wavelength_evidence(summary["wavelengths"], train_len)
    summary["max_gap_bits"] = max((g["gap_bits"] for g in summary["gaps"]), default=None)
    if corpus.get("files"):  # a text of whole files (python-stdlib): what the prose describes
        summary["file_split"] = file_split(corpus, lm_log)
    return Measurements(
        rows={
            "lm_bits": lm_rows,
            "passkey_accuracy": passkey_rows,
            "training_timing": training_table(train_logs),
            "mechanism": flat_rows(readout_rows),
            "context_bits": context_rows,
            "training_curves": training_curves(train_logs),  # the figure's, not written
        },
        evidence=ev,
        summary=summary,
    )
