"""A small, real report built in a temporary folder, for the renderer's tests: sections that
follow the contract in CONTRIBUTING.md (metrics.json with figures and tables, claims.json),
with section templates in analyses/<id>/ beside a copy of the real report_templates/."""

from __future__ import annotations

import shutil
from pathlib import Path

import matplotlib.pyplot as plt

from posenc.claims import Check, Claim, evaluate
from posenc.io import save_figure, write_csv, write_json

ROOT = Path(__file__).resolve().parents[1]

SECTION_TEMPLATE = """\
{% from "partials.html.j2" import figure, table, ref, tref, claims_box %}
{% macro body(s) %}
<p>See REFS.</p>
FIGURES
TABLES
{{ claims_box(s) }}
{% endmacro %}
"""


def make_templates(root: Path, sections: dict[str, dict]) -> Path:
    """A copy of report_templates/ and, beside it, one analyses/<id>/section.html.j2 per fake
    section (where the report looks for a section's template)."""
    templates = root / "report_templates"
    shutil.copytree(ROOT / "report_templates", templates)
    for sid, spec in sections.items():
        text = (
            SECTION_TEMPLATE.replace(
                "REFS", " and ".join(f"{{{{ ref(s.figures.{f}) }}}}" for f in spec["figures"])
            )
            .replace(
                "FIGURES", "\n".join(f"{{{{ figure(s.figures.{f}) }}}}" for f in spec["figures"])
            )
            .replace("TABLES", "\n".join(f"{{{{ table(s.tables.{t}) }}}}" for t in spec["tables"]))
        )
        folder = root / "analyses" / sid
        folder.mkdir(parents=True)
        (folder / "section.html.j2").write_text(text)
    return templates


def make_section(
    root: Path,
    sid: str,
    figures: list[str],
    tables: list[str],
    claims: list[dict],
    caption: str = "A curve.",
    cell: object = 0.5,
    title: str | None = None,
) -> dict[str, str]:
    """Write one section's results under ``root/results/<sid>``; return its entry for the
    report rule's ``sections`` list."""
    out = root / "results" / sid
    out.mkdir(parents=True)
    metrics = {
        "device": "cpu (test)",
        "evidence": {},
        "summary": {"seed": 3},
        "figures": [],
        "tables": [],
    }
    for fid in figures:
        fig, ax = plt.subplots(figsize=(4, 2.5))
        ax.plot([0, 1, 2], [0, 1, 4])
        png, svg = out / f"{fid}.png", out / f"{fid}.svg"
        save_figure(fig, png, svg, dpi=50)
        metrics["figures"].append({"id": fid, "png": str(png), "svg": str(svg), "caption": caption})
    for tid in tables:
        csv = out / f"{tid}.csv"
        write_csv(csv, [{"x": 1, "y": cell}])
        metrics["tables"].append(
            {
                "id": tid,
                "title": f"Table {tid}",
                "csv": str(csv),
                "columns": ["x", "y"],
                "rows": [[1, cell]],
            }
        )
    write_json(out / "metrics.json", metrics)
    write_json(out / "claims.json", claims)
    return {
        "id": sid,
        "title": title or sid.title(),
        "references": ["vaswani2017"],
        "metrics": str(out / "metrics.json"),
        "claims": str(out / "claims.json"),
    }


def passing(cid: str, section: str, statement: str = "It holds.", kind: str = "identity") -> dict:
    claim = Claim(cid, statement, (Check("x", "<", "limit"),), references=("su2021",), kind=kind)
    return evaluate([claim], {"x": 0.5}, {"thresholds": {"limit": 1}}, section)[0]


def failing(cid: str, section: str, kind: str = "empirical") -> dict:
    claim = Claim(
        cid, "It should hold.", (Check("error", "<", "limit"),), ("seed_snippet",), kind=kind
    )
    return evaluate([claim], {"error": {"max": 0.2}}, {"thresholds": {"limit": 0.1}}, section)[0]


def undecided(cid: str, section: str) -> dict:
    """An empirical claim whose interval straddles its threshold: inconclusive."""
    claim = Claim(cid, "It may hold.", (Check("slope", "<", "limit"),), kind="empirical")
    evidence = {"slope": {"estimate": 0.09, "low": 0.05, "high": 0.15}}
    return evaluate([claim], evidence, {"thresholds": {"limit": 0.1}}, section)[0]


def corrupt(path: str | Path, text: str) -> None:
    Path(path).write_text(text)


def two_sections(root: Path, config_name: str = "test") -> dict:
    """Two sections (three figures, three tables, three claims, one failing, one of each
    kind: alpha.one an identity, alpha.two empirical, beta.one a software check), their
    templates, and everything else :func:`posenc.report.build_context` needs."""
    spec = {
        "alpha": {"title": "Alpha analysis", "figures": ["curve", "heat"], "tables": ["cases"]},
        "beta": {"title": "Beta analysis", "figures": ["decay"], "tables": ["t1", "t2"]},
    }
    sections = [
        make_section(
            root,
            "alpha",
            ["curve", "heat"],
            ["cases"],
            [passing("alpha.one", "alpha"), failing("alpha.two", "alpha")],
            title=spec["alpha"]["title"],
        ),
        make_section(
            root,
            "beta",
            ["decay"],
            ["t1", "t2"],
            [passing("beta.one", "beta", kind="software")],
            title=spec["beta"]["title"],
        ),
    ]
    (root / "results" / "benchmarks").mkdir(parents=True)
    (root / ".snakemake" / "log").mkdir(parents=True)
    return {
        "template_dir": make_templates(root, spec),
        "sections": sections,
        "config": {"name": config_name, "seed": 0, "encodings": ["rope", "alibi"]},
        "git": {"commit": "0123456789abcdef", "dirty": False},
        "benchmarks_dir": root / "results" / "benchmarks",
        "benchmark_rules": {},
        "log_dir": root / ".snakemake" / "log",
    }
