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
    REFERENCE_COLORS,
    SERIES_PALETTE,
    estimate_band,
    panel_grid,
    reference_line,
    series_style,
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


def _lab(color) -> tuple[float, float, float]:
    """CIELAB (D65) of a matplotlib colour."""
    from matplotlib import colors

    linear = [
        c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in colors.to_rgb(color)
    ]
    xyz = [
        sum(w * c for w, c in zip(row, linear)) / white
        for row, white in zip(
            ((0.4124, 0.3576, 0.1805), (0.2126, 0.7152, 0.0722), (0.0193, 0.1192, 0.9505)),
            (0.95047, 1.0, 1.08883),
        )
    ]
    fx, fy, fz = (
        t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29 for t in xyz
    )
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def _ciede2000(lab1, lab2) -> float:
    """The CIEDE2000 colour difference (Sharma, Wu and Dalal 2005): about 1 is the smallest
    a viewer sees side by side; it weighs hue and lightness as eyes do, where plain RGB or
    CIELAB distance overstates how far apart two saturated blues look."""
    import math

    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1, a2 = a1 * (1 + g), a2 * (1 + g)
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1, h2 = (math.degrees(math.atan2(b, a)) % 360 for a, b in ((a1, b1), (a2, b2)))
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    d_hue = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(h_mean - 30))
        + 0.24 * math.cos(math.radians(2 * h_mean))
        + 0.32 * math.cos(math.radians(3 * h_mean + 6))
        - 0.20 * math.cos(math.radians(4 * h_mean - 63))
    )
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    r_t = -2 * math.sqrt(c_mean**7 / (c_mean**7 + 25**7))
    r_t *= math.sin(math.radians(60 * math.exp(-(((h_mean - 275) / 25) ** 2))))
    dl, dc, dhh = (l2 - l1) / s_l, (c2 - c1) / s_c, d_hue / s_h
    return math.sqrt(dl**2 + dc**2 + dhh**2 + r_t * dc * dhh)


def test_the_colour_difference_is_ciede2000():
    # Sharma, Wu and Dalal's published test pairs: a sign or weighting slip in the formula
    # would let the palette test below pass on distances it does not measure.
    assert _ciede2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) == pytest.approx(2.0425, abs=1e-4)
    assert _ciede2000((50, 2.5, 0), (73, 25, -18)) == pytest.approx(27.1492, abs=1e-4)
    assert _ciede2000((6.7747, -0.2908, -2.4247), (5.8714, -0.0985, -2.2286)) == pytest.approx(
        0.6377, abs=1e-4
    )


def _encoding_colours() -> set[str]:
    """Every colour an encoding can take: the registry's own and the palette a plugin's
    encoding is given from."""
    from matplotlib import colors

    from posenc.encodings import REGISTRY

    own = {colors.to_hex(style(name)["color"]) for name in REGISTRY}
    return own | {colors.to_hex(c) for c in PALETTE}


def test_no_series_colour_is_an_encodings():
    from matplotlib import colors

    series = [colors.to_hex(c) for c in SERIES_PALETTE]
    encodings = _encoding_colours()
    assert not set(series) & encodings
    # The encodings' own closest pair (tab:olive and goldenrod) is 15.4 CIEDE2000 apart: 18
    # keeps every series further from every encoding, and from the reference greys and every
    # other series, than the closest two encodings are from each other.
    others = [*encodings, *(colors.to_hex(c) for c in REFERENCE_COLORS)]
    for i, colour in enumerate(series):
        for other in [*others, *series[:i]]:
            distance = _ciede2000(_lab(colour), _lab(other))
            assert distance >= 18, f"series {colour} is {distance:.1f} from {other}"
    assert len(set(series)) == len(series) >= 8  # the extension's nine series, one repeat


def test_series_looks_are_stable_and_distinct():
    names = [f"s{i}" for i in range(40)]
    looks = series_style(names)
    assert list(looks) == names
    # The first eight all differ in colour, and no two of the forty in all of colour, marker
    # and line style (a palette that repeats past eight tells series apart by the other two).
    assert len({looks[n]["color"] for n in names[:8]}) == 8
    assert len({(v["color"], v["marker"], str(v["ls"])) for v in looks.values()}) == 40
    # A name's look is its first place in the names: the same list gives the same looks.
    assert series_style(["b", "a", "b"]) == {"b": looks["s0"], "a": looks["s1"]}


def test_no_figure_names_a_colour_of_its_own_for_a_series():
    """Series that are not encodings take their looks from series_style: a figure that names
    tab10's colours or a matplotlib colour map for them could draw one in an encoding's colour."""
    import re

    banned = re.compile(r"tab:|tab10|tab20|get_cmap|colormaps\[")
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "analyses").glob("*/present*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if banned.search(line)
    ]
    assert not found, "\n".join(found)


def test_score_shift_tells_the_cases_apart_in_each_encodings_colour():
    from types import SimpleNamespace

    import matplotlib.pyplot as plt
    from matplotlib import colors

    present = importlib.import_module("posenc.analyses.rotation.present")
    encodings = ["rope", "xpos"]
    cases = [("float32", "float32", False), ("bfloat16", "float32", False)]
    cases += [("bfloat16", "bfloat16", True), ("float64", "float64", False)]
    rows = [
        {"encoding": e, "dtype": x, "angles": a, "naive": naive, "shift": shift,
         "max_position": 2**k, "max_deviation": 1e-7 * k, "deviation_over_tolerance": 0.1 * k}
        for e in encodings
        for x, a, naive in cases
        for k, shift in enumerate((0, 1, 4, 16))
    ]  # fmt: skip
    m = SimpleNamespace(
        rows={"score_shift": rows},
        summary={"qk_measured": encodings, "naive_exact_integers": {"bfloat16": 256}},
    )
    ctx = SimpleNamespace(cfg={"thresholds": {"max_over_bound": 4.0}, "qk": {"head_dim": 8}})
    fig = present.figure_score_shift(m, ctx)
    for ax in fig.axes:
        drawn = [line for line in ax.get_lines() if len(line.get_xdata()) == 3]
        assert len(drawn) == len(encodings) * len(cases)
        for e in encodings:
            mine = [
                ln
                for ln in drawn
                if colors.to_hex(ln.get_color()) == colors.to_hex(style(e)["color"])
            ]
            assert len(mine) == len(cases)  # one colour per encoding
            assert len({ln.get_marker() for ln in mine}) == len(cases)
            # matplotlib has no public getter for a line's dashes (get_linestyle calls every
            # custom pattern "--"), so its unscaled pattern, the style as set, is compared.
            assert len({str(ln._unscaled_dash_pattern) for ln in mine}) == len(cases)
    [legend] = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert set(encodings) <= set(labels)
    assert {"float32, float32 angles", "bfloat16, bfloat16 angles (naive)"} <= set(labels)
    plt.close(fig)
