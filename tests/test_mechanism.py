"""The mechanism measurement's aggregate (analyses/extrapolation/mechanism.py) on hand-made
readouts: the rank correlations and their permutation p-values, the rises with intervals over
seeds and fragments, log-n's share of the entropy rise, and log-n's gain read from the
extension's stretch."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from posenc.analyses.extrapolation import mechanism as mech
from posenc.analyses.extrapolation.mechanism import (
    logn_stretch_gain,
    mechanism,
    rank_permutation_test,
    readout_summary,
    spearman,
)
from posenc.estimates import Design

LAYERS = 2
SPREAD = [-0.01, 0.0, 0.01, 0.0]


def readout(m: int, bits: float, entropy: float, far: float | None, seed: int = 0) -> dict:
    shift = 0.002 * seed  # seeds differ a little, so the seed part of the variance is not 0
    return {
        "multiplier": m,
        "length": 8 * m,
        "window_bits": [bits + shift + d for d in SPREAD],
        "entropy_nats": [[entropy + shift + d] * LAYERS for d in SPREAD],
        "entropy_normalised": [[entropy / (m + 1) + d] * LAYERS for d in SPREAD],
        "uniform_entropy": math.lgamma(8 * m + 1) / (8 * m - 1),
        "far_mass": [[None if far is None else far + d] * LAYERS for d in SPREAD],
    }


def record(encoding: str, seed: int, rise: float, entropy_rise: float, far: float) -> dict:
    """An LM read out at 1x and 4x whose loss rises by ``rise``, its raw entropy by
    ``entropy_rise``; log-n scaling takes half the entropy rise off."""
    plain = [
        readout(1, 2.0, 0.5, None, seed),
        readout(4, 2.0 + rise, 0.5 + entropy_rise, far, seed),
    ]
    logn = [readout(4, 2.0 + rise, 0.5 + entropy_rise / 2, far, seed)]
    return {
        "task": "lm",
        "encoding": encoding,
        "seed": seed,
        "settings": {"mechanism": {"seeds": [0, 1], "tokens": 128}},
        "readout": {"plain": plain, "logn": logn},
    }


NAMES = ["a", "b", "c", "d", "e", "f"]


def evals(far_sign: float = 1.0, names=NAMES):
    return [
        record(e, seed, 0.1 * (i + 1), 0.02 * (i + 1), 0.05 * (len(names) - i) * far_sign)
        for i, e in enumerate(names)
        for seed in (0, 1)
    ]


def test_rank_correlations_their_p_values_and_the_rises():
    rows, ev = mechanism(evals(), set(NAMES), Design(), 0.95, seed=0)
    # 6 encodings in the same order: rho 1, reached by the identity alone of 720 pairings.
    assert ev["entropy_rank_correlation"]["4x"]["estimate"] == pytest.approx(1.0)
    assert ev["entropy_rank_p"]["4x"] == pytest.approx(1 / 720)
    assert ev["far_mass_rank_correlation"]["4x"]["estimate"] == pytest.approx(-1.0)
    assert ev["far_mass_rank_p"]["4x"] == pytest.approx(1.0)  # every pairing reaches -1
    assert ev["mechanism_encodings"] == NAMES and ev["mechanism_encoding_count"] == 6
    assert ev["mechanism_longest"] == "4x"
    mean = {(r["encoding"], r["arm"], r["multiplier"]): r for r in rows if r["layer"] == "mean"}
    c = mean[("c", "plain", 4)]
    assert c["bits_rise"]["estimate"] == pytest.approx(0.3)
    assert c["entropy_rise"]["estimate"] == pytest.approx(0.06)
    # Uniform attention's rise over the same queries: the difference of the mean of ln n.
    assert c["uniform_rise"] == pytest.approx(math.lgamma(33) / 31 - math.lgamma(9) / 7)
    assert mean[("c", "plain", 1)]["far_mass"] is None  # no key past L_train at 1x
    assert {r["layer"] for r in rows} == {"mean", 1, 2}
    assert ev["logn_entropy_rise_removed"]["c"]["estimate"] == pytest.approx(0.5)


def test_intervals_have_a_seed_part_and_a_text_part():
    # Two fragments of text at 4x (windows 0-1 and 2-3), every window its own at 1x: the
    # interval's parts are the seeds' and each unit set's fragments (posenc.estimates).
    design = Design({("readout", 32): [0, 0, 1, 1]})
    rows, _ = mechanism(evals(), set(NAMES), design, 0.95)
    row = next(r for r in rows if (r["encoding"], r["multiplier"], r["layer"]) == ("a", 4, "mean"))
    parts = row["bits"]["parts"]
    assert len(parts) == 2 and parts[0][1] == 1.0  # 2 seeds: 1 degree of freedom
    assert row["bits"]["low"] < row["bits"]["estimate"] < row["bits"]["high"]
    with pytest.raises(ValueError, match="4 units scored, 3 labelled"):
        mechanism(evals(), set(NAMES), Design({("readout", 32): [0, 0, 1]}), 0.95)


def test_only_encodings_that_learned_are_ranked():
    _, ev = mechanism(evals(), {"a", "b"}, Design(), 0.95)
    assert ev["entropy_rank_correlation"] == {}  # fewer than three: no correlation
    assert ev["entropy_rank_p"] == {}
    assert ev["mechanism_encodings"] == ["a", "b"] and ev["mechanism_encoding_count"] == 2


def test_no_readout_no_evidence():
    rows, ev = mechanism([{"task": "lm", "encoding": "a", "seed": 0}], set(), Design(), 0.95)
    assert rows == [] and ev["entropy_rank_correlation"] == {}
    assert readout_summary([{"seed": 0}])["mechanism_seeds"] == []


def test_readout_summary_counts_windows_per_seed():
    summary = readout_summary(evals())
    assert summary == {
        "mechanism_seeds": [0, 1],
        "mechanism_longest": 4,
        "mechanism_windows_1x": 4,
        "mechanism_windows": 4,
    }


def test_permutation_p_value_by_hand():
    # n = 3: the six pairings of y's ranks with x = (0, 1, 2) have rho 1, 0.5, 0.5, -0.5,
    # -0.5, -1. y = (1, 3, 2) has rho 0.5, reached by 3 of 6; the identity by 1 of 6.
    assert rank_permutation_test([1, 2, 3], [1, 3, 2]) == pytest.approx((0.5, 0.5))
    assert rank_permutation_test([1, 2, 3], [10, 20, 30]) == pytest.approx((1.0, 1 / 6))
    assert rank_permutation_test([1, 2, 3], [3, 2, 1]) == pytest.approx((-1.0, 1.0))
    # n = 5: the referee's chance of rho >= 0.5 without association, counted here naively.
    x = [0, 1, 2, 3, 4]
    naive = [spearman(x, p) for p in itertools.permutations(x)]
    share = sum(r >= 0.5 - 1e-12 for r in naive) / len(naive)
    assert share == pytest.approx(0.225, abs=0.005)
    y = next(p for p, r in zip(itertools.permutations(x), naive) if abs(r - 0.5) < 1e-12)
    assert rank_permutation_test(x, y) == pytest.approx((0.5, share))


def test_permutation_p_value_drawn_past_the_exact_limit(monkeypatch):
    # 9! > 10^5: drawn permutations, the observed pairing counted once, so p >= 1 / (1 + D).
    x = list(range(9))
    rho, p = rank_permutation_test(x, x, seed=3, key="k")
    assert rho == pytest.approx(1.0)
    assert 1 / (1 + mech.DRAWN_PERMUTATIONS) <= p <= 3 / (1 + mech.DRAWN_PERMUTATIONS)
    assert rank_permutation_test(x, x, seed=3, key="k") == (rho, p)  # seeded
    # Drawn and exact agree where both can run (a middle case of 8 encodings).
    y = [2, 0, 1, 5, 3, 4, 7, 6]
    exact = rank_permutation_test(list(range(8)), y)
    monkeypatch.setattr(mech, "EXACT_PERMUTATIONS", 1)
    drawn = rank_permutation_test(list(range(8)), y, seed=1)
    assert drawn[0] == exact[0]
    assert drawn[1] == pytest.approx(exact[1], abs=4 * math.sqrt(exact[1] / 1e4))


def test_spearman_ties_take_mean_ranks():
    assert spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(np.sqrt(3) / 2)
    assert math.isnan(rank_permutation_test([1, 1, 1], [1, 2, 3])[1])


def stretch_record(encoding: str, seed: int, gain: float, multipliers=(1, 4)) -> dict:
    rows = []
    for method in ("plain", "logn", "llama4"):
        for m in multipliers:
            lower = gain if method == "logn" and m > 1 else 0.0
            rows.append(
                {
                    "method": method,
                    "scale": 1,
                    "mode": "segment",
                    "multiplier": m,
                    "defined": True,
                    "window_bits": [2.0 + 0.1 * m - lower + d + 0.01 * seed for d in SPREAD],
                }
            )
    return {"encoding": encoding, "seed": seed, "train_len": 8, "rows": rows}


def test_logn_gain_is_read_from_the_stretch_paired_by_seed_and_window():
    stretched = [stretch_record(e, s, g) for e, g in (("a", 0.2), ("b", -0.1)) for s in (0, 1, 2)]
    ev = logn_stretch_gain(stretched, Design({("stretch",): [0, 0, 1, 1]}), 0.95)
    assert ev["logn_stretch_measured"] is True
    assert ev["logn_gain_at"] == "4x"
    assert ev["logn_stretch_seeds"] == 3 and ev["logn_stretch_windows"] == 4
    gain = ev["logn_gain"]
    assert gain["a"]["estimate"] == pytest.approx(0.2)
    assert gain["b"]["estimate"] == pytest.approx(-0.1)
    # The same shift in every seed and window: paired, the difference has no spread.
    assert gain["a"]["low"] == pytest.approx(gain["a"]["high"])


def test_no_logn_stretch_says_so():
    assert logn_stretch_gain([], Design(), 0.95) == {"logn_stretch_measured": False}
    record = stretch_record("a", 0, 0.2)
    record["rows"] = [r for r in record["rows"] if r["method"] != "logn"]
    assert logn_stretch_gain([record], Design(), 0.95) == {"logn_stretch_measured": False}


def test_a_rank_correlation_has_an_interval_over_the_encodings():
    """Fisher's z with the rank correlation's variance 1.06 / (n - 3): rho 0.2 over ten
    encodings spans about [-0.5, 0.75], so a threshold of 0.5 is inside it."""
    from posenc.analyses.extrapolation.mechanism import rank_interval

    r = rank_interval(0.2, 10, 0.95)
    half = 1.959963984540054 * math.sqrt(1.06 / 7)
    assert r["low"] == pytest.approx(math.tanh(math.atanh(0.2) - half))
    assert r["high"] == pytest.approx(math.tanh(math.atanh(0.2) + half))
    assert -0.6 < r["low"] < -0.4 and 0.7 < r["high"] < 0.8
    assert rank_interval(0.9, 3, 0.95) == {"estimate": 0.9, "low": -1.0, "high": 1.0}
    perfect = rank_interval(1.0, 10, 0.95)  # z infinite at 1: entered as 1 - 6 / 990
    assert perfect["estimate"] == 1.0 and 0.9 < perfect["low"] < perfect["high"] < 1.0
