"""The layers, from the import graph (posenc.codegraph): the library (``posenc``) never imports
an analysis (``posenc.analyses``, the top-level ``analyses/`` folder), and no analysis imports
another; what two of them share lives in the library. Also that the packaging lists every
package, so that a wheel holds each analysis under ``posenc/analyses/``."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

from posenc import codegraph

ROOT = Path(__file__).resolve().parents[1]
ANALYSES = (ROOT / "analyses").resolve()
GRAPH = codegraph.project_graph(ROOT)


def library_modules() -> list[Path]:
    """Every module of the installed ``posenc`` but those of its mapped ``posenc.analyses``."""
    found = codegraph.package_dir("posenc")
    return sorted(
        p
        for p in found.rglob("*.py")
        if "__pycache__" not in p.parts and not p.resolve().is_relative_to(ANALYSES)
    )


def analysis_of(path: Path) -> str | None:
    """The analysis whose folder holds ``path`` (None for analyses/__init__.py or outside)."""
    path = path.resolve()
    if not path.is_relative_to(ANALYSES):
        return None
    rel = path.relative_to(ANALYSES).parts
    return rel[0] if len(rel) > 1 else None


def each_analysis() -> list[str]:
    return sorted(p.parent.name for p in ANALYSES.glob("*/__init__.py"))


def test_the_graph_maps_posenc_analyses_to_the_checkouts_folder():
    assert GRAPH.packages["posenc.analyses"] == ANALYSES
    spec = importlib.util.find_spec("posenc.analyses")
    assert [Path(p).resolve() for p in spec.submodule_search_locations] == [ANALYSES]


@pytest.mark.parametrize("path", library_modules(), ids=lambda p: GRAPH.label(GRAPH.entry(p)))
def test_the_library_imports_no_analysis(path):
    found = sorted(
        GRAPH.label(m) for m in GRAPH.closure([path]) if m.path.resolve().is_relative_to(ANALYSES)
    )
    assert not found, f"{GRAPH.label(GRAPH.entry(path))} imports {', '.join(found)}"


@pytest.mark.parametrize("name", each_analysis())
def test_no_analysis_imports_another(name):
    folder = ANALYSES / name
    offences = []
    for path in sorted(folder.glob("*.py")):
        for m in GRAPH.closure([path]):
            other = analysis_of(m.path)
            if other is not None and other != name:
                offences.append(f"{path.name} -> {GRAPH.label(m)}")
    # A rules file imports at parse time too (the extension's rules.smk reads its longrope.py).
    for path in sorted(folder.glob("*.smk")):
        for other in re.findall(r"posenc\.analyses\.(\w+)", path.read_text()):
            if other != name:
                offences.append(f"{path.name} -> posenc.analyses.{other}")
    assert not offences, f"analyses/{name} imports another analysis: {'; '.join(offences)}"


def test_a_forbidden_import_would_be_seen(tmp_path):
    """The checks above can fail: a library module importing an analysis, and an analysis
    importing another, are in the closures they walk."""
    for name, text in {
        "lib/__init__.py": "",
        "lib/core.py": "from lib.analyses.a.compute import x\n",
        "analyses/__init__.py": "",
        "analyses/a/__init__.py": "",
        "analyses/a/compute.py": "from lib.analyses.b.util import y\nx = y\n",
        "analyses/b/__init__.py": "",
        "analyses/b/util.py": "y = 1\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = codegraph.CodeGraph(
        {"lib": tmp_path / "lib", "lib.analyses": tmp_path / "analyses"}, tmp_path
    )
    closure = {m.name for m in graph.closure([tmp_path / "lib/core.py"])}
    assert {"lib.analyses.a.compute", "lib.analyses.b.util"} <= closure
    closure = {m.name for m in graph.closure([tmp_path / "analyses/a/compute.py"])}
    assert "lib.analyses.b.util" in closure


def test_every_package_is_in_the_packaging():
    """pyproject.toml lists packages one by one (the analyses' are mapped from another
    folder, which setuptools' discovery cannot do): a package missing there would be missing
    from a wheel, though an editable install still finds it."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert tool["package-dir"] == {"posenc.analyses": "analyses"}
    listed = set(tool["packages"])
    wanted = {"posenc.analyses", *(f"posenc.analyses.{a}" for a in each_analysis())}
    for init in (ROOT / "posenc").rglob("__init__.py"):
        wanted.add(".".join(init.parent.relative_to(ROOT).parts))
    assert wanted <= listed, f"pyproject.toml lacks {sorted(wanted - listed)}"
    # No bare top-level package besides posenc: analyses installs only as posenc.analyses.
    assert {p.split(".")[0] for p in listed} == {"posenc"}


def test_every_analysis_has_its_place_in_the_reading_order():
    # Sections are numbered in this order in every report: an analysis left out would still
    # come last, but its place should be chosen, not fallen into.
    from posenc.analysis import READING_ORDER

    folders = sorted(p.parent.name for p in ROOT.glob("analyses/*/spec.py"))
    assert sorted(READING_ORDER) == folders


def test_sections_keep_their_numbers_whatever_order_a_config_lists_them_in():
    from posenc.analysis import READING_ORDER, discover

    assert tuple(discover(ROOT)) == READING_ORDER
