"""The extrapolation analysis' evidence: the named values the claims read, each an interval,
a measured number or a yes/no fact, never a verdict."""

from typing import Any

import numpy as np

from posenc.encodings import REGISTRY
from posenc.estimates import Design
from posenc.variants import split_model

from .learned import LEARNED_REFERENCE
from .preconditions import CAPACITY_BITS_PER_PARAMETER, COLLAPSE_REFERENCE
from .rows import series_name
from .scores import Scores

# The passkey claim that names the best encoding chooses it on one half of the test sequences
# and judges it on the other, so that the sequences that favoured it by chance do not judge it:
# the sequences are split by position, even (choose) and odd (judge), which keeps both halves
# drawn alike from every stretch of the fixed test set.
CHOOSING_HALF, JUDGING_HALF = slice(0, None, 2), slice(1, None, 2)


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
    lm_parameters: dict[str, int] | None = None,
    train_characters: int | None = None,
) -> dict[str, Any]:
    """The named values the claims read, per encoding where the claims name one; each is an
    interval (estimate and bounds), a measured number or a yes/no fact, never a verdict.
    ``encodings``: the LM's models, ``passkey_encodings`` the passkey task's (default: the
    same), randomized ones (``rope+randomized``) included.

    Passkey accuracies are means over the seeds that learned the task at N
    (``learned_scores``; all seeds without it), and ``learners`` counts them per encoding, for
    the claims' preconditions. ``references`` are the n-gram bits/char of the validation text:
    how far each LM is below :data:`LEARNED_REFERENCE` at L_train is whether it beat a trigram,
    and where its interval lies wholly above :data:`COLLAPSE_REFERENCE` it has collapsed.
    ``lm_parameters`` (per LM encoding) and ``train_characters`` size what the LMs can store,
    for the memorisation claim; without them it has no evidence."""
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
    # Alive at a length past L_train: the whole bits/char interval (mode b) below the
    # unigram's, better than character frequencies alone, there and at every shorter length;
    # collapsed otherwise, from the first length where it is not on. An interval that merely
    # straddles the unigram (three seeds, each worse than it, can) is no comparator: beating
    # it can hardly fail, and fewer or noisier seeds would make more models "alive". So a
    # comparison is judged at the longest length where its comparator is alive (where it is
    # at none, the claim's precondition says so).
    unigram = references.get(COLLAPSE_REFERENCE)

    def collapse_flags(e: str) -> dict[int, bool]:
        flags, down = {}, False
        for m in sorted(multipliers):
            if m > 1 and (r := bits(e, "segment", m)) is not None:
                down = down or not ci(r)["high"] < unigram
                flags[m] = down
        return flags

    collapsed = {e: collapse_flags(e) for e in defined_far} if unigram is not None else {}

    def judged_at(a: str, b: str) -> int | None:
        """The longest length past L_train at which ``b`` is alive and ``a`` is
        defined; None where there is none."""
        return max(
            (m for m, down in collapsed.get(b, {}).items() if not down and m in collapsed[a]),
            default=None,
        )

    def uncollapsed(lead) -> dict[str, dict[str, dict[str, Any]]]:
        """``lead(a, b, m)`` for every pair, keyed by the length it is judged at."""
        return {
            a: {
                b: {f"{m}x": ci(lead(a, b, m))}
                for b in collapsed
                if b != a and (m := judged_at(a, b)) is not None
            }
            for a in collapsed
        }

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
    # Passkey: accuracy at 4N (the longest tested if 4N is not), the best encodings named
    # (chosen on held-out sequences, below); every encoding's accuracy at every length, for the
    # claims that name one.
    at = 4 if 4 in passkey_multipliers else max(passkey_multipliers, default=None)

    def accuracy(e, m):
        return passkey_scores.get("passkey", e, "all", m)

    at_long = {e: accuracy(e, at) for e in passkey_encodings if accuracy(e, at) is not None}
    # The best among the encodings whose seeds learned the task often enough to judge
    # (``min_learners``); among all where none did, and the claim's precondition says so. It
    # is chosen by its accuracy on the choosing half of the test sequences and judged on the
    # judging half (each seed's correct answers per sequence, as Scores groups them).
    candidates = [e for e in at_long if learners.get(e, min_learners) >= min_learners] or list(
        at_long
    )
    correct = {}  # encoding -> (seeds, (seeds, sequences) array of 1/0)
    for e in candidates:
        group = passkey_scores.groups[("passkey", series_name(e, "plain"), "val", "all", at)]
        seeds = sorted(group["seeds"])
        values = np.array([group["seeds"][s] for s in seeds], dtype=float)
        if values.shape[1] >= 2:  # a sequence to choose on and one to judge on
            correct[e] = seeds, values
    choosing = {e: float(v[:, CHOOSING_HALF].mean()) for e, (_, v) in correct.items()}
    top = max(choosing.values(), default=None)
    best_long = [e for e, x in choosing.items() if x == top]
    best_accuracy = {
        e: ci(
            Design().mean(  # test sequences are independent: each is its own unit
                correct[e][1][:, JUDGING_HALF],
                seeds_of=("passkey", e),
                units_of=("passkey", at, "judging half"),
                seed_ids=correct[e][0],
            )
        )
        for e in best_long
    }
    sequences = next((v.shape[1] for _, v in correct.values()), None)
    # Seeds that learned the task at N, of all an encoding was trained with: the passkey
    # claims average over the learners alone, and their statements say how many.
    trained: dict[str, set] = {}
    for key, group in scores.groups.items():
        if key[0] == "passkey":
            trained.setdefault(key[1], set()).update(group["seeds"])
    learned_of = {
        e: f"{learners[e]} of {len(trained[e])}"
        for e in passkey_encodings
        if e in learners and trained.get(e)
    }
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
        {e: ci(reference - r) for e, r in at_train.items()} if reference is not None else {}
    )
    # Retention: accuracy at kN over accuracy at 1N, over the same (learning) seeds and test
    # sequences (the delta method).
    retention = {
        e: {
            f"{m}N": ci(a.ratio(one_n))
            for m in passkey_multipliers
            if m > 1 and (a := accuracy(e, m)) is not None
        }
        for e in passkey_encodings
        if (one_n := accuracy(e, 1)) is not None and one_n.point > 0
    }
    # What the smallest LM can store per training character, were it all spent on the text.
    capacity = (
        CAPACITY_BITS_PER_PARAMETER * min(lm_parameters.values()) / train_characters
        if lm_parameters and train_characters
        else None
    )
    return {
        "train_len": train_len,
        "longest": longest,
        # How far each LM's bits/char at L_train (mode a, mean over seeds) is below the
        # reference it must beat to have learned: positive, it learned.
        "lm_learned_margin": learned_margin,
        "learned_reference": LEARNED_REFERENCE if reference is not None else None,
        "passkey_learners": dict(learners),
        "passkey_learned_of": learned_of,
        "passkey_best_learners": {e: learners[e] for e in best_long if e in learners},
        "passkey_best_learned_of": {e: learned_of[e] for e in best_long if e in learned_of},
        "passkey_retention": {e: r for e, r in retention.items() if r},
        # Randomized positions against the same encoding without: both must have learned.
        "randomized_pair_learners": {
            base: min(learners.get(e, 0), learners.get(base, 0))
            for e in passkey_encodings
            for base, randomized in [split_model(e)]
            if randomized and base in passkey_encodings
        },
        "randomized_pair_learned_of": {
            base: f"{min(learners.get(e, 0), learners.get(base, 0))} of "
            f"{min(len(trained.get(e, ())), len(trained.get(base, ())))}"
            for e in passkey_encodings
            for base, randomized in [split_model(e)]
            if randomized and base in passkey_encodings and learners
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
        # Where each LM has collapsed past L_train, whether it has not somewhere, and the two
        # comparisons at the longest length where the comparator (the inner key) has not,
        # keyed by that length.
        "collapse_reference": COLLAPSE_REFERENCE,
        "collapsed_at": {
            e: [f"{m}x" for m, down in by_length.items() if down]
            for e, by_length in collapsed.items()
        },
        "alive_past_train": {
            e: not all(by_length.values()) for e, by_length in collapsed.items() if by_length
        },
        "uncollapsed_lead": uncollapsed(
            lambda a, b, m: bits(b, "segment", m) - bits(a, "segment", m)
        ),
        "uncollapsed_change_lead": uncollapsed(
            lambda a, b, m: (bits(b, "segment", m) - one[b]) - (bits(a, "segment", m) - one[a])
        ),
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
        # The best's accuracy on the judging half, and every candidate's on the choosing half.
        "passkey_best_accuracy": best_accuracy,
        "passkey_selection_accuracy": choosing,
        **(
            {"passkey_selection_half": f"{len(range(sequences)[CHOOSING_HALF])} of {sequences}"}
            if sequences
            else {}
        ),
        "passkey_other_accuracies": {e: a for e, a in other_accuracies.items() if a},
        "passkey_accuracy": {e: a for e, a in passkey_accuracy.items() if a},
        "memorisation_gap": {e: ci(r) for e, r in gap.items()},
        "memorisation_growth": {e: ci(r) for e, r in gap_growth.items()},
        # What the smallest LM can store per training character (None: not given).
        **(
            {
                "memorisation_capacity": capacity,
                "capacity_bits_per_parameter": CAPACITY_BITS_PER_PARAMETER,
                "lm_parameters_min": min(lm_parameters.values()),
                "train_characters": train_characters,
            }
            if capacity is not None
            else {}
        ),
        "randomized_gain": randomized_gain,
        "randomized_accuracy": {
            e: ci(at_long[e]) for e in passkey_encodings if split_model(e)[1] and e in at_long
        },
    }
