"""Snakemake entry: the report card (results/card/), from every section's metrics.json and
claims.json: card.json, and the card drawn as card.png and card.svg."""

import json
from pathlib import Path

from posenc import card
from posenc.analysis import CardColumn
from posenc.io import save_figure, write_json
from posenc.workflow import setup


def main(snakemake) -> None:
    import matplotlib

    matplotlib.use("Agg")
    log = setup(snakemake, "card")
    p, out = snakemake.params, snakemake.output
    sections = []
    for sec in p.sections:
        metrics = json.loads(Path(sec["metrics"]).read_text())
        sections.append(
            {
                "id": sec["id"],
                "title": sec["title"],
                "columns": [CardColumn(**column) for column in sec["columns"]],
                "evidence": metrics["evidence"],
                "summary": metrics.get("summary", {}),
                "ledger": json.loads(Path(sec["claims"]).read_text()),
            }
        )
    data = card.build(sections, list(p.encodings), dict(p.encodings_meta))
    save_figure(card.figure(data), out.png, out.svg)
    write_json(out.data, {**data, "png": out.png, "svg": out.svg})
    log.info("%d encodings x %d properties", len(data["rows"]), len(data["columns"]))


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
