"""Every empirical claim of every analysis can pass and can fail.

A claim that no measurement could fail is not a finding. For each claim of kind "empirical"
in every ``analyses/*/spec.py`` (a new one is covered the moment its spec lists it), evidence
is built from the claim's own checks and preconditions, with the real config's thresholds
(config/config.yaml, per section): a value well on the passing side of each check's threshold
passes it; the same with one check, or one entry of it, well on the failing side fails it; a
precondition not met leaves it undecided. Then, by hand, the extrapolation section's two ways
of keeping a claim failable that generic evidence cannot show: a comparison is judged where
its comparator has not collapsed, and the best passkey encoding is chosen on other test
sequences than those that judge it."""

from __future__ import annotations

import numbers

import numpy as np
import pytest
import yaml
from workflow_utils import ROOT

from posenc.analyses.extrapolation.evidence import CHOOSING_HALF, JUDGING_HALF, evidence
from posenc.analyses.extrapolation.scores import Scores
from posenc.analysis import discover
from posenc.claims import evaluate, interval, section_thresholds
from posenc.estimates import Design

SPECS = discover(ROOT)
CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
EMPIRICAL = {
    claim.id: (spec.id, claim)
    for spec in SPECS.values()
    for claim in spec.claims
    if claim.kind == "empirical"
}


def config_of(section: str, claim=None) -> dict:
    """The section's config as its rule sees it, thresholds by section; the claim's ``unless``
    flag off (a smoke test says nothing of whether a claim can fail)."""
    cfg = {**CONFIG[section], "thresholds": section_thresholds(CONFIG, section)}
    if claim is not None and claim.unless:
        cfg[claim.unless] = False
    return cfg


def put(evidence: dict, path: str, value) -> None:
    """``evidence`` with ``value`` at the dotted ``path``, as the claims read it."""
    *parents, last = path.split(".")
    for part in parents:
        evidence = evidence.setdefault(part, {})
    evidence[last] = value


def measured(x: float, bound: float):
    """``x`` as the analyses report a mean: an integer count as it is, a number as a narrow
    Student-t interval (its spread far inside the distance to the threshold, at any
    family-wise level)."""
    if isinstance(bound, numbers.Integral) and float(x).is_integer():
        return int(x)
    width = max(abs(bound), 1.0) / 50
    return interval(x, x - width, x + width, se=width / 2.0, df=30.0, level=0.95)


def value_for(check, thresholds: dict, side: str):
    """A value of ``check``'s evidence well on ``side`` ("pass" or "fail") of its threshold,
    relative to the centre its ``of`` names (0 where that is evidence, which the builder sets
    to 0)."""
    if check.op == "is":
        return check.value if side == "pass" else not check.value
    bound = thresholds[check.threshold]
    assert isinstance(bound, numbers.Real) and not isinstance(bound, bool), (
        f"{check.evidence}: threshold {check.threshold} = {bound!r} is not a number"
    )
    step = max(abs(bound), 1)  # well past the threshold, in its own units
    centre = thresholds[check.of] if check.of in thresholds else 0
    passing, failing = {
        ">": (bound + step, bound - step),
        ">=": (bound + step, bound - step),
        "<": (bound - step, bound + step),
        "<=": (bound - step, bound + step),
        "==": (bound, bound + step),
        "within": (0, bound + step),
        "outside": (bound + step, 0),
    }[check.op]
    return measured(centre + (passing if side == "pass" else failing), bound)


def passing_evidence(claim, thresholds: dict) -> dict:
    """Evidence on which every check and precondition of ``claim`` holds well."""
    ev: dict = {}
    for check in (*claim.checks, *claim.requires):
        if check.scale is not None:
            put(ev, check.scale, 1)  # the threshold as the config writes it
        if check.of is not None and check.of not in thresholds:
            put(ev, check.of, 0)  # a measured centre of 0: the value is the difference
        put(ev, check.evidence, value_for(check, thresholds, "pass"))
    return ev


def verdict(claim, section: str, ev: dict) -> dict:
    (entry,) = evaluate([claim], ev, config_of(section, claim), section)
    return entry


def test_every_analysis_has_empirical_claims_to_check():
    assert EMPIRICAL, "no empirical claim found in any analyses/*/spec.py"
    assert {"extrapolation", "extension"} <= {section for section, _ in EMPIRICAL.values()}


@pytest.mark.parametrize("claim_id", sorted(EMPIRICAL))
def test_each_empirical_claim_can_pass_and_can_fail(claim_id):
    section, claim = EMPIRICAL[claim_id]
    thresholds = config_of(section)["thresholds"]
    good = passing_evidence(claim, thresholds)
    entry = verdict(claim, section, good)
    assert entry["verdict"] == "pass", (entry["reason"], entry["expected"])
    for check in claim.checks:
        failing = value_for(check, thresholds, "fail")
        # One check well on the failing side ...
        ev = passing_evidence(claim, thresholds)
        put(ev, check.evidence, failing)
        entry = verdict(claim, section, ev)
        assert entry["verdict"] == "fail", (check.evidence, entry["reason"], entry["expected"])
        # ... or one entry of it, beside one that passes.
        passing = value_for(check, thresholds, "pass")
        put(ev, check.evidence, {"holds": passing, "misses": failing})
        entry = verdict(claim, section, ev)
        assert entry["verdict"] == "fail", (check.evidence, entry["reason"])
        assert entry["outcomes"][check.evidence] == {"holds": "pass", "misses": "fail"}


@pytest.mark.parametrize(
    "claim_id", sorted(cid for cid, (_, claim) in EMPIRICAL.items() if claim.requires)
)
def test_preconditions_not_met_leave_the_claim_undecided(claim_id):
    """Failing evidence on models none of whose preconditions hold decides nothing (where
    some hold, the entries they cover still decide: posenc.claims)."""
    section, claim = EMPIRICAL[claim_id]
    thresholds = config_of(section)["thresholds"]
    ev = passing_evidence(claim, thresholds)
    for check in claim.checks:
        put(ev, check.evidence, value_for(check, thresholds, "fail"))
    for required in claim.requires:
        put(ev, required.evidence, value_for(required, thresholds, "fail"))
    entry = verdict(claim, section, ev)
    assert entry["verdict"] == "inconclusive", entry["reason"]
    assert entry["reason"].startswith("not met: "), entry["reason"]


# ----------------------------------------------------------------- the extrapolation section

XP = {claim.id: claim for claim in SPECS["extrapolation"].claims}
UNIGRAM = 4.0  # the collapse reference of the hand-made text; every LM below its trigram
REFERENCES = {"unigram": UNIGRAM, "3-gram": 2.6}
WINDOW_NOISE = (-0.01, 0.0, 0.01, 0.0)
# As many seeds as the config's passkey precondition asks to have learned.
SEEDS = range(CONFIG["extrapolation"]["thresholds"]["passkey_min_learners"])


def lm_eval(encoding: str, seed: int, curve: dict[int, float]) -> dict:
    """An LM's evaluation record: ``curve`` its bits/char by multiple of L_train, the same in
    both scoring modes, each window a little off the mean."""
    rows = [
        {
            "mode": mode,
            "split": "val",
            "multiplier": m,
            "length": 128 * m,
            "window_bits": [bits + d for d in WINDOW_NOISE],
            "defined": True,
        }
        for m, bits in curve.items()
        for mode in ("all", "segment")
    ]
    return {"task": "lm", "encoding": encoding, "seed": seed, "rows": rows}


def passkey_eval(encoding: str, seed: int, correct: list[int]) -> dict:
    """A passkey model's record at N and 4N: ``correct`` at 4N, per test sequence."""
    rows = [
        {"multiplier": m, "length": 64 * m, "correct": answers, "defined": True}
        for m, answers in ((1, [1] * len(correct)), (4, correct))
    ]
    return {"task": "passkey", "encoding": encoding, "seed": seed, "rows": rows}


def extrapolation_evidence(curves: dict[str, dict[int, float]], passkey=None) -> dict:
    """The section's evidence from LMs with these ``curves`` and passkey models answering
    ``passkey`` at 4N, each on every seed of :data:`SEEDS` (all of which learned)."""
    passkey = passkey or {}
    evals = [lm_eval(e, seed, c) for e, c in curves.items() for seed in SEEDS]
    evals += [passkey_eval(e, seed, c) for e, c in passkey.items() for seed in SEEDS]
    scores = Scores(evals, Design(), 0.95)
    return evidence(
        scores,
        list(curves),
        sorted(next(iter(curves.values()))),
        [1, 4] if passkey else [],
        1 / 16,
        128,
        list(passkey),
        learners={e: len(SEEDS) for e in passkey},
        references=REFERENCES,
        min_learners=len(SEEDS),
    )


def judged(claim_id: str, ev: dict) -> dict:
    return verdict(XP[claim_id], "extrapolation", ev)


# RoPE collapses at 8x and 16x (its bits/char above the unigram's 4.0 there); the hybrid does
# at no length, and is below RoPE at 16x. At 4x, RoPE's longest length alive, it is not.
ROPE = {1: 2.0, 2: 3.0, 4: 3.8, 8: 4.5, 16: 5.0}
HYBRID_BEHIND = {1: 2.0, 2: 3.2, 4: 3.9, 8: 3.95, 16: 3.98}
HYBRID_AHEAD = {1: 2.0, 2: 2.5, 4: 3.0, 8: 3.5, 16: 3.9}


def test_a_comparison_with_a_collapsed_comparator_is_judged_where_it_is_alive():
    ev = extrapolation_evidence({"rope": ROPE, "rope_nope_hybrid": HYBRID_BEHIND})
    assert ev["collapsed_at"] == {"rope": ["8x", "16x"], "rope_nope_hybrid": []}
    assert ev["alive_past_train"] == {"rope": True, "rope_nope_hybrid": True}
    # At 16x the hybrid "beats" the collapsed RoPE; the claim is judged at 4x, and fails there.
    assert ev["far_lead"]["rope_nope_hybrid"]["rope"]["estimate"] > 0
    lead = ev["uncollapsed_lead"]["rope_nope_hybrid"]["rope"]
    assert list(lead) == ["4x"] and lead["4x"]["estimate"] == pytest.approx(-0.1)
    entry = judged("extrapolation.hybrid_beats_rope_uncollapsed", ev)
    assert entry["verdict"] == "fail"
    assert entry["outcomes"] == {"uncollapsed_lead.rope_nope_hybrid.rope": {"4x": "fail"}}
    assert entry["measured"]["collapsed at.rope"] == ["8x", "16x"]
    # The same comparison with a hybrid that is lower at 4x too passes, named at 4x.
    ev = extrapolation_evidence({"rope": ROPE, "rope_nope_hybrid": HYBRID_AHEAD})
    entry = judged("extrapolation.hybrid_beats_rope_uncollapsed", ev)
    assert entry["verdict"] == "pass"
    assert list(entry["outcomes"]["uncollapsed_lead.rope_nope_hybrid.rope"]) == ["4x"]
    # The rise from 1x, compared where RoPE is alive: p-RoPE's, the hybrid's curve here.
    ev = extrapolation_evidence({"rope": ROPE, "rope_proportional": HYBRID_BEHIND})
    change = ev["uncollapsed_change_lead"]["rope_proportional"]["rope"]
    assert list(change) == ["4x"] and change["4x"]["estimate"] == pytest.approx(-0.1)
    ev["meets_unseen_angles"] = {"rope_proportional": True}  # a kept pair slower than L_train
    assert judged("extrapolation.p_rope_degrades_less_uncollapsed", ev)["verdict"] == "fail"
    # Every kept pair faster than L_train: degrading less would hold by construction, so the
    # claim is no test, whichever way the numbers go.
    ev["meets_unseen_angles"] = {"rope_proportional": False}
    entry = judged("extrapolation.p_rope_degrades_less_uncollapsed", ev)
    assert entry["verdict"] == "inconclusive" and "slower than L_train" in entry["reason"]


def test_a_comparator_alive_at_the_longest_length_is_judged_there():
    alive = {1: 2.0, 2: 2.8, 4: 3.3, 8: 3.6, 16: 3.95}  # its interval stays under 4.0
    ev = extrapolation_evidence({"rope": alive, "rope_nope_hybrid": HYBRID_AHEAD})
    assert ev["collapsed_at"]["rope"] == []
    lead = ev["uncollapsed_lead"]["rope_nope_hybrid"]["rope"]
    assert list(lead) == ["16x"] and lead["16x"]["estimate"] == pytest.approx(0.05)
    assert judged("extrapolation.hybrid_beats_rope_uncollapsed", ev)["verdict"] == "pass"


def test_a_comparator_collapsed_at_every_length_makes_the_claim_inconclusive():
    gone = {1: 2.0, 2: 4.4, 4: 4.8, 8: 5.0, 16: 5.2}
    for claim_id, e in (
        ("extrapolation.hybrid_beats_rope_uncollapsed", "rope_nope_hybrid"),
        ("extrapolation.p_rope_degrades_less_uncollapsed", "rope_proportional"),
    ):
        ev = extrapolation_evidence({"rope": gone, e: HYBRID_AHEAD})
        assert ev["alive_past_train"]["rope"] is False
        assert ev["collapsed_at"]["rope"] == ["2x", "4x", "8x", "16x"]
        assert not ev["uncollapsed_lead"][e] and not ev["uncollapsed_change_lead"][e]
        entry = judged(claim_id, ev)
        assert entry["verdict"] == "inconclusive"
        assert entry["reason"].startswith("not met: rope alive at some length"), entry["reason"]
        assert "unigram" in entry["reason"]
        assert entry["measured"]["collapsed at.rope"] == ["2x", "4x", "8x", "16x"]


def test_the_best_passkey_encoding_is_chosen_on_sequences_that_do_not_judge_it():
    """RoPE answers every choosing sequence and no judging one (0.5 over all); ALiBi 0.96 on
    either half. Chosen on the choosing half, RoPE is the best, and the judging half fails it:
    a selection on the judged data would have picked ALiBi and passed."""
    lucky = [1, 0] * 50
    steady = [1] * 96 + [0] * 4
    lm = {"rope": {1: 2.0, 2: 2.5, 4: 3.0}}
    ev = extrapolation_evidence(lm, passkey={"rope": lucky, "alibi": steady})
    assert np.mean(lucky[CHOOSING_HALF]) == 1.0 and np.mean(lucky[JUDGING_HALF]) == 0.0
    assert ev["passkey_selection_accuracy"] == {"rope": 1.0, "alibi": 0.96}
    assert ev["passkey_best"] == ["rope"]
    assert ev["passkey_best_accuracy"]["rope"]["estimate"] == 0.0
    assert ev["passkey_selection_half"] == "50 of 100"
    entry = judged("extrapolation.synthetic_length_generalization", ev)
    assert entry["verdict"] == "fail"
    learned = f"rope: {len(SEEDS)} of {len(SEEDS)}"  # every seed learned, and it says so
    assert "(rope)" in entry["statement"] and learned in entry["statement"]
    # The other way round: a RoPE perfect on the judging half alone is not chosen, and a
    # perfect ALiBi, chosen, passes on its own judging half.
    ev = extrapolation_evidence(lm, passkey={"rope": lucky[::-1], "alibi": [1] * 100})
    assert ev["passkey_best"] == ["alibi"]
    assert judged("extrapolation.synthetic_length_generalization", ev)["verdict"] == "pass"


def test_memorisation_is_no_finding_when_no_text_was_read_twice():
    """Within one pass over the training text no character is read twice: the growth after
    the first pass does not exist, so the claim does not apply (n/a, with the reason), not a
    pass and not an inconclusive that more seeds could settle."""
    ev = extrapolation_evidence({"rope": ROPE})
    ev["memorisation_growth"] = {"rope": ev["lm_learned_margin"]["rope"]}  # any interval
    ev["repeated_passes"] = False
    entry = judged("extrapolation.memorisation_below_capacity_share", ev)
    assert entry["verdict"] == "n/a"
    assert "more than once" in entry["reason"]
    ev["repeated_passes"] = True  # read more than once: the claim applies
    entry = judged("extrapolation.memorisation_below_capacity_share", ev)
    assert "more than once" not in (entry["reason"] or "")


def test_a_model_collapsed_at_one_length_stays_collapsed_at_longer_ones():
    """Alive means below the unigram at that length and every shorter one: a model worse than
    character frequencies at 2x is not a comparator at 4x because its loss dips there."""
    dips = {1: 2.0, 2: 4.5, 4: 3.0, 8: 3.2, 16: 3.4}  # the unigram is at 4.0
    ev = extrapolation_evidence({"rope": dips, "rope_nope_hybrid": HYBRID_AHEAD})
    assert ev["collapsed_at"]["rope"] == ["2x", "4x", "8x", "16x"]
    assert ev["alive_past_train"]["rope"] is False
    entry = judged("extrapolation.hybrid_beats_rope_uncollapsed", ev)
    assert entry["verdict"] == "inconclusive"
