"""Snakemake entry: lay out results/report/report.pdf with WeasyPrint from the data the HTML
rule gathered (data.json), the same templates and the print part of the same stylesheet."""

import logging
from pathlib import Path

from posenc.io import read_json
from posenc.report import render, write_pdf
from posenc.workflow import setup


def main(snakemake):
    log = setup(snakemake, "report_pdf")
    # WeasyPrint's warnings (an unsupported CSS property, say) belong in the rule's log.
    weasy = logging.getLogger("weasyprint")
    weasy.setLevel(logging.WARNING)
    for handler in log.handlers:
        weasy.addHandler(handler)
    context = read_json(snakemake.input.data)
    css = Path(snakemake.input.stylesheet).read_text()
    html = render(context, snakemake.params.templates, "print", css)
    # Figures are linked as files/<section>/<name>.svg, relative to the report folder.
    pages = write_pdf(html, Path(snakemake.input.data).parent, snakemake.output.pdf)
    log.info("%d pages, %d bytes", pages, Path(snakemake.output.pdf).stat().st_size)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
