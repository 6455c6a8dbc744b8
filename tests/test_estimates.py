"""The study's intervals (posenc.estimates): t quantiles, the seed and text parts, pairing,
ratios, and, by simulation on tables shaped like a default run's (tests/fixtures/
variance_components.json, written by benchmarks/variance_components.py), coverage at the
study's seed counts and the claims' family-wise error at the least favourable point."""

import json
from pathlib import Path

import numpy as np
import pytest

from posenc.coverage import COMPONENTS, coverage, family_error, simulate, variance_components
from posenc.estimates import Design
from posenc.tdist import half_width, t_quantile

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "variance_components.json").read_text())
FRAGMENTS = FIXTURE["fragments"]
# Every (encoding, quantity) of the default run: its seed, fragment, window, residual variances.
SHAPES = {
    f"{encoding} {quantity}": {k: c[k] for k in COMPONENTS}
    for encoding, quantities in FIXTURE["components"].items()
    for quantity, c in quantities.items()
}


@pytest.mark.parametrize(
    "p,df,expected",
    [
        (0.975, 2, 4.302652729911275),
        (0.975, 12, 2.1788128296634177),
        (0.975, 1, 12.706204736174698),
        (0.9995, 4, 8.610301581372),
        (0.025, 2, -4.302652729911275),
        (0.975, None, 1.959963984540054),
    ],
)
def test_t_quantiles_match_published_values(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, rel=1e-7)


def test_a_constant_has_a_zero_width_interval():
    found = Design().mean(np.full((3, 10), 2.5), "a", "w").interval(0.95)
    assert (found["estimate"], found["low"], found["high"], found["se"]) == (2.5, 2.5, 2.5, 0.0)


def test_three_seeds_alone_give_the_t_interval_on_two_degrees_of_freedom():
    per_seed = np.array([1.0, 2.0, 4.0])
    found = Design().mean(np.tile(per_seed[:, None], (1, 8)), "a", "w").interval(0.95)
    se = per_seed.std(ddof=1) / np.sqrt(3)
    assert found["se"] == pytest.approx(se)
    assert found["high"] - found["estimate"] == pytest.approx(4.302652729911275 * se, rel=1e-7)
    assert found["df"] == pytest.approx(2.0)


def test_windows_in_one_fragment_count_as_one():
    # Four windows, two fragments: the text part has two replicates, not four.
    values = np.array([[0.0, 0.0, 1.0, 1.0]] * 3)
    apart = Design().mean(values, "a", "w").interval(0.95)
    clustered = Design({"w": [0, 0, 1, 1]}).mean(values, "a", "w").interval(0.95)
    assert clustered["high"] - clustered["low"] > 2 * (apart["high"] - apart["low"])


def test_differences_on_shared_windows_and_seeds_are_paired():
    rng = np.random.default_rng(1)
    text = rng.normal(0, 1, size=32)  # the same windows, the same models, two lengths
    models = rng.normal(0, 1, size=(3, 1))
    design = Design()
    short = design.mean(2.0 + text + models, "model", "windows")
    long = design.mean(2.1 + text + models, "model", "windows")
    paired = (long - short).interval(0.95)
    assert paired["estimate"] == pytest.approx(0.1)
    assert paired["high"] - paired["low"] < 1e-9
    # Two encodings' models on the same text: the text cancels, the models do not.
    other = design.mean(2.1 + text + rng.normal(0, 1, size=(3, 1)), "other model", "windows")
    assert (other - short).interval(0.95)["high"] - (other - short).interval(0.95)["low"] > 0.5


def test_a_ratio_is_linearised():
    rng = np.random.default_rng(2)
    a = Design().mean(rng.normal(0.9, 0.05, (4, 50)), "m", "seqs")
    b = Design().mean(rng.normal(0.95, 0.05, (4, 50)), "m", "seqs")
    r = a.ratio(b)
    assert r.point == pytest.approx(a.point / b.point)
    assert 0 < r.se < a.se + b.se


def test_one_seed_has_an_unknown_seed_part_unless_it_is_alone():
    # A model's own interval (the tables' per-seed cells): its windows only.
    own = Design().mean(np.array([[0.0, 1.0, 2.0, 3.0]]), "one", "w").interval(0.95)
    assert np.isfinite(own["low"]) and own["low"] < 1.5 < own["high"]


def test_variance_components_are_recovered():
    rng = np.random.default_rng(3)
    truth = {"seed": 0.2, "fragment": 0.05, "window": 0.3, "residual": 0.1}
    fragments = np.repeat(np.arange(150), 8)
    found = variance_components(simulate(truth, fragments, 150, rng), fragments)
    for name, value in truth.items():
        assert found[name] == pytest.approx(value, rel=0.25), name


def test_the_fixture_is_a_default_runs():
    assert len(FRAGMENTS) == 64 and len(set(FRAGMENTS)) > 1
    assert len(FIXTURE["components"]) >= 10  # every encoding whose LMs were evaluated
    assert all(c["seeds"] == 3 for q in FIXTURE["components"].values() for c in q.values())


# Coverage: 300 synthetic tables per shape of the default run; the share whose interval holds
# the true mean. Pooled over every shape it must reach 0.93 at a nominal 0.95, and no one
# shape may fall far below (at 300 trials a true 0.95 reads under 0.91 once in ~1,000).
@pytest.mark.parametrize("n_seeds", [3, 5])
def test_the_intervals_cover_at_the_studys_seed_counts(n_seeds):
    found = {
        name: coverage(shape, FRAGMENTS, n_seeds, trials=300, seed=i)
        for i, (name, shape) in enumerate(sorted(SHAPES.items()))
    }
    assert np.mean(list(found.values())) >= 0.93, found
    assert min(found.values()) >= 0.91, found


def test_claims_err_at_most_at_their_level_at_the_least_favourable_point():
    """1,000 ledgers, each a claim per count of entries the study's claims judge, every
    entry's true value exactly at its threshold: at most 5 % of claims fail."""
    shapes = [SHAPES[name] for name in sorted(SHAPES)]
    found = family_error(shapes, FRAGMENTS, 3, entries=[1, 2, 4, 12], ledgers=1000)
    assert found["fail_rate"] <= 0.05, found
    assert max(found["by_entries"].values()) <= 0.05, found


def test_the_family_wise_adjustment_widens_each_part_by_its_own_quantile():
    parts = [[0.1, 2.0], [0.01, 7.0]]
    assert half_width(parts, 0.95) == pytest.approx(
        np.sqrt(t_quantile(0.975, 2.0) ** 2 * 0.1 + t_quantile(0.975, 7.0) ** 2 * 0.01)
    )
    assert half_width(parts, 1 - 0.05 / 12) > half_width(parts, 0.95)
