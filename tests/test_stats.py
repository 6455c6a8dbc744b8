"""The two-level bootstrap: intervals that cover, pairing that cancels shared noise, seeds and
windows both resampled, deterministic draws."""

import numpy as np
import pytest

from posenc.stats import Bootstrap, disagree


def test_a_constant_has_a_zero_width_interval():
    r = Bootstrap(200).mean(np.full((3, 10), 2.5), seeds_of="a", units_of="w")
    assert r.interval(0.95) == {
        "estimate": 2.5,
        "low": 2.5,
        "high": 2.5,
        "se": 0.0,
        "df": None,
        "level": 0.95,
    }


def test_the_interval_covers_the_true_mean_about_as_often_as_its_level():
    rng = np.random.default_rng(0)
    hits = 0
    for trial in range(200):
        values = rng.normal(1.0, 1.0, size=(1, 50))
        interval = Bootstrap(400, seed=trial).mean(values, "a", "w").interval(0.9)
        hits += interval["low"] <= 1.0 <= interval["high"]
    assert 0.8 <= hits / 200 <= 0.97  # percentile intervals run a little short at n = 50


def test_both_levels_are_resampled():
    boot = Bootstrap(500)
    # Seeds that differ, windows that do not: the seed level alone gives the width.
    seeds_differ = np.array([[0.0] * 8, [1.0] * 8, [2.0] * 8])
    width = boot.mean(seeds_differ, "a", "w").interval(0.95)
    assert width["high"] - width["low"] > 0.5
    # Windows that differ, seeds that agree: the window level alone gives the width.
    windows_differ = np.tile(np.arange(8.0), (3, 1))
    width = boot.mean(windows_differ, "b", "w2").interval(0.95)
    assert width["high"] - width["low"] > 1.0


def test_differences_on_shared_units_are_paired():
    rng = np.random.default_rng(1)
    text_difficulty = rng.normal(0, 1, size=32)  # the same windows scored at two lengths
    short = (2.0 + text_difficulty)[None, :]
    long = (2.1 + text_difficulty)[None, :]
    boot = Bootstrap(500)
    paired = boot.mean(long, "model", "windows") - boot.mean(short, "model", "windows")
    interval = paired.interval(0.95)
    assert interval["estimate"] == pytest.approx(0.1)
    assert interval["high"] - interval["low"] < 1e-9  # the shared difficulty cancels
    unpaired = boot.mean(long, "model", "windows") - boot.mean(short, "model", "other windows")
    spread = unpaired.interval(0.95)
    assert spread["high"] - spread["low"] > 0.5


def test_draws_depend_on_the_key_not_on_the_order_of_calls():
    values = np.random.default_rng(2).normal(size=(3, 20))
    a, b = Bootstrap(100, seed=7), Bootstrap(100, seed=7)
    a.mean(values, "other", "other units")
    assert np.array_equal(a.mean(values, "x", "w").draws, b.mean(values, "x", "w").draws)
    assert not np.array_equal(
        Bootstrap(100, seed=8).mean(values, "x", "w").draws, b.mean(values, "x", "w").draws
    )


def test_seeds_disagree_when_their_own_intervals_do_not_overlap():
    assert disagree([{"low": 0.9, "high": 1.0}, {"low": 0.1, "high": 0.2}])
    assert not disagree([{"low": 0.1, "high": 0.5}, {"low": 0.4, "high": 0.9}])
    assert not disagree([{"low": 0.1, "high": 0.2}])


def test_bad_input_is_an_error():
    with pytest.raises(ValueError, match="resamples"):
        Bootstrap(0)
    with pytest.raises(ValueError, match="non-empty"):
        Bootstrap(10).mean(np.zeros((0, 3)), "a", "w")
