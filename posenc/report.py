"""Render the report from the analyses' results. Computes nothing scientific: it checks and
numbers what the analyses wrote, merges the claims ledger, reads from it the findings the
report opens with, gathers provenance and hands all of it to dumb templates.

One set of templates and one stylesheet serve two media:

* ``screen``: ``results/report/index.html``, figures embedded as PNG data URIs, so the page
  makes no network request and stands alone;
* ``print``: the same templates with the SVG figures (vector), laid out by WeasyPrint into
  ``results/report/report.pdf`` (``analyses/report_pdf.py``).

Everything both media show is gathered once, by the HTML rule, into a JSON context
(``results/report/data.json``). The PDF rule renders from that file, so the two documents can
never disagree (same ``pip freeze``, same job table), and the PDF has its own rule: a change to
print styling alone re-renders only the PDF (see :func:`stylesheet_for`).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import logging
import math
import platform
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import tinycss2
import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from posenc import references
from posenc.claims import COMPARISONS, KINDS, VERDICTS, check_ledger, is_interval
from posenc.config import config_hash
from posenc.io import atomic_path, read_json

MEDIA = ("screen", "print")
MIME = {".png": "image/png", ".svg": "image/svg+xml"}
# Where downloads live, relative to the report's folder: the page links them relatively, so
# results/report/ can be published (GitHub Pages) or zipped on its own and the links still work.
FILES = "files"
PDF_NAME = "report.pdf"
DATA_NAME = "data.json"


class ReportError(ValueError):
    """A result file the report cannot show; the message starts with the file's path."""


# ----------------------------------------------------------------------------- formatting


def data_uri(path: str | Path) -> str:
    """Embed a figure in the page, so the HTML makes no network request and stands alone."""
    path = Path(path)
    return f"data:{MIME[path.suffix]};base64,{base64.b64encode(path.read_bytes()).decode()}"


def fmt_number(x: Any, digits: int = 4) -> str:
    """Significant digits for floats, as-is for everything else; None is shown as a dash."""
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 10000 else str(x)
    if x == 0 or not math.isfinite(x):
        return str(x)
    if abs(x) < 1e-3 or abs(x) >= 1e6:
        return f"{x:.{max(digits - 1, 1)}e}"
    if abs(x) >= 10**digits:  # 1253.1 at 3 digits: "1,253", not "1.25e+03"
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def fmt_measured(x: Any) -> str:
    if is_interval(x):  # the estimate, then its confidence interval
        return f"{fmt_number(x['estimate'])} [{fmt_number(x['low'])}, {fmt_number(x['high'])}]"
    if isinstance(x, dict):
        return "; ".join(f"{k}: {fmt_measured(v)}" for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt_measured(v) for v in x) + "]"
    return fmt_number(x)


def breakable(text: Any) -> Markup:
    """Escaped text that may wrap after dots and underscores: long identifiers
    (``extrapolation.alibi_beats_sinusoidal_long``) wrap at their joints, not mid-word."""
    return Markup(re.sub(r"([._])", r"\1<wbr>", str(escape(text))))


def slug(text: str) -> str:
    """An HTML id fragment from a section or figure id (ids may hold dots or spaces)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"


# ----------------------------------------------------------------------------- stylesheet


def _media_only(node) -> str | None:
    """The medium a top-level rule is for: print for ``@page`` rules and ``@media print``
    blocks, screen for ``@media screen ...`` blocks, None for rules both media use."""
    if node.type != "at-rule":
        return None
    if node.lower_at_keyword == "page":
        return "print"
    if node.lower_at_keyword == "media":
        media_type = tinycss2.serialize(node.prelude).split()
        if media_type and media_type[0].lower() in MEDIA:
            return media_type[0].lower()
    return None


def stylesheet_for(css: str, medium: str) -> str:
    """The part of the one stylesheet that ``medium`` uses.

    The page leaves out ``@page`` rules and ``@media print`` blocks; the PDF leaves out
    ``@media screen ...`` blocks (WeasyPrint would only warn about their media features). The
    report rule's params carry a digest of the screen part (:func:`screen_digest`), so an edit
    confined to print rules changes nothing the HTML rule sees and only the PDF is re-rendered.
    """
    if medium not in MEDIA:
        raise ValueError(f"unknown medium {medium!r}; known: {', '.join(MEDIA)}")
    nodes = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=False)
    return tinycss2.serialize(n for n in nodes if _media_only(n) in (None, medium))


def screen_digest(css_path: str | Path) -> str:
    return hashlib.sha256(stylesheet_for(Path(css_path).read_text(), "screen").encode()).hexdigest()


# ----------------------------------------------------------------------------- sections


def _read_result(path: str | Path, what: str) -> Any:
    try:
        return read_json(path)
    except FileNotFoundError:
        raise ReportError(f"{path}: {what} file is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: {what} file is not valid JSON ({e})") from None


def _require(entry: Any, keys: tuple[str, ...], kind: str, index: int, origin: str) -> None:
    if not isinstance(entry, dict):
        raise ReportError(f"{origin}: {kind} {index} is not an object")
    missing = [k for k in keys if k not in entry]
    if missing:
        name = entry.get("id", index)
        raise ReportError(f"{origin}: {kind} {name!r} lacks {', '.join(missing)}")


def check_metrics(metrics: Any, origin: str) -> dict:
    """The section contract (CONTRIBUTING.md): figures and tables well formed, files present."""
    if not isinstance(metrics, dict):
        raise ReportError(f"{origin}: metrics must be a JSON object, got {type(metrics).__name__}")
    for kind, keys, files in (
        ("figure", ("id", "png", "caption"), ("png", "svg")),
        ("table", ("id", "title", "csv", "columns", "rows"), ("csv",)),
    ):
        entries = metrics.get(f"{kind}s", [])
        if not isinstance(entries, list):
            raise ReportError(f"{origin}: '{kind}s' must be a list")
        seen = set()
        for i, entry in enumerate(entries):
            _require(entry, keys, kind, i, origin)
            if entry["id"] in seen:
                raise ReportError(f"{origin}: {kind} id {entry['id']!r} appears twice")
            seen.add(entry["id"])
            for key in files:
                if entry.get(key) is not None and not Path(entry[key]).is_file():
                    raise ReportError(
                        f"{origin}: {kind} {entry['id']!r} names {key} {entry[key]}, "
                        "which does not exist"
                    )
            if kind == "table":
                width = len(entry["columns"])
                for r, row in enumerate(entry["rows"]):
                    if not isinstance(row, list) or len(row) != width:
                        raise ReportError(
                            f"{origin}: table {entry['id']!r} row {r} does not have "
                            f"{width} cells like its columns"
                        )
    return metrics


def _downloads(sec_id: str, sources: dict[str, str | None]) -> dict[str, dict[str, str]]:
    """Where each of a figure's or table's files is offered, relative to the report folder."""
    return {
        label: {"source": str(src), "href": f"{FILES}/{slug(sec_id)}/{Path(src).name}"}
        for label, src in sources.items()
        if src is not None
    }


def load_sections(sections: list[dict[str, str]]) -> tuple[list[dict], list[dict]]:
    """Read each section's metrics and claims; number figures and tables in report order.

    Returns the sections (JSON-serialisable: the context both media render) and the merged
    ledger in section order. A malformed file is a :class:`ReportError` naming it.
    """
    loaded, ledger = [], []
    claim_origin: dict[str, str] = {}
    fig_no = table_no = 0
    for number, sec in enumerate(sections, start=1):
        sid = sec["id"]
        metrics = check_metrics(_read_result(sec["metrics"], "metrics"), sec["metrics"])
        if sec.get("timing"):
            # Timings live in a file of their own so that metrics.json is byte-identical
            # between runs; their tables and figures are shown in the section all the same.
            timing = check_metrics(_read_result(sec["timing"], "timing"), sec["timing"])
            metrics = {
                **metrics,
                "figures": metrics.get("figures", []) + timing.get("figures", []),
                "tables": metrics.get("tables", []) + timing.get("tables", []),
            }
        claims = check_ledger(_read_result(sec["claims"], "claims"), origin=sec["claims"])
        figures, tables = {}, {}
        for fig in metrics.get("figures", []):
            fig_no += 1
            figures[fig["id"]] = {
                **fig,
                "number": fig_no,
                "anchor": f"fig-{slug(sid)}-{slug(fig['id'])}",
                "downloads": _downloads(sid, {"PNG": fig["png"], "SVG": fig.get("svg")}),
            }
        for tab in metrics.get("tables", []):
            table_no += 1
            tables[tab["id"]] = {
                **tab,
                "number": table_no,
                "anchor": f"tab-{slug(sid)}-{slug(tab['id'])}",
                "downloads": _downloads(sid, {"CSV": tab["csv"]}),
            }
        for c in claims:
            if c["id"] in claim_origin:
                raise ReportError(
                    f"{sec['claims']}: claim id {c['id']!r} is also in {claim_origin[c['id']]}"
                )
            claim_origin[c["id"]] = sec["claims"]
        ledger += claims
        loaded.append(
            {
                "id": sid,
                "devices": section_devices(metrics),
                "number": number,
                "anchor": f"sec-{slug(sid)}",
                "m": metrics,
                "figures": figures,
                "tables": tables,
            }
        )
    # A claim links to the section that shows its evidence: that section must be in the report.
    anchors = {s["id"]: s for s in loaded}
    for c in ledger:
        if c["section"] not in anchors:
            raise ReportError(
                f"{claim_origin[c['id']]}: claim {c['id']!r} names section {c['section']!r}, "
                f"which is not in the report ({', '.join(anchors) or 'no sections'})"
            )
    for s in loaded:
        s["claims"] = [c for c in ledger if c["section"] == s["id"]]
    return loaded, ledger


def section_devices(metrics: dict) -> list[str]:
    """Every device a section's results were computed on: its own job's, and those its
    summary lists for the jobs before it (training and evaluation on a GPU, say, while the
    aggregate ran on the CPU)."""
    found = [metrics["device"]] if metrics.get("device") else []
    listed = metrics.get("summary", {}).get("devices")
    if isinstance(listed, list):
        found += listed
    return sorted({str(d) for d in found})


def _check_download_names(loaded: list[dict]) -> None:
    """Two files offered under one name would overwrite each other in the files folder."""
    sources: dict[str, str] = {}
    for sec in loaded:
        for item in [*sec["figures"].values(), *sec["tables"].values()]:
            for d in item["downloads"].values():
                if sources.setdefault(d["href"], d["source"]) != d["source"]:
                    raise ReportError(
                        f"section {sec['id']}: {d['source']} and {sources[d['href']]} would "
                        f"both be offered as {d['href']}; give them different file names"
                    )


# ----------------------------------------------------------------------------- provenance


def environment_info() -> dict[str, Any]:
    import torch

    info = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "cuda_available": torch.cuda.is_available(),
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def installed_packages() -> dict[str, Any]:
    """``pip freeze`` of the interpreter rendering the report (the one the jobs ran in).

    Falls back to the installed distributions' metadata where pip is absent (some conda
    environments), and says which it used.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=False
    )
    if proc.returncode == 0 and proc.stdout.strip():
        return {"source": "pip freeze", "lines": proc.stdout.split("\n")[:-1]}
    names = {(d.metadata["Name"] or "?", d.version) for d in metadata.distributions()}
    lines = [f"{n}=={v}" for n, v in sorted(names, key=lambda nv: nv[0].lower())]
    return {"source": "importlib.metadata (pip unavailable)", "lines": lines}


def invocation_start(log_dir: str | Path) -> datetime | None:
    """When the Snakemake invocation that is rendering the report started (UTC).

    Every ``snakemake`` run that executes jobs opens ``.snakemake/log/<start>.snakemake.log``,
    named by its local start time (jobs that Snakemake runs on its behalf, locally or on a
    cluster, open none), and the working directory is locked, so the newest such file belongs
    to the invocation running this job. None if there is no log (then nobody can tell).
    """
    logs = sorted(Path(log_dir).glob("*.snakemake.log")) if Path(log_dir).is_dir() else []
    if not logs:
        return None
    stamp = logs[-1].name.removesuffix(".snakemake.log")
    for fmt in ("%Y-%m-%dT%H%M%S.%f", "%Y-%m-%dT%H%M%S"):
        try:
            local = datetime.strptime(stamp, fmt)
        except ValueError:
            continue
        return datetime.fromtimestamp(local.timestamp(), tz=UTC)
    return None


def _pattern_regex(pattern: str) -> re.Pattern:
    """A regex for a Snakemake file pattern: ``{name}`` or ``{name,constraint}`` wildcards."""
    regex, seen = "", set()
    for i, part in enumerate(re.split(r"\{([^{}]+)\}", pattern)):
        if i % 2 == 0:
            regex += re.escape(part)
            continue
        name, _, constraint = (s.strip() for s in part.partition(","))
        regex += f"(?P={name})" if name in seen else f"(?P<{name}>{constraint or '.+'})"
        seen.add(name)
    return re.compile(regex)


def _rule_of(path: str, patterns: dict[str, str]) -> tuple[str | None, str]:
    """The rule whose ``benchmark:`` pattern names ``path``, and the job's wildcards.

    Where several patterns match, the one with most literal text is the most specific.
    """
    best = None
    for rule, pattern in patterns.items():
        match = _pattern_regex(pattern).fullmatch(path)
        if match:
            literal = len(re.sub(r"\{[^{}]+\}", "", pattern))
            if best is None or literal > best[0]:
                best = (literal, rule, match.groupdict())
    if best is None:
        return None, ""
    return best[1], ", ".join(f"{k}={v}" for k, v in best[2].items())


def _tsv_number(records: list[dict], key: str, reduce) -> float | None:
    values = []
    for r in records:
        try:
            values.append(float(r[key]))
        except (KeyError, TypeError, ValueError):  # "NA" when a job ended before sampling
            pass
    return reduce(values) if values else None


def read_benchmarks(
    folder: str | Path,
    rule_patterns: dict[str, str],
    started: datetime | None,
    ignore: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Wall time and peak memory per job from Snakemake's ``benchmark:`` files.

    ``rule_patterns`` maps each rule to its benchmark pattern, so each file is attributed to
    its rule and wildcards. A job *ran* in this invocation if its benchmark file (written when
    the job ends) is newer than the invocation's start; otherwise its outputs were reused.
    ``ignore`` lists files to leave out (the report's own, which are written after it renders).
    """
    rows = []
    for path in sorted(Path(folder).glob("**/*.tsv")):
        name = path.as_posix()
        if name in ignore:
            continue
        with open(path, newline="") as f:
            records = list(csv.DictReader(f, delimiter="\t"))
        if not records:
            continue
        finished = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        rule, wildcards = _rule_of(name, rule_patterns)
        rows.append(
            {
                "file": name,
                "rule": rule,
                "wildcards": wildcards,
                # Mean over `repeat(...)` runs; the peak is the largest of them.
                "seconds": _tsv_number(records, "s", lambda v: sum(v) / len(v)),
                "max_rss_mb": _tsv_number(records, "max_rss", max),
                "finished": finished.isoformat(timespec="seconds"),
                "ran": None if started is None else finished >= started,
                "notes": [],
            }
        )
    rows.sort(key=lambda r: (r["rule"] is None, r["rule"] or "", r["wildcards"], r["file"]))
    return rows


def _pattern_files(pattern: str) -> list[Path]:
    """The files on disk that a Snakemake output pattern names (a wildcard may span folders,
    as Snakemake's default ``.+`` does): every file under the pattern's literal folder that
    the pattern's regex matches in full."""
    literal = re.split(r"\{", pattern, maxsplit=1)[0]
    root = Path(literal).parent if "{" in pattern else Path(pattern).parent
    if not root.is_dir():
        return []
    regex = _pattern_regex(pattern)
    return sorted(p for p in root.rglob("*") if p.is_file() and regex.fullmatch(p.as_posix()))


def read_timings(rule_patterns: dict[str, str], started: datetime | None) -> list[dict[str, Any]]:
    """Wall time and peak memory per job of the rules that have no ``benchmark:`` file.

    A rule whose outputs go to Snakemake's between-workflow cache may not have a benchmark
    (training, say); such a rule writes a ``timing`` output instead, a JSON object with the
    job's ``wall_s`` and ``peak_memory_mb`` (and ``peak_memory_kind``, ``resumed_from_step``).
    ``rule_patterns`` maps each such rule to its timing output's pattern; every file on disk
    that the pattern names is one job. As for benchmarks, a job *ran* in this invocation if its
    timing file (written when the job ends) is newer than the invocation's start.
    """
    rows = []
    for rule, pattern in rule_patterns.items():
        regex = _pattern_regex(pattern)
        for path in _pattern_files(pattern):
            name = path.as_posix()
            record = _read_result(path, f"rule {rule}'s timing")
            if not isinstance(record, dict):
                raise ReportError(f"{name}: rule {rule}'s timing file must hold a JSON object")
            finished = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
            wildcards = regex.fullmatch(name).groupdict()
            peak, kind = record.get("peak_memory_mb"), record.get("peak_memory_kind")
            # Only a process' peak RSS is comparable with the benchmarks' max_rss; a GPU's
            # allocated memory is said beside it.
            rss = peak if kind in (None, "cpu_max_rss") else None
            notes = ["timed by the job itself (its timing file), not by Snakemake"]
            if peak is not None and rss is None:
                notes.append(f"peak {kind} {fmt_number(peak, 4)} MB")
            if record.get("resumed_from_step"):
                notes.append(f"resumed from step {record['resumed_from_step']}")
            rows.append(
                {
                    "file": name,
                    "rule": rule,
                    "wildcards": ", ".join(f"{k}={v}" for k, v in wildcards.items()),
                    "seconds": _number(record.get("wall_s")),
                    "max_rss_mb": _number(rss),
                    "finished": finished.isoformat(timespec="seconds"),
                    "ran": None if started is None else finished >= started,
                    "notes": notes,
                }
            )
    return rows


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def read_jobs(
    folder: str | Path,
    rule_patterns: dict[str, str],
    started: datetime | None,
    ignore: tuple[str, ...] = (),
    timing_rules: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Every job: from its benchmark file, or from its timing file for a rule without one."""
    rows = read_benchmarks(folder, rule_patterns, started, ignore)
    rows += read_timings(timing_rules or {}, started)
    rows.sort(key=lambda r: (r["rule"] is None, r["rule"] or "", r["wildcards"], r["file"]))
    return rows


def job_summary(rows: list[dict], started: datetime | None) -> dict[str, Any]:
    seconds = [r["seconds"] for r in rows if r["seconds"] is not None]
    rss = [r["max_rss_mb"] for r in rows if r["max_rss_mb"] is not None]
    return {
        "started": started.isoformat(timespec="seconds") if started else None,
        "jobs": len(rows),
        "ran": sum(r["ran"] is True for r in rows),
        "reused": sum(r["ran"] is False for r in rows),
        "total_seconds": sum(seconds) if seconds else None,
        "peak_rss_mb": max(rss) if rss else None,
    }


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


# ----------------------------------------------------------------------------- context


def make_env(template_dir: str | Path) -> Environment:
    """Templates of the report (``template_dir``) and of each analysis' section, which lives in
    its folder beside the report's: ``analyses/<id>/section.html.j2``."""
    analyses = Path(template_dir).resolve().parent / "analyses"
    env = Environment(
        loader=FileSystemLoader([str(template_dir), str(analyses)]),
        autoescape=select_autoescape(("html", "j2", "xml")),
        undefined=StrictUndefined,  # a missing number is an error, never a blank cell
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = fmt_number
    env.filters["measured"] = fmt_measured
    env.filters["slug"] = slug
    env.filters["breakable"] = breakable
    return env


def _section_module(env: Environment, section_id: str):
    return env.get_template(f"{section_id}/section.html.j2").make_module()


def number_references(claims: list[dict], extra: list[str]) -> tuple[list[dict], dict[str, int]]:
    """The works cited, numbered in order of first citation (claims first, then the sections'
    and the encodings' own), with their full entries; unknown keys are an error."""
    cited = [k for c in claims for k in references.check(c["references"], f"claim {c['id']}")]
    cited += references.check(extra, "sections and encodings")
    order = list(dict.fromkeys(cited))  # first citation first, each work once
    bib = references.bibliography()
    listed = [
        {"key": k, "number": i, "kind": "paper", **bib[k]} for i, k in enumerate(order, start=1)
    ]
    return listed, {k: i for i, k in enumerate(order, start=1)}


# How the headline names each claim kind (posenc.claims.KINDS), in the order it lists them.
KIND_LABELS = {
    "identity": "Identities",
    "analytic": "Analytic properties",
    "software": "Software checks",
    "empirical": "Empirical claims",
}


def counts_by_kind(ledger: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Verdict counts per claim kind, in :data:`KINDS` order, for the kinds this ledger has:
    a verdict on an identity says something else than one on an empirical claim."""
    return [
        {
            "kind": kind,
            "label": KIND_LABELS[kind],
            "total": sum(c["kind"] == kind for c in ledger),
            **{v: sum(c["kind"] == kind and c["verdict"] == v for c in ledger) for v in VERDICTS},
        }
        for kind in KINDS
        if any(c["kind"] == kind for c in ledger)
    ]


# ----------------------------------------------------------------------------- findings

# The comparisons as the ledger's expected text writes them (posenc.claims.COMPARISONS),
# longest first, each after a space: "weakest model's largest error for each > 0.0001".
_COMPARATOR = re.compile(
    " ("
    + "|".join(re.escape(s) for _, s in sorted(COMPARISONS.values(), key=lambda c: -len(c[1])))
    + ")"
)
# Toward failure, per comparison: the entry that decides a mapping of entries is the one
# nearest to failing it (the largest under a bound from above, the smallest under one from
# below). "=" and yes/no facts have no such entry.
_WORST = {"≤": max, "<": max, "within ±": max, "≥": min, ">": min, "beyond ±": min}
_WORST_WORD = {max: "highest", min: "lowest"}
# A sentence ends at . ! ? before a capital, but not after these abbreviations.
_SENTENCE_END = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bal\.)(?<!\bvs\.)(?<!\bFig\.)(?<=[.!?])\s+(?=[A-Z“(])"
)
# A quantity named longer than this is left to the claims table (its expected column).
_LABEL_CHARS = 80


def first_sentence(text: str) -> str:
    """The opening sentence of a claim's statement: a finding quotes it, the claims table
    has the rest."""
    return _SENTENCE_END.split(str(text).strip(), maxsplit=1)[0]


def _entries(value: Any, name: str = "") -> list[tuple[str, Any]]:
    """A measured value as (entry, value) pairs: nested mappings name their entries by their
    keys joined with spaces; an interval or a list is one value."""
    if isinstance(value, dict) and not is_interval(value):
        return [e for k, v in value.items() for e in _entries(v, f"{name} {k}".strip())]
    return [(name, value)]


def _primary(claim: dict) -> tuple[str, Any, str]:
    """The quantity a claim's first check reads: its name, its measured value and the
    check's expected text. With several checks (or context beside them) the ledger's
    measured value maps each check's name to its value, in the checks' order; with one it is
    the value itself."""
    expected, measured = claim["expected"], claim["measured"]
    segments = expected.split("; ")
    # A claim that fails (or cannot be decided) is quoted by the first check that does: with
    # several checks, the first one may hold, and quoting it would say nothing of the verdict.
    index = _deciding_check(claim, len(segments))
    segment = segments[index]
    if isinstance(measured, dict) and measured and not is_interval(measured):
        name = list(measured)[index] if index < len(measured) else next(iter(measured))
        rest = segment.removeprefix(name).removeprefix(" for each")
        if rest != segment and (rest.startswith(":") or _COMPARATOR.match(rest)):
            return name, measured[name], segment
    found = _comparator(segment)
    name = segment[: found.start()] if found else segment.split(":")[0]
    return name.removesuffix(" for each"), measured, segment


def _deciding_check(claim: dict, n_segments: int) -> int:
    """The index of the first check whose outcomes include the claim's own verdict, for a
    fail or an inconclusive; 0 otherwise, or where the outcomes do not line up with the
    expected text's segments (one per check, in order)."""
    outcomes = claim.get("outcomes") or {}
    if claim.get("verdict") not in ("fail", "inconclusive") or len(outcomes) != n_segments:
        return 0
    for i, per_entry in enumerate(outcomes.values()):
        found = per_entry.values() if isinstance(per_entry, dict) else [per_entry]
        if claim["verdict"] in found:
            return i
    return 0


def _comparator(text: str) -> re.Match | None:
    """The comparison in an expected text: the first one, but an "=" only where there is no
    other (a scaled bound goes on "= 4.5e-13")."""
    found = list(_COMPARATOR.finditer(text))
    other = [m for m in found if m.group(1) != "="]
    return other[0] if other else (found[-1] if found else None)


def _position(value: Any, worst) -> float | None:
    """Where a value stands toward failure: an interval by its bound on the failing side."""
    if is_interval(value):
        value = value["high"] if worst is max else value["low"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def headline(claim: dict) -> dict[str, str | None]:
    """The number a finding quotes: the value of the claim's first check, reduced to the
    entry that decides it (the one nearest to failing, of many), and the threshold it is
    held to, both as text. Reads only the ledger entry."""
    name, value, segment = _primary(claim)
    found = _comparator(segment[len(name) :])
    op = found.group(1) if found else None
    threshold = segment[len(name) + found.start() + 1 :] if found else None
    # "within ±t of the printed values": the entries are not the differences it bounds.
    relative = threshold is not None and " of the " in threshold
    entries = _entries(value)
    text = None
    if value is None or (isinstance(value, (dict, list)) and not value):
        pass  # nothing measured
    elif len(entries) == 1:
        entry, v = entries[0]
        shown = ("yes" if v else "no") if isinstance(v, bool) else fmt_measured(v)
        text = f"{shown} for {entry}" if entry else shown
    elif all(isinstance(v, bool) for _, v in entries):
        yes = [e for e, v in entries if v]
        text = (
            f"yes for all {len(entries)}"
            if len(yes) == len(entries)
            else f"yes for {len(yes)} of {len(entries)} (no: "
            + ", ".join(e for e, v in entries if not v)
            + ")"
        )
    elif op in _WORST and not relative:
        worst = _WORST[op]
        placed = [(p, e, v) for e, v in entries if (p := _position(v, worst)) is not None]
        if placed:
            _, entry, v = worst(placed, key=lambda t: t[0])
            if len(placed) == len(entries) and all(e[2] == v for e in placed):
                text = f"{fmt_measured(v)} for all {len(entries)}"
            else:
                word = _WORST_WORD[worst]
                text = f"{fmt_measured(v)} for {entry}, the {word} of {len(entries)}"
    if text is None and len(entries) > 1:
        if len(entries) <= 4:
            text = "; ".join(
                f"{fmt_measured(v)} for {e}" if e else fmt_measured(v) for e, v in entries
            )
        else:
            numbers = [(p, e) for e, v in entries if (p := _position(v, max)) is not None]
            if numbers:
                (lo, lo_e), (hi, hi_e) = min(numbers), max(numbers)
                text = (
                    f"from {fmt_number(lo)} ({lo_e}) to {fmt_number(hi)} ({hi_e}), "
                    f"{len(entries)} values"
                )
    name = name.strip().rstrip(",")
    label = name if len(name) <= _LABEL_CHARS else None
    return {"label": label, "text": text, "threshold": threshold if text else None}


# Why a claim could not be decided, read from the reason posenc.claims generates: the
# heading each group of undecided claims gets, in this order. A precondition that names
# learning (a model below the interpolated trigram, seeds that learned the passkey task) means
# the models behind the claim never learned what it is about.
UNDECIDED = (
    (
        "not-learned",
        "The models did not learn the task at the training length, so what they do beyond "
        "it says nothing about their encodings",
    ),
    ("precondition", "A precondition of the claim did not hold"),
    (
        "straddles",
        "The measured interval straddles the threshold: this run's evidence cannot decide "
        "the claim either way",
    ),
    ("other", "Undecided for another reason"),
)
_LEARNING = ("learned the task", "interpolated trigram")


def undecided_group(reason: str | None) -> str:
    """Which :data:`UNDECIDED` group an inconclusive claim's reason puts it in."""
    reason = reason or ""
    if reason.startswith("not met:"):
        return "not-learned" if any(w in reason for w in _LEARNING) else "precondition"
    return "straddles" if "straddles the threshold" in reason else "other"


_SWITCH = re.compile(r"(?P<section>[\w-]+)\.(?P<flag>\w+) is set in the config")


def untested_group(reason: str | None, titles: dict[str, str]) -> tuple[str, str, bool]:
    """The group of an n/a claim, from its reason: its key, its heading, and whether each
    claim's own reason says more than the heading (it names what was missing)."""
    reason = reason or ""
    switch = _SWITCH.fullmatch(reason)
    if switch:
        section, flag = switch["section"], switch["flag"]
        title = titles.get(section, section)
        if flag == "smoke_test":
            heading = (
                f"The section “{title}” ran as a smoke test, too small a run for its "
                "claims to be judged"
            )
        else:
            heading = (
                f"The section “{title}” has its {flag.replace('_', ' ')} setting on, which "
                "leaves these claims untested"
            )
        return f"switch-{section}-{flag}", heading, False
    if reason.startswith("no ") and "not configured" in reason:
        return "absent", "What the claim measures is not in this run", True
    return f"other-{reason}", _sentence(reason) or "No reason was given", False


def _sentence(text: str | None) -> str | None:
    """A generated reason as a sentence of its own: capitalised, with a full stop."""
    if not text:
        return None
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def finding(claim: dict) -> dict[str, Any]:
    """One claim as the findings show it: the opening of its statement, its headline number,
    the reason it is undecided, and where its row and its evidence are."""
    return {
        "id": claim["id"],
        "kind": claim["kind"],
        "verdict": claim["verdict"],
        "statement": first_sentence(claim["statement"]),
        "headline": headline(claim),
        "why": _sentence(claim.get("reason")),
        "anchor": f"claim-{slug(claim['id'])}",
        "section_anchor": claim["section_anchor"],
        "section_number": claim["section_number"],
        "section_title": claim["section_title"],
    }


def findings(claims: list[dict[str, Any]], titles: dict[str, str]) -> dict[str, Any]:
    """The report's opening, from the ledger alone: what does not hold; what holds of the
    empirical and analytic claims, the findings about the encodings; what the evidence could
    not decide, and why; what this run could not test, and why; and, last, the identities and
    software checks that hold, which test the formulas and the code rather than the encodings.

    ``claims`` are the report's claims (each with its section's number, title and anchor);
    ``titles`` maps section ids to titles, for the reasons that name a section."""

    def by_kind(kinds: tuple[str, ...]) -> list[dict[str, Any]]:
        return [
            {
                "kind": kind,
                "label": KIND_LABELS[kind],
                "claims": [
                    finding(c) for c in claims if c["verdict"] == "pass" and c["kind"] == kind
                ],
            }
            for kind in kinds
            if any(c["verdict"] == "pass" and c["kind"] == kind for c in claims)
        ]

    headings = dict(UNDECIDED)
    undecided: dict[str, list] = {}
    for c in claims:
        if c["verdict"] == "inconclusive":
            undecided.setdefault(undecided_group(c.get("reason")), []).append(finding(c))
    untested: dict[str, dict] = {}
    for c in claims:
        if c["verdict"] == "n/a":
            key, heading, own = untested_group(c.get("reason"), titles)
            group = untested.setdefault(
                key, {"key": key, "heading": heading, "show_reason": own, "claims": []}
            )
            group["claims"].append(finding(c))
    return {
        "fail": [finding(c) for c in claims if c["verdict"] == "fail"],
        "holds": by_kind(("empirical", "analytic")),
        "undecided": [
            {"key": key, "heading": headings[key], "show_reason": True, "claims": undecided[key]}
            for key, _ in UNDECIDED
            if key in undecided
        ],
        "untested": list(untested.values()),
        "checks": by_kind(("software", "identity")),
    }


def build_context(
    template_dir: str | Path,
    sections: list[dict[str, str]],
    config: dict,
    git: dict,
    benchmarks_dir: str | Path,
    benchmark_rules: dict[str, str],
    log_dir: str | Path,
    ignore_benchmarks: tuple[str, ...] = (),
    timing_rules: dict[str, str] | None = None,
    code_digests: dict[str, dict] | None = None,
    card: str | Path | None = None,
) -> dict[str, Any]:
    """Everything the report shows, as plain JSON data (``data.json``); both media render it.

    ``timing_rules`` maps each rule without a benchmark to its ``timing`` output pattern (see
    :func:`read_timings`); ``code_digests`` maps rules to ``{"digest", "modules"}``: the digest of
    the code they run (their ``code`` param) and the modules it covers, shown in the
    provenance; ``card`` is the report card's card.json."""
    config = json.loads(json.dumps(config, default=str))  # plain dicts: Snakemake's are not
    loaded, ledger = load_sections(sections)
    _check_download_names(loaded)
    for sec, given in zip(loaded, sections):
        sec["title"] = given["title"]  # from the analysis' spec
    by_id = {s["id"]: s for s in loaded}
    cited = [k for sec in sections for k in sec.get("references", [])]
    bibliography, numbers = number_references(ledger, cited)
    claims = [
        {
            **c,
            "section_title": by_id[c["section"]]["title"],
            "section_number": by_id[c["section"]]["number"],
            "section_anchor": by_id[c["section"]]["anchor"],
            "cites": [
                {"number": numbers[k], "label": references.label(k)} for k in c["references"]
            ],
        }
        for c in ledger
    ]
    started = invocation_start(log_dir)
    jobs = read_jobs(benchmarks_dir, benchmark_rules, started, ignore_benchmarks, timing_rules)
    return {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": config,
        "config_yaml": yaml.safe_dump(config, sort_keys=False),
        "config_hash": config_hash(config),
        "git": git,
        "code_digests": dict(sorted((code_digests or {}).items())),
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
        },
        "findings": findings(claims, {s["id"]: s["title"] for s in loaded}),
        "jobs": jobs,
        "job_summary": job_summary(jobs, started),
        "references": bibliography,
        "links": {"pdf": PDF_NAME, "data": DATA_NAME, "claims": f"{FILES}/claims.json"},
        "card": load_card(card, by_id) if card else None,
    }


def load_card(path: str | Path, sections: dict[str, dict]) -> dict[str, Any]:
    """The report card (:mod:`posenc.card`), its figure offered like a section's and each
    column linked to the section that measured it. ``properties`` holds the same cells a
    property to a row, as the figure draws them (the card's ``rows`` are its encodings)."""
    data = _read_result(path, "card")
    for key in ("columns", "rows", "png", "legend", "caption"):
        if key not in data:
            raise ReportError(f"{path}: the card lacks {key!r}")
    for column in data["columns"]:
        column["section_anchor"] = sections[column["section"]]["anchor"]
    data["properties"] = [
        {**column, "cells": [row["cells"][i] for row in data["rows"]]}
        for i, column in enumerate(data["columns"])
    ]
    data["has_plugins"] = any(row["plugin"] for row in data["rows"])
    data["figure"] = {
        "png": data["png"],
        "anchor": "fig-card",
        "downloads": _downloads("card", {"PNG": data["png"], "SVG": data.get("svg")}),
    }
    return data


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


# ----------------------------------------------------------------------------- rendering


def _figure_src(fig: dict, medium: str) -> str:
    """Screen: the PNG, embedded. Print: the SVG (vector) from the files folder, relative to
    the report folder (WeasyPrint's base URL); the PNG where a figure has no SVG."""
    if medium == "screen":
        return data_uri(fig["png"])
    best = fig["downloads"].get("SVG") or fig["downloads"]["PNG"]
    return best["href"]


def render(context: dict, template_dir: str | Path, medium: str, css: str) -> str:
    """The report as HTML for ``medium``, with the stylesheet ``css`` inlined."""
    env = make_env(template_dir)
    sections = []
    for sec in context["sections"]:
        figures = {k: {**f, "src": _figure_src(f, medium)} for k, f in sec["figures"].items()}
        s = {**sec, "figures": figures}
        module = _section_module(env, sec["id"])
        s["body"] = Markup(module.body(s))
        sections.append(s)
    card = context.get("card")
    if card:
        card = {**card, "figure": {**card["figure"], "src": _figure_src(card["figure"], medium)}}
    return env.get_template("index.html.j2").render(
        **{**context, "sections": sections, "card": card},
        medium=medium,
        # Our own stylesheet, not data: inlined as is (escaping would break `a > b`).
        css=Markup(stylesheet_for(css, medium)),
    )


class _Collect(logging.Handler):
    """Keeps the errors a logger reports, to act on them after the call that logged them."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def write_pdf(html: str, base_url: str | Path, pdf_path: str | Path) -> int:
    """Lay out the print HTML with WeasyPrint into ``pdf_path``; return the page count.

    Only ``file:`` and ``data:`` URLs are fetched, so the PDF, like the page, depends on
    nothing outside the run. WeasyPrint reports a resource it cannot load (a missing figure)
    as a logged error and carries on; here that fails the job instead of leaving a hole.
    """
    from weasyprint import HTML
    from weasyprint.urls import URLFetcher

    errors = _Collect()
    logger = logging.getLogger("weasyprint")
    logger.addHandler(errors)
    try:
        fetcher = URLFetcher(allowed_protocols={"file", "data"})
        document = HTML(
            string=html, base_url=str(Path(base_url).resolve()) + "/", url_fetcher=fetcher
        ).render(pdf_tags=True)
    finally:
        logger.removeHandler(errors)
    if errors.messages:
        raise ReportError(
            f"{pdf_path}: WeasyPrint could not lay out the report: " + "; ".join(errors.messages)
        )
    with atomic_path(pdf_path) as tmp:
        document.write_pdf(tmp, pdf_tags=True)
    return len(document.pages)
