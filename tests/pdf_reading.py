"""A PDF's pages read once per test session: the PDF test and the figure-size test both need
every page's text and objects, and extracting them from the test report's PDF is most of
either test's time. Keyed by the file's path, size and modification time, so a PDF rendered
again is read again."""

from __future__ import annotations

import functools
from pathlib import Path

KINDS = ("rect", "line", "curve", "image", "char")


def read(path: str | Path) -> dict:
    """``pages`` (text per page), ``sizes`` ((width, height) per page), ``objects``
    ((page number, kind, pdfplumber object) for every object of :data:`KINDS`) and
    ``bookmarks`` ((level, title, page number or None))."""
    stat = Path(path).stat()
    return _read(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _read(path: str, size: int, mtime_ns: int) -> dict:
    import pdfplumber

    found: dict = {"pages": [], "sizes": [], "objects": []}
    with pdfplumber.open(path) as pdf:
        page_of = {p.page_obj.pageid: i + 1 for i, p in enumerate(pdf.pages)}
        found["bookmarks"] = [
            (level, title, page_of.get(dest[0].objid) if dest else None)
            for level, title, dest, _, _ in pdf.doc.get_outlines()
        ]
        for number, page in enumerate(pdf.pages, start=1):
            found["pages"].append(page.extract_text() or "")
            found["sizes"].append((page.width, page.height))
            for kind in KINDS:
                found["objects"] += [(number, kind, obj) for obj in page.objects.get(kind, [])]
            page.close()  # pdfplumber keeps every page's layout otherwise
    return found
