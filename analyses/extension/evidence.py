"""The context-extension analysis' evidence: the named values the claims read, each an
identity's largest gap or a paired interval, never a verdict."""

from typing import Any

from posenc.rope_scaling import scaled_rope

from .frequencies import _relative_gap
from .scores import PLAIN, Scores
from .spec import CONTROL


def evidence(scores: Scores, cfg: dict[str, Any], encodings: list[str], model: dict) -> dict:
    """What the claims read, from every evaluation's scores: the identities at s = 1, each
    fine-tune against the continued-training control (spec.CONTROL) after as many steps, and
    the methods against one another."""
    ci, zs, ft = scores.ci, scores.zs, scores.ft
    methods, scales = cfg["methods"], cfg["finetune"]["scales"]
    multipliers = cfg["zero_shot"]["multipliers"]
    snapshots = sorted(cfg["finetune"]["snapshots"])
    steps = [0, *snapshots]
    train_len = model["train_len"]
    low, high = cfg["thresholds"]["yarn_lead_multipliers"]

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
                if low <= m <= high
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
    return ev
