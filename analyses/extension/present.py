"""Context-extension figures and tables: one function per figure and per table of the spec.
The methods take their colours, markers and line styles from the palette of series that are not
encodings (posenc.plotting.series_style), here, the one place that names them; the plain model
is RoPE's own look (posenc.plotting.style)."""

from typing import Any

from posenc.analysis import Context, Measurements
from posenc.claims import interval_text
from posenc.plotting import (
    estimate_band,
    panel_grid,
    reference_line,
    series_style,
    style,
    themed,
)

from .spec import CONTROL
from .stretched import LLAMA4_SHAPED, QUERY_ONLY

# What the continued-training control is called wherever a reader sees it.
CONTROL_LABEL = "continued training, no scaling"

# One look per method, arm and the control, the same in every figure, from the palette of
# series that are not encodings. Nine names and eight colours: the stretch arms come first
# and the fine-tunes after, so the one colour used twice (logn's and llama3's) joins two
# series that no figure draws together (stretch arms are only in figure_stretch).
LOOKS = {
    name: (look["color"], look["marker"], look["ls"])
    for name, look in series_style(
        # The stretches of every trained LM (query temperature, LongRoPE), then the methods.
        ["logn", "llama4", "longrope", "pi", "ntk", "dynamic", "yarn", CONTROL_LABEL, "llama3"]
    ).items()
}
CONTROL_LOOK = LOOKS[CONTROL_LABEL]
# An encoding has Llama 4's schedule as Llama 4 applies it or Llama-4-shaped, never both, and a
# contrast arm sits in the panel of its own temperature: each keeps its temperature's colour,
# dotted when on the query alone.
LOOKS[LLAMA4_SHAPED] = LOOKS["llama4"]
for _arm_name in ("logn", "llama4", LLAMA4_SHAPED):
    LOOKS[_arm_name + QUERY_ONLY] = (*LOOKS[_arm_name][:2], ":")

# What a reader sees for each stretch arm.
ARM_LABELS = {
    "logn": "log-n temperature",
    "llama4": "Llama 4 temperature (its NoPE layers, L0 = window)",
    LLAMA4_SHAPED: "Llama-4-shaped temperature (every layer, L0 = L_train)",
    "logn" + QUERY_ONLY: "log-n on q alone (contrast)",
    "llama4" + QUERY_ONLY: "Llama 4 on q alone (contrast)",
    LLAMA4_SHAPED + QUERY_ONLY: "Llama-4-shaped on q alone (contrast)",
    "longrope": "LongRoPE (published profile)",
}


def _look(method: str, encoding: str) -> tuple[str, str, Any]:
    if method == "plain":
        look = style(encoding)
        return look["color"], look["marker"], "-"
    # A method the table above does not know yet still gets a look no encoding has.
    if method not in LOOKS:
        look = series_style([*LOOKS, method])[method]
        return look["color"], look["marker"], look["ls"]
    return LOOKS[method]


cell = interval_text  # the estimate [interval], or 'undefined'


def _arm(method: str, scale: int) -> str:
    """A fine-tune's name for a reader: its method, or the control's label."""
    return CONTROL_LABEL if (method, scale) == CONTROL else method


def _band(ax, xs, cells, color, marker, ls, label):
    estimate_band(ax, xs, cells, color, ls=ls, marker=marker, lw=1.4, ms=5, label=label)


@themed
def figure_zero_shot(m: Measurements, ctx: Context):
    """Bits/char against length, each method at s = L / L_train, no fine-tuning."""
    s = m.summary
    encodings = s["encodings"]
    fig, axes = panel_grid(len(encodings), ncols=1, panel_height=3.6)
    for ax, e in zip(axes, encodings):
        for method in ["plain", *s["methods"]]:
            cells = [
                c
                for c in s["zero_shot"]
                if c["encoding"] == e
                and c["method"] == method
                and c["mode"] == "segment"
                and c.get("estimate") is not None
            ]
            if not cells:
                continue
            xs = [c["multiplier"] * s["train_len"] for c in cells]
            color, marker, ls = _look(method, e)
            _band(ax, xs, cells, color, marker, ls, f"{e}" if method == "plain" else method)
        reference_line(ax, s["train_len"], axis="x", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xticks([k * s["train_len"] for k in s["multipliers"]])
        ax.set_xticklabels([str(k * s["train_len"]) for k in s["multipliers"]])
        ax.set_xlabel("evaluation length L (tokens)")
        ax.set_ylabel("bits/char (mode b)")
        ax.set_title(f"{e}: zero-shot, s = L / L_train")
        ax.grid(alpha=0.3)
        _legend_beside(ax)
    return fig


def _legend_beside(ax) -> None:
    """The panel's legend to its right, outside the data: a method's line is never hidden."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)


@themed
def figure_finetune(m: Measurements, ctx: Context):
    """Bits/char at s x L_train against fine-tuning steps, one panel per (encoding, scale)."""
    s = m.summary
    panels = [(e, x) for e in s["encodings"] for x in s["scales"]]
    fig, axes = panel_grid(len(panels), ncols=1, panel_height=3.4)
    for ax, (e, scale) in zip(axes, panels):
        for method in s["methods"]:
            cells = [
                c
                for c in s["finetune"]
                if c["encoding"] == e
                and c["method"] == method
                and c["scale"] == scale
                and c["multiplier"] == scale
                and c.get("estimate") is not None
            ]
            if cells:
                color, marker, ls = _look(method, e)
                _band(ax, [c["step"] for c in cells], cells, color, marker, ls, method)
        # The control at L_train, where it trains: what the same steps give without extension.
        control = [
            c
            for c in s["finetune"]
            if c["encoding"] == e
            and (c["method"], c["scale"]) == CONTROL
            and c["multiplier"] == CONTROL[1]
            and c.get("estimate") is not None
        ]
        if control:
            steps = [c["step"] for c in control]
            _band(ax, steps, control, *CONTROL_LOOK, f"{CONTROL_LABEL} (at L_train)")
        ax.set_xlabel("fine-tuning steps")
        ax.set_ylabel(f"bits/char at {scale}x\nL_train (mode b)")
        ax.set_title(f"{e}, s = {scale} (L = {scale * s['train_len']})")
        ax.grid(alpha=0.3)
        _legend_beside(ax)
    return fig


def table_zero_shot(m: Measurements, ctx: Context):
    s = m.summary
    columns = ["encoding", "method", *[f"{k}x ({k * s['train_len']})" for k in s["multipliers"]]]
    index = {
        (c["encoding"], c["method"], c["multiplier"]): c
        for c in s["zero_shot"]
        if c["mode"] == "segment"
    }
    rows = [
        [e, method, *[cell(index.get((e, method, k))) for k in s["multipliers"]]]
        for e in s["encodings"]
        for method in ["plain", *s["methods"]]
    ]
    return columns, rows


def table_finetune(m: Measurements, ctx: Context):
    """The control's rows first (it is scored at L_train too), then each method's."""
    s = m.summary
    multipliers = sorted({CONTROL[1], *s["finetune_multipliers"]})
    columns = ["encoding", "method", "s", "step", *[f"{k}x" for k in multipliers]]
    index = {
        (c["encoding"], c["method"], c["scale"], c["step"], c["multiplier"]): c
        for c in s["finetune"]
    }
    arms = [CONTROL, *((method, scale) for method in s["methods"] for scale in s["scales"])]
    rows = [
        [
            e,
            _arm(method, scale),
            scale,
            step,
            *[
                cell(index.get((e, method, scale, step, k))) if k >= scale else "—"
                for k in multipliers
            ],
        ]
        for e in s["encodings"]
        for method, scale in arms
        for step in s["steps"]
    ]
    return columns, rows


def table_frequencies(m: Measurements, ctx: Context):
    columns = ["method", "s", "smallest ratio", "largest ratio", "attention factor"]
    scales = set(m.summary["scales"])
    rows = [
        [
            r["method"],
            r["scale"],
            f"{r['min_ratio']:.4g}",
            f"{r['max_ratio']:.4g}",
            f"{r['attention_factor']:.4f}",
        ]
        for r in m.rows["frequencies"]
        if r["scale"] in scales
    ]
    return columns, rows


def table_yarn_rounding(m: Measurements, ctx: Context):
    columns = [
        "s",
        "code vs paper: largest relative difference",
        "at pair",
        "pairs that differ",
        "rounding alone",
    ]
    rows = [
        [
            r["scale"],
            f"{r['max_relative_difference']:.3g}",
            r["pair"],
            f"{r['pairs_differing']} of {r['pairs']}",
            f"{r['rounding_only']:.3g}",
        ]
        for r in m.summary["yarn_rounding"]
    ]
    return columns, rows


def table_training(m: Measurements, ctx: Context):
    columns = [
        "encoding",
        "method",
        "s",
        "seed",
        "device",
        "steps",
        "final loss (bits)",
        "tokens/s",
        "wall (s)",
    ]
    rows = [
        [
            t["encoding"],
            _arm(t["method"], t["scale"]),
            t["scale"],
            t["seed"],
            t["device"],
            t["steps"],
            f"{t['final_loss_bits']:.3f}",
            f"{t['tokens_per_s']:,.0f}" if t.get("tokens_per_s") else "—",
            f"{t['wall_s']:.1f}" if t.get("wall_s") else "—",
        ]
        for t in m.rows["training"]
    ]
    return columns, rows


@themed
def figure_stretch(m: Measurements, ctx: Context):
    """Bits/char against length for every stretched LM, one panel per encoding."""
    s = m.summary
    encodings = s["stretch_encodings"]
    fig, axes = panel_grid(len(encodings), ncols=1, panel_height=2.6, sharex=True)
    for ax, e in zip(axes, encodings):
        arms = list(dict.fromkeys(c["arm"] for c in s["stretch"] if c["encoding"] == e))
        for arm in arms:
            cells = [
                c
                for c in s["stretch"]
                if c["encoding"] == e and c["arm"] == arm and c.get("estimate") is not None
            ]
            if cells:
                xs = [c["multiplier"] * s["train_len"] for c in cells]
                color, marker, ls = _look(arm, e)
                _band(ax, xs, cells, color, marker, ls, ARM_LABELS.get(arm, arm))
        reference_line(ax, s["train_len"], axis="x", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xticks([k * s["train_len"] for k in s["multipliers"]])
        ax.set_xticklabels([str(k * s["train_len"]) for k in s["multipliers"]])
        ax.set_title(e, color=style(e)["color"])
        ax.grid(alpha=0.3)
        _legend_beside(ax)
        ax.set_ylabel("bits/char")
    axes[-1].set_xlabel("evaluation length L (tokens)")
    return fig


def table_stretch(m: Measurements, ctx: Context):
    s = m.summary
    longest = max(s["multipliers"])
    columns = [
        "encoding",
        "arm",
        *[f"{k}x ({k * s['train_len']})" for k in s["multipliers"]],
        f"minus plain at {longest}x",
    ]
    index = {(c["encoding"], c["arm"], c["multiplier"]): c for c in s["stretch"]}
    arms = {e: [] for e in s["stretch_encodings"]}
    for c in s["stretch"]:
        if c["arm"] not in arms[c["encoding"]]:
            arms[c["encoding"]].append(c["arm"])
    rows = [
        [
            e,
            ARM_LABELS.get(arm, arm),
            *[cell(index.get((e, arm, k))) for k in s["multipliers"]],
            "—" if arm == "plain" else cell(index.get((e, arm, longest), {}).get("vs_plain")),
        ]
        for e, order in arms.items()
        for arm in order
    ]
    return columns, rows
