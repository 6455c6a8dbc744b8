"""What positional encodings cost next to attention, measured against L.

The seed article: computing sinusoidal encodings takes O(L·d) time, a learned lookup the same,
"negligible overhead compared to the O(L²·d) cost of self-attention itself, so positional
encoding is essentially free". We time each registry encoding's own work (the input table,
the query/key rotation, the score bias) and one attention layer of the project's model
(posenc.model.Attention: QKV projection, SDPA, output projection) at growing L, with
``torch.utils.benchmark`` (warm-up calls, then the median of blocked repeats). A call costs a
fixed t₀ (interpreter, dispatch, allocation; its time at L = 1) plus the work O(·) describes,
so we fit t(L) = t₀ + c·L^α: α is the log-log slope of t − t₀ against L over a large-L range.

One attention layer costs about 8·L·D² (projections) + 4·L²·D (scores and weighted sum)
flops, so its log-log slope is 1 + L / (L + 2D): it reaches 2 only once L ≫ 2D. Its fit starts
at ``attention_fit_min_len``, and the slope the flop model expects there is reported too.
An encoding's O(L·d) work is linear in L within one level of the memory hierarchy, but its
time per element steps up (several-fold on a CPU) when the (L, d) output outgrows the caches;
its fit starts at ``encoding_fit_min_len``, past that step, and the slope over every length is
reported beside it.
"""

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.utils import benchmark

from posenc.claims import claim
from posenc.device import device_name, resolve_device
from posenc.encodings import REGISTRY, EncodingParams, build
from posenc.io import save_figure, write_csv
from posenc.model import Attention, ModelConfig
from posenc.workflow import Timer, setup, write_section

SECTION = "complexity"


def clock(device: torch.device) -> tuple[Callable[[], float], str]:
    """The clock the timings use. On the CPU with one thread, that thread's CPU time: it
    excludes the time the thread waits for a core, so other jobs on a shared machine do not
    inflate the result (all the work runs in this thread). Otherwise wall time, which
    ``torch.utils.benchmark`` brackets with CUDA synchronisation."""
    if device.type == "cpu" and torch.get_num_threads() == 1:
        return time.thread_time, "thread CPU time"
    return time.perf_counter, "wall time"


def median_time(
    fn: Callable[[], Any], warmup: int, min_run_time: float, timer: Callable[[], float]
) -> dict[str, float]:
    """Seconds per call of ``fn``: ``warmup`` untimed calls (allocator, caches, lazy init),
    then ``torch.utils.benchmark.Timer.blocked_autorange``, which picks a block size, times
    blocks for at least ``min_run_time`` seconds and reports their median."""
    for _ in range(warmup):
        fn()
    t = benchmark.Timer(
        stmt="fn()", globals={"fn": fn}, timer=timer, num_threads=torch.get_num_threads()
    )
    m = t.blocked_autorange(min_run_time=min_run_time)
    return {"median_s": m.median, "iqr_s": m.iqr, "repeats": len(m.times)}


def encoding_workload(name: str, cfg: dict, encoding_cfg: dict, length: int, device):
    """A zero-argument call doing encoding ``name``'s own work for L = ``length`` positions.

    input: the (L, D) table; qk: rotating queries and keys (B, H, L, Dh); bias: the (H, L, L)
    score bias. None for an encoding that does no work (NoPE).
    """
    spec = REGISTRY[name]
    if spec.acts_on == "none":
        return None
    d, h, b = cfg["d_model"], cfg["n_heads"], cfg["batch"]
    params = EncodingParams(d_model=d, n_heads=h, max_len=length, **encoding_cfg)
    enc = build(name, params).to(device)
    positions = torch.arange(length, device=device)
    if spec.acts_on == "input":
        return lambda: enc.input_encoding(positions)
    if spec.acts_on == "qk":
        g = torch.Generator(device=device).manual_seed(0)
        q = torch.randn(b, h, length, d // h, generator=g, device=device)  # (B, H, L, Dh)
        k = torch.randn(b, h, length, d // h, generator=g, device=device)
        return lambda: enc.rotate(q, k, positions, positions)
    return lambda: enc.score_bias(positions, positions, cfg["causal"])


def attention_workload(cfg: dict, length: int, seed: int, device):
    """One forward pass of the model's attention layer (no positional encoding) on (B, L, D)."""
    torch.manual_seed(seed)
    mcfg = ModelConfig(d_model=cfg["d_model"], n_heads=cfg["n_heads"], causal=cfg["causal"])
    layer = Attention(mcfg, build("none", EncodingParams(d_model=cfg["d_model"])))
    layer = layer.to(device).eval()
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(cfg["batch"], length, cfg["d_model"], generator=g, device=device)  # (B, L, D)
    positions = torch.arange(length, device=device)
    return lambda: layer(x, positions)


def log_log_fit(lengths: list[int], seconds: list[float]) -> tuple[float, float]:
    """Least-squares line log t = slope · log L + intercept: (slope, intercept)."""
    slope, intercept = np.polyfit(np.log(lengths), np.log(seconds), 1)
    return float(slope), float(intercept)


def flop_model_slope(length: int, d_model: int) -> float:
    """d log F / d log L for F = 8 L D² + 4 L² D: 1 + L / (L + 2D)."""
    return 1 + length / (length + 2 * d_model)


def measure(cfg: dict, encodings: list[str], encoding_cfg: dict, seed: int, device) -> list[dict]:
    """Time every workload at L = 1 (its fixed per-call cost) and at every configured length
    it is run at. Tidy rows."""
    rows = []
    timer, _ = clock(device)
    with torch.no_grad():
        for length in [1, *cfg["lengths"]]:
            if length <= cfg["attention_max_len"]:
                fn = attention_workload(cfg, length, seed, device)
                t = median_time(fn, cfg["warmup"], cfg["min_run_time"], timer)
                rows.append({"workload": "attention", "acts_on": "layer", "length": length, **t})
            for name in encodings:
                acts_on = REGISTRY[name].acts_on
                if acts_on == "bias" and length > cfg["bias_max_len"]:
                    continue  # an (H, L, L) bias outgrows memory long before a table does
                fn = encoding_workload(name, cfg, encoding_cfg, length, device)
                if fn is None:
                    continue
                t = median_time(fn, cfg["warmup"], cfg["min_run_time"], timer)
                rows.append({"workload": name, "acts_on": acts_on, "length": length, **t})
    return rows


def fit_min_len(workload: str, cfg: dict) -> int:
    return cfg["attention_fit_min_len" if workload == "attention" else "encoding_fit_min_len"]


def fits(rows: list[dict], cfg: dict) -> list[dict]:
    """Per workload, the log-log slope of its L-dependent time over its fit range.

    A call costs a fixed overhead t₀ (Python, dispatch, allocation: the time at L = 1) plus
    the work that O(·) describes, so the model is t(L) = t₀ + c·L^α and α is the slope of
    log(t − t₀) against log L (points with t ≤ t₀ carry no information and are left out).
    The slope of the raw times over the same range, and over every length, are kept beside it.
    A workload with fewer than two lengths in its fit range (a bias capped at
    ``bias_max_len``) is fitted over every length.
    """
    out = []
    for name in dict.fromkeys(r["workload"] for r in rows):
        every = [r for r in rows if r["workload"] == name and r["length"] > 1]
        overhead = next(r["median_s"] for r in rows if r["workload"] == name and r["length"] == 1)
        pts = [r for r in every if r["length"] >= fit_min_len(name, cfg)]
        if len(pts) < 2:
            pts = every
        work = [(r["length"], r["median_s"] - overhead) for r in pts if r["median_s"] > overhead]
        if len(work) < 2:
            continue
        slope, intercept = log_log_fit(*zip(*work))
        raw, _ = log_log_fit([r["length"] for r in pts], [r["median_s"] for r in pts])
        full, _ = log_log_fit([r["length"] for r in every], [r["median_s"] for r in every])
        out.append(
            {
                "workload": name,
                "acts_on": pts[0]["acts_on"],
                "overhead_s": overhead,
                "slope": slope,
                "intercept": intercept,
                "fit_from": work[0][0],
                "fit_to": work[-1][0],
                "points": len(work),
                "slope_raw": raw,
                "slope_every_length": full,
            }
        )
    return out


def make_claims(result: dict, cfg: dict) -> list[dict]:
    th = cfg["thresholds"]
    slopes = {f["workload"]: f for f in result["fits"]}
    ratio = result["pe_to_attention"]
    tables = [n for n in ("sinusoidal", "learned") if n in slopes]
    measured = {f"{n} slope": slopes[n]["slope"] for n in tables}
    measured |= {
        f"{n} / attention at L = {result['ratio_len']}": ratio[n] for n in tables if n in ratio
    }
    ok = bool(tables) and all(
        abs(slopes[n]["slope"] - th["pe_slope"]) <= th["pe_slope_tol"]
        and ratio.get(n, float("inf")) <= th["pe_max_fraction"]
        for n in tables
    )
    claims = [
        claim(
            "complexity.pe_linear",
            "Computing the positional table (sinusoidal formula, learned lookup) costs O(L·d): "
            "time grows linearly in L, and is negligible next to one attention layer.",
            measured or "no sinusoidal or learned encoding configured",
            f"log-log slope {th['pe_slope']:g} ± {th['pe_slope_tol']:g} over L ≥ "
            f"{cfg['encoding_fit_min_len']}; table time ≤ {th['pe_max_fraction']:g} × attention "
            "time at the largest L timed for both",
            ok if tables else None,
            "seed article (003), 'time and space complexity'",
            SECTION,
        )
    ]
    att = slopes.get("attention")
    claims.append(
        claim(
            "complexity.attention_quadratic",
            "One attention layer costs O(L²·d): its time grows quadratically in L once L is "
            "large enough for the scores to dominate the projections.",
            {
                "attention slope": att["slope"] if att else None,
                "fit range": f"{att['fit_from']}–{att['fit_to']}" if att else None,
                "flop-model slope at fit start": result["expected_attention_slope"],
            },
            f"log-log slope {th['attention_slope']:g} ± {th['attention_slope_tol']:g} over "
            f"L ≥ {cfg['attention_fit_min_len']}",
            abs(att["slope"] - th["attention_slope"]) <= th["attention_slope_tol"] if att else None,
            "Vaswani et al. 2017, Table 1; seed article (003)",
            SECTION,
        )
    )
    return claims


def compute(
    cfg: dict, encodings: list[str], encoding_cfg: dict, seed: int, device: torch.device
) -> dict[str, Any]:
    rows = measure(cfg, encodings, encoding_cfg, seed, device)
    fitted = fits(rows, cfg)
    att = {r["length"]: r["median_s"] for r in rows if r["workload"] == "attention"}
    att.pop(1, None)
    ratio_len = max(att) if att else None
    ratio = {
        r["workload"]: r["median_s"] / att[ratio_len]
        for r in rows
        if r["workload"] != "attention" and r["length"] == ratio_len
    }
    att_fit = next((f for f in fitted if f["workload"] == "attention"), None)
    expected = flop_model_slope(att_fit["fit_from"], cfg["d_model"]) if att_fit else None
    result = {
        "timings": rows,
        "fits": fitted,
        "ratio_len": ratio_len,
        "pe_to_attention": ratio,
        "expected_attention_slope": expected,
        "quadratic_regime_reached": bool(
            att_fit
            and abs(att_fit["slope"] - cfg["thresholds"]["attention_slope"])
            <= cfg["thresholds"]["attention_slope_tol"]
        ),
    }
    result["claims"] = make_claims(result, cfg)
    return result


def plot(result: dict, cfg: dict):
    """Time per call against L, log-log, with the fitted lines over the fit range."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    slopes = {f["workload"]: f for f in result["fits"]}
    names = list(dict.fromkeys(r["workload"] for r in result["timings"]))
    cmap = plt.get_cmap("tab10")
    for i, name in enumerate(names):
        rows = [r for r in result["timings"] if r["workload"] == name and r["length"] > 1]
        ls = [r["length"] for r in rows]
        color = "black" if name == "attention" else cmap(i)
        label = name if name not in slopes else f"{name} (slope {slopes[name]['slope']:.2f})"
        ax.plot(
            ls,
            [r["median_s"] for r in rows],
            marker="o",
            ms=3,
            lw=1.2 if name == "attention" else 1,
            color=color,
            label=label,
        )
        if name in slopes:
            f = slopes[name]
            xs = np.geomspace(f["fit_from"], f["fit_to"], 16)
            fit = f["overhead_s"] + np.exp(f["intercept"]) * xs ** f["slope"]
            ax.plot(xs, fit, color=color, ls=":", lw=2, alpha=0.6)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="sequence length L",
        ylabel="median seconds per call",
        title=f"d_model = {cfg['d_model']}, {cfg['n_heads']} heads, batch {cfg['batch']}",
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    return fig


def tables(result: dict, cfg: dict, csv: str) -> list[dict]:
    times = {(r["workload"], r["length"]): r["median_s"] for r in result["timings"]}
    rows = []
    for f in result["fits"]:
        rows.append(
            [
                f["workload"],
                f["acts_on"],
                f["overhead_s"],
                f["slope"],
                f"{f['fit_from']}–{f['fit_to']}",
                f["slope_raw"],
                f["slope_every_length"],
                times[(f["workload"], f["fit_to"])],
                result["pe_to_attention"].get(f["workload"]),
            ]
        )
    return [
        {
            "id": "slopes",
            "title": "Per workload: the fixed per-call cost t₀ (time at L = 1), the log-log slope "
            "of t − t₀ against L over the fit range, the slope of the raw times over the fit "
            "range and over every length, the median time at the end of the fit range, and "
            f"the ratio to one attention layer at L = {result['ratio_len']}.",
            "csv": csv,
            "columns": [
                "workload",
                "acts on",
                "t₀ (s)",
                "slope of t − t₀",
                "fit range",
                "raw slope",
                "raw slope, every L",
                "time at end (s)",
                "time / attention",
            ],
            "rows": rows,
        }
    ]


def main(snakemake) -> None:
    log = setup(snakemake, SECTION)
    p, out = snakemake.params, snakemake.output
    device = resolve_device(p.device)
    log.info("device %s", device)
    with Timer() as timer:
        result = compute(p.cfg, list(p.encodings), dict(p.encoding), p.seed, device)
    log.info("measured in %.1f s", timer.seconds)
    write_csv(out.timings_csv, result["timings"])
    save_figure(plot(result, p.cfg), out.scaling_png, out.scaling_svg)
    cfg = p.cfg
    metrics = {
        "device": device_name(device),
        "seconds": timer.seconds,
        "threads": torch.get_num_threads(),
        "clock": clock(device)[1],
        "d_model": cfg["d_model"],
        "n_heads": cfg["n_heads"],
        "batch": cfg["batch"],
        "causal": cfg["causal"],
        "attention_fit_min_len": cfg["attention_fit_min_len"],
        "encoding_fit_min_len": cfg["encoding_fit_min_len"],
        "attention_max_len": cfg["attention_max_len"],
        "bias_max_len": cfg["bias_max_len"],
        "flop_crossover_len": 2 * cfg["d_model"],
        "expected_attention_slope": result["expected_attention_slope"],
        "quadratic_regime_reached": result["quadratic_regime_reached"],
        "ratio_len": result["ratio_len"],
        "fits": result["fits"],
        "figures": [
            {
                "id": "scaling",
                "png": out.scaling_png,
                "svg": out.scaling_svg,
                "caption": "Median time per call against L (torch.utils.benchmark, "
                f"{cfg['warmup']} warm-up calls, blocks of at least {cfg['min_run_time']:g} s): "
                "one attention layer (black) and each encoding's own work; dotted: the "
                f"log-log fits (attention over L ≥ {cfg['attention_fit_min_len']}, encodings over "
                f"L ≥ {cfg['encoding_fit_min_len']}), slopes in the legend.",
            }
        ],
        "tables": tables(result, cfg, out.timings_csv),
    }
    write_section(out, metrics, result["claims"], log)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821 -- injected by Snakemake's script: directive
