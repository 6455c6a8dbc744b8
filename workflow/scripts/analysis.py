"""Runs one analysis for Snakemake: its compute, its present functions, the claims evaluator.

Every analysis ends alike: tidy CSVs, figures (PNG and SVG), its metrics.json (evidence,
summary, figures and tables, the section contract in CONTRIBUTING.md), timing.json where the
spec has timed figures or tables, and claims.json, all written atomically.
"""

import importlib
from pathlib import Path
from typing import Any

from posenc import plugins
from posenc.analysis import (
    AnalysisSpec,
    Context,
    Measurements,
    check_installed,
    fill,
    load_spec,
)
from posenc.claims import evaluate, section_thresholds
from posenc.device import device_name, resolve_device
from posenc.io import save_figure, write_csv, write_json
from posenc.workflow import Timer, setup


def _module(name: str, part: str):
    return importlib.import_module(f"posenc.analyses.{name}.{part}")


def _values(m: Measurements, ctx: Context) -> dict[str, Any]:
    """What captions and titles may name in braces."""
    return {**ctx.cfg, **m.evidence, **m.summary, "cfg": ctx.cfg}


def present(spec: AnalysisSpec, present_module, m: Measurements, ctx: Context, out) -> dict:
    """Every figure and table of the spec, each from its one present function. Returns the
    entries for metrics.json and for timing.json."""
    values = _values(m, ctx)
    entries: dict[str, dict[str, list]] = {
        "metrics": {"figures": [], "tables": []},
        "timing": {"figures": [], "tables": []},
    }
    for fid, fig in spec.figures.items():
        plot = getattr(present_module, f"figure_{fid}")
        png, svg = out[f"png_{fid}"], out[f"svg_{fid}"]
        save_figure(plot(m, ctx), png, svg)
        where = "timing" if fid in spec.timing_figures else "metrics"
        entries[where]["figures"].append(
            {"id": fid, "png": png, "svg": svg, "caption": fill(fig.caption, values)}
        )
    for tid, table in spec.tables.items():
        columns, rows = getattr(present_module, f"table_{tid}")(m, ctx)
        where = "timing" if tid in spec.timing_tables else "metrics"
        entries[where]["tables"].append(
            {
                "id": tid,
                "title": fill(table.title, values),
                "csv": out[f"csv_{table.csv}"] if table.csv else None,
                "columns": list(columns),
                "rows": [list(r) for r in rows],
            }
        )
    return entries


def main(snakemake) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    p, out = snakemake.params, snakemake.output
    plugins.load(p.plugins, p.root)
    check_installed(p.root)  # the workflow's own analyses/, not another checkout's
    spec = load_spec(Path(p.root, "analyses", p.analysis, "spec.py"))  # its own spec only
    log = setup(snakemake, p.analysis)
    device = resolve_device(p.config.get("device", "cpu"))
    log.info("device %s", device)
    ctx = Context(
        cfg=dict(p.cfg),
        seed=p.config.get("seed", 0),
        encodings=list(p.config.get("encodings", [])),
        encoding=dict(p.config.get("encoding", {})),
        device=device,
        inputs={k: v for k, v in snakemake.input.items()},
        log=log,
        config=dict(p.config),
    )
    compute = _module(p.analysis, "compute")
    with Timer() as timer:
        m = compute.compute(ctx)
    log.info("computed in %.1f s", timer.seconds)
    for rows in spec.csvs:
        write_csv(out[f"csv_{rows}"], m.rows[rows])
    entries = present(spec, _module(p.analysis, "present"), m, ctx, out)
    # Its own thresholds, and by qualified name those of the sections it uses (spec.uses).
    shared = section_thresholds({**ctx.config, p.analysis: ctx.cfg}, p.analysis)
    cfg = {**ctx.cfg, "thresholds": shared}
    claims = evaluate(spec.claims, m.evidence, cfg, p.analysis)
    write_json(
        out.metrics,
        {
            "device": device_name(device),
            "evidence": m.evidence,
            "summary": m.summary,
            **m.exports,
            **entries["metrics"],
        },
    )
    if "timing" in out.keys():
        write_json(out.timing, {**m.timing, **entries["timing"]})
    write_json(out.claims, claims)
    log.info("claims: %s", {c["id"]: c["verdict"] for c in claims})


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
