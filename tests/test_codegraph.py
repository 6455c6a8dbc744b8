"""The code digests: what a module means, what a script imports, and the cache between parses
(posenc.codegraph). The workflow's own wiring is tested end to end in test_rerun.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from posenc import codegraph
from posenc.codegraph import CodeGraph, analyse

ROOT = Path(__file__).resolve().parents[1]

BASE = '''"""A module."""
import os  # a comment


def f(x):
    """Twice x."""
    return 2 * x
'''


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.replace("# a comment", "# another comment"),
        lambda s: s.replace('"""A module."""', '"""A module, reworded."""'),
        lambda s: s.replace('"""Twice x."""', '"""Twice x.\n\n    More words."""'),
        lambda s: s.replace("return 2 * x", "return 2*x"),  # formatting
        lambda s: s.replace("def f(x):", "def f(\n    x,\n):"),
        lambda s: s + '\n"""A bare string statement: a comment in effect."""\n',
        lambda s: s.replace('"""Twice x."""\n', ""),  # a docstring removed
    ],
)
def test_comments_docstrings_and_formatting_do_not_change_the_digest(edit):
    assert analyse(edit(BASE).encode())["digest"] == analyse(BASE.encode())["digest"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.replace("2 * x", "3 * x"),
        lambda s: s.replace("import os", "import sys"),
        lambda s: s + "\nCONSTANT = 1\n",
        lambda s: s.replace("def f(x)", "def f(x=1)"),
    ],
)
def test_a_change_of_meaning_changes_the_digest(edit):
    assert analyse(edit(BASE).encode())["digest"] != analyse(BASE.encode())["digest"]


def test_a_module_that_reads_its_docstring_keeps_it():
    source = '"""Usage: tool FILE."""\nimport argparse\nargparse.ArgumentParser(__doc__)\n'
    reworded = source.replace("Usage: tool FILE.", "Usage: tool [FILE].")
    assert analyse(source.encode())["digest"] != analyse(reworded.encode())["digest"]


def test_copying_an_objects_docstring_along_is_not_reading_ones_own():
    source = (
        '"""Module."""\nclass A:\n    """Doc."""\nB = type("B", (A,), {"__doc__": A.__doc__})\n'
    )
    reworded = source.replace("Doc.", "Documentation.")
    assert analyse(source.encode())["digest"] == analyse(reworded.encode())["digest"]


def test_an_empty_module_and_one_of_only_a_docstring_are_the_same():
    assert analyse(b"")["digest"] == analyse(b'"""Only words."""\n')["digest"]


def test_imports_are_read_everywhere_but_under_type_checking():
    source = textwrap.dedent(
        """
        from __future__ import annotations
        import a.b
        from . import sibling
        from ..up import thing
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import never_at_run_time
        else:
            import otherwise
        def lazy():
            import torch
            from c import d
        """
    )
    found = analyse(source.encode())["imports"]
    assert [0, "a.b", []] in found
    assert [1, "", ["sibling"]] in found
    assert [2, "up", ["thing"]] in found
    assert [0, "otherwise", []] in found
    assert [0, "torch", []] in found and [0, "c", ["d"]] in found
    assert not any(e[1] == "never_at_run_time" for e in found)


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def project(tmp_path) -> Path:
    """A package ``pkg``; its sub-package ``pkg.analyses`` in a top-level folder ``analyses/``
    (as setuptools' ``package-dir`` maps ``posenc.analyses``), with relative and absolute
    imports; and a script with a sibling module."""
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/core.py": "import numpy\nfrom pkg import util\n",
            "pkg/util.py": "def helper():\n    from pkg.lazy import thing\n",
            "pkg/lazy.py": "thing = 1\n",
            "pkg/unused.py": "x = 1\n",
            "pkg/alone.py": "import pkg\n",
            "analyses/__init__.py": "",
            "analyses/a/__init__.py": "",
            "analyses/a/compute.py": """
                from .spec import SPEC
                from pkg.core import *
                from pkg.analyses.a import helper
            """,
            "analyses/a/spec.py": "SPEC = 1\n",
            "analyses/a/helper.py": "h = 1\n",
            "analyses/a/other.py": "y = 2\n",
            "scripts/run.py": "import helper_here\nfrom pkg import util\n",
            "scripts/helper_here.py": "z = 3\n",
        },
    )
    return tmp_path


def graph(root: Path, cache: Path | None = None) -> CodeGraph:
    return CodeGraph({"pkg": root / "pkg", "pkg.analyses": root / "analyses"}, root, cache)


def test_the_closure_follows_imports_through_the_project_only(project):
    names = sorted(m.name for m in graph(project).closure([project / "scripts/run.py"]))
    assert names == ["helper_here", "pkg", "pkg.lazy", "pkg.util", "run"]
    labels = graph(project).digest([project / "analyses/a/compute.py"])["modules"]
    assert labels == [
        "pkg",
        "pkg.analyses",
        "pkg.analyses.a",
        "pkg.analyses.a.compute",
        "pkg.analyses.a.helper",
        "pkg.analyses.a.spec",
        "pkg.core",
        "pkg.lazy",
        "pkg.util",
    ]
    # A script is named by its path, so that a moved checkout keeps its digests.
    assert "scripts/run.py" in graph(project).digest([project / "scripts/run.py"])["modules"]


def test_a_digest_changes_exactly_with_the_modules_it_covers(project):
    roots = [project / "analyses/a/compute.py"]
    before = graph(project).digest(roots)
    covered = ("pkg/lazy.py", "analyses/a/spec.py", "analyses/a/helper.py", "pkg/__init__.py")
    for name in covered:
        path = project / name
        text = path.read_text()
        path.write_text(text + "\nEDITED = 1\n")
        assert graph(project).digest(roots)["digest"] != before["digest"], name
        path.write_text(text)
    for name in ("pkg/unused.py", "analyses/a/other.py", "scripts/run.py"):  # not covered
        (project / name).write_text((project / name).read_text() + "\nEDITED = 1\n")
        assert graph(project).digest(roots)["digest"] == before["digest"], name


def test_a_mapped_sub_package_resolves_into_its_own_folder(project):
    # pkg.analyses lives in analyses/, not pkg/analyses/: the longest mapped name wins, even
    # over a stray copy in the parent's folder, and an absolute import of one of its modules
    # from a script is in the script's closure, its parents' __init__ first.
    write(
        project,
        {
            "pkg/analyses/__init__.py": "",
            "pkg/analyses/a/__init__.py": "",
            "pkg/analyses/a/helper.py": "h = 'a stray copy'\n",
            "scripts/runs_a.py": "from pkg.analyses.a.helper import h\n",
        },
    )
    roots = [project / "scripts/runs_a.py"]
    closure = {m.name: m.path for m in graph(project).closure(roots)}
    assert closure == {
        "pkg": project / "pkg/__init__.py",
        "pkg.analyses": project / "analyses/__init__.py",
        "pkg.analyses.a": project / "analyses/a/__init__.py",
        "pkg.analyses.a.helper": project / "analyses/a/helper.py",
        "runs_a": project / "scripts/runs_a.py",
    }
    before = graph(project).digest(roots)["digest"]
    (project / "pkg/analyses/a/helper.py").write_text("h = 'the stray copy, edited'\n")
    assert graph(project).digest(roots)["digest"] == before
    (project / "analyses/a/helper.py").write_text("h = 2\n")
    assert graph(project).digest(roots)["digest"] != before
    # A file of the mapped folder, as an entry point, is named by the mapped package.
    entry = graph(project).entry(project / "analyses/a/compute.py")
    assert (entry.name, entry.package) == ("pkg.analyses.a.compute", "pkg.analyses.a")


def test_a_package_that_imports_every_module_of_its_folder_covers_a_new_one(project):
    # The registry of encodings: its __init__ imports each module it finds in its folder, so
    # a family added as a new file, named nowhere, is in every digest that covers the package.
    write(
        project,
        {
            "pkg/families/__init__.py": """
                import importlib
                import pkgutil

                for found in pkgutil.iter_modules(__path__):
                    importlib.import_module(f"{__name__}.{found.name}")
            """,
            "pkg/families/first.py": "A = 1\n",
            "scripts/uses.py": "import pkg.families\n",
        },
    )
    roots = [project / "scripts/uses.py"]
    names = sorted(m.name for m in graph(project).closure(roots))
    assert names == ["pkg", "pkg.families", "pkg.families.first", "uses"]
    before = graph(project).digest(roots)["digest"]
    write(project, {"pkg/families/second.py": "B = 2\n"})
    assert "pkg.families.second" in graph(project).digest(roots)["modules"]
    assert graph(project).digest(roots)["digest"] != before


def test_the_digest_does_not_depend_on_where_the_checkout_lies(project, tmp_path_factory):
    moved = tmp_path_factory.mktemp("elsewhere") / "copy"
    subprocess.run(["cp", "-a", str(project), str(moved)], check=True)
    for root in ("scripts/run.py", "analyses/a/compute.py"):
        assert graph(project).digest([project / root]) == graph(moved).digest([moved / root])


def test_the_cache_is_read_by_bytes_and_parses_only_what_changed(project, monkeypatch):
    cache = project / ".cache/codegraph.json"
    roots = [project / "scripts/run.py"]
    first = graph(project, cache)
    expected = first.digest(roots)
    first.save()
    assert json.loads(cache.read_text())["files"]
    parsed = []
    real = codegraph.analyse
    monkeypatch.setattr(codegraph, "analyse", lambda *a: parsed.append(a[1]) or real(*a))
    assert graph(project, cache).digest(roots) == expected
    assert parsed == []  # every file came from the cache
    (project / "pkg/lazy.py").write_text("thing = 2\n")
    changed = graph(project, cache).digest(roots)
    assert parsed == [str(project / "pkg/lazy.py")] and changed != expected


def test_a_cache_written_by_other_code_is_not_trusted(project):
    """Entries made by another version of the normaliser (or another Python) are ignored: a
    cached digest is never older than the code that computes it."""
    cache = project / "codegraph.json"
    roots = [project / "scripts/run.py"]
    g = graph(project, cache)
    expected = g.digest(roots)
    g.save()
    data = json.loads(cache.read_text())
    data["files"] = {k: {**v, "digest": "stale"} for k, v in data["files"].items()}
    cache.write_text(json.dumps(data))
    assert graph(project, cache).digest(roots) != expected  # the stale entries are used...
    data["version"] = "another-normaliser"
    cache.write_text(json.dumps(data))
    assert graph(project, cache).digest(roots) == expected  # ...unless from other code


def test_a_damaged_cache_is_rebuilt(project):
    cache = project / "codegraph.json"
    cache.write_text("{not json")
    g = graph(project, cache)
    expected = graph(project).digest([project / "scripts/run.py"])
    assert g.digest([project / "scripts/run.py"]) == expected
    g.save()
    assert json.loads(cache.read_text())["version"]


# ----------------------------------------------------------------------------- the project


def entry_points() -> dict[str, list[str]]:
    """Every rule script of the workflow and, for the analysis runner, each analysis' parts
    (posenc.analysis.PARTS, loaded by a computed name): what the rules' digests start from."""
    from posenc.analysis import PARTS

    scripts = {p.stem: [str(p)] for p in sorted((ROOT / "workflow/scripts").glob("*.py"))}
    for name in ("finetune", "evaluate"):
        scripts[f"extension_{name}"] = [str(ROOT / "analyses/extension" / f"{name}.py")]
    runner = scripts.pop("analysis")
    for folder in sorted((ROOT / "analyses").glob("*/spec.py")):
        parts = [str(folder.parent / f"{part}.py") for part in PARTS]
        scripts[f"analysis:{folder.parent.name}"] = runner + parts
    return scripts


# Run in a fresh interpreter: import the third-party libraries once, then for each rule fork,
# run its entry points as Snakemake would (a script by path, with its folder first on
# sys.path; an analysis part by its module name, posenc.analyses.<id>.<part>) and list the
# project modules loaded.
PROBE = """
import importlib, json, os, runpy, sys
from pathlib import Path
import numpy, torch, matplotlib, yaml, jinja2
root, posenc_dir, entries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
mine = [Path(posenc_dir).resolve(), (Path(root) / "analyses").resolve(),
        (Path(root) / "workflow" / "scripts").resolve()]
out = {}
for rule, paths in entries.items():
    r, w = os.pipe()
    if os.fork() == 0:
        os.close(r)
        sys.path.insert(0, str(Path(paths[0]).parent))
        for p in paths:
            if "/analyses/" in p and not p.endswith(("finetune.py", "evaluate.py")):
                rel = Path(p).resolve().relative_to(Path(root).resolve()).with_suffix("")
                importlib.import_module(".".join(["posenc", *rel.parts]))
            else:
                runpy.run_path(p, run_name="posenc_probe")
        files = sorted({str(Path(m.__file__).resolve()) for m in list(sys.modules.values())
                        if getattr(m, "__file__", None)
                        and any(Path(m.__file__).resolve().is_relative_to(d) for d in mine)})
        os.write(w, json.dumps(files).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.wait()
    out[rule] = json.loads(data)
print(json.dumps(out))
"""


def test_every_module_a_rule_loads_when_it_runs_is_in_its_digest():
    """The static closure is complete: running each rule's entry points loads no project
    module that its digest does not cover (a module it missed would be a change that reruns
    nothing)."""
    entries = entry_points()
    posenc_dir = codegraph.package_dir("posenc")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT), str(posenc_dir), json.dumps(entries)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout)
    g = codegraph.project_graph(ROOT)
    assert set(loaded) == set(entries)
    for rule, paths in entries.items():
        static = {str(m.path.resolve()) for m in g.closure(paths)}
        assert loaded[rule], rule
        assert set(loaded[rule]) <= static, (rule, sorted(set(loaded[rule]) - static))


def test_an_analysis_rule_covers_its_folder_as_posenc_analyses():
    """The checkout's graph maps posenc.analyses to analyses/: an analysis' parts and the
    modules of its folder they import by absolute name are in its rule's digest, named as
    Python imports them."""
    from posenc.analysis import PARTS

    roots = [ROOT / "workflow/scripts/analysis.py"]
    roots += [ROOT / "analyses/conformance" / f"{part}.py" for part in PARTS]
    modules = codegraph.project_graph(ROOT).digest(roots)["modules"]
    assert "posenc.analyses.conformance.compute" in modules
    assert "posenc.analyses.conformance.libraries" in modules  # imported by compute.py
    assert not any(m.startswith("analyses") for m in modules)


def test_one_graph_gives_each_root_set_the_digest_a_fresh_graph_gives(project):
    """The graph memoises lookups across rules: a rule's digest must not depend on which
    rules were digested before it."""
    sets = [
        [project / "analyses/a/compute.py"],
        [project / "scripts/run.py"],
        [project / "pkg/core.py"],
        [project / "pkg/alone.py"],  # imports pkg alone, after others imported from it
    ]
    shared = graph(project)
    for roots in sets + sets[::-1]:
        assert shared.digest(roots) == graph(project).digest(roots), roots
