"""The report's context: everything both media show, gathered once as plain JSON data
(``data.json``) from the sections' results, the merged ledger, the run log and the provenance."""

from __future__ import annotations

import json
import shutil
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from posenc import preregistration, references
from posenc.claims import VERDICTS
from posenc.config import config_hash
from posenc.report.annotations import annotate, interval_summary, scale_text
from posenc.report.findings import counts_by_kind, findings, headline
from posenc.report.provenance import environment_info, installed_packages
from posenc.report.runlog import invocation_start, job_summary, jobs_by_rule, read_jobs
from posenc.report.sections import FILES, check_download_names, load_card, load_sections

PDF_NAME = "report.pdf"
DATA_NAME = "data.json"


def build_context(
    template_dir: str | Path,
    sections: list[dict[str, str]],
    config: dict,
    git: dict,
    benchmarks_dir: str | Path,
    benchmark_rules: dict[str, str],
    log_dir: str | Path,
    ignore_benchmarks: Collection[str] = (),
    timing_rules: dict[str, str] | None = None,
    code_digests: dict[str, dict] | None = None,
    card: str | Path | None = None,
    preregistration_file: str | Path | None = None,
) -> dict[str, Any]:
    """Everything the report shows, as plain JSON data (``data.json``); both media render it.

    ``timing_rules`` maps each rule without a benchmark to its ``timing`` output pattern (see
    :func:`read_timings`); ``code_digests`` maps rules to ``{"digest", "modules"}``: the digest of
    the code they run (their ``code`` param) and the modules it covers, shown in the
    provenance; ``card`` is the report card's card.json; ``preregistration_file`` is the record of
    when each threshold and recipe setting was fixed (:mod:`posenc.preregistration`), shown in
    the appendix with this run's value beside any it sets otherwise."""
    config = json.loads(json.dumps(config, default=str))  # plain dicts: Snakemake's are not
    loaded, ledger = load_sections(sections)
    check_download_names(loaded)
    for sec, given in zip(loaded, sections):
        sec["title"] = given["title"]  # from the analysis' spec
    by_id = {s["id"]: s for s in loaded}
    cited = [k for sec in sections for k in sec.get("references", [])]
    bibliography, numbers = number_references(ledger, cited)
    claims = [
        {
            **c,
            "headline": headline(c),
            "section_title": by_id[c["section"]]["title"],
            "section_number": by_id[c["section"]]["number"],
            "section_anchor": by_id[c["section"]]["anchor"],
            "cites": [
                {"number": numbers[k], "label": references.label(k)} for k in c["references"]
            ],
            # Its scale beside its papers', the entries it set aside, its family-wise level.
            "notes": annotate(c, numbers),
        }
        for c in ledger
    ]
    # A section's claim boxes show the same notes and each claim's deciding number; the
    # ledger (claims.json) stays as written.
    shown = {c["id"]: c for c in claims}
    for sec in loaded:
        sec["claims"] = [
            {**c, "notes": shown[c["id"]]["notes"], "headline": shown[c["id"]]["headline"]}
            for c in sec["claims"]
        ]
    started = invocation_start(log_dir)
    jobs = read_jobs(benchmarks_dir, benchmark_rules, started, ignore_benchmarks, timing_rules)
    context = {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": config,
        "config_yaml": yaml.safe_dump(config, sort_keys=False),
        "config_hash": config_hash(config),
        "git": {**git, "short": git["commit"][:12]},
        "code_digests": {
            rule: {**code, "module_count": len(code.get("modules", []))}
            for rule, code in sorted((code_digests or {}).items())
        },
        "env": environment_info(),
        "packages": installed_packages(),
        "devices": sorted({d for s in loaded for d in s["devices"]}),
        "seeds": _seeds(config, loaded),
        "sections": loaded,
        "ledger": ledger,
        "claims": claims,
        "counts": {v: sum(c["verdict"] == v for c in ledger) for v in VERDICTS},
        "counts_by_kind": counts_by_kind(ledger),
        # What the page's header and contents say of the run's size: counted here, once.
        "totals": {
            "claims": len(ledger),
            "analyses": len(loaded),
            "figures": sum(len(s["figures"]) for s in loaded),
            "tables": sum(len(s["tables"]) for s in loaded),
            "encodings": len(config.get("encodings", [])),
        },
        "findings": findings(
            claims,
            {s["id"]: s["title"] for s in loaded},
            loaded,
            config,
            {s["id"]: s["properties_of"] for s in sections if s.get("properties_of")},
        ),
        # What the claims section says of its intervals and why claims are inconclusive.
        "intervals": interval_summary(ledger),
        # The ledger as its appendix shows it: by section, each group's verdicts counted.
        "ledger_groups": [
            {
                "number": sec["number"],
                "title": sec["title"],
                "anchor": sec["anchor"],
                "counts": {v: sum(c["verdict"] == v for c in sec["claims"]) for v in VERDICTS},
                "total": len(sec["claims"]),
                "claims": [c for c in claims if c["section"] == sec["id"]],
            }
            for sec in loaded
            if sec["claims"]
        ],
        "jobs": jobs,
        "jobs_by_rule": jobs_by_rule(jobs),
        "job_summary": job_summary(jobs, started),
        "references": bibliography,
        "links": {"pdf": PDF_NAME, "data": DATA_NAME, "claims": f"{FILES}/claims.json"},
        "card": load_card(card, by_id) if card else None,
        "preregistration": (
            preregistration.appendix(preregistration.load(preregistration_file), config)
            if preregistration_file
            else None
        ),
    }
    context["appendices"] = appendices(context)
    return context


# The appendices, in order: after the references, what a reader looks up rather than reads
# through. The PDF's body is everything before the first of them.
APPENDICES = (
    ("claims", "The claims ledger"),
    ("further", "Further figures and tables"),
    ("provenance", "Provenance"),
    ("preregistration", "Pre-registration record"),
)


def appendices(context: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each appendix this report has, by key: its letter and title, lettered in order."""
    present = {
        "claims": bool(context["claims"]),
        "further": any(
            item["placement"] == "appendix"
            for s in context["sections"]
            for item in [*s["figures"].values(), *s["tables"].values()]
        ),
        "provenance": True,
        "preregistration": bool(context.get("preregistration")),
    }
    shown = [(key, title) for key, title in APPENDICES if present[key]]
    return {
        key: {"letter": chr(ord("A") + i), "title": title} for i, (key, title) in enumerate(shown)
    }


def number_references(claims: list[dict], extra: list[str]) -> tuple[list[dict], dict[str, int]]:
    """The works cited, numbered in order of first citation (claims first, then the sections'
    and the encodings' own), with their full entries; unknown keys are an error."""
    cited = [k for c in claims for k in references.check(c["references"], f"claim {c['id']}")]
    cited += references.check(extra, "sections and encodings")
    order = list(dict.fromkeys(cited))  # first citation first, each work once
    bib = references.bibliography()
    listed = [
        {
            "key": k,
            "number": i,
            "kind": "paper",
            **bib[k],
            # What the paper trained or evaluated (the claims' rows set it beside ours), and
            # where the numbers come from; None for a work without a scale block.
            "scale": _scale_entry(bib[k].get("scale")),
        }
        for i, k in enumerate(order, start=1)
    ]
    return listed, {k: i for i, k in enumerate(order, start=1)}


def _scale_entry(scale: dict | None) -> dict[str, str | None] | None:
    if scale is None:
        return None
    return {"text": scale_text(scale), "source": scale["source"], "note": scale.get("note")}


def _seeds(config: dict, loaded: list[dict]) -> list[dict[str, Any]]:
    """The base seed, and any seeds a section says it derived from it."""
    seeds = [{"where": "config (base seed)", "value": config.get("seed")}]
    for s in loaded:
        summary = s["m"].get("summary", {})
        for key in ("seeds", "seed"):
            if key in summary:
                seeds.append({"where": s["id"], "value": summary[key]})
                break
    return seeds


def copy_downloads(context: dict, report_dir: str | Path, claims_path: str | Path) -> None:
    """Copy every offered file (and the merged ledger) under the report folder's files/."""
    report_dir = Path(report_dir)
    copies = {context["links"]["claims"]: claims_path}
    if context.get("card"):
        copies.update(
            {d["href"]: d["source"] for d in context["card"]["figure"]["downloads"].values()}
        )
    for sec in context["sections"]:
        for item in [*sec["figures"].values(), *sec["tables"].values()]:
            copies.update({d["href"]: d["source"] for d in item["downloads"].values()})
    for href, source in copies.items():
        dest = report_dir / href
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
