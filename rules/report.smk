# The report: merges every section's claims into results/claims.json and renders the HTML.
from pathlib import Path

REPORT_TEMPLATES = sorted(str(p) for p in Path(workflow.basedir, "report_templates").rglob("*") if p.is_file())


def section_inputs(wildcards):
    return [str(f) for rule in SECTIONS.values() for f in rule.output]


def section_list(wildcards):
    return [
        {"id": name, "metrics": str(rule.output.metrics), "claims": str(rule.output.claims)}
        for name, rule in SECTIONS.items()
    ]


rule report:
    input:
        sections=section_inputs,
        templates=REPORT_TEMPLATES,
    output:
        html="results/report/index.html",
        claims="results/claims.json",
    params:
        sections=section_list,
        config=config,
        git=git_state(),
        # Read at render time: every job's benchmark file is written before the report runs
        # (it depends on every section), so wall time per rule is complete.
        benchmarks="results/benchmarks",
        templates=str(Path(workflow.basedir, "report_templates")),
    log:
        log_path("report"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../analyses/report.py"
