"""What Snakemake recorded of the run: when the invocation rendering the report started, and
every job's wall time and peak memory, from its ``benchmark:`` file or, for a rule that may not
have one (a cached one), from the ``timing`` output the job writes itself. Each file is
attributed to its rule and wildcards by matching the rules' file patterns."""

from __future__ import annotations

import csv
import re
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from posenc.report.errors import ReportError, read_result
from posenc.report.filters import fmt_number


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
    ignore: Collection[str] = (),
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
            record = read_result(path, f"rule {rule}'s timing")
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
    ignore: Collection[str] = (),
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


def jobs_by_rule(rows: list[dict]) -> list[dict[str, Any]]:
    """The job table summed per rule (its jobs, how many ran in this invocation, their wall
    time and their largest peak memory): what the printed report shows, where a table of
    every job of a large run would fill pages."""
    by_rule: dict[str | None, list[dict]] = {}
    for r in rows:
        by_rule.setdefault(r["rule"], []).append(r)
    out = []
    for rule, group in by_rule.items():
        seconds = [r["seconds"] for r in group if r["seconds"] is not None]
        rss = [r["max_rss_mb"] for r in group if r["max_rss_mb"] is not None]
        out.append(
            {
                "rule": rule,
                "jobs": len(group),
                "ran": sum(r["ran"] is True for r in group),
                "seconds": sum(seconds) if seconds else None,
                "max_rss_mb": max(rss) if rss else None,
            }
        )
    return out
