"""A finished run's claims ledger recomputed with this checkout's claim machinery, from the
same evaluation outputs, without training or evaluating any model:

    python benchmarks/recompute_ledger.py RUN_DIR OUT.json [--config C] [--metrics DIR]

RUN_DIR is the folder a run ran in (its results/ inside). The trained sections
(extrapolation, then extension, which reads the extrapolation's metrics) are aggregated
afresh from their per-model evaluation records, training logs and timings, with this
checkout's intervals and evidence; every other section's stored evidence (its metrics.json) is
judged again by this checkout's claims. The config is this checkout's (its thresholds; the
run's training and evaluation settings must be the same, which the trained sections' records
carry). Writes the merged ledger (a list, as results/claims.json) and prints each verdict that
changed against the run's own ledger.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import tempfile
from pathlib import Path

import yaml

from posenc.analysis import Context, discover
from posenc.claims import evaluate, section_thresholds
from posenc.device import resolve_device

ROOT = Path(__file__).resolve().parents[1]
RECOMPUTED = ("extrapolation", "extension")


def _cfg(config: dict, name: str) -> dict:
    return {**config[name], "thresholds": section_thresholds(config, name)}


def recompute(run: Path, config: dict, keep: Path | None = None) -> list[dict]:
    specs = discover(ROOT)  # this checkout's analyses (the installed one), not the run's
    ledger, metrics = [], {}
    cwd = os.getcwd()
    os.chdir(run)  # the specs' input paths are relative to the run's folder
    try:
        for name in [s for s in config["analyses_order"] if s in specs]:
            spec = specs[name]
            if name in RECOMPUTED:
                inputs = spec.inputs(config) if spec.inputs else {}
                if name == "extension":  # the extrapolation's metrics as recomputed here
                    inputs["base_evidence"] = [metrics["extrapolation"]]
                ctx = Context(
                    cfg=dict(config[name]),
                    seed=config.get("seed", 0),
                    encodings=list(config["encodings"]),
                    encoding=dict(config.get("encoding", {})),
                    device=resolve_device("cpu"),
                    inputs=inputs,
                    log=logging.getLogger(name),
                    config={k: config[k] for k in spec.uses if k in config},
                )
                compute = importlib.import_module(f"posenc.analyses.{name}.compute")
                m = compute.compute(ctx)
                evidence = m.evidence
                path = Path(keep or tempfile.mkdtemp()) / name / "metrics.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(
                    json.dumps({"evidence": m.evidence, "summary": m.summary}, indent=1)
                )
                metrics[name] = str(path)
            else:
                evidence = json.loads((run / "results" / name / "metrics.json").read_text())[
                    "evidence"
                ]
            ledger += evaluate(spec.claims, evidence, _cfg(config, name), name)
    finally:
        os.chdir(cwd)
    return ledger


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument(
        "--metrics", type=Path, help="a folder to keep the recomputed sections' metrics.json in"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    config = yaml.safe_load(args.config.read_text())
    # The sections in the order the config lists them (the report's order).
    config["analyses_order"] = [k for k, v in config.items() if isinstance(v, dict)]
    keep = args.metrics.resolve() if args.metrics else None
    ledger = recompute(args.run.resolve(), config, keep)
    args.out.write_text(json.dumps(ledger, indent=1, default=str) + "\n")
    before = {c["id"]: c for c in json.loads((args.run / "results" / "claims.json").read_text())}
    counts: dict[str, int] = {}
    for c in ledger:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
        old = before.get(c["id"])
        if old is None:
            print(f"new      {c['id']}: {c['verdict']}")
        elif old["verdict"] != c["verdict"]:
            print(f"changed  {c['id']}: {old['verdict']} -> {c['verdict']}")
    for cid in sorted(set(before) - {c["id"] for c in ledger}):
        print(f"gone     {cid}: was {before[cid]['verdict']}")
    print(f"{len(ledger)} claims: {counts}")


if __name__ == "__main__":
    main()
