"""The claims evaluator (posenc.claims): one check decides the verdict and writes the expected
text from the same config threshold, so a threshold is written once."""

import math

import pytest

from posenc.claims import (
    KINDS,
    Check,
    Claim,
    ClaimError,
    check_ledger,
    evaluate,
    interval,
    section_thresholds,
)


def verdict_of(check, evidence, thresholds=None, **cfg):
    claim = Claim("sec.c", "A claim.", checks=(check,), kind="identity")
    (entry,) = evaluate((claim,), evidence, {"thresholds": thresholds or {}, **cfg}, "sec")
    return entry


# (op, threshold, measured value, verdict)
OPS = [
    ("<=", 2, 2, "pass"),
    ("<=", 2, 2.5, "fail"),
    ("<", 2, 1.9, "pass"),
    ("<", 2, 2, "fail"),
    (">=", 2, 2, "pass"),
    (">=", 2, 1.5, "fail"),
    (">", 2, 2.1, "pass"),
    (">", 2, 2, "fail"),
    ("==", 3, 3, "pass"),
    ("==", 3, 3.5, "fail"),
    ("within", 0.5, -0.5, "pass"),
    ("within", 0.5, 0.6, "fail"),
    ("within", 0.5, -0.6, "fail"),
    ("outside", 0.5, -0.6, "pass"),
    ("outside", 0.5, 0.5, "fail"),
    ("outside", 0.5, 0.1, "fail"),
]


@pytest.mark.parametrize("op,threshold,value,verdict", OPS)
def test_each_comparison(op, threshold, value, verdict):
    entry = verdict_of(Check("x", op, "t"), {"x": value}, {"t": threshold})
    assert entry["verdict"] == verdict
    assert entry["measured"] == value
    assert entry["reason"] is None


@pytest.mark.parametrize(
    "value,measured,verdict", [(True, True, "pass"), (False, True, "fail"), (True, 1, "fail")]
)
def test_yes_no_checks(value, measured, verdict):
    # 'is' is identity with True/False: a 1 is not a yes.
    entry = verdict_of(Check("fact", value=value), {"fact": measured})
    assert entry["verdict"] == verdict
    assert entry["expected"] == f"fact: {'yes' if value else 'no'}"


def test_dict_evidence_needs_every_value():
    check, t = Check("err", "<=", "t"), {"t": 1.0}
    assert verdict_of(check, {"err": {"a": 0.5, "b": 1.0}}, t)["verdict"] == "pass"
    assert verdict_of(check, {"err": {"a": 0.5, "b": 1.5}}, t)["verdict"] == "fail"
    entry = verdict_of(check, {"err": {"a": 0.5, "b": 1.0}}, t)
    assert entry["expected"] == "err for each ≤ 1"
    assert entry["measured"] == {"a": 0.5, "b": 1.0}
    # Dotted paths read into it.
    entry = verdict_of(Check("err.b", ">", "t"), {"err": {"a": 0.5, "b": 1.5}}, t)
    assert entry["verdict"] == "pass"


def test_each_entry_of_a_mapping_has_its_own_outcome():
    # The report card colours one encoding's cell by its own entry's verdict.
    check, t = Check("err", "<=", "t"), {"t": 1.0}
    entry = verdict_of(check, {"err": {"a": 0.5, "b": 1.5, "c": {"x": 0.1, "y": 2.0}}}, t)
    assert entry["verdict"] == "fail"
    assert entry["outcomes"] == {"err": {"a": "pass", "b": "fail", "c": "fail"}}
    # An interval is one value, a scalar has no entries, and an n/a claim judges none.
    interval = {"estimate": 0.5, "low": 0.2, "high": 0.9}
    assert verdict_of(check, {"err": interval}, t)["outcomes"] == {}
    assert verdict_of(check, {"err": 0.5}, t)["outcomes"] == {}
    assert verdict_of(check, {"err": {}}, t)["outcomes"] == {}
    # With `of`, each entry's difference from its reference is judged.
    near = Check("got", "within", "t", of="want")
    entry = verdict_of(near, {"got": {"a": 1.0, "b": 5.0}, "want": {"a": 1.5, "b": 2.0}}, t)
    assert entry["outcomes"] == {"got": {"a": "pass", "b": "fail"}}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "0.1", True])
def test_non_finite_or_non_numbers_fail(bad):
    # Whichever way the comparison points (even 'outside' for inf), NaN, inf, a string or a
    # bool never satisfies it.
    for op in ("<=", ">", "within", "outside"):
        entry = verdict_of(Check("x", op, "t"), {"x": bad}, {"t": 1.0})
        assert entry["verdict"] == "fail", (op, bad)


def test_none_or_nan_inside_a_dict_fails():
    check, t = Check("err", "<=", "t"), {"t": 1.0}
    assert verdict_of(check, {"err": {"a": 0.5, "b": None}}, t)["verdict"] == "fail"
    assert verdict_of(check, {"err": {"a": 0.5, "b": math.nan}}, t)["verdict"] == "fail"


@pytest.mark.parametrize(
    "evidence", [{}, {"other": 1}, {"x": None}, {"x": {}}, {"x": []}, {"y": {"z": 1}}]
)
def test_missing_evidence_is_na_with_a_reason_naming_it(evidence):
    check = Check("x", "<=", "t", label="the x error")
    entry = verdict_of(check, evidence, {"t": 1})
    assert entry["verdict"] == "n/a"
    assert "the x error" in entry["reason"]
    assert entry["measured"] is None
    assert entry["expected"] == "the x error ≤ 1"  # still says what it would have needed


def test_missing_nested_evidence_names_its_path():
    # An encoding that is not configured: its entry of a per-encoding dict is absent.
    entry = verdict_of(
        Check("far_change.alibi", "within", "t"), {"far_change": {"rope": 1}}, {"t": 1}
    )
    assert entry["verdict"] == "n/a" and "far change.alibi" in entry["reason"]


def test_one_missing_check_makes_the_claim_na_and_shows_the_rest():
    claim = Claim(
        "sec.c", "Two.", checks=(Check("a", "<=", "t"), Check("b", ">", "t")), kind="identity"
    )
    (entry,) = evaluate((claim,), {"a": 0.5}, {"thresholds": {"t": 1}}, "sec")
    assert entry["verdict"] == "n/a" and "no b" in entry["reason"]
    assert entry["measured"] == {"a": 0.5}


def test_unless_flag_makes_the_claim_na():
    claim = Claim(
        "sec.c", "Trained.", checks=(Check("x", "<=", "t"),), unless="smoke_test", kind="identity"
    )
    cfg = {"thresholds": {"t": 1}, "smoke_test": True}
    (entry,) = evaluate((claim,), {"x": 5}, cfg, "sec")
    assert entry["verdict"] == "n/a"
    assert entry["reason"] == "sec.smoke_test is set in the config"
    assert entry["measured"] == 5  # the number still shows
    (entry,) = evaluate((claim,), {"x": 5}, {**cfg, "smoke_test": False}, "sec")
    assert entry["verdict"] == "fail" and entry["reason"] is None


def test_unknown_threshold_key_names_the_claim():
    claim = Claim("sec.needs_t", "A claim.", checks=(Check("x", "<=", "tt"),), kind="identity")
    with pytest.raises(ClaimError, match=r"sec\.needs_t.*'tt'.*sec\.thresholds \(t\)"):
        evaluate((claim,), {"x": 1}, {"thresholds": {"t": 1}}, "sec")
    # Even when the claim would be n/a for missing evidence: a typo is never silent.
    with pytest.raises(ClaimError, match="sec.needs_t"):
        evaluate((claim,), {}, {"thresholds": {"t": 1}}, "sec")


@pytest.mark.parametrize(
    "op,text",
    [
        ("<=", "x ≤ {}"),
        (">", "x > {}"),
        ("==", "x = {}"),
        ("within", "x within ±{}"),
        ("outside", "x beyond ±{}"),
    ],
)
def test_expected_text_follows_the_config_threshold(op, text):
    check = Check("x", op, "t")
    for t in (0.25, 7, 1e-6):
        entry = verdict_of(check, {"x": 0.5}, {"t": t})
        assert entry["expected"] == text.format(f"{t:g}" if isinstance(t, float) else t)
    # The same threshold decides the verdict: move it across the value, the verdict moves.
    assert verdict_of(Check("x", "<=", "t"), {"x": 0.5}, {"t": 0.4})["verdict"] == "fail"
    assert verdict_of(Check("x", "<=", "t"), {"x": 0.5}, {"t": 0.6})["verdict"] == "pass"


def test_several_checks_all_must_pass_and_join_expected():
    claim = Claim(
        "sec.both",
        "Both.",
        checks=(Check("a", "<=", "lo", label="A"), Check("b", ">", "hi", label="B")),
        kind="identity",
    )
    cfg = {"thresholds": {"lo": 1, "hi": 2}}
    (entry,) = evaluate((claim,), {"a": 0.5, "b": 3}, cfg, "sec")
    assert entry["verdict"] == "pass"
    assert entry["measured"] == {"A": 0.5, "B": 3}
    assert entry["expected"] == "A ≤ 1; B > 2"
    (entry,) = evaluate((claim,), {"a": 0.5, "b": 1}, cfg, "sec")
    assert entry["verdict"] == "fail"


def test_statement_names_evidence():
    claim = Claim(
        "sec.s",
        "Relative: {relative}; absolute: {absolute}; {gone}.",
        checks=(Check("x", value=True),),
        references="su2021",
        kind="identity",
    )
    evidence = {"x": True, "relative": ["enc_a", "enc_b"], "absolute": []}
    (entry,) = evaluate((claim,), evidence, {}, "sec")
    want = "Relative: enc_a, enc_b; absolute: none configured; none configured."
    assert entry["statement"] == want
    assert entry["references"] == ["su2021"]  # a single key becomes a list
    assert entry["section"] == "sec"


def test_a_statement_writes_an_interval_as_estimate_and_bounds_never_as_data():
    # "{parity_best_bits}" once rendered as {'estimate': 5.75, 'low': ...} in the statement.
    claim = Claim(
        "sec.s",
        "Best: {best} bits/char; exact: {exact}; each: {each}.",
        checks=(Check("x", value=True),),
        kind="identity",
    )
    evidence = {
        "x": True,
        "best": interval(5.751849607753456, 5.668076048179053, 5.8242099338435676),
        "exact": interval(2.0, 2.0, 2.0),
        "each": {"rope": interval(0.5, 0.25, 0.75), "alibi": 1.5},
    }
    (entry,) = evaluate((claim,), evidence, {}, "sec")
    assert entry["statement"] == (
        "Best: 5.752 [5.668, 5.824] bits/char; exact: 2; each: rope: 0.5 [0.25, 0.75]; alibi: 1.5."
    )
    assert "{'" not in entry["statement"] and "estimate" not in entry["statement"]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(op="~=", threshold="t"),  # no such op
        dict(op="<="),  # a comparison needs a threshold key
        dict(op="within", value=True),
        dict(op="is"),  # 'is' needs a value
        dict(op="is", value=True, threshold="t"),  # ...and no threshold
    ],
)
def test_check_rejects_bad_ops(kwargs):
    with pytest.raises(ClaimError, match="check on x"):
        Check("x", **kwargs)


def test_claim_needs_a_check():
    with pytest.raises(ClaimError, match="sec.empty"):
        Claim("sec.empty", "Cannot fail.", checks=(), kind="identity")


def test_claim_needs_a_kind():
    # Required, with no default: a claim must say what kind of evidence its verdict is.
    with pytest.raises(TypeError, match="kind"):
        Claim("sec.c", "A.", checks=(Check("x", "<=", "t"),))


@pytest.mark.parametrize("kind", ["Identity", "empirically", "", None])
def test_claim_rejects_a_bad_kind(kind):
    with pytest.raises(ClaimError, match=r"sec\.c: kind .* is not one of 'identity'"):
        Claim("sec.c", "A.", checks=(Check("x", "<=", "t"),), kind=kind)


@pytest.mark.parametrize("kind", KINDS)
def test_kind_is_written_into_the_ledger(kind):
    claim = Claim("sec.c", "A.", checks=(Check("x", "<=", "t"),), kind=kind)
    (entry,) = evaluate((claim,), {"x": 0.5}, {"thresholds": {"t": 1}}, "sec")
    assert entry["kind"] == kind
    (entry,) = evaluate((claim,), {}, {"thresholds": {"t": 1}}, "sec")
    assert entry["kind"] == kind and entry["verdict"] == "n/a"  # n/a claims keep their kind


def test_evaluated_ledger_is_valid():
    claims = (
        Claim("sec.a", "A.", checks=(Check("x", "<=", "t"),), kind="identity"),
        Claim("sec.b", "B.", checks=(Check("y", "<=", "t"),), kind="identity"),
    )
    ledger = evaluate(claims, {"x": 0.5}, {"thresholds": {"t": 1}}, "sec")
    assert check_ledger(ledger, "claims.json") is ledger
    assert [c["verdict"] for c in ledger] == ["pass", "n/a"]


GOOD = {
    "id": "s.a",
    "kind": "identity",
    "statement": "A.",
    "measured": 1,
    "expected": "x ≤ 1",
    "verdict": "pass",
    "references": [],
    "section": "s",
}


@pytest.mark.parametrize(
    "ledger,message",
    [
        ({"id": "s.a"}, "must hold a list, got dict"),
        (["s.a"], "entry 0 is not an object"),
        ([{k: v for k, v in GOOD.items() if k != "expected"}], "'s.a' lacks expected"),
        ([{**GOOD, "verdict": "maybe"}], "'s.a' has verdict 'maybe'"),
        ([{k: v for k, v in GOOD.items() if k != "kind"}], "'s.a' lacks kind"),
        ([{**GOOD, "kind": "hunch"}], "'s.a' has kind 'hunch'"),
        ([GOOD, GOOD], "'s.a' appears twice"),
    ],
)
def test_check_ledger_errors_name_the_file(ledger, message):
    with pytest.raises(ValueError, match="results/x/claims.json") as err:
        check_ledger(ledger, "results/x/claims.json")
    assert message in str(err.value)


def test_of_compares_the_difference_from_a_reference_and_keeps_the_measured_values():
    from posenc.claims import Check, Claim, evaluate

    claim = Claim("a.seed", "x", (Check("got", "within", "tol", of="printed"),), kind="identity")
    cfg = {"thresholds": {"tol": 5e-4}}
    [held] = evaluate([claim], {"got": [0.9661, 0.6579], "printed": [0.966, 0.658]}, cfg, "a")
    assert held["verdict"] == "pass" and held["measured"] == [0.9661, 0.6579]
    assert "±0.0005 of the printed 0.966, 0.658" in held["expected"]
    [off] = evaluate([claim], {"got": [0.9661, 0.6599], "printed": [0.966, 0.658]}, cfg, "a")
    assert off["verdict"] == "fail"
    [short] = evaluate([claim], {"got": [0.9661], "printed": [0.966, 0.658]}, cfg, "a")
    assert short["verdict"] == "fail"  # a different count never matches
    [na] = evaluate([claim], {"got": [0.9661]}, cfg, "a")
    assert na["verdict"] == "n/a" and "printed" in na["reason"]


def test_scale_multiplies_the_threshold_and_says_so():
    from posenc.claims import Check, Claim, evaluate

    claim = Claim("a.ulps", "x", (Check("spread", "<=", "ulps", scale="unit"),), kind="identity")
    cfg = {"thresholds": {"ulps": 64}}
    [held] = evaluate([claim], {"spread": {"p": 1e-14}, "unit": 2.2e-16}, cfg, "a")
    assert held["verdict"] == "pass" and "64 × unit = 1.408e-14" in held["expected"]
    [fails] = evaluate([claim], {"spread": {"p": 2e-14}, "unit": 2.2e-16}, cfg, "a")
    assert fails["verdict"] == "fail"


def test_shows_puts_context_in_measured_and_decides_nothing():
    from posenc.claims import Check, Claim, evaluate

    claim = Claim(
        "a.gap", "x", (Check("gap", ">", "margin"),), shows=("short", "long"), kind="identity"
    )
    cfg = {"thresholds": {"margin": 0.1}}
    [c] = evaluate([claim], {"gap": 0.5, "short": 1.2, "long": 1.7}, cfg, "a")
    assert c["verdict"] == "pass" and c["measured"] == {"gap": 0.5, "short": 1.2, "long": 1.7}
    [c] = evaluate([claim], {"gap": 0.5, "short": 1.2}, cfg, "a")
    assert c["verdict"] == "pass" and c["measured"] == {"gap": 0.5, "short": 1.2}


def test_of_may_name_a_centre_set_in_the_config():
    from posenc.claims import Check, Claim, evaluate

    claim = Claim("a.slope", "x", (Check("slope", "within", "tol", of="centre"),), kind="identity")
    cfg = {"thresholds": {"tol": 0.2, "centre": 1.0}}
    [c] = evaluate([claim], {"slope": 0.964}, cfg, "a")
    assert c["verdict"] == "pass" and c["measured"] == 0.964
    assert c["expected"] == "slope within ±0.2 of the centre 1"
    [c] = evaluate([claim], {"slope": 1.3}, cfg, "a")
    assert c["verdict"] == "fail"


# Interval evidence: a verdict rests on the whole interval, never on its point estimate alone;
# an interval that straddles the threshold cannot decide the claim: inconclusive.
def _interval_claim(op="<=", threshold="margin"):
    return Claim(
        "a.flat",
        "flat",
        kind="empirical",
        checks=(Check("change", op, threshold, label="change"),),
    )


@pytest.mark.parametrize(
    ("low", "estimate", "high", "op", "verdict"),
    [
        (-0.02, 0.01, 0.04, "within", "pass"),  # the whole interval inside +-0.05
        (-0.02, 0.01, 0.09, "within", "inconclusive"),  # estimate inside, upper bound outside
        (0.06, 0.08, 0.09, "within", "fail"),  # the whole interval outside
        (-0.09, -0.07, -0.06, "within", "fail"),
        (-0.09, 0.0, 0.09, "within", "inconclusive"),  # both bounds outside, on either side
        (-0.09, -0.07, -0.06, "outside", "pass"),
        (0.01, 0.04, 0.09, "outside", "inconclusive"),
        (-0.04, 0.0, 0.04, "outside", "fail"),
        (0.31, 0.4, 0.5, ">=", "pass"),
        (0.2, 0.4, 0.5, ">=", "inconclusive"),  # estimate above 0.3, lower bound below
        (0.1, 0.2, 0.25, ">=", "fail"),
        (-0.1, 0.0, 0.04, "<=", "pass"),
        (-0.1, 0.0, 0.06, "<=", "inconclusive"),
        (0.06, 0.07, 0.08, "<=", "fail"),
        (float("nan"), 0.0, 0.01, "<=", "fail"),  # an undefined bound never satisfies
    ],
)
def test_interval_evidence_is_judged_by_its_bounds(low, estimate, high, op, verdict):
    threshold = 0.3 if op == ">=" else 0.05
    ledger = evaluate(
        [_interval_claim(op)],
        {"change": interval(estimate, low, high)},
        {"thresholds": {"margin": threshold}},
        "a",
    )
    assert ledger[0]["verdict"] == verdict
    if verdict == "inconclusive":  # the reason is generated: the interval and the bound
        assert ledger[0]["reason"] == (
            f"the interval of change straddles the threshold ({ledger[0]['expected']}): "
            f"[{low:g}, {high:g}]"
        )
    else:
        assert ledger[0]["reason"] is None
    if low == low:  # not NaN
        assert ledger[0]["measured"] == {"estimate": estimate, "low": low, "high": high}
    assert "(the whole interval)" in ledger[0]["expected"]
    assert "for each" not in ledger[0]["expected"]


def test_a_mapping_of_intervals_passes_only_when_every_interval_does():
    evidence = {"change": {"x": interval(0.0, -0.01, 0.01), "y": interval(0.0, -0.01, 0.2)}}
    ledger = evaluate([_interval_claim("within")], evidence, {"thresholds": {"margin": 0.05}}, "a")
    assert ledger[0]["verdict"] == "inconclusive"
    assert ledger[0]["outcomes"] == {"change": {"x": "pass", "y": "inconclusive"}}
    assert ledger[0]["reason"].endswith(": y [-0.01, 0.2]")
    # One entry that fails outright fails the claim, whatever the others' state.
    evidence["change"]["x"] = interval(0.3, 0.2, 0.4)
    ledger = evaluate([_interval_claim("within")], evidence, {"thresholds": {"margin": 0.05}}, "a")
    assert ledger[0]["verdict"] == "fail"
    assert ledger[0]["outcomes"] == {"change": {"x": "fail", "y": "inconclusive"}}
    evidence["change"]["x"] = interval(0.0, -0.01, 0.01)
    evidence["change"]["y"] = interval(0.0, -0.04, 0.04)
    ledger = evaluate([_interval_claim("within")], evidence, {"thresholds": {"margin": 0.05}}, "a")
    assert ledger[0]["verdict"] == "pass"
    assert "for each" in ledger[0]["expected"]


def test_the_report_writes_an_interval_as_estimate_and_bounds():
    from posenc.report.filters import fmt_measured

    assert fmt_measured(interval(0.5, 0.25, 0.75)) == "0.5 [0.25, 0.75]"


# Preconditions: what must hold for the evidence to bear on the claim at all.
LEARNED = Claim(
    "a.retrieves",
    "Every encoding retrieves the key.",
    kind="empirical",
    checks=(Check("accuracy", ">=", "min_accuracy", label="accuracy"),),
    requires=(Check("learners", ">=", "min_learners", label="seeds that learned"),),
)
CFG = {"thresholds": {"min_accuracy": 0.9, "min_learners": 3}}


def test_an_entry_whose_precondition_fails_is_not_judged_and_the_rest_decide():
    evidence = {"accuracy": {"alibi": 0.95, "rope": 0.95}, "learners": {"alibi": 2, "rope": 5}}
    (c,) = evaluate([LEARNED], evidence, CFG, "a")
    assert c["verdict"] == "pass" and c["reason"] is None
    assert c["outcomes"] == {"accuracy": {"alibi": "not judged", "rope": "pass"}}
    assert c["not_judged"] == {
        "entries": ["alibi"],
        "why": "not met: seeds that learned for each ≥ 3; measured alibi 2",
    }
    assert c["measured"]["seeds that learned"] == {"alibi": 2, "rope": 5}
    # Fewer entries judged than the configured minimum: inconclusive, naming why.
    claim = Claim(**{**LEARNED.__dict__, "min_judged": "min_judged"})
    (c,) = evaluate([claim], evidence, {"thresholds": {**CFG["thresholds"], "min_judged": 2}}, "a")
    assert c["verdict"] == "inconclusive"
    assert c["reason"] == "not met: seeds that learned for each ≥ 3; measured alibi 2"
    evidence["learners"]["alibi"] = 3  # enough seeds learned: both entries are judged
    (c,) = evaluate([claim], evidence, {"thresholds": {**CFG["thresholds"], "min_judged": 2}}, "a")
    assert c["verdict"] == "pass" and c["not_judged"] is None


def test_a_min_judged_names_a_threshold():
    claim = Claim(**{**LEARNED.__dict__, "min_judged": "nowhere"})
    with pytest.raises(ClaimError, match="nowhere"):
        evaluate([claim], {"accuracy": {"a": 1.0}, "learners": {"a": 5}}, CFG, "a")


def test_an_entry_that_learned_and_fails_still_fails_the_claim():
    evidence = {"accuracy": {"alibi": 0.95, "rope": 0.4}, "learners": {"alibi": 2, "rope": 5}}
    (c,) = evaluate([LEARNED], evidence, CFG, "a")
    assert c["verdict"] == "fail"
    assert c["outcomes"] == {"accuracy": {"alibi": "not judged", "rope": "fail"}}


@pytest.mark.parametrize("seed", range(40))
def test_adding_a_non_learner_never_changes_a_verdict(seed):
    """The referee's counterexample, generalised: "for every encoding whose models learned"
    is decided on those that did; one more that did not learn, passing or failing its own
    check, changes nothing."""
    import random

    rng = random.Random(seed)
    names = [f"e{i}" for i in range(rng.randint(1, 5))]
    accuracy = {
        e: interval(x, x - w, x + w)
        for e in names
        for x, w in [(rng.uniform(0.7, 1.0), rng.uniform(0.0, 0.1))]
    }
    learners = {e: rng.choice([3, 4, 5]) for e in names}
    (before,) = evaluate([LEARNED], {"accuracy": accuracy, "learners": learners}, CFG, "a")
    x = rng.uniform(0.0, 1.0)
    accuracy["late"], learners["late"] = interval(x, x - 0.01, x + 0.01), rng.choice([0, 1, 2])
    (after,) = evaluate([LEARNED], {"accuracy": accuracy, "learners": learners}, CFG, "a")
    assert after["verdict"] == before["verdict"]
    assert after["outcomes"]["accuracy"]["late"] == "not judged"


def test_the_referees_counterexample_through_the_studys_own_claim():
    """extrapolation.logn_lowers_long_loss: rope and alibi learned and pass, NoPE did not
    learn. It passed without NoPE in the study and turned inconclusive with it; now it passes
    both ways."""
    import yaml

    from posenc.analyses.extrapolation.claims import CLAIMS

    claim = next(c for c in CLAIMS if c.id == "extrapolation.logn_lowers_long_loss")
    with open("config/config.yaml") as f:
        config = yaml.safe_load(f)
    cfg = {**config["extrapolation"], "thresholds": section_thresholds(config, "extrapolation")}
    threshold = cfg["thresholds"][claim.checks[0].threshold]
    learned = cfg["thresholds"]["lm_learned_margin_bits"]
    gain = {
        e: interval(threshold + 0.2, threshold + 0.1, threshold + 0.3) for e in ("rope", "alibi")
    }
    margin = {e: interval(learned + 0.5, learned + 0.4, learned + 0.6) for e in gain}
    evidence = {
        claim.checks[0].evidence: dict(gain),
        "lm_learned_margin": dict(margin),
        "logn_stretch_measured": True,
    }
    (without,) = evaluate([claim], evidence, cfg, "extrapolation")
    evidence[claim.checks[0].evidence]["none"] = interval(threshold - 1, threshold - 2, threshold)
    evidence["lm_learned_margin"]["none"] = interval(learned - 0.5, learned - 0.6, learned - 0.4)
    (with_nope,) = evaluate([claim], evidence, cfg, "extrapolation")
    assert without["verdict"] == with_nope["verdict"] == "pass"
    assert with_nope["outcomes"][claim.checks[0].evidence]["none"] == "not judged"


def test_a_per_model_precondition_covers_entries_keyed_by_model_and_more():
    # Entries "rope 2x" belong to the model "rope"; entries keyed by scale alone read every
    # model, so the precondition applies to them as a whole.
    evidence = {
        "accuracy": {"alibi 2x": 0.5, "rope 2x": 0.95, "rope 4x": 0.95},
        "learners": {"alibi": 2, "rope": 5},
    }
    (c,) = evaluate([LEARNED], evidence, CFG, "a")
    assert c["outcomes"]["accuracy"] == {
        "alibi 2x": "not judged",
        "rope 2x": "pass",
        "rope 4x": "pass",
    }
    evidence["accuracy"] = {"2x": 0.95, "4x": 0.95}
    (c,) = evaluate([LEARNED], evidence, CFG, "a")
    assert c["verdict"] == "inconclusive"
    assert set(c["outcomes"]["accuracy"].values()) == {"not judged"}
    evidence["learners"]["alibi"] = 3
    (c,) = evaluate([LEARNED], evidence, CFG, "a")
    assert c["verdict"] == "pass"


def test_a_threshold_of_another_section_by_its_qualified_name():
    config = {"a": {"thresholds": {"x": 1}}, "b": {"thresholds": {"x": 2, "y": 3}}, "c": 4}
    assert section_thresholds(config, "a") == {"x": 1, "a.x": 1, "b.x": 2, "b.y": 3}


def test_a_claim_wide_precondition_makes_every_entry_inconclusive():
    claim = Claim(
        "a.flat",
        "It stays flat.",
        kind="empirical",
        checks=(Check("change", "<=", "margin"),),
        requires=(Check("lm_bits_below_trigram", ">", "zero", label="bits below the trigram"),),
    )
    cfg = {"thresholds": {"margin": 0.1, "zero": 0.0}}
    evidence = {"change": {"1x": 0.0, "4x": 0.5}, "lm_bits_below_trigram": -0.2}
    (c,) = evaluate([claim], evidence, cfg, "a")
    assert c["verdict"] == "inconclusive"  # a fail on a model that did not learn decides nothing
    assert c["reason"] == "not met: bits below the trigram > 0; measured -0.2"
    assert c["outcomes"] == {"change": {"1x": "not judged", "4x": "not judged"}}
    evidence["lm_bits_below_trigram"] = 0.3
    (c,) = evaluate([claim], evidence, cfg, "a")
    assert c["verdict"] == "fail" and c["outcomes"]["change"]["4x"] == "fail"


def test_a_precondition_interval_that_straddles_is_not_met():
    evidence = {
        "accuracy": {"alibi": 0.95},
        "learners": {"alibi": {"estimate": 3.0, "low": 2.0, "high": 4.0}},
    }
    (c,) = evaluate([LEARNED], evidence, CFG, "a")
    assert c["verdict"] == "inconclusive"
    assert c["reason"].endswith("measured alibi 3.000 [2.000, 4.000]")


def test_a_precondition_names_its_threshold_and_needs_its_evidence():
    with pytest.raises(ClaimError, match="min_learners"):
        evaluate(
            [LEARNED], {"accuracy": {}, "learners": {}}, {"thresholds": {"min_accuracy": 1}}, "a"
        )
    (c,) = evaluate([LEARNED], {"accuracy": {"alibi": 0.95}}, CFG, "a")
    assert c["verdict"] == "n/a" and "seeds that learned" in c["reason"]


def test_a_precondition_not_met_decides_even_where_the_claims_evidence_is_missing():
    """No seed learned, so there is no accuracy over learners: inconclusive, not n/a."""
    (c,) = evaluate([LEARNED], {"learners": {"alibi": 0}}, CFG, "a")
    assert c["verdict"] == "inconclusive"
    assert c["reason"] == "not met: seeds that learned ≥ 3; measured alibi 0"
    # Met, with the claim's evidence missing: n/a, as without preconditions.
    (c,) = evaluate([LEARNED], {"learners": {"alibi": 5}}, CFG, "a")
    assert c["verdict"] == "n/a" and "accuracy" in c["reason"]


def _t_interval(estimate, se, df=4.0, level=0.95):
    from posenc.tdist import t_quantile

    half = t_quantile(0.5 + level / 2, df) * se
    return interval(estimate, estimate - half, estimate + half, se=se, df=df, level=level)


def test_a_fail_among_several_entries_is_judged_at_the_family_wise_level():
    """Bonferroni on the side that needs it: a claim fails when any of its m entries fails,
    so a fail needs the interval at 1 - 0.05 / m wholly past the threshold; it passes only
    when every entry passes, so a pass needs each at its own 95 %."""
    claim = Claim("a.c", "Each is below 0.", kind="empirical", checks=(Check("x", "<", "t"),))
    cfg = {"thresholds": {"t": 0.0}}
    # t(4) = 2.78 at 95 %: [0.17, 1.83], wholly above 0 (a fail on its own) ...
    alone = {"x": {"a": _t_interval(1.0, 0.3)}}
    (c,) = evaluate([claim], alone, cfg, "a")
    assert c["verdict"] == "fail" and c["family"] is None
    # ... but among four, at 1 - 0.05 / 4 (t(4) = 4.6), it straddles 0: inconclusive.
    four = {"x": {"a": _t_interval(1.0, 0.3), **{k: _t_interval(-1.0, 0.1) for k in "bcd"}}}
    (c,) = evaluate([claim], four, cfg, "a")
    assert c["verdict"] == "inconclusive"
    assert c["family"] == {"entries": 4, "level": pytest.approx(0.9875)}
    assert "at the family-wise level 98.8 %" in c["reason"]
    assert c["outcomes"]["x"] == {"a": "inconclusive", "b": "pass", "c": "pass", "d": "pass"}
    assert c["measured"]["a"]["level"] == 0.95  # what is shown: each at its own level
    # Four that pass at their own level pass together, however many there are.
    (c,) = evaluate([claim], {"x": {k: _t_interval(-1.0, 0.3) for k in "abcd"}}, cfg, "a")
    assert c["verdict"] == "pass"
    # An entry that is not judged does not count towards m.
    learned = Claim(**{**claim.__dict__, "requires": (Check("ok", value=True),)})
    one_judged = {**four, "ok": {"a": True, "b": False, "c": False, "d": False}}
    (c,) = evaluate([learned], one_judged, cfg, "a")
    assert c["verdict"] == "fail" and c["family"] is None


def test_an_interval_keeps_its_spread_when_a_reference_is_subtracted():
    from posenc.verdicts import minus

    shifted = minus(_t_interval(1.0, 0.3), 0.5)
    assert shifted["estimate"] == pytest.approx(0.5)
    assert (shifted["se"], shifted["df"], shifted["level"]) == (0.3, 4.0, 0.95)
