"""The report as HTML for one medium, from the context (:mod:`posenc.report.context`): the
page (``screen``, figures embedded as PNG) or the document WeasyPrint lays out as the PDF
(``print``, figures as SVG files); and that PDF.

One stylesheet serves both media: :func:`stylesheet_for` keeps the part a medium uses.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from pathlib import Path

import tinycss2
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from posenc.io import atomic_path
from posenc.report.errors import ReportError
from posenc.report.filters import FILTERS

MEDIA = ("screen", "print")
MIME = {".png": "image/png", ".svg": "image/svg+xml"}


def _media_only(node) -> str | None:
    """The medium a top-level rule is for: print for ``@page`` rules and ``@media print``
    blocks, screen for ``@media screen ...`` blocks, None for rules both media use."""
    if node.type != "at-rule":
        return None
    if node.lower_at_keyword == "page":
        return "print"
    if node.lower_at_keyword == "media":
        media_type = tinycss2.serialize(node.prelude).split()
        if media_type and media_type[0].lower() in MEDIA:
            return media_type[0].lower()
    return None


def stylesheet_for(css: str, medium: str) -> str:
    """The part of the one stylesheet that ``medium`` uses.

    The page leaves out ``@page`` rules and ``@media print`` blocks; the PDF leaves out
    ``@media screen ...`` blocks (WeasyPrint would only warn about their media features). The
    report rule's params carry a digest of the screen part (:func:`screen_digest`), so an edit
    confined to print rules changes nothing the HTML rule sees and only the PDF is re-rendered.
    """
    if medium not in MEDIA:
        raise ValueError(f"unknown medium {medium!r}; known: {', '.join(MEDIA)}")
    nodes = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=False)
    return tinycss2.serialize(n for n in nodes if _media_only(n) in (None, medium))


def screen_digest(css_path: str | Path) -> str:
    return hashlib.sha256(stylesheet_for(Path(css_path).read_text(), "screen").encode()).hexdigest()


def make_env(template_dir: str | Path) -> Environment:
    """Templates of the report (``template_dir``) and of each analysis' section, which lives in
    its folder beside the report's: ``analyses/<id>/section.html.j2``."""
    analyses = Path(template_dir).resolve().parent / "analyses"
    env = Environment(
        loader=FileSystemLoader([str(template_dir), str(analyses)]),
        autoescape=select_autoescape(("html", "j2", "xml")),
        undefined=StrictUndefined,  # a missing number is an error, never a blank cell
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


def _section_module(env: Environment, section_id: str):
    return env.get_template(f"{section_id}/section.html.j2").make_module()


def data_uri(path: str | Path) -> str:
    """Embed a figure in the page, so the HTML makes no network request and stands alone."""
    path = Path(path)
    return f"data:{MIME[path.suffix]};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _figure_src(fig: dict, medium: str) -> str:
    """Screen: the PNG, embedded. Print: the SVG (vector) from the files folder, relative to
    the report folder (WeasyPrint's base URL); the PNG where a figure has no SVG."""
    if medium == "screen":
        return data_uri(fig["png"])
    best = fig["downloads"].get("SVG") or fig["downloads"]["PNG"]
    return best["href"]


def render(context: dict, template_dir: str | Path, medium: str, css: str) -> str:
    """The report as HTML for ``medium``, with the stylesheet ``css`` inlined."""
    env = make_env(template_dir)
    sections = []
    for sec in context["sections"]:
        figures = {k: {**f, "src": _figure_src(f, medium)} for k, f in sec["figures"].items()}
        s = {**sec, "figures": figures, "medium": medium}
        # What the appendix of further figures and tables shows of this section, in order.
        s["appendix_items"] = [
            {**item, "kind": kind}
            for kind, items in (("figure", figures), ("table", sec["tables"]))
            for item in sorted(items.values(), key=lambda i: i["number"])
            if item.get("placement") == "appendix"
        ]
        module = _section_module(env, sec["id"])
        s["body"] = Markup(module.body(s))
        sections.append(s)
    card = context.get("card")
    if card:
        card = {**card, "figure": {**card["figure"], "src": _figure_src(card["figure"], medium)}}
    return env.get_template("index.html.j2").render(
        **{**context, "sections": sections, "card": card},
        medium=medium,
        # Our own stylesheet, not data: inlined as is (escaping would break `a > b`).
        css=Markup(stylesheet_for(css, medium)),
    )


# The figures' and tables' anchors, as the partials write them (fig-…, tab-…).
_NUMBERED = re.compile(r'\bid="((?:fig|tab)-[^"]+)"')


def number_in_reading_order(context: dict, template_dir: str | Path, css: str) -> dict:
    """Number the sections' figures and tables in the order the report shows them, the
    appendix included, whatever order their section wrote them in: the templates decide where
    each appears, so the report is rendered once to read that order. Both media show the same
    order; ``context`` is changed in place (and returned), so data.json and the PDF carry the
    same numbers. An item no template shows is numbered after the rest."""
    html = render(context, template_dir, "print", css)
    order = {anchor: i for i, anchor in enumerate(dict.fromkeys(_NUMBERED.findall(html)))}
    for kind in ("figures", "tables"):
        items = [item for sec in context["sections"] for item in sec[kind].values()]
        items.sort(key=lambda item: order.get(item["anchor"], len(order)))
        for number, item in enumerate(items, start=1):
            item["number"] = number
    return context


class _Collect(logging.Handler):
    """Keeps the errors a logger reports, to act on them after the call that logged them."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def write_pdf(html: str, base_url: str | Path, pdf_path: str | Path) -> int:
    """Lay out the print HTML with WeasyPrint into ``pdf_path``; return the page count.

    Only ``file:`` and ``data:`` URLs are fetched, so the PDF, like the page, depends on
    nothing outside the run. WeasyPrint reports a resource it cannot load (a missing figure)
    as a logged error and carries on; here that fails the job instead of leaving a hole.
    """
    from weasyprint import HTML
    from weasyprint.urls import URLFetcher

    errors = _Collect()
    logger = logging.getLogger("weasyprint")
    logger.addHandler(errors)
    try:
        fetcher = URLFetcher(allowed_protocols={"file", "data"})
        document = HTML(
            string=html, base_url=str(Path(base_url).resolve()) + "/", url_fetcher=fetcher
        ).render(pdf_tags=True)
    finally:
        logger.removeHandler(errors)
    if errors.messages:
        raise ReportError(
            f"{pdf_path}: WeasyPrint could not lay out the report: " + "; ".join(errors.messages)
        )
    with atomic_path(pdf_path) as tmp:
        document.write_pdf(tmp, pdf_tags=True)
    return len(document.pages)
