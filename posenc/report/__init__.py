"""Render the report from the analyses' results. Computes nothing scientific: it checks and
numbers what the analyses wrote, merges the claims ledger, reads from it the findings the
report opens with, gathers provenance and hands all of it to dumb templates.

One set of templates and one stylesheet serve two media:

* ``screen``: ``results/report/index.html``, figures embedded as PNG data URIs, so the page
  makes no network request and stands alone;
* ``print``: the same templates with the SVG figures (vector), laid out by WeasyPrint into
  ``results/report/report.pdf`` (``workflow/scripts/render_pdf.py``).

Everything both media show is gathered once, by the HTML rule, into a JSON context
(``results/report/data.json``). The PDF rule renders from that file, so the two documents can
never disagree (same ``pip freeze``, same job table), and the PDF has its own rule: a change to
print styling alone re-renders only the PDF (see :func:`posenc.report.render.stylesheet_for`).

The parts, each its own module:

* :mod:`~posenc.report.sections`: each section's metrics and claims, checked and numbered, the
  merged ledger, the report card, the files offered for download;
* :mod:`~posenc.report.findings`: the verdict counts and the findings, from the ledger alone,
  and the models the shared training recipe left short, from the sections' summaries;
* :mod:`~posenc.report.annotations`: what is shown beside each claim's verdict (the scale it was
  measured at beside its papers', the entries it set aside, its family-wise level) and the
  ledger's counts the claims section's paragraph on intervals quotes;
* :mod:`~posenc.report.runlog`: every job's wall time and peak memory, from Snakemake's files;
* :mod:`~posenc.report.provenance`: the git checkout, the machine, the installed packages;
* :mod:`~posenc.report.context`: all of the above as one JSON context;
* :mod:`~posenc.report.filters` and :mod:`~posenc.report.render`: the templates' filters, the
  stylesheet split by medium, the HTML and the PDF.

What the workflow's scripts and rules call is importable from here.
"""

from posenc.report.context import build_context, copy_downloads
from posenc.report.errors import ReportError
from posenc.report.render import number_in_reading_order, render, screen_digest, write_pdf
from posenc.report.sections import FILES

__all__ = [
    "FILES",
    "ReportError",
    "build_context",
    "copy_downloads",
    "number_in_reading_order",
    "render",
    "screen_digest",
    "write_pdf",
]
