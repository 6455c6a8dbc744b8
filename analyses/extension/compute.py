"""Context extension: every zero-shot and fine-tuned evaluation, aggregated; the methods'
frequencies, from ``posenc.rope_scaling``, published for anyone to check.

Every mean comes with a Student-t interval (``posenc.estimates``) over the base models' seeds
and the fragments of text the evaluation windows fall in (as the extrapolation section found
them). Every model here descends from one base model per seed and every evaluation scores the
same windows (mode b), so all comparisons (between methods, steps, lengths) are paired. The
continued-training control (spec.CONTROL: plain RoPE fine-tuned at s = 1) is one more
fine-tune among them, and every gain or level a claim credits to a fine-tuned method is
measured against it after as many steps.
The scores are in scores.py, the methods' frequencies in frequencies.py, what the claims read
in evidence.py; this module gathers them. The modules measure; the claims (spec.py) judge.
"""

from typing import Any

import numpy as np

from posenc.analysis import Context, Measurements
from posenc.estimates import Design
from posenc.io import read_json

from .evidence import evidence
from .frequencies import _plain, frequency_rows, yarn_ramp_gaps
from .scores import PLAIN, Scores
from .spec import CONTROL
from .stretched import stretch_measure

DEFAULT_INTERVALS = {"level": 0.95}


def control_change(gain: dict, encodings: list[str], steps: list[int]) -> list[dict[str, Any]]:
    """Per encoding and snapshot step: the control's rise in bits/char at L_train from step 0
    (minus its fall, ``control_gain``) and whether its interval lies wholly above 0 ("rose"),
    wholly below ("fell") or neither ("unchanged")."""
    rows = []
    for e in encodings:
        for step in steps:
            key = f"{step} steps" if len(encodings) == 1 else f"{e} {step} steps"
            fall = gain.get(key)
            rise = (
                {**fall, "estimate": -fall["estimate"], "low": -fall["high"], "high": -fall["low"]}
                if fall
                else None
            )
            word = None
            if rise:
                word = "rose" if rise["low"] > 0 else "fell" if rise["high"] < 0 else "unchanged"
            rows.append({"encoding": e, "step": step, "rise": rise, "direction": word})
    return rows


def compute(ctx: Context) -> Measurements:
    zero_shot = [read_json(f) for f in ctx.inputs["zero_shot"]]
    tuned = [read_json(f) for f in ctx.inputs["finetune_evals"]]
    logs = [read_json(f) for f in ctx.inputs["train_logs"]]
    timings = {t["label"]: t for t in map(read_json, ctx.inputs["timings"])}
    ctx.log.info("%d zero-shot, %d fine-tune evaluations", len(zero_shot), len(tuned))
    intervals = ctx.config["extrapolation"]["intervals"]
    stretched = [read_json(f) for f in ctx.inputs.get("stretch", [])]
    (base,) = (read_json(f) for f in ctx.inputs["base_evidence"])
    learned = base["evidence"].get("lm_learned_margin", {})
    fragments = base.get("summary", {}).get("window_fragments", {})
    measured = aggregate(
        zero_shot,
        tuned,
        logs,
        timings,
        ctx.cfg,
        intervals,
        learned,
        stretched,
        clusters=extension_clusters(fragments),
    )
    # The base models' scale, as the extrapolation section measured it: the claims' scope.
    if "scope" in base["evidence"]:
        measured.evidence["scope"] = base["evidence"]["scope"]
    return measured


def extension_clusters(fragments: dict[str, list[int]]) -> dict[tuple, list[int]]:
    """The extrapolation section's window fragments by this section's units' names: mode b's
    ("segment",), mode a's ("all", length)."""
    out = {}
    for name, labels in fragments.items():
        parts = name.split(" ")
        if parts == ["segment"]:
            out["segment",] = labels
        elif parts[:2] == ["all", "val"]:
            out["all", int(parts[2])] = labels
    return out


def aggregate(
    zero_shot: list[dict],
    tuned: list[dict],
    logs: list[dict],
    timings: dict[str, dict],
    cfg: dict[str, Any],
    intervals: dict[str, Any] | None = None,
    learned_margin: dict[str, Any] | None = None,
    stretched: list[dict] | None = None,
    clusters: dict[tuple, list[int]] | None = None,
) -> Measurements:
    """``learned_margin``: each base model's bits/char below the interpolated trigram at
    L_train, as the extrapolation section measured it (the claims' precondition);
    ``stretched``: the zero-shot stretch evaluations of every stretched LM."""
    intervals = intervals or DEFAULT_INTERVALS
    scores = Scores(zero_shot, tuned, Design(clusters), intervals["level"])
    ci, zs, ft = scores.ci, scores.zs, scores.ft
    methods, scales = cfg["methods"], cfg["finetune"]["scales"]
    multipliers = cfg["zero_shot"]["multipliers"]
    snapshots = sorted(cfg["finetune"]["snapshots"])
    steps = [0, *snapshots]
    encodings = list(dict.fromkeys(ev["encoding"] for ev in zero_shot))
    model = zero_shot[0]["model"]
    train_len = model["train_len"]

    ev = evidence(scores, cfg, encodings, model)
    ev["base_learned_margin"] = {
        e: margin for e, margin in (learned_margin or {}).items() if e in encodings
    }
    stretched = stretched or []
    # The LongRoPE profile the stretches ran with, as their settings carry it.
    profile = next((r["settings"]["longrope"] for r in stretched), None)
    stretch_scores = Scores(stretched, [], scores.design, scores.level)
    stretch_cells, stretch_ev = stretch_measure(stretched, stretch_scores, scores, cfg, encodings)
    ev |= stretch_ev
    stretch_encodings = list(dict.fromkeys(c["encoding"] for c in stretch_cells))
    ev["stretch_learned_margin"] = {
        e: margin for e, margin in (learned_margin or {}).items() if e in stretch_encodings
    }

    zs_cells = [
        {
            "encoding": e,
            "method": method,
            "scale": scale,
            "mode": mode,
            "multiplier": m,
            **(ci(zs(e, method, scale, m, mode)) or {"defined": False}),
        }
        for e in encodings
        for method in [PLAIN, *methods]
        for m in multipliers
        for scale in [1 if method == PLAIN else m]
        for mode in ("segment", "all")
    ]
    ft_multipliers = cfg["finetune"]["eval_multipliers"]
    ft_cells = [
        {
            "encoding": e,
            "method": method,
            "scale": s,
            "step": step,
            "multiplier": m,
            **(ci(ft(e, method, s, step, m)) or {"defined": False}),
        }
        for e in encodings
        for method, s in [CONTROL, *((method, s) for method in methods for s in scales)]
        for step in steps
        for m in sorted({s, *ft_multipliers})
        if m >= s
    ]
    freq_scales = sorted({*multipliers, *scales})
    frequencies = frequency_rows(model, methods, freq_scales, cfg["params"])
    rounding = [
        yarn_ramp_gaps(model, s, cfg["params"].get("yarn", {}))
        for s in freq_scales
        if s > 1 and "yarn" in methods
    ]
    training = [
        {
            "encoding": t["encoding"],
            "method": t["method"],
            "scale": t["scale"],
            "seed": t["seed"],
            "device": t["device"],
            "steps": len(t["log"]["losses"]),
            "final_loss_bits": t["log"]["losses"][-1] / np.log(2),
            **{k: timings[_label(t)].get(k) for k in ("tokens_per_s", "wall_s")},
        }
        for t in logs
    ]
    summary = {
        "smoke_test": cfg["smoke_test"],
        "encodings": encodings,
        "methods": methods,
        "scales": scales,
        "multipliers": multipliers,
        "finetune_multipliers": ft_multipliers,
        "control": {"method": CONTROL[0], "scale": CONTROL[1]},
        "steps": steps,
        "train_len": train_len,
        "head_dim": model["rotated_width"],
        "pairs": model["rotated_width"] // 2,
        "base": model["base"],
        "params": cfg["params"],
        "n_seeds": len({ev["seed"] for ev in zero_shot}),
        "interval_percent": round(100 * intervals["level"], 1),
        "finetune_train": cfg["finetune"]["train"],
        # The control's change at L_train from its start, step by step: the text says from it
        # whether continued training alone helped or damaged the base models.
        "control_change": control_change(ev.get("control_gain", {}), encodings, steps[1:]),
        "zero_shot": zs_cells,
        "finetune": ft_cells,
        "yarn_rounding": rounding,
        "devices": sorted({e["device"] for e in zero_shot + tuned + stretched}),
        "stretch": stretch_cells,
        "stretch_encodings": stretch_encodings,
        "llama4_beta": cfg["stretch"]["llama4_beta"],
        "longrope_profile": cfg["stretch"]["longrope_profile"],
        "longrope_pairs": len(profile["long_factor"]) if profile else None,
        "longrope_scale": profile["scale"] if profile else None,
    }
    freq_table = [
        {
            "method": r["method"],
            "scale": r["scale"],
            "min_ratio": min(f / p for f, p in zip(r["inv_freq"], _plain(r), strict=True)),
            "max_ratio": max(f / p for f, p in zip(r["inv_freq"], _plain(r), strict=True)),
            "attention_factor": r["attention_factor"],
        }
        for r in frequencies
    ]
    zs_rows = [c for c in zs_cells if c.get("estimate") is not None]
    ft_rows = [c for c in ft_cells if c.get("estimate") is not None]
    return Measurements(
        rows={
            "frequencies": freq_table,
            "zero_shot_bits": zs_rows,
            "finetune_bits": ft_rows,
            "stretch_bits": [
                {k: v for k, v in c.items() if k != "vs_plain"}
                | {f"vs_plain_{k}": v for k, v in (c["vs_plain"] or {}).items()}
                for c in stretch_cells
                if c.get("estimate") is not None
            ],
            "training": training,
        },
        evidence=ev,
        summary=summary,
        exports={"frequencies": frequencies},
    )


def _label(log: dict) -> str:
    return f"extension/{log['encoding']}/{log['method']}/s{log['scale']}/seed{log['seed']}"
