"""Snakemake entry: gather the report's data, render results/report/index.html, offer every
figure and table as a download, and merge results/claims.json."""

from pathlib import Path

from posenc.io import atomic_path, write_json
from posenc.report import FILES, build_context, copy_downloads, number_in_reading_order, render
from posenc.workflow import setup


def main(snakemake):
    log = setup(snakemake, "report")
    p, out = snakemake.params, snakemake.output
    report_dir = Path(out.html).parent
    if Path(out.files) != report_dir / FILES or Path(out.data).parent != report_dir:
        raise ValueError(f"rule report: files and data must sit beside {out.html} as {FILES}/")
    context = build_context(
        p.templates,
        config=p.config,
        git=p.git,
        benchmarks_dir=p.benchmarks,
        log_dir=p.snakemake_logs,
        card=snakemake.input.card,
        preregistration_file=snakemake.input.preregistration,
        **p.plan,  # the sections, and what the report reads of every other rule
    )
    css = Path(snakemake.input.stylesheet).read_text()
    number_in_reading_order(context, p.templates, css)
    write_json(out.claims, context["ledger"])
    copy_downloads(context, report_dir, out.claims)
    write_json(out.data, context)
    html = render(context, p.templates, "screen", css)
    with atomic_path(out.html) as tmp:
        tmp.write_text(html)
    summary = context["job_summary"]
    log.info(
        "%d claims (%d pass); %d jobs, %d ran in this invocation, %d reused",
        len(context["ledger"]),
        context["counts"]["pass"],
        summary["jobs"],
        summary["ran"],
        summary["reused"],
    )


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
