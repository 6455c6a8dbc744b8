"""The figures' shared look (posenc.plotting): one seaborn theme under every figure of every
analysis and the card, scoped to the figure; the analyses' own intervals drawn as they are;
and an SVG that is the same bytes whichever process draws it."""

import importlib
import subprocess
import sys

import matplotlib
import pytest
from workflow_utils import ROOT

from posenc import card
from posenc.analysis import discover
from posenc.io import save_figure
from posenc.plotting import (
    MATH_SHRINK,
    PAGE_HEIGHT_IN,
    PAGE_WIDTH_IN,
    PALETTE,
    estimate_band,
    panel_grid,
    reference_line,
    style,
    theme,
    themed,
    type_sizes,
)

matplotlib.use("Agg")

SPECS = discover(ROOT)


@pytest.mark.parametrize("aid", list(SPECS))
def test_every_figure_is_drawn_under_the_theme(aid):
    present = importlib.import_module(f"posenc.analyses.{aid}.present")
    unthemed = [
        f"figure_{fid}"
        for fid in SPECS[aid].figures
        if not getattr(getattr(present, f"figure_{fid}"), "themed", False)
    ]
    assert not unthemed, f"analyses/{aid}/present.py: {', '.join(unthemed)} not @themed"


def test_the_card_is_drawn_under_the_theme():
    assert card.figure.themed


def test_the_theme_holds_for_its_figure_only():
    from matplotlib import colors

    before = dict(matplotlib.rcParams)

    @themed
    def figure():
        rc = matplotlib.rcParams
        return (
            [colors.to_hex(c) for c in rc["axes.prop_cycle"].by_key()["color"]],
            rc["font.sans-serif"],
            rc["axes.edgecolor"],
        )

    cycle, fonts, edge = figure()
    assert cycle == [colors.to_hex(c) for c in PALETTE]
    assert fonts == matplotlib.rcParamsDefault["font.sans-serif"]  # no Arial where a machine has it
    assert edge == ".15"  # seaborn's
    assert dict(matplotlib.rcParams) == before


def test_a_band_is_the_interval_the_analysis_gave():
    import matplotlib.pyplot as plt

    cells = [
        {"estimate": 2.0, "low": 1.5, "high": 2.75},
        {"estimate": 3.0, "low": 2.875, "high": 3.5},
        {"estimate": 2.5, "low": 0.25, "high": 4.0},  # not symmetric: no interval recomputed
    ]
    xs = [64, 128, 256]
    fig, ax = plt.subplots()
    estimate_band(ax, xs, cells, "tab:green", label="rope")
    [line] = ax.get_lines()
    assert list(line.get_ydata()) == [c["estimate"] for c in cells]
    [band] = ax.collections
    vertices = band.get_paths()[0].vertices
    for x, c in zip(xs, cells):
        assert {y for vx, y in vertices if vx == x} == {c["low"], c["high"]}
    plt.close(fig)


def _card():
    from posenc.analysis import CardColumn

    names = ["rope", "alibi", "mine"]
    columns = [CardColumn("a property", ("x",), claim="a.c", units=(("x", "ulp", 1),))]
    evidence = {"x": {"rope": 1.5, "alibi": 123456.0}}
    ledger = [{"id": "a.c", "outcomes": {"x": {"rope": "pass", "alibi": "fail"}}}]
    section = {"id": "a", "title": "A", "columns": columns, "evidence": evidence, "ledger": ledger}
    return card.build([section], names, {"mine": {"plugin": "p.py"}})


def _line_figure():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    estimate_band(ax, [1, 2, 4], [{"estimate": 1.0, "low": 0.5, "high": 1.5}] * 3, "tab:blue")
    ax.set_xscale("log", base=2)
    ax.grid(alpha=0.3, which="both")
    return fig


def test_a_figure_saved_after_its_theme_is_the_figure_drawn_under_it(tmp_path):
    # The workflow saves each figure after its function, and with it the theme, has returned:
    # nothing of the theme may be read only when the figure is drawn.
    for name, draw in (("card", lambda: card.figure(_card())), ("line", themed(_line_figure))):
        save_figure(draw(), tmp_path / f"{name}.png", tmp_path / f"{name}_after.svg")
        fig = draw()
        with matplotlib.rc_context(theme()):
            save_figure(fig, tmp_path / f"{name}.png", tmp_path / f"{name}_under.svg")
        after, under = (tmp_path / f"{name}_{when}.svg" for when in ("after", "under"))
        assert after.read_bytes() == under.read_bytes(), name


def test_the_svg_is_the_same_bytes_from_two_processes(tmp_path):
    code = (
        "import sys, matplotlib; matplotlib.use('Agg'); sys.path.insert(0, 'tests'); "
        "from test_plotting import _card; from posenc import card; "
        "from posenc.io import save_figure; "
        "save_figure(card.figure(_card()), sys.argv[1] + '.png', sys.argv[1] + '.svg')"
    )
    for run in ("first", "second"):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / run)], cwd=ROOT, check=True)
    first = (tmp_path / "first.svg").read_bytes()
    assert b"1.23e+05" in first  # the numbers as text, as the PDF prints them
    assert first == (tmp_path / "second.svg").read_bytes()


def test_the_theme_takes_every_size_from_the_one_scale():
    rc = theme()
    keys = ("font.size", "axes.labelsize", "axes.titlesize", "xtick.labelsize",
            "ytick.labelsize", "legend.fontsize", "legend.title_fontsize")  # fmt: skip
    assert {rc[k] for k in keys} <= set(type_sizes())
    # A log axis writes 10^k with its exponent at MATH_SHRINK of the tick labels' size: it
    # too stays at the smallest size of the scale, the printed floor.
    assert rc["ytick.labelsize"] * MATH_SHRINK >= min(type_sizes())


def test_panels_wrap_into_rows_within_the_page():
    import matplotlib.pyplot as plt

    fig, axes = themed(panel_grid)(5, ncols=2, panel_height=2.0)
    width, height = fig.get_size_inches()
    assert len(axes) == 5 and len(fig.axes) == 5  # the grid's sixth cell removed
    assert width == PAGE_WIDTH_IN and height == min(3 * 2.0, PAGE_HEIGHT_IN)
    assert {round(ax.get_position().x0, 2) for ax in axes} == {
        round(axes[0].get_position().x0, 2),
        round(axes[1].get_position().x0, 2),
    }  # two columns, three rows
    plt.close(fig)


def test_a_reference_line_is_no_encoding_colour():
    import matplotlib.pyplot as plt
    from matplotlib import colors

    from posenc.encodings import REGISTRY

    fig, ax = plt.subplots()
    for k in range(4):
        reference_line(ax, k, k)
    encoding_colours = {colors.to_hex(style(name)["color"]) for name in REGISTRY}
    drawn = [colors.to_hex(line.get_color()) for line in ax.get_lines()]
    assert not set(drawn) & encoding_colours
    plt.close(fig)
