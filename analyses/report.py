"""Snakemake entry: render results/report/index.html and merge results/claims.json."""

from posenc.io import atomic_path, write_json
from posenc.report import render
from posenc.workflow import setup


def main(snakemake):
    log = setup(snakemake, "report")
    p = snakemake.params
    html, ledger = render(p.templates, p.sections, p.config, p.git, p.benchmarks)
    write_json(snakemake.output.claims, ledger)
    with atomic_path(snakemake.output.html) as tmp:
        tmp.write_text(html)
    log.info("%d claims, %d pass", len(ledger), sum(c["verdict"] == "pass" for c in ledger))


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
