"""The mechanism measurement's aggregate (analyses/extrapolation/mechanism.py) on hand-made
readouts: the rank correlations, the rises and log-n's share of the entropy rise."""

from __future__ import annotations

import pytest

from posenc.analyses.extrapolation.mechanism import mechanism
from posenc.stats import Bootstrap

LAYERS = 2


def readout(m: int, bits: float, entropy: float, far: float | None, windows: int = 4) -> dict:
    spread = [-0.01, 0.0, 0.01, 0.0][:windows]
    return {
        "multiplier": m,
        "length": 8 * m,
        "window_bits": [bits + d for d in spread],
        "entropy": [[entropy + d] * LAYERS for d in spread],
        "far_mass": [[None if far is None else far + d] * LAYERS for d in spread],
    }


def record(encoding: str, seed: int, rise: float, entropy_rise: float, far: float) -> dict:
    """An LM whose loss rises by ``rise`` per doubling, its entropy by ``entropy_rise``; log-n
    scaling takes half the entropy rise off."""
    plain = [readout(1, 2.0, 0.5, None)] + [
        readout(m, 2.0 + rise * k, 0.5 + entropy_rise * k, far * k)
        for k, m in enumerate((2, 4), start=1)
    ]
    logn = [
        readout(m, 2.0 + rise * k, 0.5 + entropy_rise * k / 2, far * k)
        for k, m in enumerate((2, 4), start=1)
    ]
    return {
        "task": "lm",
        "encoding": encoding,
        "seed": seed,
        "readout": {"plain": plain, "logn": logn},
    }


def evals(far_sign: float = 1.0):
    out = []
    for i, e in enumerate(["a", "b", "c", "d", "e"]):
        for seed in (0, 1):
            out.append(record(e, seed, 0.1 * (i + 1), 0.02 * (i + 1), 0.05 * (5 - i) * far_sign))
    return out


def test_rank_correlations_and_rises():
    rows, ev = mechanism(evals(), {"a", "b", "c", "d", "e"}, Bootstrap(200, 0), 0.95)
    rho = ev["entropy_rank_correlation"]["4x"]
    assert rho["estimate"] == pytest.approx(1.0)
    assert rho["low"] > 0.5  # the windows' spread (0.01) never reorders rises 0.02 apart
    assert ev["far_mass_rank_correlation"]["4x"]["estimate"] == pytest.approx(-1.0)
    assert ev["mechanism_encodings"] == ["a", "b", "c", "d", "e"]
    mean = {(r["encoding"], r["arm"], r["multiplier"]): r for r in rows if r["layer"] == "mean"}
    assert mean[("c", "plain", 4)]["bits_rise"]["estimate"] == pytest.approx(0.6)
    assert mean[("c", "plain", 4)]["entropy_rise"]["estimate"] == pytest.approx(0.12)
    assert mean[("c", "plain", 1)]["far_mass"] is None  # no key past L_train at 1x
    assert {r["layer"] for r in rows} == {"mean", 1, 2}
    assert ev["logn_entropy_rise_removed"]["c"]["estimate"] == pytest.approx(0.5)


def test_only_encodings_that_learned_are_ranked():
    _, ev = mechanism(evals(), {"a", "b"}, Bootstrap(50, 0), 0.95)
    assert ev["entropy_rank_correlation"] == {}  # fewer than three: no correlation
    assert ev["mechanism_encodings"] == ["a", "b"]


def test_no_readout_no_evidence():
    rows, ev = mechanism([{"task": "lm", "encoding": "a", "seed": 0}], set(), Bootstrap(10), 0.95)
    assert rows == [] and ev["entropy_rank_correlation"] == {}
