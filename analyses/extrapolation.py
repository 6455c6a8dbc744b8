"""Train short, test long: aggregate every model's evaluation into figures, tables and claims.

Inputs are the per-model evaluation records (``analyses/evaluate.py``) and training logs
(``analyses/train.py``); nothing is trained or evaluated here, so the report can change without
touching a model. Seeds are summarised by their mean and spread (half the min-max range).

Length claims use the ``segment`` scoring mode: the same tokens are scored at every length, so a
difference between lengths is the effect of context length alone (Press et al. 2022, App. B).
In-distribution parity and the train/validation gap use mode ``all`` at L_train.
"""

import math
from collections import defaultdict
from typing import Any

from posenc.claims import claim
from posenc.encodings import ENCODINGS
from posenc.io import read_json, save_figure, write_csv, write_json
from posenc.workflow import setup

SECTION = "extrapolation"
LN2 = math.log(2)
PAPER = "Press et al. 2022 (ALiBi), Table 2"
EXTENSION_LABELS = {"pi": "rope+PI", "ntk": "rope+NTK"}
SMOKE = " (smoke test: checks plumbing, not science)"


def series_name(encoding: str, method: str) -> str:
    """Curve name: the encoding, or rope+PI / rope+NTK for RoPE's context extensions."""
    return encoding if method == "plain" else EXTENSION_LABELS[method]


def spread(values: list[float]) -> dict[str, Any]:
    """Mean, min, max and n over seeds."""
    return {
        "mean": sum(values) / len(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def cell(summary: dict[str, Any] | None, digits: int = 3) -> str:
    """A table cell: mean ± half range over seeds, or 'undefined'."""
    if summary is None:
        return "undefined"
    if summary["n"] == 1:
        return f"{summary['mean']:.{digits}f}"
    half = (summary["max"] - summary["min"]) / 2
    return f"{summary['mean']:.{digits}f} ± {half:.{digits}f}"


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
                "final_train_loss_nats": t["final_train_loss_nats"],
            }
        )
    return rows


def _encoding_index(name: str) -> int:
    return ENCODINGS.index(name) if name in ENCODINGS else len(ENCODINGS)


def _model_order(item) -> tuple:
    (enc, seed, _), _ = item
    return (_encoding_index(enc), seed)


def _mean(summary, key) -> float | None:
    entry = summary.get(key)
    return None if entry is None else entry["mean"]


def make_claims(
    lm: dict,
    gaps: list[dict],
    passkey: dict,
    encodings: list[str],
    multipliers: list[int],
    passkey_multipliers: list[int],
    chance: float | None,
    thresholds: dict,
    smoke_test: bool,
    train_len: int,
) -> list[dict[str, Any]]:
    """Every extrapolation claim, with its numbers and a verdict from ``thresholds``.

    In a smoke test (a few dozen training steps) the numbers are shown but the machine-learning
    verdicts are "n/a": such a run tests the plumbing, not the science. A claim whose encoding is
    not in this run is "n/a" too.
    """
    th, longest = thresholds, max(multipliers)
    note = SMOKE if smoke_test else ""

    def verdict(ok: bool | None) -> bool | None:
        return None if smoke_test or ok is None else bool(ok)

    def bits(series, mode, m):
        return _mean(lm, (series, mode, m))

    def have(*names):
        return all(n in encodings for n in names)

    out = []

    # In-distribution parity: at L_train every encoding within a margin of the best.
    at_train = {e: bits(e, "all", 1) for e in encodings}
    best = min(at_train, key=at_train.get)
    behind = {e: v - at_train[best] for e, v in at_train.items()}
    out.append(
        claim(
            "extrapolation.in_distribution_parity",
            f"At L_train = {train_len} every encoding's validation loss is within "
            f"{th['parity_margin_bits']} bits/char of the best ({best}){note}",
            {"best": best, "best bits/char": at_train[best], "behind best": behind},
            "all encodings about equal in distribution (20.05, 20.07, 19.65, 19.73 ppl)",
            verdict(max(behind.values()) <= th["parity_margin_bits"]),
            PAPER,
            SECTION,
        )
    )

    # Learned: defined at L_train, explicitly undefined at every longer length.
    if have("learned"):
        cells, undefined = {}, []
        for m in multipliers:
            key = ("learned", "segment", m)
            cells[f"{m}x"] = "undefined" if key in lm and lm[key] is None else _mean(lm, key)
            undefined.append(cells[f"{m}x"] == "undefined")
        one = cells[f"{multipliers[0]}x"]
        passed = (
            multipliers[0] == 1
            and isinstance(one, float)
            and math.isfinite(one)
            and all(undefined[1:])
        )
    else:
        cells, passed = {"learned": "not in this run"}, None
    out.append(
        claim(
            "extrapolation.learned_undefined_beyond_lmax",
            "A learned table of L_max = L_train rows gives a loss at L_train and reports every "
            "longer length as undefined (no rows beyond L_max), not a crash and not a number",
            cells,
            "undefined past L_max",
            passed,
            "issue 4; Devlin et al. 2019 (absolute learned positions)",
            SECTION,
        )
    )

    # Degradation of sinusoidal and RoPE: loss rises when evaluated far beyond L_train.
    for enc, paper in (("sinusoidal", "20.05 -> 406 ppl at 30x"), ("rope", "20.07 -> 79.3 ppl")):
        if have(enc):
            one, far = bits(enc, "segment", 1), bits(enc, "segment", longest)
            measured = {"1x": one, f"{longest}x": far, "increase": far - one}
            passed = verdict(far - one >= th["degrade_min_bits"])
        else:
            measured, passed = {enc: "not in this run"}, None
        out.append(
            claim(
                f"extrapolation.{enc}_degrades",
                f"{enc} degrades beyond L_train: bits/char on the same scored tokens rise by at "
                f"least {th['degrade_min_bits']} from 1x to {longest}x L_train{note}",
                measured,
                f"large degradation ({paper})",
                passed,
                PAPER,
                SECTION,
            )
        )

    # ALiBi stays flat (or improves) at long lengths.
    if have("alibi"):
        one, far = bits("alibi", "segment", 1), bits("alibi", "segment", longest)
        measured = {"1x": one, f"{longest}x": far, "change": far - one}
        passed = verdict(far - one <= th["alibi_flat_margin_bits"])
    else:
        measured, passed = {"alibi": "not in this run"}, None
    out.append(
        claim(
            "extrapolation.alibi_flat",
            f"ALiBi at {longest}x L_train is within {th['alibi_flat_margin_bits']} bits/char of "
            f"ALiBi at 1x (or better), on the same scored tokens{note}",
            measured,
            "flat or better (19.73 -> 18.31 ppl)",
            passed,
            PAPER,
            SECTION,
        )
    )

    if have("alibi", "sinusoidal"):
        a, s = bits("alibi", "segment", longest), bits("sinusoidal", "segment", longest)
        measured = {"alibi": a, "sinusoidal": s, "advantage": s - a}
        passed = verdict(s - a > th["alibi_beats_margin_bits"])
    else:
        measured, passed = {"alibi, sinusoidal": "not both in this run"}, None
    out.append(
        claim(
            "extrapolation.alibi_beats_sinusoidal_long",
            f"At {longest}x L_train ALiBi's loss is lower than sinusoidal's by more than "
            f"{th['alibi_beats_margin_bits']} bits/char{note}",
            measured,
            "ALiBi far better (18.31 vs 406 ppl)",
            passed,
            PAPER,
            SECTION,
        )
    )

    if have("rope") and 2 in multipliers:
        plain, ntk = bits("rope", "segment", 2), bits("rope+NTK", "segment", 2)
        pi = bits("rope+PI", "segment", 2)
        measured = {"rope": plain, "rope+NTK": ntk, "rope+PI": pi, "NTK gain": plain - ntk}
        passed = verdict(plain - ntk > th["ntk_gain_bits"])
    else:
        measured, passed = {"rope": "not in this run"}, None
    out.append(
        claim(
            "extrapolation.ntk_helps_rope",
            "NTK-aware base scaling (no fine-tuning) lowers RoPE's loss at 2x L_train by more than "
            f"{th['ntk_gain_bits']} bits/char{note}",
            measured,
            "lower loss with NTK scaling than without",
            passed,
            "bloc97 2023; Peng et al. 2023 (YaRN) §3.1",
            SECTION,
        )
    )

    # Synthetic passkey: accuracy at 2N and 4N (the lengths; the longest tested if 4N
    # is not), with the best encoding named (every one tied for best).
    at = 4 if 4 in passkey_multipliers else max(passkey_multipliers)
    shown = [m for m in passkey_multipliers if m <= at]
    acc = {e: {f"{m}N": _mean(passkey, (e, m)) for m in shown} for e in encodings}
    at_long = {e: a[f"{at}N"] for e, a in acc.items() if a[f"{at}N"] is not None}
    top = max(at_long.values()) if at_long else None
    best = [e for e, v in at_long.items() if v == top]
    measured = {
        e: {k: ("undefined" if v is None else v) for k, v in a.items()} for e, a in acc.items()
    }
    measured["best"] = ", ".join(best) or "none defined"
    measured["chance"] = chance
    out.append(
        claim(
            "extrapolation.synthetic_length_generalization",
            f"On passkey retrieval trained on lengths up to N, the best encoding "
            f"({measured['best']}) keeps exact-match accuracy of at least "
            f"{th['passkey_min_accuracy']} at {at}N{note}",
            measured,
            "some encodings generalise; NoPE competitive (Kazemnejad et al. 2023)",
            verdict(top is not None and top >= th["passkey_min_accuracy"]),
            "Kazemnejad et al. 2023; Mohtashami & Jaggi 2023",
            SECTION,
        )
    )

    worst = {}
    for g in gaps:
        worst[g["encoding"]] = max(worst.get(g["encoding"], -math.inf), g["gap_bits"])
    out.append(
        claim(
            "extrapolation.no_memorisation",
            "No model memorised its training text: validation minus training bits/char at "
            f"L_train is at most {th['memorisation_gap_bits']} for every model (largest gap per "
            "encoding shown)"
            f"{note}",
            worst,
            "a small gap: extrapolation numbers mean something only if the model generalises",
            verdict(max(worst.values()) <= th["memorisation_gap_bits"]),
            "issue 4",
            SECTION,
        )
    )
    return out


def compute(
    evals: list[dict], train_logs: list[dict], thresholds: dict, smoke_test: bool
) -> dict[str, Any]:
    """Tables, summaries and claims from every model's evaluation and training log."""
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
    claims = make_claims(
        lm,
        gaps,
        passkey,
        encodings,
        multipliers,
        passkey_multipliers,
        chance,
        thresholds,
        smoke_test,
        train_len,
    )
    series = [e for e in encodings] + [
        EXTENSION_LABELS[m]
        for m in EXTENSION_LABELS
        if any(k[0] == EXTENSION_LABELS[m] for k in lm)
    ]
    tables = {
        mode: {
            "columns": ["series", *[f"{m}x ({m * train_len})" for m in multipliers]],
            "rows": [[s, *[cell(lm.get((s, mode, m))) for m in multipliers]] for s in series],
        }
        for mode in ("segment", "all")
    }
    tables["passkey"] = {
        "columns": [
            "encoding",
            *[f"{m}N ({m * passkey_evals[0]['train_len']})" for m in passkey_multipliers],
        ],
        "rows": [[e, *[cell(passkey.get((e, m))) for m in passkey_multipliers]] for e in encodings],
    }
    tables["gap"] = {
        "columns": ["encoding", "seed", "train bits/char", "validation bits/char", "gap"],
        "rows": [
            [
                g["encoding"],
                g["seed"],
                round(g["train_bits"], 4),
                round(g["val_bits"], 4),
                round(g["gap_bits"], 4),
            ]
            for g in gaps
        ],
    }
    training = training_table(train_logs)
    tables["training"] = {
        "columns": [
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
            "final loss (nats)",
        ],
        "rows": [
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
                round(t["final_train_loss_nats"], 4),
            ]
            for t in training
        ],
    }
    lm_log = next(t for t in train_logs if t["task"] == "lm")
    corpus = lm_log["data"]
    return {
        "model": lm_log["model_config"],
        "corpus_name": corpus["corpus"] or "pydoc_data.topics",
        "corpus_characters": corpus["characters"],
        "train_fraction_percent": round(100 * (1 - corpus["val_fraction"]), 1),
        "segment": lm_evals[0]["settings"]["segment"],
        "segment_windows": lm_evals[0]["settings"]["segment_windows"],
        "checkpoint_every": lm_log["log"]["config"]["checkpoint_every"],
        "encodings": encodings,
        "multipliers": multipliers,
        "passkey_multipliers": passkey_multipliers,
        "train_len": train_len,
        "passkey_train_len": passkey_evals[0]["train_len"] if passkey_evals else None,
        "passkey_chance": chance,
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
        "claims": claims,
        "tables": tables,
        "rows": {"lm": lm_rows, "passkey": passkey_rows, "training": training},
        "summaries": {"lm": lm, "passkey": passkey},
        "curves": _training_curves(train_logs),
    }


def _training_curves(train_logs: list[dict]) -> dict[str, dict[str, list[float]]]:
    """{task: {encoding: per-step loss averaged over seeds}}; LM losses in bits/char."""
    curves: dict[str, dict[str, list[list[float]]]] = defaultdict(lambda: defaultdict(list))
    for t in train_logs:
        scale = 1 / LN2 if t["task"] == "lm" else 1.0
        curves[t["task"]][t["encoding"]].append([x * scale for x in t["log"]["losses"]])
    return {
        task: {enc: [sum(v) / len(v) for v in zip(*runs)] for enc, runs in by_enc.items()}
        for task, by_enc in curves.items()
    }


def _smooth(values: list[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def _colors() -> dict[str, Any]:
    import matplotlib.pyplot as plt

    palette = plt.get_cmap("tab10").colors
    colors = {e: palette[i] for i, e in enumerate(ENCODINGS)}
    colors.update({"rope+PI": colors["rope"], "rope+NTK": colors["rope"]})
    return colors


# One marker per encoding, so curves that coincide (e.g. several at accuracy 1) stay visible.
MARKERS = dict(zip(ENCODINGS, "osD^vP", strict=False)) | {"rope+PI": "^", "rope+NTK": "^"}


def _mean_and_spread(ax, points, color, label, marker, style, size) -> None:
    """One series over seeds: the mean as a line, the min-max spread as a band.
    ``points`` are (x, {"mean", "min", "max"}) pairs."""
    xs = [x for x, _ in points]
    ax.plot(
        xs,
        [p["mean"] for _, p in points],
        style,
        marker=marker,
        ms=size,
        mfc="none",
        color=color,
        label=label,
    )
    ax.fill_between(
        xs,
        [p["min"] for _, p in points],
        [p["max"] for _, p in points],
        color=color,
        alpha=0.15,
        lw=0,
    )


def plot_bits(result: dict, png: str, svg: str) -> None:
    """Bits/char versus evaluation length (log x), both scoring modes, mean and seed range."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors, summaries = _colors(), result["summaries"]["lm"]
    styles = {"rope+PI": "--", "rope+NTK": ":"}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    titles = {"all": "(a) every token of each window", "segment": "(b) same final segment"}
    series = result["tables"]["segment"]["rows"]
    for ax, mode in zip(axes, ("all", "segment")):
        for name in (row[0] for row in series):
            points = [
                (m * result["train_len"], summaries[(name, mode, m)])
                for m in result["multipliers"]
                if summaries.get((name, mode, m))
            ]
            if not points:
                continue
            label = name + (" (undefined > L_max)" if name == "learned" else "")
            _mean_and_spread(
                ax, points, colors[name], label, MARKERS.get(name, "o"), styles.get(name, "-"), 4
            )
        ax.axvline(result["train_len"], color="0.6", lw=0.8, ls="--")
        _length_axis(ax, [m * result["train_len"] for m in result["multipliers"]])
        ax.set_xlabel("evaluation length L (tokens)")
        ax.set_title(titles[mode], fontsize=10)
    axes[0].set_ylabel("validation loss (bits/char)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save_figure(fig, png, svg)


def _length_axis(ax, lengths: list[int]) -> None:
    """Log-2 x axis labelled with the evaluation lengths themselves."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(alpha=0.3)


def plot_passkey(result: dict, png: str, svg: str) -> None:
    """Exact-match passkey accuracy versus length, per encoding."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors, summaries = _colors(), result["summaries"]["passkey"]
    fig, ax = plt.subplots(figsize=(6, 4))
    n_train = result["passkey_train_len"]
    for enc in result["encodings"]:
        points = [
            (m * n_train, summaries[(enc, m)])
            for m in result["passkey_multipliers"]
            if summaries.get((enc, m))
        ]
        if not points:
            continue
        _mean_and_spread(ax, points, colors[enc], enc, MARKERS[enc], "-", 5)
    ax.axhline(result["passkey_chance"], color="0.5", lw=0.8, ls=":", label="chance")
    ax.axvline(n_train, color="0.6", lw=0.8, ls="--")
    _length_axis(ax, [m * n_train for m in result["passkey_multipliers"]])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("sequence length (tokens)")
    ax.set_ylabel("exact-match accuracy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, png, svg)


def plot_training(result: dict, png: str, svg: str) -> None:
    """Training loss per step (moving average), mean over seeds, per task and encoding."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = _colors()
    curves = result["curves"]
    fig, axes = plt.subplots(1, len(curves), figsize=(5.5 * len(curves), 4), squeeze=False)
    labels = {
        "lm": ("character LM", "training loss (bits/char)"),
        "passkey": ("passkey retrieval", "training loss (nats)"),
    }
    for ax, task in zip(axes[0], sorted(curves)):
        for enc, losses in sorted(curves[task].items(), key=lambda kv: _encoding_index(kv[0])):
            window = max(1, len(losses) // 50)
            ax.plot(
                range(1, len(losses) + 1),
                _smooth(losses, window),
                color=colors[enc],
                lw=1.2,
                label=enc,
            )
        ax.set_title(labels[task][0], fontsize=10)
        ax.set_xlabel("step")
        ax.set_ylabel(labels[task][1])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, png, svg)


TABLE_TITLES = {
    "segment": "Validation bits/char by evaluation length, mode (b): the same final segment of "
    "each window is scored at every length (mean ± half range over seeds).",
    "all": "Validation bits/char by evaluation length, mode (a): every token of "
    "non-overlapping windows (mean ± half range over seeds).",
    "passkey": "Passkey retrieval: exact-match accuracy by sequence length (mean ± half range "
    "over seeds).",
    "gap": "Train/validation gap at L_train per model (bits/char, mode a).",
    "training": "Training runs: device, throughput, wall time, peak memory (timings).",
}


def main(snakemake):
    log = setup(snakemake, "extrapolation")
    out, p = snakemake.output, snakemake.params
    evals = [read_json(f) for f in snakemake.input.evaluations]
    train_logs = [read_json(f) for f in snakemake.input.train_logs]
    timings = {t["label"]: t for t in map(read_json, snakemake.input.timings)}
    for t in train_logs:
        t["log"].update(timings[t["log"]["label"]])
    result = compute(evals, train_logs, p.thresholds, p.smoke_test)
    write_csv(out.lm_csv, result["rows"]["lm"])
    write_csv(out.passkey_csv, result["rows"]["passkey"])
    write_csv(out.training_csv, result["rows"]["training"])
    plot_bits(result, out.bits_png, out.bits_svg)
    plot_passkey(result, out.passkey_png, out.passkey_svg)
    plot_training(result, out.training_png, out.training_svg)
    L, longest = result["train_len"], max(result["multipliers"])
    figures = [
        {
            "id": "bits",
            "png": out.bits_png,
            "svg": out.bits_svg,
            "caption": f"Validation loss versus evaluation length for models trained at "
            f"L_train = {L} (dashed grey line), up to {longest}x L_train, in both scoring "
            "modes; line: mean over seeds, band: min-max. The learned table has no "
            "value past L_train (undefined). rope+PI and rope+NTK are the RoPE model "
            "evaluated with Position Interpolation and NTK-aware scaling, without "
            "fine-tuning.",
        },
        {
            "id": "passkey",
            "png": out.passkey_png,
            "svg": out.passkey_svg,
            "caption": f"Passkey retrieval: exact-match accuracy versus sequence length for "
            f"models trained on lengths up to N = {result['passkey_train_len']} "
            "(dashed grey line); dotted: chance.",
        },
        {
            "id": "training",
            "png": out.training_png,
            "svg": out.training_svg,
            "caption": "Training curves (moving average, mean over seeds).",
        },
    ]
    tables = [
        {
            "id": key,
            "title": TABLE_TITLES[key],
            "csv": out.lm_csv
            if key in ("segment", "all")
            else out.passkey_csv
            if key == "passkey"
            else out.training_csv,
            **result["tables"][key],
        }
        for key in ("segment", "all", "passkey", "gap", "training")
    ]
    # The training-run table is timings: it goes to timing.json, shown in the same section,
    # so that metrics.json is byte-identical between runs.
    timing_tables = [t for t in tables if t["id"] == "training"]
    tables = [t for t in tables if t["id"] != "training"]
    write_json(out.timing, {"tables": timing_tables})
    metrics = {
        k: v
        for k, v in result.items()
        if k not in ("claims", "tables", "rows", "summaries", "curves")
    }
    metrics.update(
        device=", ".join(result["devices"]), figures=figures, tables=tables, thresholds=p.thresholds
    )
    write_json(out.metrics, metrics)
    write_json(out.claims, result["claims"])
    log.info(
        "%d claims: %s",
        len(result["claims"]),
        ", ".join(f"{c['id'].split('.')[1]}={c['verdict']}" for c in result["claims"]),
    )


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
