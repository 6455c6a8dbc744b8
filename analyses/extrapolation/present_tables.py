"""The extrapolation tables: one ``table_<id>(m, ctx)`` per table of the spec (``present.py``
hands them to the runner), each cell an estimate with its interval over seeds and evaluation
units, and the lookups of the summary's cells that the figures read too."""

from typing import Any

from posenc import ngram
from posenc.analysis import Context, Measurements
from posenc.claims import interval_text

# The corpus references drawn and tabulated: the n-gram ladder, weakest first.
BASELINES = ngram.LADDER


def cell(entry: dict[str, Any] | None, digits: int = 3) -> str:
    """A table cell: the estimate and its confidence interval over seeds and evaluation units,
    then each seed's own value where the seeds disagree; or 'undefined'."""
    text = interval_text(entry, digits)
    if entry and entry.get("seeds_disagree"):
        text += " seeds: " + ", ".join(f"{v:.{digits}f}" for v in entry["per_seed"].values())
    return text


def lm_cells(m: Measurements, split: str = "val") -> dict[tuple, dict | None]:
    """The summary's LM cells by (series, mode, multiplier); None where undefined."""
    cells = m.summary["lm"] if split == "val" else m.summary["lm_train"]
    return {(e["series"], e["mode"], e["multiplier"]): e if e["defined"] else None for e in cells}


def passkey_cells(m: Measurements) -> dict[tuple, dict | None]:
    return {
        (e["series"], e["multiplier"]): e if e["defined"] else None for e in m.summary["passkey"]
    }


def _bits_table(m: Measurements, mode: str):
    lm, s, train_len = lm_cells(m), m.summary, m.evidence["train_len"]
    columns = ["series", *[f"{k}x ({k * train_len})" for k in s["multipliers"]]]
    rows = [
        [
            series["name"] + (" (no fine-tuning)" if series["variant"] else ""),
            *[cell(lm.get((series["name"], mode, k))) for k in s["multipliers"]],
        ]
        for series in s["series"]
    ]

    # How many tokens each number rests on: per model, then times the seeds.
    def tokens_per_window(k):
        return s["segment"] if mode == "segment" else k * train_len

    scored = {
        e["multiplier"]: e["units_per_model"] * tokens_per_window(e["multiplier"])
        for e in s["lm"]
        if e["mode"] == mode and e["defined"]
    }
    rows.append(["tokens scored per model", *[scored.get(k, "—") for k in s["multipliers"]]])
    # The corpus reference points: one number per row, the same at every length.
    baselines = s.get("baselines", {})
    rows += [
        [name, *[f"{baselines[name]:.3f}"] * len(s["multipliers"])]
        for name in BASELINES
        if name in baselines
    ]
    return columns, rows


def table_segment(m: Measurements, ctx: Context):
    return _bits_table(m, "segment")


def table_all(m: Measurements, ctx: Context):
    return _bits_table(m, "all")


def table_passkey(m: Measurements, ctx: Context):
    passkey, s = passkey_cells(m), m.summary
    columns = [
        "encoding",
        *[f"{k}N ({k * s['passkey_train_len']})" for k in s["passkey_multipliers"]],
    ]
    rows = [
        [enc, *[cell(passkey.get((enc, k))) for k in s["passkey_multipliers"]]]
        for enc in s["passkey_encodings"]
    ]
    return columns, rows


def table_extensions(m: Measurements, ctx: Context):
    """Each context extension's gain over the plain model at every length past L_train."""
    s = m.summary
    lengths = [k for k in s["multipliers"] if k > 1]
    columns = ["extension", *[f"{k}x" for k in lengths]]
    rows = [
        [
            f"{enc} + {method.upper()} (no fine-tuning)",
            *[cell(gains.get(f"{k}x")) for k in lengths],
        ]
        for enc, methods in m.evidence["extension_gain"].items()
        for method, gains in methods.items()
    ]
    return columns, rows


def table_gap(m: Measurements, ctx: Context):
    val, train = lm_cells(m), lm_cells(m, "train")
    columns = ["encoding", "train bits/char", "validation bits/char", "gap", "gap per seed"]
    per_seed: dict[str, list[str]] = {}
    for g in m.summary["gaps"]:
        per_seed.setdefault(g["encoding"], []).append(f"{g['gap_bits']:.3f}")
    rows = [
        [
            enc,
            cell(train.get((enc, "all", 1))),
            cell(val.get((enc, "all", 1))),
            cell(gap),
            ", ".join(per_seed.get(enc, [])),
        ]
        for enc, gap in m.evidence["memorisation_gap"].items()
    ]
    return columns, rows


def table_training(m: Measurements, ctx: Context):
    columns = [
        "task",
        "encoding",
        "seed",
        "device",
        "params",
        "steps",
        "tokens/s",
        "wall s",
        "peak MB",
        "resumed from",
        "final loss (bits)",
    ]
    rows = [
        [
            t["task"],
            t["encoding"],
            t["seed"],
            t["device"],
            t["params"],
            t["steps"],
            round(t["tokens_per_s"]),
            round(t["wall_s"], 1),
            round(t["peak_memory_mb"]),
            t["resumed_from_step"],
            round(t["final_train_loss_bits"], 4),
        ]
        for t in m.rows["training_timing"]
    ]
    return columns, rows


def table_learned(m: Measurements, ctx: Context):
    """One row per LM (learned, plateaued) and per passkey encoding (its learners)."""
    columns = [
        "task",
        "model",
        "bits/char at L_train",
        "reference",
        "learned",
        "below 4-gram",
        "late fall",
        "plateaued",
    ]
    yes = {True: "yes", False: "no", None: "—"}
    rows = [
        [
            "lm",
            f"{r['encoding']} seed {r['seed']}",
            r["bits"],
            r["reference"],
            yes[r["learned"]],
            yes[r.get("beats_target")],
            r["late_fall_bits"],
            yes[r["plateaued"]],
        ]
        for r in m.summary.get("lm_status", [])
    ]
    seeds = m.summary.get("seeds", {}).get("passkey", [])
    for enc, learned in m.summary.get("passkey_learned_seeds", {}).items():
        # Which seeds learned, where any did ("0 of 1", not "0 of 1 (seeds none)").
        which = f" (seed{'s' * (len(learned) != 1)} {', '.join(map(str, learned))})"
        rows.append(
            [
                "passkey",
                enc,
                None,
                None,
                f"{len(learned)} of {len(seeds)}{which if learned else ''}",
                None,
                None,
                None,
            ]
        )
    return columns, rows
