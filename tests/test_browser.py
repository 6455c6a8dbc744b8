"""The test-config report as a reader sees it: Debian's Chromium, driven by Playwright, opens
results/report/index.html from file://. No console error, every image loaded, every link of
the contents lands on an element, no request but file: and data:, readable on a phone; the
screenshots it takes are saved beside the report (the README shows the first screen).

Records ``report.self_contained`` (the browser saw no network request) as test output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from playwright.sync_api import sync_playwright
from sysdeps import require

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Debian's chromium (python -m posenc.sysdeps installs it), never a browser downloaded by
# Playwright; POSENC_CHROMIUM points elsewhere.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LOCAL = ("file:", "data:")


@pytest.fixture(scope="session", autouse=True)
def chromium() -> str:
    """Checked first (autouse, session scope): without Chromium the tests skip before the
    workflow runs for them."""
    return require("chromium")


HANG_MS = 600_000


@pytest.fixture(scope="module")
def browser(chromium):
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, headless=True, args=ARGS, timeout=HANG_MS
        )
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def report(test_run) -> Path:
    return test_run / "results" / "report"


def open_report(browser, report: Path, **context_args):
    """A page showing the report, and what it did while loading: every request, console
    error and uncaught exception."""
    page = browser.new_page(**context_args)
    # Playwright's 30 s default is a deadline: a full-page screenshot of a long report on a
    # loaded machine takes longer without anything being wrong. Ten minutes only guards a hang.
    page.set_default_timeout(HANG_MS)
    seen = {"requests": [], "console_errors": [], "page_errors": []}
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.on("console", lambda m: m.type == "error" and seen["console_errors"].append(m.text))
    page.on("pageerror", lambda e: seen["page_errors"].append(str(e)))
    # Anything not local is refused here as well as recorded: a leak fails, it never leaves.
    page.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
    page.goto((report / "index.html").as_uri(), wait_until="load")
    return page, seen


@pytest.fixture(scope="module")
def desktop(browser, report):
    page, seen = open_report(browser, report, viewport={"width": 1280, "height": 800})
    yield page, seen
    page.close()


def test_the_page_makes_no_network_request(desktop, record_property):
    _, seen = desktop
    remote = [url for url in seen["requests"] if not url.startswith(LOCAL)]
    record_property("report.self_contained", "fail" if remote else "pass")
    assert any(url.startswith("file:") for url in seen["requests"])  # the listener works
    assert not remote


def test_no_console_errors(desktop):
    _, seen = desktop
    assert seen["console_errors"] == [] and seen["page_errors"] == []


def test_every_image_loaded(desktop, report):
    page, _ = desktop
    images = page.eval_on_selector_all(
        "img", "els => els.map(e => ({alt: e.alt, done: e.complete, width: e.naturalWidth}))"
    )
    data = json.loads((report / "data.json").read_text())
    figures = sum(len(s["figures"]) for s in data["sections"])
    assert len(images) >= figures > 0
    assert [i for i in images if not (i["done"] and i["width"] > 0)] == []


def test_every_contents_link_lands_on_an_element(desktop):
    page, _ = desktop
    hrefs = page.eval_on_selector_all("nav#toc a", "els => els.map(e => e.getAttribute('href'))")
    assert len(hrefs) >= 3  # claims, at least one section, provenance
    for href in hrefs:
        assert href.startswith("#"), href
        page.click(f'nav#toc a[href="{href}"]')
        where = page.evaluate(
            """id => {
                const el = document.getElementById(id);
                if (!el) return null;
                const r = el.getBoundingClientRect();
                return {top: r.top, bottom: r.bottom, height: innerHeight, hash: location.hash};
            }""",
            href[1:],
        )
        assert where is not None, f"{href} names no element"
        assert where["hash"] == href
        assert where["bottom"] > 0 and where["top"] < where["height"], (href, where)
        page.evaluate("window.scrollTo(0, 0)")


def test_every_internal_link_names_an_element(desktop):
    page, _ = desktop
    missing = page.eval_on_selector_all(
        "a[href^='#']",
        "els => els.map(e => e.getAttribute('href'))"
        ".filter(h => !document.getElementById(h.slice(1)))",
    )
    assert missing == []


def test_every_download_link_names_a_file_beside_the_report(desktop, report):
    page, _ = desktop
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    files = [link for link in links if link.startswith("file:")]
    assert any("/files/" in link and link.endswith(".svg") for link in files)
    assert any(link.endswith(".csv") for link in files)
    assert any(link.endswith("/claims.json") for link in files)
    for link in files:
        path = Path(unquote(urlparse(link).path))
        assert path.is_file(), link
        assert report in path.parents, f"{link} points outside the report folder"
    assert [link for link in links if not link.startswith(LOCAL)] == []


def test_the_report_card_is_on_the_first_screen(desktop):
    # What a reader came for: what the study is, its counts and the card, at 1280×800 before
    # any scroll. The card's heading, its colour key and the top of its grid are in view.
    page, _ = desktop
    page.evaluate("window.scrollTo(0, 0)")
    seen = page.evaluate(
        """() => {
          const box = sel => document.querySelector(sel)?.getBoundingClientRect();
          const grid = box("#card figure img");
          return {headline: box(".headline")?.bottom, heading: box("#card h2")?.top,
                  grid: grid && grid.top, height: window.innerHeight};
        }"""
    )
    assert seen["headline"] is not None and seen["headline"] < seen["height"]
    assert seen["heading"] is not None and seen["heading"] < seen["height"] / 2, seen
    assert seen["grid"] is not None and seen["grid"] < seen["height"] - 150, seen


def test_screenshots(browser, report):
    # A fresh page: no link focused or hovered by the other tests.
    page, _ = open_report(browser, report, viewport={"width": 1280, "height": 800})
    try:
        page.screenshot(path=report / "screenshot-first-screen.png")
        page.screenshot(path=report / "screenshot.png", full_page=True)
    finally:
        page.close()
    for name in ("screenshot-first-screen.png", "screenshot.png"):
        assert (report / name).stat().st_size > 10_000, name


def test_readable_on_a_phone(browser, report):
    page, seen = open_report(
        browser,
        report,
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    try:
        layout = page.evaluate(
            """() => ({
                scroll: document.documentElement.scrollWidth,
                width: innerWidth,
                font: parseFloat(getComputedStyle(document.body).fontSize),
            })"""
        )
        page.screenshot(path=report / "screenshot-phone.png")
    finally:
        page.close()
    # Wide tables and code scroll inside their own boxes; the page itself never sideways.
    assert layout["scroll"] <= layout["width"], layout
    assert layout["font"] >= 14, layout
    assert seen["console_errors"] == []
