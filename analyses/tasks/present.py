"""Tasks figures and tables: one function per figure and per table of the spec."""

from statistics import mean

from posenc.analysis import Context, Measurements
from posenc.plotting import panel_grid, reference_line, style, themed
from posenc.variants import split_model

NA = "n/a"


def _curves(m: Measurements, task: str, metric: str) -> dict[str, tuple[list, list]]:
    """Per model: input lengths and the metric's mean over seeds at each."""
    by: dict[str, dict[int, list[float]]] = {}
    for r in m.rows["runs"]:
        if r["task"] == task:
            by.setdefault(r["model"], {}).setdefault(r["length"], []).append(r[metric])
    return {model: (sorted(v), [mean(v[n]) for n in sorted(v)]) for model, v in by.items()}


def _figure(m: Measurements, metric: str, label: str):
    tasks = [t["task"] for t in m.summary["tasks"]]
    fig, axes = panel_grid(len(tasks), ncols=min(3, len(tasks)), panel_height=2.8)
    for ax, task in zip(axes, tasks):
        for model, (xs, ys) in _curves(m, task, metric).items():
            randomized = split_model(model)[1]
            ax.plot(
                xs, ys, lw=1.2, ms=3.5, ls="--" if randomized else "-", label=model, **style(model)
            )
        reference_line(ax, m.summary["n"], axis="x")
        ax.set_xscale("log", base=2)
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(task.replace("_", " "))
        ax.set_xlabel("input length")
    axes[0].set_ylabel(label)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, frameon=False)
    return fig


@themed
def figure_accuracy(m: Measurements, ctx: Context):
    return _figure(m, "token_accuracy", "per-token accuracy")


@themed
def figure_exact(m: Measurements, ctx: Context):
    return _figure(m, "exact_match", "exact match")


def _f(value, digits=3):
    return NA if value is None else f"{value:.{digits}f}"


def table_learners(m: Measurements, ctx: Context):
    columns = (
        "task",
        "model",
        "seeds learned",
        "exact match at N",
        "test accuracy (mean)",
        "test accuracy (best seed)",
    )
    rows = [
        (
            r["task"],
            r["model"],
            f"{r['seeds_learned']} of {r['seeds']}",
            _f(r["exact_at_n"]),
            _f(r["test_token_mean"]),
            _f(r["test_token_best"]),
        )
        for r in m.rows["cells"]
    ]
    return columns, rows


def table_randomized(m: Measurements, ctx: Context):
    columns = (
        "task",
        "encoding",
        "test accuracy, plain",
        "test accuracy, randomized",
        "gain",
        "exact at N, plain",
        "exact at N, randomized",
        "both learned",
    )
    rows = [
        (
            r["task"],
            r["encoding"],
            _f(r["plain_test_token"]),
            _f(r["randomized_test_token"]),
            f"{r['gain']:+.3f}",
            _f(r["plain_exact_at_n"]),
            _f(r["randomized_exact_at_n"]),
            "yes" if r["both_learned"] else "no",
        )
        for r in m.rows["randomized"]
    ]
    return columns, rows


def table_runs(m: Measurements, ctx: Context):
    columns = ("task", "model", "seed", "length", "sequences", "exact match", "token accuracy")
    rows = [
        (
            r["task"],
            r["model"],
            r["seed"],
            r["length"],
            r["sequences"],
            _f(r["exact_match"]),
            _f(r["token_accuracy"]),
        )
        for r in m.rows["runs"]
    ]
    return columns, rows
