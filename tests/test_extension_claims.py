"""The extension's reworked claims on hand-made evidence, judged by posenc.claims.evaluate with
the section's own claims and the config's thresholds: each passes on numbers that bear it out
and fails on numbers that refute it (the aggregate's records behind them are in
test_extension.py)."""

from pathlib import Path

import pytest
import yaml

from posenc.analyses.extension.spec import SPEC
from posenc.claims import evaluate, interval, section_thresholds

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config/config.yaml").read_text())
CFG = {**CONFIG["extension"], "thresholds": section_thresholds(CONFIG, SPEC.id)}
MARGIN = CFG["thresholds"]["recover_margin_bits"]
BEATS = CFG["thresholds"]["beats_margin_bits"]
CLAIMS = {c.id.split(".", 1)[1]: c for c in SPEC.claims}


def tight(estimate):
    """An interval narrow enough, at any family-wise level, that only its side of a threshold
    decides."""
    return interval(estimate, estimate - 1e-3, estimate + 1e-3, se=5e-4, df=10, level=0.95)


# The precondition: the base model learned (well below the interpolated trigram).
LEARNED = {"base_learned_margin": {"rope": tight(0.5)}}


def judged(name, evidence):
    (entry,) = evaluate((CLAIMS[name],), LEARNED | evidence, CFG, SPEC.id)
    return entry


def test_pi_recovers_to_control_within_the_margin():
    inside = {"2x": tight(MARGIN / 2), "4x": tight(-0.1)}  # level with the control, or below
    assert judged("pi_recovers_to_control", {"pi_recovery_gap": inside})["verdict"] == "pass"
    above = {"2x": tight(MARGIN / 2), "4x": tight(2 * MARGIN)}
    entry = judged("pi_recovers_to_control", {"pi_recovery_gap": above})
    assert entry["verdict"] == "fail"
    assert entry["outcomes"]["pi_recovery_gap"] == {"2x": "pass", "4x": "fail"}
    # An interval across the margin decides nothing.
    across = {"2x": interval(MARGIN, 0.0, 2 * MARGIN)}
    assert judged("pi_recovers_to_control", {"pi_recovery_gap": across})["verdict"] == (
        "inconclusive"
    )


def sooner(yarn, pi):
    return judged(
        "yarn_reaches_control_sooner", {"yarn_reach_gap": yarn, "pi_gap_until_yarn_reaches": pi}
    )


def test_yarn_reaches_the_control_sooner_only_while_pi_is_not_there():
    yarn = {"2x": tight(0.0), "4x": tight(MARGIN / 2)}
    pi = {"2x 0 steps": tight(1.8), "4x 0 steps": tight(2.5), "4x 50 steps": tight(3 * MARGIN)}
    assert sooner(yarn, pi)["verdict"] == "pass"
    # PI there by the step YaRN gets there: not sooner.
    entry = sooner(yarn, pi | {"4x 50 steps": tight(MARGIN / 2)})
    assert entry["verdict"] == "fail"
    assert entry["outcomes"]["pi_gap_until_yarn_reaches"]["4x 50 steps"] == "fail"
    # YaRN not there within the fine-tune (judged at its last step): not sooner either.
    assert sooner(yarn | {"4x": tight(2 * MARGIN)}, pi)["verdict"] == "fail"


@pytest.mark.parametrize("lead, verdict", [(BEATS + 0.2, "pass"), (BEATS - 0.05, "fail")])
def test_each_fine_tune_beats_zero_shot_yarn_beyond_the_controls_gain(lead, verdict):
    leads = {"yarn": {"2x": tight(BEATS + 0.3)}, "pi": {"2x": tight(lead), "4x": tight(lead)}}
    entry = judged("finetuned_beats_zero_shot_yarn", {"finetuned_lead_over_zero_shot_yarn": leads})
    assert entry["verdict"] == verdict
    assert entry["outcomes"]["finetuned_lead_over_zero_shot_yarn"] == {
        "yarn": "pass",
        "pi": verdict,
    }
