# The report. Rule `report` gathers every section's results into results/report/data.json,
# renders the page (index.html, figures embedded) with every figure and table offered under
# files/, and merges results/claims.json. Rule `report_pdf` lays out report.pdf from data.json
# with the same templates and stylesheet, so a change to print styling alone re-renders only
# the PDF. `snakemake --report` builds Snakemake's own report from the report(...) outputs.
import os
from pathlib import Path

from posenc import paths
from posenc.report import screen_digest
from posenc.report.provenance import git_state

# Relative to the working folder, so that a finished run moved elsewhere reruns nothing.
BASE = Path(os.path.relpath(workflow.basedir))
TEMPLATE_DIR = BASE / "report_templates"
# The report's own templates and each analysis' section template, in its folder.
REPORT_TEMPLATES = sorted(str(p) for p in TEMPLATE_DIR.rglob("*.j2")) + [
    str(BASE / "analyses" / name / "section.html.j2") for name in ANALYSES
]
STYLESHEET = str(TEMPLATE_DIR / "style.css")
# When each threshold and recipe setting was fixed: the report's appendix prints it.
PREREGISTRATION = str(BASE / "config" / "preregistration.yaml")
CARD_SCRIPT = "../workflow/scripts/card.py"
REPORT_SCRIPT = "../workflow/scripts/render_report.py"
PDF_SCRIPT = "../workflow/scripts/render_pdf.py"


report: "../report_templates/snakemake/workflow.rst"


# The report card: a row per configured encoding, a column per property the analyses declare
# (AnalysisSpec.card), read from their metrics and ledgers.
rule card:
    input:
        sections=lambda w: [s[k] for s in card_sections() for k in ("metrics", "claims")],
    output:
        data="results/card/card.json",
        png="results/card/card.png",
        svg="results/card/card.svg",
    log:
        log_path("card"),
    benchmark:
        bench_path("card")
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        sections=card_sections,
        encodings=config["encodings"],
        encodings_meta={
            name: {"summary": meta["summary"], "plugin": meta.get("plugin")}
            for name, meta in ENCODING_META.items()
        },
        code=code_digest(CARD_SCRIPT, with_plugins=False),
    script:
        CARD_SCRIPT


rule report:
    input:
        sections=section_files,
        card=rules.card.output.data,
        preregistration=PREREGISTRATION,
        templates=REPORT_TEMPLATES,
        # The page uses only the screen part of the stylesheet, tracked by content in
        # params.screen_css; ancient() keeps the file's mtime from re-rendering the page when
        # only print rules (@page, @media print) changed.
        stylesheet=ancient(STYLESHEET),
    output:
        html=paths.REPORT_PAGE,
        data="results/report/data.json",
        files=directory("results/report/files"),
        claims=report(
            "results/claims.json",
            caption="../report_templates/snakemake/claims.rst",
            category="Report",
        ),
    log:
        log_path("report"),
    benchmark:
        bench_path("report")
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        # The sections, and every rule's benchmark, timing and code digest.
        plan=report_plan,
        config=config,
        git=git_state(workflow.basedir),
        # Read at render time. Jobs that ran in this invocation are told apart from reused
        # ones by comparing each file's mtime with the start of the invocation, read from
        # Snakemake's log in .snakemake/log.
        benchmarks=paths.BENCHMARKS,
        snakemake_logs=".snakemake/log",
        # The templates' folder, where the stylesheet sits (from the input: no fixed path).
        templates=lambda w, input: str(Path(input.stylesheet).parent),
        screen_css=screen_digest(STYLESHEET),
        code=code_digest(REPORT_SCRIPT, with_plugins=False),
    script:
        REPORT_SCRIPT


rule report_pdf:
    input:
        data=rules.report.output.data,
        files=rules.report.output.files,
        templates=REPORT_TEMPLATES,
        stylesheet=STYLESHEET,
    output:
        pdf=report(
            "results/report/report.pdf",
            caption="../report_templates/snakemake/report_pdf.rst",
            category="Report",
        ),
    log:
        log_path("report_pdf"),
    benchmark:
        bench_path("report_pdf")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        # The templates' folder, where the stylesheet sits (from the input: no fixed path).
        templates=lambda w, input: str(Path(input.stylesheet).parent),
        code=code_digest(PDF_SCRIPT, with_plugins=False),
    script:
        PDF_SCRIPT
