"""Which models learned their task: an LM against an n-gram reference on the same text, a
passkey seed by its exact match at the training length."""

from typing import Any

from .rows import _encoding_index
from .training import LN2, tenth_change

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
