"""Extrapolation figures: one function per figure of the spec; the tables are in
``present_tables.py`` and the mechanism's figure and table in ``present_mechanism.py``, handed
to the runner from here. Every encoding's colour and marker come from posenc.plotting.style, so
any registered encoding has one; a context extension's curve takes its encoding's colour, a
dashed or dotted line and a hollow marker of its own, so the plain model and its extensions stay
apart in one colour."""

from posenc.analysis import Context, Measurements
from posenc.plotting import PAGE_WIDTH_IN, estimate_band, panel_grid, reference_line, style, themed
from posenc.variants import split_model

from .present_context import (  # noqa: F401 -- the spec's
    figure_effective_context,
    table_effective_context,
)
from .present_mechanism import figure_mechanism, table_mechanism  # noqa: F401 -- the spec's
from .present_tables import (  # noqa: F401 -- the spec's tables, found here by the runner
    BASELINES,
    lm_cells,
    passkey_cells,
    table_all,
    table_extensions,
    table_gap,
    table_learned,
    table_passkey,
    table_segment,
    table_training,
)
from .present_wavelengths import figure_wavelengths  # noqa: F401 -- the spec's

# The plain model solid with its encoding's filled marker; its first, second, ... context
# extension dashed, dotted, ... with a hollow marker of its own (same colour as the plain one).
LINESTYLES = ("-", "--", ":", "-.")
EXTENSION_MARKERS = ("X", "*", "h")
# A model trained with randomized positions: its encoding's colour and marker, hollow, on a
# dash-dot line that no context extension uses.
RANDOMIZED_LINESTYLE = (0, (6, 2, 1, 2))
# Passkey: each encoding's points are shifted sideways by this fraction of an octave times its
# place among the encodings (centred), so equal accuracies (all at 1.0, say) stay visible.
PASSKEY_DODGE_OCTAVES = 0.035
TITLES = {"all": "(a) every token of each window", "segment": "(b) same final segment"}
TASKS = {
    "lm": ("character LM", "training loss (bits/char)"),
    "passkey": ("passkey retrieval", "training loss (bits/answer token)"),
}


def _estimate_and_interval(
    ax, points, color, label, marker, linestyle, size, hollow=True, lw=1.5
) -> None:
    """One series: the estimate (mean over seeds) as a line, its confidence interval as a
    band. ``points`` are (x, {"estimate", "low", "high"}) pairs."""
    estimate_band(
        ax,
        [x for x, _ in points],
        [p for _, p in points],
        color,
        ls=linestyle,
        marker=marker,
        ms=size,
        mfc="none" if hollow else color,
        mew=1.2,
        lw=lw,
        label=label,
    )


def _model_look(name: str) -> dict:
    """Colour, marker, fill and line style of one model's curve: its encoding's, solid and
    filled; with randomized positions hollow on a dash-dot line."""
    look, randomized = style(name), split_model(name)[1]
    return {
        **look,
        "hollow": randomized,
        "linestyle": RANDOMIZED_LINESTYLE if randomized else "-",
    }


def _series_look(series: dict) -> dict:
    """Colour, marker, fill and line style of one curve of the bits/char figure: the plain
    model's filled marker and solid line; an extension's own hollow marker and line style."""
    look, variant = style(series["name"]), series["variant"]
    if variant == 0:
        return _model_look(series["name"])
    return {
        "color": look["color"],
        "marker": look["marker"]
        if variant == 0
        else EXTENSION_MARKERS[(variant - 1) % len(EXTENSION_MARKERS)],
        "hollow": variant > 0,
        "linestyle": LINESTYLES[variant % len(LINESTYLES)],
    }


def _baseline_lines(ax, baselines: dict[str, float]) -> None:
    """The corpus reference points as grey horizontal lines, each its own dashes, named in the
    legend: written beside the lines, close values (a 4-gram's and a 5-gram's) overlapped and
    one line struck through the other's label."""
    for i, name in enumerate(b for b in BASELINES if b in baselines):
        value = baselines[name]
        reference_line(ax, value, i, label=f"{name} {value:.2f}")


def _length_axis(ax, lengths: list[int]) -> None:
    """Log-2 x axis labelled with the evaluation lengths themselves."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(alpha=0.3)


@themed
def figure_bits_vs_length(m: Measurements, ctx: Context):
    """Bits/char versus evaluation length (log x), both scoring modes, estimate and interval."""

    lm, s = lm_cells(m), m.summary
    train_len = m.evidence["train_len"]
    # One above the other, sharing the x axis: side by side they were drawn 11 inches wide.
    fig, axes = panel_grid(2, ncols=1, panel_height=2.6, sharex=True, sharey=True)
    for ax, mode in zip(axes, ("all", "segment")):
        for series in s["series"]:
            name = series["name"]
            points = [
                (k * train_len, lm[(name, mode, k)])
                for k in s["multipliers"]
                if lm.get((name, mode, k))
            ]
            if not points:
                continue
            label = name + (" (undefined > L_max)" if series["undefined_beyond_train"] else "")
            label += " (no fine-tuning)" if series["variant"] else ""
            look = _series_look(series)
            _estimate_and_interval(
                ax,
                points,
                look["color"],
                label,
                look["marker"],
                look["linestyle"],
                6 if look["hollow"] else 4,
                hollow=look["hollow"],
            )
        _baseline_lines(ax, s.get("baselines", {}))
        ax.axvline(train_len, color="0.6", lw=0.8, ls="--")
        _length_axis(ax, [k * train_len for k in s["multipliers"]])
        ax.set_title(TITLES[mode])
        ax.set_ylabel("loss (bits/char)")
    axes[-1].set_xlabel("evaluation length L (tokens)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False)
    return fig


@themed
def figure_passkey_accuracy(m: Measurements, ctx: Context):
    """Exact-match passkey accuracy versus length, per encoding."""
    import matplotlib.pyplot as plt

    passkey, s = passkey_cells(m), m.summary
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 4), layout="constrained")
    n_train = s["passkey_train_len"]
    n = len(s["passkey_encodings"])
    for i, enc in enumerate(s["passkey_encodings"]):
        shift = 2 ** (PASSKEY_DODGE_OCTAVES * (i - (n - 1) / 2))
        points = [
            (k * n_train * shift, passkey[(enc, k)])
            for k in s["passkey_multipliers"]
            if passkey.get((enc, k))
        ]
        if not points:
            continue
        look = _model_look(enc)
        _estimate_and_interval(
            ax,
            points,
            look["color"],
            enc,
            look["marker"],
            look["linestyle"],
            6,
            hollow=True,  # hollow throughout: the dodged points overlap
            lw=1.0,
        )
    chance = m.evidence["passkey_chance"]
    reference_line(ax, chance, label=f"chance ({chance:.2g})")
    ax.axvline(n_train, color="0.6", lw=0.8, ls="--")
    _length_axis(ax, [k * n_train for k in s["passkey_multipliers"]])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("sequence length (tokens)")
    ax.set_ylabel("exact-match accuracy")
    ax.legend()
    return fig


@themed
def figure_training_curves(m: Measurements, ctx: Context):
    """Training loss per step (moving average), mean over seeds, per task and encoding."""

    curves: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for r in m.rows["training_curves"]:
        curves.setdefault(r["task"], {}).setdefault(r["encoding"], []).append(
            (r["step"], r["smoothed"])
        )
    fig, axes = panel_grid(len(curves), ncols=1, panel_height=3.0)
    for ax, task in zip(axes, sorted(curves)):
        for enc, points in curves[task].items():  # in registry order (compute sorted them)
            look = _model_look(enc)
            ax.plot(
                [x for x, _ in points],
                [y for _, y in points],
                color=look["color"],
                ls=look["linestyle"],
                lw=1.2,
                label=enc,
            )
        if task == "lm":  # bits/char: the corpus reference points apply
            _baseline_lines(ax, m.summary.get("baselines", {}))
        title, ylabel = TASKS.get(task, (task, "training loss"))
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig
