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
    # "At the control's loss": one margin for PI's recovery and for how soon a method gets there.
    margin = cfg["thresholds"]["recover_margin_bits"]

    def control(e, step, m=1):  # the continued-training control; at L_train unless m says
        return ft(e, *CONTROL, step, m)

    def fall(e, method, s, step, m):  # a fine-tune's fall in bits/char from its step 0 to step
        before, after = ft(e, method, s, 0, m), ft(e, method, s, step, m)
        return before - after if before and after else None

    def differ(a, b):  # a - b as an interval, None where either is missing
        return ci(a - b) if a and b else None

    def to_control(e, method, s, step):  # at s x L_train, minus the control at L_train
        return differ(ft(e, method, s, step, s), control(e, step))

    # The first step whose whole interval (at its own level) is within the margin. A claim
    # judges its entries at the family-wise level, wider: a step found here may be judged
    # inconclusive there, never passed on less.
    def reached(e, method, s):
        return next(
            (
                step
                for step in steps
                if (gap := to_control(e, method, s, step)) and gap["high"] <= margin
            ),
            None,
        )

    def by(e, key: str) -> str:  # one encoding: "2x"; several: "rope 2x"
        return key if len(encodings) == 1 else f"{e} {key}"

    ev: dict[str, Any] = {
        "train_len": train_len,
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
    last = snapshots[-1]
    # What continued training alone gives: the control's fall at L_train, where it trains.
    ev["control_gain"] = {
        by(e, f"{step} steps"): ci(fall(e, *CONTROL, step, 1))
        for e in encodings
        for step in snapshots
        if fall(e, *CONTROL, step, 1)
    }
    if "pi" in methods:
        ev["pi_recovery_gap"] = {
            by(e, f"{s}x"): to_control(e, "pi", s, last) for e in encodings for s in scales
        }
        # Where PI starts, without fine-tuning: how far it had to recover.
        ev["pi_start_gap"] = {
            by(e, f"{s}x"): to_control(e, "pi", s, 0) for e in encodings for s in scales
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
            # How soon (spec.py): YaRN at the first step it reaches the control (else the last),
            # PI at that step and every one before it.
            until = {(e, s): reached(e, "yarn", s) for e in encodings for s in scales}
            until = {k: last if step is None else step for k, step in until.items()}
            ev["yarn_reach_gap"] = {
                by(e, f"{s}x"): to_control(e, "yarn", s, until[e, s])
                for e in encodings
                for s in scales
            }
            ev["pi_gap_until_yarn_reaches"] = {
                by(e, f"{s}x {step} steps"): to_control(e, "pi", s, step)
                for e in encodings
                for s in scales
                for step in steps
                if step <= until[e, s]
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
    if "yarn" in methods:
        # Each fine-tuned method against YaRN at s x L_train without fine-tuning (its step 0),
        # less what the extra steps give the control at L_train (spec.py: the control is not
        # a comparator past L_train, where plain RoPE does not extrapolate).
        ev["finetuned_lead_over_zero_shot_yarn"] = {
            method: {
                by(e, f"{s}x"): ci(
                    ft(e, "yarn", s, 0, s) - ft(e, method, s, last, s) - fall(e, *CONTROL, last, 1)
                )
                for e in encodings
                for s in scales
                if ft(e, "yarn", s, 0, s)
                and ft(e, method, s, last, s)
                and fall(e, *CONTROL, last, 1)
            }
            for method in methods
        }
    # The first fine-tuning step at which a method's loss at s x L_train is within the margin of
    # the continued-training control's at L_train after as many steps, by the whole interval of
    # the gap; None: not within the fine-tune. Step 0's control is the plain model itself.
    ev["steps_to_control"] = {
        by(e, method): {f"{s}x": reached(e, method, s) for s in scales}
        for e in encodings
        for method in methods
    }
    for name in (
        "pi_recovery_gap",
        "pi_start_gap",
        "yarn_reach_gap",
        "pi_gap_until_yarn_reaches",
        "yarn_head_start",
        "yarn_continued_gap",
    ):
        if name in ev:  # a comparison nothing measured is missing, not a pass
            ev[name] = {k: v for k, v in ev[name].items() if v is not None}
    for name in ("finetuned_lead_over_zero_shot_yarn", "finetune_gains"):
        if name in ev:  # nor is an empty mapping
            ev[name] = {
                key: inner
                for key, values in ev[name].items()
                if (inner := {k: v for k, v in values.items() if v is not None})
            }
    return ev
