"""Every zero-shot and fine-tuned evaluation's per-window bits, with intervals from one design
(seeds, and the fragments of text the windows fall in; :mod:`posenc.estimates`) so that every
comparison between them is paired."""

from collections import defaultdict

import numpy as np

from posenc.estimates import Design, Estimate

PLAIN = "plain"  # the method of the unscaled model, in the zero-shot evaluations


class Scores:
    """Per-window bits of every evaluation, by key, estimated with one :class:`Design`:
    zero-shot keys ("zs", encoding, method, scale, mode, multiplier), fine-tune keys ("ft",
    encoding, method, scale, step, multiplier)."""

    def __init__(self, zero_shot: list[dict], tuned: list[dict], design: Design, level):
        self.design, self.level = design, level
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
        self._cache: dict[tuple, Estimate | None] = {}

    def _add(self, key, ev, row, mode):
        if row["defined"] and row.get("window_bits"):
            self.groups[key][ev["seed"]] = row["window_bits"]
        # Mode b scores the same windows everywhere; mode a the same ones at one length.
        self.units[key] = ("segment",) if mode == "segment" else ("all", row["length"])

    def get(self, *key) -> Estimate | None:
        if key not in self._cache:
            seeds = self.groups.get(key)
            self._cache[key] = (
                None
                if not seeds
                else self.design.mean(
                    np.array([seeds[s] for s in sorted(seeds)]),
                    seeds_of=("lm", key[1]),  # one population: the encoding's base models
                    units_of=self.units[key],
                    seed_ids=sorted(seeds),
                )
            )
        return self._cache[key]

    def zs(self, e, method, scale, m, mode="segment") -> Estimate | None:
        """A zero-shot evaluation: ``method`` at ``scale``, at m x L_train, in ``mode``."""
        return self.get("zs", e, method, scale, mode, m)

    def ft(self, e, method, s, step, m) -> Estimate | None:
        """A fine-tune at s after ``step`` steps, at m x L_train (mode b)."""
        return self.get("ft", e, method, s, step, m)

    def ci(self, estimate: Estimate | None) -> dict[str, float] | None:
        return None if estimate is None else estimate.interval(self.level)

    def largest_gap(self, a: tuple, b: tuple) -> float | None:
        """The largest |difference| of one window's bits between two keys, over seeds."""
        ga, gb = self.groups.get(a), self.groups.get(b)
        if not ga or not gb or set(ga) != set(gb):
            return None
        return max(float(np.max(np.abs(np.subtract(ga[s], gb[s])))) for s in ga)
