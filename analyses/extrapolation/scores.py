"""Every model's per-unit scores, with intervals from one design (seeds, and fragments of text
or test sequences, :mod:`posenc.estimates`) so that the intervals drawn from it pair where the
data are (:class:`Scores`), and the curves they make."""

from collections import defaultdict
from typing import Any

import numpy as np

from posenc.encodings import REGISTRY
from posenc.estimates import Design, Estimate
from posenc.stats import disagree
from posenc.variants import split_model

from .rows import _encoding_index, series_name


def _units(ev: dict, r: dict) -> tuple[list[float] | None, tuple]:
    """One evaluation row's per-unit values and the name of the units they are measured on:
    the same name wherever the units are the same, so that the intervals pair them."""
    if ev["task"] == "lm":
        # Mode b scores the same windows at every length and for every model; mode a scores
        # tokens / L windows of the same text at length L for every model.
        units = ("segment",) if r["mode"] == "segment" else (r["mode"], r["split"], r["length"])
        return r.get("window_bits"), units
    return r.get("correct"), ("passkey", r["length"])


class Scores:
    """Every model's per-unit scores, by (task, series, split, mode, multiplier), estimated
    with one :class:`Design` (which units share a fragment of text) so that every interval
    drawn from it is paired where the data are. A key whose models are undefined (a learned
    table past L_max) has no scores."""

    def __init__(self, evals: list[dict], design: Design, level: float):
        self.design, self.level = design, level
        groups: dict[tuple, dict] = defaultdict(lambda: {"seeds": {}, "defined": True})
        for ev in evals:
            for r in ev["rows"]:
                method = r.get("method", "plain")
                key = (
                    ev["task"],
                    series_name(ev["encoding"], method),
                    r.get("split", "val"),
                    r.get("mode", "all"),
                    r["multiplier"],
                )
                group = groups[key]
                group["encoding"] = ev["encoding"]
                values, group["units"] = _units(ev, r)
                if not r["defined"] or not values:
                    group["defined"] = False
                else:
                    group["seeds"][ev["seed"]] = values
        self.groups = dict(groups)
        self._resampled: dict[tuple, Estimate | None] = {}

    def get(self, task, series, mode, multiplier, split="val") -> Estimate | None:
        """The mean over seeds and units; None where undefined or not evaluated."""
        key = (task, series, split, mode, multiplier)
        if key not in self._resampled:
            group = self.groups.get(key)
            if group is None or not group["defined"] or not group["seeds"]:
                self._resampled[key] = None
            else:
                seeds = sorted(group["seeds"])
                self._resampled[key] = self.design.mean(
                    np.array([group["seeds"][s] for s in seeds]),
                    seeds_of=(task, group["encoding"]),
                    units_of=group["units"],
                    seed_ids=seeds,
                )
        return self._resampled[key]

    def interval(self, estimate: Estimate | None) -> dict[str, float] | None:
        return None if estimate is None else estimate.interval(self.level)

    def cell(self, key: tuple) -> dict[str, Any]:
        """What a table cell shows: the estimate and interval over seeds, each seed's mean
        and whether the seeds disagree (their own intervals do not overlap)."""
        task, series, split, mode, m = key
        group = self.groups[key]
        if not group["defined"] or not group["seeds"]:
            return {"defined": False}
        # Each model's own interval (its units only): where two do not overlap, the seeds
        # differ by more than their evaluation noise.
        per_seed = {
            seed: self.design.mean(np.array([values]), ("one", seed), group["units"]).interval(
                self.level
            )
            for seed, values in sorted(group["seeds"].items())
        }
        shown = self.interval(self.get(task, series, mode, m, split))
        return {
            "defined": True,
            **{k: shown[k] for k in ("estimate", "low", "high")},
            "per_seed": {str(seed): i["estimate"] for seed, i in per_seed.items()},
            "seeds_disagree": disagree(list(per_seed.values())),
            "n_seeds": len(per_seed),
            "units_per_model": len(next(iter(group["seeds"].values()))),
        }

    def cells(self, task: str) -> list[dict[str, Any]]:
        return [
            {"series": k[1], "split": k[2], "mode": k[3], "multiplier": k[4], **self.cell(k)}
            for k in sorted(
                (k for k in self.groups if k[0] == task),
                key=lambda k: (k[2], k[3], _encoding_index(self.groups[k]["encoding"]), k[1], k[4]),
            )
        ]


def series_of(scores: Scores, encodings: list[str], multipliers: list[int]) -> list[dict]:
    """The curves to show: each encoding, then each context extension evaluated, with its
    place among its encoding's extensions (0 for the plain model) and whether it has no value
    past L_train."""
    found = {k[1] for k in scores.groups if k[0] == "lm"}
    plain = [(e, "plain", 0) for e in encodings]
    extended = [
        (e, method, i)
        for e in encodings
        if e in REGISTRY
        for i, method in enumerate(REGISTRY[e].extensions, start=1)
        if series_name(e, method) in found
    ]
    return [
        {
            "name": series_name(e, method),
            "encoding": e,
            "variant": variant,
            "randomized": split_model(e)[1],
            "undefined_beyond_train": any(
                ("lm", series_name(e, method), "val", "segment", m) in scores.groups
                and scores.get("lm", series_name(e, method), "segment", m) is None
                for m in multipliers
                if m > 1
            ),
        }
        for e, method, variant in plain + extended
    ]
