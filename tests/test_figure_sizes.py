"""Every figure's text as a reader meets it: its smallest text, measured where it is shown, at
least :data:`SCREEN_MIN_PX` CSS pixels on a 1280-pixel-wide page and :data:`PRINT_MIN_PT` points
in the PDF; on a phone figures scroll sideways rather than shrink further; and every figure's
type comes from the one theme (``posenc.plotting``). Read from the test-config run the suite
shares (``test_run``): nothing is drawn or run here.

What is measured is the text as drawn, never a size a figure function says it asked for:

* on screen, the figure's smallest text in its SVG (matplotlib writes text as text there, each
  run with its font size, tick labels' exponents included) scaled by the width Chromium gives
  the figure's image against the figure's own width: ``size_pt * shown_px / width_pt``;
* in the PDF, every character that WeasyPrint drew inside the figure, at its size after every
  transform (the figure scaled to the column, a rotated label): the PDF's own numbers.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pdf_reading
import pytest
from sysdeps import require

pytestmark = [pytest.mark.slow]

SCREEN = {"width": 1280, "height": 800}
SCREEN_MIN_PX = 11.0  # CSS px: the smallest type a page should set
PRINT_MIN_PT = 8.0  # pt: the smallest type a printed document should set
PHONE_BELOW_PX = 600  # style.css: narrower than this, figures scroll rather than shrink
SVG = "{http://www.w3.org/2000/svg}"


def svg_text(svg: Path) -> tuple[float, list[float]]:
    """The figure's width in points and the font size of every run of text in it, in points
    at that width (matplotlib's SVG: one user unit per point)."""
    root = ET.parse(svg).getroot()
    width_pt = float(root.get("width").removesuffix("pt"))
    view_width = float(root.get("viewBox").split()[2])
    sizes = []

    def walk(node, inherited):
        size = _font_size(node.get("style", "")) or inherited
        if node.tag in (f"{SVG}text", f"{SVG}tspan") and (node.text or "").strip():
            sizes.append(size * width_pt / view_width)
        for child in node:
            walk(child, size)

    walk(root, None)
    return width_pt, sizes


def _font_size(style: str) -> float | None:
    match = re.search(r"font-size:\s*([\d.]+)px", style)
    return float(match.group(1)) if match else None


def report_figures(report: Path) -> list[dict]:
    """Every figure of the report in page order, each with its anchor, a name for messages,
    and its SVG's width and smallest text."""
    data = json.loads((report / "data.json").read_text())
    entries = []
    if data.get("card"):
        entries.append(("the report card", data["card"]["figure"]))
    for section in data["sections"]:
        for fid, fig in sorted(section["figures"].items(), key=lambda kv: kv[1]["number"]):
            entries.append((f"Figure {fig['number']} ({section['id']}/{fid})", fig))
    # Page order is the templates' order, which need not be the numbers' (a section may show
    # its figures in another order than its metrics list them).
    order = re.findall(r'<figure id="([^"]+)"', (report / "index.html").read_text())
    entries.sort(key=lambda entry: order.index(entry[1]["anchor"]))
    figures = []
    for name, fig in entries:
        svg = report / fig["downloads"]["SVG"]["href"]
        width_pt, sizes = svg_text(svg)
        # Text drawn as outlines (svg.fonttype "path") has no size to read: it would pass
        # unmeasured, so it fails here instead.
        assert sizes, f"{name}: {svg.name} holds no text as text"
        figures.append(
            {"name": name, "anchor": fig["anchor"], "svg": svg, "width_pt": width_pt,
             "min_pt": min(sizes), "sizes": sizes}
        )  # fmt: skip
    return figures


@pytest.fixture(scope="module")
def report(test_run) -> Path:
    return test_run / "results" / "report"


@pytest.fixture(scope="module")
def figures(report) -> list[dict]:
    return report_figures(report)


# ----------------------------------------------------------------------------- screen


def shown_widths(browser, report: Path, viewport: dict) -> dict[str, dict]:
    """Each figure's image as Chromium lays the page out at ``viewport``: anchor ->
    ``{"shown", "natural", "box", "overflow"}`` (CSS px: the image's width, the PNG's own
    width and the figure's visible width; the figure's overflow-x)."""
    from test_browser import open_report

    page, _ = open_report(browser, report, viewport=viewport)
    try:
        return page.eval_on_selector_all(
            "figure[id] img",
            """imgs => Object.fromEntries(imgs.map(img => {
                const figure = img.closest("figure");
                return [figure.id, {shown: img.getBoundingClientRect().width,
                                    natural: img.naturalWidth, box: figure.clientWidth,
                                    overflow: getComputedStyle(figure).overflowX}];
            }))""",
        )
    finally:
        page.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    from test_browser import ARGS, HANG_MS

    chromium = require("chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, headless=True, args=ARGS, timeout=HANG_MS
        )
        yield browser
        browser.close()


def screen_sizes(figures: list[dict], shown: dict[str, dict]) -> dict[str, float]:
    """Each figure's smallest text in CSS px as shown."""
    return {f["name"]: f["min_pt"] * shown[f["anchor"]]["shown"] / f["width_pt"] for f in figures}


@pytest.mark.browser
def test_every_figure_text_is_readable_on_screen(browser, report, figures):
    shown = shown_widths(browser, report, SCREEN)
    missing = [f["name"] for f in figures if f["anchor"] not in shown]
    assert not missing, f"not shown on the page: {missing}"
    small = {
        name: f"{px:.1f} px" for name, px in screen_sizes(figures, shown).items()
        if px < SCREEN_MIN_PX
    }  # fmt: skip
    assert not small, (
        f"smallest text under {SCREEN_MIN_PX:g} CSS px at {SCREEN['width']} px wide: {small}"
    )


@pytest.mark.browser
def test_on_a_phone_figures_scroll_rather_than_shrink(browser, report, figures):
    at_limit = shown_widths(browser, report, {"width": PHONE_BELOW_PX, "height": 800})
    phone = shown_widths(browser, report, {"width": 390, "height": 844})
    shrunk = {
        f["name"]: (round(phone[a]["shown"]), round(at_limit[a]["shown"]))
        for f in figures
        if phone[(a := f["anchor"])]["shown"] < at_limit[a]["shown"] - 0.5
    }
    assert not shrunk, f"narrower on a phone than at {PHONE_BELOW_PX} px (phone, limit): {shrunk}"
    # A figure wider than the phone's column is reached by scrolling its own box (the page
    # itself never scrolls sideways: test_browser.py).
    unreachable = {
        f["name"]: phone[f["anchor"]]["overflow"] for f in figures
        if phone[f["anchor"]]["shown"] > phone[f["anchor"]]["box"] + 0.5
        and phone[f["anchor"]]["overflow"] not in ("auto", "scroll")
    }  # fmt: skip
    assert not unreachable, f"wider than the phone's column, and not scrolling: {unreachable}"


# ----------------------------------------------------------------------------- PDF


def drawn_size(char: dict) -> float:
    """The size a PDF character is drawn at, in points: its font size times the scale of its
    matrix. pdfplumber's ``size`` is the height of the glyph's box, which for rotated text
    (a y-axis label) mixes in its advance; the font size is recovered from that box, which
    pdfminer builds as [0, adv] x [descent, descent + fontsize] carried through the matrix."""
    a, b, c, d, _, _ = char["matrix"]
    if abs(d) >= abs(c):
        fontsize = (char["height"] - abs(b) * char["adv"]) / abs(d)
    else:
        fontsize = (char["width"] - abs(a) * char["adv"]) / abs(c)
    return fontsize * math.sqrt(abs(a * d - b * c))


def pdf_figures(pdf_path: Path) -> list[dict]:
    """The PDF's figures in page order (WeasyPrint tags each image's content /Figure, one
    marked-content id per figure on its page): each one's width and every character's size,
    in points. The pages are read once for this and the PDF test (``pdf_reading``)."""
    found, groups = [], {}
    for number, kind, obj in pdf_reading.read(pdf_path)["objects"]:
        if obj.get("tag") != "Figure":
            continue
        group = groups.setdefault((number, obj["mcid"]), {"x": [], "sizes": []})
        group["x"] += [obj["x0"], obj["x1"]]
        if kind == "char" and obj["text"].strip():
            group["sizes"].append(drawn_size(obj))
    for number, mcid in sorted(groups):
        g = groups[number, mcid]
        found.append({"page": number, "width_pt": max(g["x"]) - min(g["x"]), "sizes": g["sizes"]})
    return found


@pytest.fixture(scope="module")
def printed(report, figures) -> dict[str, dict]:
    require("pango")
    drawn = pdf_figures(report / "report.pdf")
    # Paper shows the report card as its table (the figure's numbers with their intervals),
    # so every other figure is drawn there, in page order.
    on_paper = [f for f in figures if f["anchor"] != "fig-card"]
    assert len(drawn) == len(on_paper), (
        f"{len(drawn)} figures drawn in the PDF, {len(on_paper)} in the report"
    )
    return {f["name"]: d for f, d in zip(on_paper, drawn)}


def test_every_figure_text_is_readable_in_the_pdf(figures, printed):
    small = {}
    for f in (f for f in figures if f["name"] in printed):
        sizes = printed[f["name"]]["sizes"]
        assert sizes, f"{f['name']}: no text drawn in the PDF"
        if min(sizes) < PRINT_MIN_PT:
            small[f["name"]] = f"{min(sizes):.1f} pt (page {printed[f['name']]['page']})"
    assert not small, f"smallest text under {PRINT_MIN_PT:g} pt in the PDF: {small}"


def test_the_pdf_draws_each_figure_at_its_svg_scale(figures, printed):
    # The two measures agree: the PDF's smallest character is the SVG's smallest text scaled
    # by the figure's printed width (a check of the pairing of figures by page order, and of
    # drawn_size's arithmetic, both of which the PDF test above relies on).
    off = {}
    for f in (f for f in figures if f["name"] in printed):
        p = printed[f["name"]]
        expected = f["min_pt"] * p["width_pt"] / f["width_pt"]
        if abs(min(p["sizes"]) - expected) > 0.05 * expected:
            off[f["name"]] = (round(min(p["sizes"]), 2), round(expected, 2))
    assert not off, f"PDF's smallest text against the SVG's, scaled: {off}"


# ----------------------------------------------------------------------------- one type scale


def test_every_figure_sets_its_type_from_the_theme(figures):
    from posenc.plotting import MATH_SHRINK, type_sizes

    scale = type_sizes()
    allowed = {*scale, *(s * MATH_SHRINK for s in scale)}
    stray = {
        f["name"]: sorted({round(s, 2) for s in f["sizes"]
                           if s <= max(scale) and all(abs(s - a) > 0.01 for a in allowed)})
        for f in figures
    }  # fmt: skip
    stray = {name: sizes for name, sizes in stray.items() if sizes}
    assert not stray, f"sizes outside the theme's {sorted(scale)} pt: {stray}"
