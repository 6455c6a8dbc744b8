"""Every model's evaluation records as tidy rows, and the order every table lists models in."""

from typing import Any

from posenc.encodings import REGISTRY
from posenc.variants import split_model


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
