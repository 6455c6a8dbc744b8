"""Render the report from the analyses' results. Computes nothing scientific: it numbers
figures, merges the claims ledger, gathers provenance and hands all of it to dumb templates."""

from __future__ import annotations

import base64
import csv
import math
import platform
import sys
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from posenc.claims import check_ledger
from posenc.config import config_hash
from posenc.io import read_json

MIME = {".png": "image/png", ".svg": "image/svg+xml"}


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
    return f"{x:.{digits}g}"


def fmt_measured(x: Any) -> str:
    if isinstance(x, dict):
        return "; ".join(f"{k}: {fmt_measured(v)}" for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt_measured(v) for v in x) + "]"
    return fmt_number(x)


def read_benchmarks(folder: str | Path) -> list[dict[str, Any]]:
    """Wall time and peak memory per job from Snakemake's ``benchmark:`` files."""
    rows = []
    for path in sorted(Path(folder).glob("**/*.tsv")):
        with open(path) as f:
            records = list(csv.DictReader(f, delimiter="\t"))
        if not records:
            continue
        r = records[-1]

        def num(key):
            try:
                return float(r[key])
            except (KeyError, ValueError):
                return None

        rows.append({"job": str(path.relative_to(folder).with_suffix("")),
                     "seconds": num("s"), "max_rss_mb": num("max_rss")})
    return rows


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


def load_sections(sections: list[dict[str, str]]) -> tuple[list[dict], list[dict]]:
    """Read each section's metrics and claims; number figures and tables in report order."""
    loaded, ledger = [], []
    fig_no = table_no = 0
    for number, sec in enumerate(sections, start=1):
        metrics = read_json(sec["metrics"])
        if not isinstance(metrics, dict):
            raise ValueError(f"{sec['metrics']}: metrics must be a JSON object")
        claims = check_ledger(read_json(sec["claims"]), origin=sec["claims"])
        figures = {}
        for fig in metrics.get("figures", []):
            fig_no += 1
            figures[fig["id"]] = {
                **fig,
                "number": fig_no,
                "anchor": f"fig-{sec['id']}-{fig['id']}",
                "src": data_uri(fig["png"]),
            }
        tables = {}
        for tab in metrics.get("tables", []):
            table_no += 1
            tables[tab["id"]] = {**tab, "number": table_no, "anchor": f"tab-{sec['id']}-{tab['id']}"}
        for c in claims:
            c = {**c, "section": sec["id"], "section_number": number}
            ledger.append(c)
        loaded.append({
            "id": sec["id"], "number": number, "anchor": f"sec-{sec['id']}",
            "m": metrics, "figures": figures, "tables": tables,
            "claims": [c for c in ledger if c["section"] == sec["id"]],
        })
    return loaded, ledger


def make_env(template_dir: str | Path) -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(template_dir)),
        autoescape=select_autoescape(("html", "j2", "xml")),
        undefined=StrictUndefined,  # a missing number is an error, never a blank cell
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = fmt_number
    env.filters["measured"] = fmt_measured
    return env


def render(
    template_dir: str | Path,
    sections: list[dict[str, str]],
    config: dict,
    git: dict,
    benchmarks_dir: str | Path,
) -> tuple[str, list[dict]]:
    """The HTML page and the merged claims ledger."""
    env = make_env(template_dir)
    loaded, ledger = load_sections(sections)
    for sec in loaded:
        module = env.get_template(f"sections/{sec['id']}.html.j2").make_module()
        sec["title"] = str(module.title()).strip()
        sec["body"] = Markup(module.body(sec))
    counts = {v: sum(c["verdict"] == v for c in ledger) for v in ("pass", "fail", "n/a")}
    devices = sorted({str(s["m"]["device"]) for s in loaded if "device" in s["m"]})
    html = env.get_template("index.html.j2").render(
        sections=loaded,
        claims=ledger,
        counts=counts,
        config=config,
        config_yaml=yaml.safe_dump(config, sort_keys=False),
        config_hash=config_hash(config),
        git=git,
        env=environment_info(),
        devices=devices,
        benchmarks=read_benchmarks(benchmarks_dir),
    )
    return html, ledger
