"""How a rendered report meets its reader, measured: the page's height at a 1280×800 viewport,
where the report card starts, the first screen as a screenshot, and the PDF's pages in all and
before its first appendix heading (read from the PDF's outline, the bookmarks WeasyPrint makes
from the headings).

    python benchmarks/report_layout.py results/report [--screenshot docs/report-first-screen.png]

Prints one JSON object. Needs Chromium (Debian's ``chromium``; nothing is downloaded) and
pdfplumber, both in the test environment."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

VIEWPORT = {"width": 1280, "height": 800}


def pdf_pages(pdf_path: Path) -> dict:
    """Pages in all, and before the first bookmark whose title starts with "Appendix"."""
    import pdfplumber
    from pdfminer.pdftypes import resolve1

    with pdfplumber.open(pdf_path) as pdf:
        page_of = {page.page_obj.pageid: i for i, page in enumerate(pdf.pages)}
        body = None
        try:
            outlines = list(pdf.doc.get_outlines())
        except Exception:  # a PDF without bookmarks
            outlines = []
        for _level, title, dest, action, _se in outlines:
            if not str(title).strip().startswith("Appendix"):
                continue
            target = resolve1(dest) if dest is not None else None
            if target is None and action is not None:
                target = resolve1(resolve1(action).get("D"))
            if isinstance(target, list) and target:
                body = page_of.get(target[0].objid)
            break
        return {"pdf_pages": len(pdf.pages), "pdf_body_pages": body}


def page_layout(report_dir: Path, screenshot: Path | None) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto((report_dir / "index.html").resolve().as_uri())
        found = page.evaluate(
            """() => {
              const top = id => {
                const e = document.getElementById(id);
                return e ? Math.round(e.getBoundingClientRect().top + window.scrollY) : null;
              };
              return {
                height_px: document.documentElement.scrollHeight,
                card_top_px: top("card"),
                first_figure_top_px: Math.round(
                  document.querySelector("section.analysis figure")
                    ?.getBoundingClientRect().top + window.scrollY) || null,
              };
            }"""
        )
        if screenshot:
            page.screenshot(path=str(screenshot))
        browser.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report_dir", type=Path)
    parser.add_argument("--screenshot", type=Path, help="where to save the first screen (PNG)")
    args = parser.parse_args()
    found = page_layout(args.report_dir, args.screenshot)
    pdf = args.report_dir / "report.pdf"
    if pdf.is_file():
        found.update(pdf_pages(pdf))
    print(json.dumps(found))


if __name__ == "__main__":
    main()
