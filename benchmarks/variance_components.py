"""The variance components of a default run's per-window bits, for the coverage and
family-wise simulations (posenc.coverage), written as a test fixture:

    python benchmarks/variance_components.py RESULTS [--out tests/fixtures/variance_components.json]

RESULTS is a finished run's results/ folder. For every encoding's LMs (mode b, the windows the
length claims read) three quantities, each an (S, 64) table of per-window values: the bits at
1x, and the change from 1x to 2x and to the longest length (paired by window, as the claims
compare them); each window's fragment of validation text is the one holding its last scored
character (posenc.evaluate.window_fragments). Also the passkey task's seeds per encoding.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from posenc.coverage import variance_components
from posenc.data import trained_corpus
from posenc.evaluate import window_fragments


def _segment_bits(record: dict, multiplier: int) -> list[float] | None:
    for r in record["rows"]:
        if (
            r["mode"] == "segment"
            and r["split"] == "val"
            and r.get("method", "plain") == "plain"
            and r["multiplier"] == multiplier
            and r["defined"]
        ):
            return r["window_bits"]
    return None


def components(results: Path) -> dict:
    lm_dir = results / "extrapolation" / "eval" / "lm"
    records = {
        enc.name: [json.loads(f.read_text()) for f in sorted(enc.glob("seed*.json"))]
        for enc in sorted(lm_dir.iterdir())
    }
    first = next(r for recs in records.values() for r in recs)
    log = next((results / "extrapolation" / "models" / "lm").rglob("train_log.json"), None)
    data = json.loads(log.read_text())["data"] if log else None
    settings = first["settings"]
    longest = max(settings["multipliers"])
    corpus = trained_corpus(data)
    fragments = window_fragments(
        corpus,
        "segment",
        longest * first["train_len"],
        longest=longest * first["train_len"],
        tokens=settings["tokens"],
        segment=settings["segment"],
        windows=settings["segment_windows"],
    ).tolist()
    out = {}
    for enc, recs in records.items():
        one = [_segment_bits(r, 1) for r in recs]
        if any(x is None for x in one):
            continue
        tables = {"bits_1x": np.array(one)}
        for m in (2, longest):
            far = [_segment_bits(r, m) for r in recs]
            if all(x is not None for x in far):
                tables[f"change_{m}x"] = np.array(far) - np.array(one)
        out[enc] = {
            name: {**variance_components(t, fragments), "seeds": t.shape[0]}
            for name, t in tables.items()
        }
    return {"fragments": fragments, "components": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--out", type=Path, default=Path("tests/fixtures/variance_components.json"))
    args = parser.parse_args()
    found = components(args.results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1) + "\n")
    print(f"{len(found['components'])} encodings, {len(set(found['fragments']))} fragments")


if __name__ == "__main__":
    main()
