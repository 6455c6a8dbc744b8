"""The key of the parse-time metadata and checks (posenc.encoding_metadata.digest) follows the
import graph: an edit to any module the subprocess runs, however it is imported, asks afresh.

Every edit is made to a copy of the posenc package in a temporary folder, never to the
checkout that other tests import; the subprocess, started in that folder, imports the copy.
"""

import ast
import shutil
from pathlib import Path

from posenc import codegraph, encoding_metadata

PACKAGE = codegraph.package_dir("posenc")


def copy_checkout(root: Path) -> Path:
    """A checkout at ``root`` holding a copy of the posenc package."""
    shutil.copytree(PACKAGE, root / "posenc", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def graph(root: Path) -> codegraph.CodeGraph:
    """A fresh graph of the copy (a graph reads each file once: an edit needs a new one)."""
    return codegraph.CodeGraph({"posenc": root / "posenc"}, root)


def digest(root: Path, plugins: list[str] = ()) -> str:
    return encoding_metadata.digest(list(plugins), root, graph(root))


def edit(path: Path, old: str, new: str) -> None:
    source = path.read_text()
    assert source.count(old) == 1, f"{old!r} is not once in {path}"
    path.write_text(source.replace(old, new))


def test_an_edit_to_rope_methods_reruns_the_encodings_check(tmp_path):
    # rope_proportional's check counts its turning pairs with posenc.rope_methods, a module
    # outside posenc/encodings/ that the hand-kept list of files once missed.
    root, cache = copy_checkout(tmp_path), tmp_path / "cache"
    config = {
        "encodings": ["rope_proportional"],
        "encoding": {"rope_proportional": {"proportion": 0.25}},
    }
    shapes = {"model.d_model": (16, 2)}  # heads of 8: int(0.25 x 8 // 2) = 1 pair turns
    before = digest(root)
    assert encoding_metadata.encoding_problems(config, shapes, root, cache, graph(root)) == []

    # The copy now counts a quarter of the pairs it should: no pair turns at this width.
    edit(
        root / "posenc" / "rope_methods.py",
        "return int(proportion * head_dim // 2)",
        "return int(proportion * head_dim // 4)",
    )
    assert digest(root) != before
    problems = encoding_metadata.encoding_problems(config, shapes, root, cache, graph(root))
    assert problems == [
        "config key encoding.rope_proportional.proportion = 0.25 turns int(0.25 x 8 // 2) = 0 "
        "pairs of a head of 8: at least one must turn (rope_proportional at model.d_model)"
    ]
    assert len(list(cache.glob("checks-*.json"))) == 2  # the first answer was not reused


def test_a_module_imported_only_inside_a_function_is_in_the_key(tmp_path):
    # posenc.probe imports posenc.model inside the function that builds the probed model.
    root = copy_checkout(tmp_path)
    probe = ast.parse((root / "posenc" / "probe.py").read_text())
    assert not any(
        isinstance(node, ast.ImportFrom) and node.module == "posenc.model" for node in probe.body
    ), "posenc.probe imports posenc.model at the top now: this test no longer tests that"
    before = digest(root)
    (root / "posenc" / "model.py").write_text(
        (root / "posenc" / "model.py").read_text() + "\nEDITED = True\n"
    )
    assert digest(root) != before


def test_a_docstring_or_comment_edit_to_the_package_keeps_the_key(tmp_path):
    root = copy_checkout(tmp_path)
    before = digest(root)
    methods = root / "posenc" / "rope_methods.py"
    edit(
        methods,
        '"""How many pairs p-RoPE turns:',
        '"""How many pairs p-RoPE turns (reworded):',
    )
    methods.write_text(methods.read_text() + "# a comment\n")
    assert digest(root) == before


def test_the_builtin_metadata_quotes_no_docstring(tmp_path):
    # Why the key may leave the package's docstrings out: the metadata read from a copy whose
    # modules have none (those that read their own __doc__ aside, as the digest keeps theirs)
    # is the same as the metadata read from the package as it is, under the same key.
    root = copy_checkout(tmp_path)
    as_it_is = encoding_metadata.metadata(root=root, cache=tmp_path / "a", graph=graph(root))
    before = digest(root)
    for module in graph(root).closure([root / "posenc" / f for f in encoding_metadata.ROOTS]):
        tree = ast.parse(module.path.read_text())
        if not codegraph._reads_doc(tree):
            module.path.write_text(ast.unparse(codegraph._strip_docstrings(tree)) + "\n")
    assert digest(root) == before
    stripped = encoding_metadata.metadata(root=root, cache=tmp_path / "b", graph=graph(root))
    assert stripped == as_it_is
    assert as_it_is["rope_proportional"]["summary"]  # texts there are, but not docstrings


def test_a_plugins_docstring_is_in_the_key(tmp_path):
    # A plugin's metadata may quote its own docstrings (summary=Cls.__doc__), so the modules
    # that only the plugins bring in count by their bytes.
    root = copy_checkout(tmp_path)
    plugin = root / "plugin.py"
    plugin.write_text('class Mine:\n    """First."""\n\n\nSUMMARY = Mine.__doc__\n')
    before = digest(root, [str(plugin)])
    edit(plugin, '"""First."""', '"""Second."""')
    assert digest(root, [str(plugin)]) != before


def test_the_key_stays_when_the_checkout_moves(tmp_path):
    here = copy_checkout(tmp_path / "here")
    there = copy_checkout(tmp_path / "elsewhere" / "there")
    assert digest(here) == digest(there)
