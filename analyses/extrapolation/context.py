"""The effective context of every trained LM: its bits/char with the context cut to k characters
(:mod:`posenc.effective_context` scores them in the evaluation job), per encoding the mean over
seeds at each k with its interval, the rise from the full context, and the shortest k that
costs at most a margin; and where the full-context loss stands against the text's 4- and
5-gram on the same characters.

The models sit between the 4-gram and the 5-gram of their text, so "extrapolates" could mean
"uses far context" or "is robust to unseen positions while reading five characters": the
effective context, shown beside every length claim, says which.

Every k and every model scores the same target characters, and the n-grams score them too, so
every difference here is paired target by target: the intervals (:mod:`posenc.estimates`)
resample the seeds and the fragments of validation text the targets fall in, what a
difference shares cancelling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from posenc.estimates import Design, Estimate

from .rows import _encoding_index

# The unit set every context length, model and n-gram scores: one name, so that their
# estimates pair target by target.
UNITS = ("context",)
# The n-gram orders scored on the same targets: the 5-gram is what a model must beat to read
# more than four characters; the 4-gram, the rung below, is drawn beside it.
NGRAM_ORDERS = (4, 5)
DISTANCE_REFERENCE = "5-gram"


def ngram_target_bits(corpus, targets: Sequence[int], orders=NGRAM_ORDERS) -> dict[str, list]:
    """−log2 p of each target character of the validation text under the interpolated
    Kneser–Ney n-gram of each order (:class:`posenc.ngram.KneserNey`, counted on the training
    text as the ladder's are), given the n − 1 validation characters before it."""
    from posenc.ngram import KneserNey

    train, val = corpus.train.tolist(), corpus.val.tolist()
    out = {}
    for n in orders:
        model = KneserNey(train, n, corpus.vocab_size)
        out[f"{n}-gram"] = [
            -float(np.log2(model.probability(val[t - (n - 1) : t], val[t]))) for t in targets
        ]
    return out


def text_parts(corpus, lm_evals: list[dict]) -> dict[str, Any]:
    """What :func:`effective_context` reads from the text: the fragment of validation text
    holding each target the LMs scored (the same for every model:
    :func:`posenc.effective_context.context_targets`), and the n-grams' bits on those targets;
    empty when no LM was scored."""
    from posenc.effective_context import context_targets

    setup = _setup(lm_evals)
    if setup is None:
        return {}
    lengths, n_targets = setup
    targets = context_targets(len(corpus.val), max(lengths), n_targets).numpy()
    return {
        "fragments": corpus.fragment_of(targets),
        "ngram_bits": ngram_target_bits(corpus, targets.tolist()),
    }


def _setup(lm_evals: list[dict]) -> tuple[list[int], int] | None:
    """The context lengths and target count every LM was scored with; None when no record has
    them. Records scored otherwise would not pair: an error."""
    seen = {(tuple(e["context"]["lengths"]), e["context"]["targets"]) for e in _scored(lm_evals)}
    if not seen:
        return None
    if len(seen) > 1:
        raise ValueError(
            f"the LMs' effective context was scored with different lengths or targets: {seen}"
        )
    lengths, targets = seen.pop()
    return list(lengths), targets


def _scored(lm_evals: list[dict]) -> list[dict]:
    return [e for e in lm_evals if e.get("context")]


def effective_length(rises: dict[int, dict[str, float]], margin: float) -> int:
    """The shortest context length whose rise over the full context (an interval, bits/char)
    is at most ``margin`` over its whole interval; the full context's own rise is 0, so there
    is always one."""
    return min(k for k, rise in rises.items() if rise["high"] <= margin)


def effective_context(
    lm_evals: list[dict],
    *,
    level: float,
    margin: float,
    fragments: Sequence[Any] | None = None,
    ngram_bits: dict[str, Sequence[float]] | None = None,
) -> tuple[list[dict], dict[str, Any], dict[str, Any]]:
    """(rows, summary, evidence) of the LMs' effective context.

    ``fragments``: each target's fragment of text (None: each target its own); ``ngram_bits``:
    each n-gram's bits on the same targets (:func:`ngram_target_bits`); ``margin``: the
    config's ``effective_context_margin_bits``. Per encoding (registry order): the mean over
    seeds at each length [interval], its rise from the full context (the longest length), the
    effective context (:func:`effective_length`), and the full context's bits minus each
    n-gram's on the same targets. Nothing when no record was scored."""
    setup = _setup(lm_evals)
    if setup is None:
        return [], {}, {}
    lengths, n_targets = setup
    full = max(lengths)
    design = Design({UNITS: list(fragments)} if fragments is not None else None)
    references = {
        name: design.mean(np.array([bits]), seeds_of=("ngram", name), units_of=UNITS)
        for name, bits in (ngram_bits or {}).items()
    }
    by_encoding: dict[str, dict[int, list[float]]] = {}
    for ev in sorted(_scored(lm_evals), key=lambda e: e["seed"]):
        by_encoding.setdefault(ev["encoding"], {})[ev["seed"]] = ev["context"]["target_bits"]
    rows, per_encoding = [], {}
    for enc in sorted(by_encoding, key=_encoding_index):
        seeds = sorted(by_encoding[enc])
        means: dict[int, Estimate] = {
            k: design.mean(
                np.array([by_encoding[enc][s][str(k)] for s in seeds]),
                seeds_of=("lm", enc),
                units_of=UNITS,
                seed_ids=seeds,
            )
            for k in lengths
        }
        bits = {k: means[k].interval(level) for k in lengths}
        rise = {k: (means[k] - means[full]).interval(level) for k in lengths}
        minus = {name: (means[full] - r).interval(level) for name, r in references.items()}
        per_encoding[enc] = {
            "bits": {str(k): v for k, v in bits.items()},
            "rise": {str(k): v for k, v in rise.items()},
            "effective": effective_length(rise, margin),
            "full_minus": minus,
            "seeds": len(seeds),
        }
        rows += [
            {
                "kind": "model",
                "encoding": enc,
                "context": k,
                "bits_per_char": bits[k]["estimate"],
                "low": bits[k]["low"],
                "high": bits[k]["high"],
                "rise_from_full": rise[k]["estimate"],
                "rise_low": rise[k]["low"],
                "rise_high": rise[k]["high"],
                "effective_context": per_encoding[enc]["effective"],
                "seeds": len(seeds),
                "targets": n_targets,
            }
            for k in lengths
        ]
    # The n-grams on the same targets, each at the context it reads (n − 1 characters).
    rows += [
        {
            "kind": "n-gram",
            "encoding": name,
            "context": int(name.split("-")[0]) - 1,
            "bits_per_char": r.interval(level)["estimate"],
            "low": r.interval(level)["low"],
            "high": r.interval(level)["high"],
            "targets": n_targets,
        }
        for name, r in references.items()
    ]
    summary = {
        "lengths": lengths,
        "full": full,
        "targets": n_targets,
        "fragments": len(set(fragments)) if fragments is not None else n_targets,
        "margin": margin,
        "distance_reference": DISTANCE_REFERENCE,
        "references": {name: r.interval(level) for name, r in references.items()},
        "encodings": per_encoding,
    }
    evidence = {
        # The shortest context (characters) whose loss is within the margin of the full one's.
        "effective_context_chars": {e: v["effective"] for e, v in per_encoding.items()},
        # The full-context bits/char minus the 5-gram's on the same targets (negative: below
        # it, so the model reads more than four characters to some use).
        "full_context_minus_5gram": {
            e: v["full_minus"][DISTANCE_REFERENCE]
            for e, v in per_encoding.items()
            if DISTANCE_REFERENCE in v["full_minus"]
        },
    }
    return rows, summary, evidence
