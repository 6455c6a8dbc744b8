"""Context extension: every zero-shot and fine-tuned evaluation, aggregated; the methods'
frequencies, from ``posenc.rope_scaling``, published for anyone to check.

Every mean comes with a two-level bootstrap interval (``posenc.stats``), over the base models'
seeds and, within each, the evaluation windows. Every model here descends from one base model
per seed and every evaluation scores the same windows (mode b), so all comparisons (between
methods, steps, lengths) resample both jointly: they are paired. The continued-training control
(spec.CONTROL: plain RoPE fine-tuned at s = 1) is one more fine-tune among them, and every gain
or level a claim credits to a fine-tuned method is measured against it after as many steps.
This module measures; the claims (spec.py) judge.
"""

from collections import defaultdict
from typing import Any

import numpy as np

from posenc.analysis import Context, Measurements
from posenc.io import read_json
from posenc.rope_scaling import rope_inv_freq, scaled_rope, yarn_rounding_gap
from posenc.stats import Bootstrap, Resampled

from .spec import CONTROL

PLAIN = "plain"
DEFAULT_INTERVALS = {"level": 0.95, "resamples": 2000}


class Scores:
    """Per-window bits of every evaluation, by key, resampled by one :class:`Bootstrap`:
    zero-shot keys ("zs", encoding, method, scale, mode, multiplier), fine-tune keys ("ft",
    encoding, method, scale, step, multiplier)."""

    def __init__(self, zero_shot: list[dict], tuned: list[dict], bootstrap: Bootstrap, level):
        self.bootstrap, self.level = bootstrap, level
        self.groups: dict[tuple, dict[int, list[float]]] = defaultdict(dict)
        self.units: dict[tuple, tuple] = {}
        for ev in zero_shot:
            for r in ev["rows"]:
                key = ("zs", ev["encoding"], r["method"], r["scale"], r["mode"], r["multiplier"])
                self._add(key, ev, r, r["mode"])
        for ev in tuned:
            for r in ev["rows"]:
                key = ("ft", ev["encoding"], ev["method"], ev["scale"], r["step"], r["multiplier"])
                self._add(key, ev, r, "segment")
        self._cache: dict[tuple, Resampled | None] = {}

    def _add(self, key, ev, row, mode):
        if row["defined"] and row.get("window_bits"):
            self.groups[key][ev["seed"]] = row["window_bits"]
        # Mode b scores the same windows everywhere; mode a the same ones at one length.
        self.units[key] = ("segment",) if mode == "segment" else ("all", row["length"])

    def get(self, *key) -> Resampled | None:
        if key not in self._cache:
            seeds = self.groups.get(key)
            self._cache[key] = (
                None
                if not seeds
                else self.bootstrap.mean(
                    np.array([seeds[s] for s in sorted(seeds)]),
                    seeds_of=("lm", key[1]),  # one population: the encoding's base models
                    units_of=self.units[key],
                )
            )
        return self._cache[key]

    def ci(self, resampled: Resampled | None) -> dict[str, float] | None:
        return None if resampled is None else resampled.interval(self.level)

    def largest_gap(self, a: tuple, b: tuple) -> float | None:
        """The largest |difference| of one window's bits between two keys, over seeds."""
        ga, gb = self.groups.get(a), self.groups.get(b)
        if not ga or not gb or set(ga) != set(gb):
            return None
        return max(float(np.max(np.abs(np.subtract(ga[s], gb[s])))) for s in ga)


def _relative_gap(scaled, width: int, base: float) -> float:
    plain = rope_inv_freq(width, base)
    gaps = [abs(f / p - 1.0) for f, p in zip(scaled.inv_freq, plain, strict=True)]
    return max([*gaps, abs(scaled.attention_factor - 1.0)])


def frequency_rows(model: dict, methods: list[str], scales: list[int], params: dict) -> list:
    """The contract rows: each method at each scale, {method, scale, head_dim, base,
    original_length, params, inv_freq, attention_factor, length}; a fixed method's at any
    length, dynamic NTK's for windows of scale x the original length."""
    width, base, train_len = model["rotated_width"], model["base"], model["train_len"]
    rows = []
    for method in methods:
        for scale in scales:
            p = dict(params.get(method, {}))
            s = scaled_rope(method, width, base, scale, train_len, p, length=scale * train_len)
            rows.append(
                {
                    "method": method,
                    "scale": scale,
                    "head_dim": width,
                    "base": base,
                    "original_length": train_len,
                    "params": {
                        "factor": scale,
                        "original_max_position_embeddings": train_len,
                        **p,
                    },
                    "inv_freq": list(s.inv_freq),
                    "attention_factor": s.attention_factor,
                    "length": scale * train_len,
                }
            )
    return rows


def compute(ctx: Context) -> Measurements:
    zero_shot = [read_json(f) for f in ctx.inputs["zero_shot"]]
    tuned = [read_json(f) for f in ctx.inputs["finetune_evals"]]
    logs = [read_json(f) for f in ctx.inputs["train_logs"]]
    timings = {t["label"]: t for t in map(read_json, ctx.inputs["timings"])}
    ctx.log.info("%d zero-shot, %d fine-tune evaluations", len(zero_shot), len(tuned))
    intervals = ctx.config["extrapolation"]["intervals"]
    (base,) = (read_json(f)["evidence"] for f in ctx.inputs["base_evidence"])
    learned = base.get("lm_learned_margin", {})
    return aggregate(zero_shot, tuned, logs, timings, ctx.cfg, intervals, ctx.seed, learned)


def aggregate(
    zero_shot: list[dict],
    tuned: list[dict],
    logs: list[dict],
    timings: dict[str, dict],
    cfg: dict[str, Any],
    intervals: dict[str, Any] | None = None,
    seed: int = 0,
    learned_margin: dict[str, Any] | None = None,
) -> Measurements:
    """``learned_margin``: each base model's bits/char below the interpolated trigram at
    L_train, as the extrapolation section measured it (the claims' precondition)."""
    intervals = intervals or DEFAULT_INTERVALS
    scores = Scores(zero_shot, tuned, Bootstrap(intervals["resamples"], seed), intervals["level"])
    ci = scores.ci
    methods, scales = cfg["methods"], cfg["finetune"]["scales"]
    multipliers = cfg["zero_shot"]["multipliers"]
    snapshots = sorted(cfg["finetune"]["snapshots"])
    steps = [0, *snapshots]
    encodings = list(dict.fromkeys(ev["encoding"] for ev in zero_shot))
    model = zero_shot[0]["model"]
    train_len = model["train_len"]

    def zs(e, method, scale, m, mode="segment"):
        return scores.get("zs", e, method, scale, mode, m)

    def ft(e, method, s, step, m):
        return scores.get("ft", e, method, s, step, m)

    def control(e, step, m=1):  # the continued-training control; at L_train unless m says
        return ft(e, *CONTROL, step, m)

    def fall(e, method, s, step, m):  # a fine-tune's fall in bits/char from its step 0 to step
        before, after = ft(e, method, s, 0, m), ft(e, method, s, step, m)
        return before - after if before and after else None

    def differ(a, b):  # a - b as an interval, None where either is missing
        return ci(a - b) if a and b else None

    def by(e, key: str) -> str:  # one encoding: "2x"; several: "rope 2x"
        return key if len(encodings) == 1 else f"{e} {key}"

    ev: dict[str, Any] = {
        "train_len": train_len,
        "base_learned_margin": {
            e: margin for e, margin in (learned_margin or {}).items() if e in encodings
        },
        "first_snapshot": snapshots[0],
        # Identities: each method at s = 1, and dynamic NTK with a factor up to L_train.
        "scale_one_frequency_gap": {
            m: _relative_gap(
                scaled_rope(
                    m, model["rotated_width"], model["base"], 1, train_len, cfg["params"].get(m)
                ),
                model["rotated_width"],
                model["base"],
            )
            for m in methods
        },
        "scale_one_bits_gap": {
            by(e, f"{m} {mode}"): scores.largest_gap(
                ("zs", e, m, 1, mode, 1), ("zs", e, PLAIN, 1, mode, 1)
            )
            for e in encodings
            for m in methods
            for mode in ("all", "segment")
        },
    }
    if "dynamic" in methods:
        ev["dynamic_frequency_gap"] = {
            f"factor {s}": _relative_gap(
                scaled_rope(
                    "dynamic",
                    model["rotated_width"],
                    model["base"],
                    s,
                    train_len,
                    cfg["params"].get("dynamic"),
                    length=train_len,
                ),
                model["rotated_width"],
                model["base"],
            )
            for s in scales
            if s > 1
        }
        ev["dynamic_bits_gap"] = {
            by(e, f"factor {s} {mode}"): scores.largest_gap(
                ("zs", e, "dynamic", s, mode, 1), ("zs", e, PLAIN, 1, mode, 1)
            )
            for e in encodings
            for s in scales
            if s > 1
            for mode in ("all", "segment")
        }
    for name in list(ev):  # an identity nothing measured is missing, not a pass
        if isinstance(ev[name], dict):
            ev[name] = {k: v for k, v in ev[name].items() if v is not None}
    last, first = snapshots[-1], snapshots[0]
    # What continued training alone gives: the control's fall at L_train, where it trains.
    ev["control_gain"] = {
        by(e, f"{step} steps"): ci(fall(e, *CONTROL, step, 1))
        for e in encodings
        for step in snapshots
        if fall(e, *CONTROL, step, 1)
    }
    if "pi" in methods:
        # PI's fall over the fine-tune at s x L_train, less the control's over as many steps.
        ev["pi_finetune_gain"] = {
            by(e, f"{s}x"): ci(fall(e, "pi", s, last, s) - fall(e, *CONTROL, last, 1))
            for e in encodings
            for s in scales
            if fall(e, "pi", s, last, s) and fall(e, *CONTROL, last, 1)
        }
        ev["pi_recovery_gap"] = {
            by(e, f"{s}x"): differ(ft(e, "pi", s, last, s), control(e, last))
            for e in encodings
            for s in scales
        }
    if "yarn" in methods:
        ev["yarn_zero_shot_lead"] = {
            other: {
                by(e, f"{m}x"): ci(zs(e, other, m, m) - zs(e, "yarn", m, m))
                for e in encodings
                for m in multipliers
                if 2 <= m <= 4
            }
            for other in ("pi", "ntk")
            if other in methods
        }
        if "pi" in methods:
            # Speed net of the head start: each method's fall from its own step 0 (spec.py).
            ev["yarn_finetune_gain_lead"] = {
                by(e, f"{s}x"): ci(fall(e, "yarn", s, first, s) - fall(e, "pi", s, first, s))
                for e in encodings
                for s in scales
                if fall(e, "yarn", s, first, s) and fall(e, "pi", s, first, s)
            }
            ev["yarn_head_start"] = {
                by(e, f"{s}x"): differ(ft(e, "pi", s, 0, s), ft(e, "yarn", s, 0, s))
                for e in encodings
                for s in scales
            }
        ev["yarn_continued_gap"] = {
            by(e, f"{s}x"): differ(control(e, last), ft(e, "yarn", s, last, s))
            for e in encodings
            for s in scales
        }
    # Every fine-tune's fall from its own step 0, at the length it fine-tunes at.
    arms = [(x, x, scales) for x in methods] + [("continued training", CONTROL[0], [CONTROL[1]])]
    ev["finetune_gains"] = {
        by(e, name): {
            f"{s}x {step} steps": ci(fall(e, method, s, step, s))
            for s in arm_scales
            for step in snapshots
            if fall(e, method, s, step, s)
        }
        for e in encodings
        for name, method, arm_scales in arms
    }
    # At s x L_train after the same steps: the control is plain RoPE there, past its length.
    ev["continued_training_lead"] = {
        method: {
            by(e, f"{s}x"): differ(control(e, last, s), ft(e, method, s, last, s))
            for e in encodings
            for s in scales
        }
        for method in methods
    }
    # The first fine-tuning step at which a method's loss at s x L_train is at or below the
    # continued-training control's at L_train after as many steps (by estimate); None: not
    # within the fine-tune. Step 0's control is the plain model itself.
    ev["steps_to_control"] = {
        by(e, method): {
            f"{s}x": next(
                (
                    step
                    for step in steps
                    if ft(e, method, s, step, s)
                    and control(e, step)
                    and ft(e, method, s, step, s).point <= control(e, step).point
                ),
                None,
            )
            for s in scales
        }
        for e in encodings
        for method in methods
    }
    for name in ("pi_recovery_gap", "yarn_head_start", "yarn_continued_gap"):
        if name in ev:  # a comparison nothing measured is missing, not a pass
            ev[name] = {k: v for k, v in ev[name].items() if v is not None}
    for name in ("continued_training_lead", "finetune_gains"):  # nor is an empty mapping
        ev[name] = {
            key: inner
            for key, values in ev[name].items()
            if (inner := {k: v for k, v in values.items() if v is not None})
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
        "zero_shot": zs_cells,
        "finetune": ft_cells,
        "yarn_rounding": rounding,
        "devices": sorted({e["device"] for e in zero_shot + tuned}),
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
            "training": training,
        },
        evidence=ev,
        summary=summary,
        exports={"frequencies": frequencies},
    )


def _plain(row: dict) -> list[float]:
    return list(rope_inv_freq(row["head_dim"], row["base"]))


def yarn_ramp_gaps(model: dict, scale: int, params: dict) -> dict[str, Any]:
    """YaRN as its authors' code computes it against the paper's continuous ramp
    (:func:`posenc.rope_scaling.yarn_rounding_gap`: the ramp's shape and its rounding to whole
    pairs together), and the rounding alone: the code's ramp with and without ``truncate``."""
    width, base, train_len = model["rotated_width"], model["base"], model["train_len"]
    betas = {k: params[k] for k in ("beta_fast", "beta_slow") if k in params}
    rounded = scaled_rope("yarn", width, base, scale, train_len, {**betas, "truncate": True})
    exact = scaled_rope("yarn", width, base, scale, train_len, {**betas, "truncate": False})
    rounding = max(abs(a - b) / b for a, b in zip(rounded.inv_freq, exact.inv_freq, strict=True))
    return {
        "scale": scale,
        **yarn_rounding_gap(width, base, scale, train_len, **betas),
        "rounding_only": rounding,
    }


def _label(log: dict) -> str:
    return f"extension/{log['encoding']}/{log['method']}/s{log['scale']}/seed{log['seed']}"
