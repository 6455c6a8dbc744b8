"""The registry as the workflow sees it at parse time: names and metadata, without torch.

The Snakefile needs the encoding names (for the schema and the wildcards) and their metadata,
but importing :mod:`posenc.encodings` imports torch, which would be most of a no-op rerun's
time. So the metadata is read once by a subprocess that imports the registry (and the
config's plugins), and kept in a file keyed by :func:`digest` of the code that subprocess runs,
found from the import graph (:mod:`posenc.codegraph`), and of the Python running it. A change
to any of that code reads it afresh.

The encodings' own config checks (``EncodingSpec.checks``: a setting its module cannot be built
with, at a width an analysis builds it at) run the same way, before any job, and only when a
configured encoding has one: :func:`encoding_problems`, cached by the same digest and by what
it checks.

``python -m posenc.encoding_metadata [PLUGIN ...]`` prints the metadata as JSON;
``python -m posenc.encoding_metadata --check [PLUGIN ...]`` reads what to check as JSON on
stdin and prints the problems.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from posenc import codegraph, plugins, workflow_root

# What the subprocess runs, as files of the posenc package: this module, the registry (whose
# __init__ imports every module of its folder), the probes and the plugin loader. This module
# imports each of them already (lazily); they are named so that the key does not hang on that.
ROOTS = ("encoding_metadata.py", "encodings/__init__.py", "probe.py", "plugins.py")


def code_graph(root: str | Path, cache: str | Path | None = None) -> codegraph.CodeGraph:
    """The checkout's import graph for :func:`digest` when the caller has none: it reads the
    workflow's file cache (``codegraph.json`` in ``cache``) but never writes it, as the
    Snakefile's graph, which parses these modules too, writes it (two writers would each drop
    the other's entries)."""
    cache_dir = Path(cache or workflow_root.cache_dir(root))
    return codegraph.project_graph(root, cache_dir / "codegraph.json")


def digest(
    plugin_entries: list[str], root: str | Path, graph: codegraph.CodeGraph | None = None
) -> str:
    """The key of what ``python -m posenc.encoding_metadata PLUGIN_ENTRIES`` prints.

    It is the import graph's closure of :data:`ROOTS` (function-level imports included: the
    probes build :mod:`posenc.model`, ``rope_proportional``'s check calls
    :mod:`posenc.rope_methods`), each module by its name and the digest of its meaning
    (comments and docstrings left out: the built-ins' metadata quotes no docstring, which
    ``tests/test_encoding_metadata.py`` holds them to); then each plugin's entry (the metadata
    records it) and the modules that only the plugins import, by their bytes (a plugin's
    ``summary`` may be its class's docstring); then the Python version. Module names are
    relative to the package and the checkout, so a moved checkout keeps its key when no
    plugin is configured. ``graph``: the workflow's (the Snakefile passes its own, so that the
    files are parsed once), else :func:`code_graph`.
    """
    graph = graph or code_graph(root)
    package = graph.packages.get("posenc", Path(__file__).resolve().parent)
    own = graph.closure([package / f for f in ROOTS])
    h = hashlib.sha256(f"{sys.version}\n".encode())
    for module in own:
        h.update(f"{graph.label(module)}\0{graph.info(module.path)['digest']}\n".encode())
    seen = {m.path for m in own}
    for entry in plugin_entries:
        h.update(f"plugin {entry}\n".encode())
    for source in plugins.sources(plugin_entries, root):
        for module in graph.closure([source]):
            if module.path not in seen:
                seen.add(module.path)
                raw = hashlib.sha256(module.path.read_bytes()).hexdigest()
                h.update(f"{graph.label(module)}\0{raw}\n".encode())
    return h.hexdigest()[:16]


def metadata(
    plugin_entries: list[str] | None = None,
    root: str | Path = ".",
    cache: str | Path | None = None,
    graph: codegraph.CodeGraph | None = None,
) -> dict[str, dict]:
    """``{name: metadata}`` for every registered encoding, built-ins first, then plugins'.
    ``graph``: the import graph to key it by (:func:`digest`)."""
    entries = [plugins.resolve(e, root) for e in plugin_entries or []]
    cache_dir = Path(cache or workflow_root.cache_dir(root))
    graph = graph or code_graph(root, cache_dir)
    path = cache_dir / f"metadata-{digest(entries, root, graph)}.json"
    return _cached_run(path, entries, root)


def _cached_run(path: Path, args: list[str], root: str | Path, stdin: str | None = None):
    """The JSON that ``python -m posenc.encoding_metadata ARGS`` prints, kept at ``path``: read back
    while ``path`` exists (its name is the key), else computed and written atomically."""
    if path.is_file():
        return json.loads(path.read_text())
    proc = subprocess.run(
        [sys.executable, "-m", "posenc.encoding_metadata", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=root,
    )
    if proc.returncode:
        # The subprocess's last line is the plugin's own error, which names it.
        lines = proc.stderr.strip().splitlines() or ["(no message)"]
        raise plugins.PluginError(lines[-1])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".json")
    with os.fdopen(fd, "w") as f:
        f.write(proc.stdout)
    os.replace(tmp, path)
    return json.loads(proc.stdout)


def encoding_problems(
    config: dict,
    shapes: dict[str, tuple[int, int]],
    root: str | Path = ".",
    cache: str | Path | None = None,
    graph: codegraph.CodeGraph | None = None,
) -> list[str]:
    """What the checks of the configured encodings (``EncodingSpec.checks``) find in
    ``config``'s ``encoding:`` block at each of ``shapes``, ``{where: (d_model, n_heads)}``
    (``where`` names the config keys that set that width), one line each, naming the keys.

    No subprocess, and so no torch, unless a configured encoding declares a check (the
    metadata counts them); the answer is cached by the code's :func:`digest` (in ``graph``)
    and by what it checks, so a rerun of the same config reads it back, and an edit to any
    module the checks run asks afresh.
    """
    entries = [plugins.resolve(e, root) for e in config.get("plugins", [])]
    cache_dir = Path(cache or workflow_root.cache_dir(root))
    graph = graph or code_graph(root, cache_dir)
    meta = metadata(config.get("plugins", []), root, cache_dir, graph)
    names = [e for e in config.get("encodings", []) if meta.get(e, {}).get("checks")]
    if not names or not shapes:
        return []
    asked = json.dumps(
        {
            "encodings": names,
            "encoding": config.get("encoding", {}),
            "shapes": {where: list(shape) for where, shape in shapes.items()},
        },
        sort_keys=True,
    )
    key = hashlib.sha256(f"{digest(entries, root, graph)} {asked}".encode()).hexdigest()[:16]
    return _cached_run(cache_dir / f"checks-{key}.json", ["--check", *entries], root, asked)


def encoding_check(
    specs: dict,
    root: str | Path = ".",
    cache: str | Path | None = None,
    graph: codegraph.CodeGraph | None = None,
):
    """:func:`encoding_problems` as one config check (``validate_config``'s ``checks``), at
    every width the configured analyses build encodings at (``AnalysisSpec.encoding_shapes``
    of each spec in ``specs`` whose section the config has)."""

    def check(config: dict) -> list[str]:
        shapes: dict[str, tuple[int, int]] = {}
        for spec in specs.values():
            if spec.encoding_shapes is not None and spec.id in config:
                shapes.update(spec.encoding_shapes(config))
        return encoding_problems(config, shapes, root, cache, graph)

    return check


def run_checks(
    encodings: list[str], encoding_cfg: dict, shapes: dict[str, tuple[int, int]]
) -> list[str]:
    """Every check of each of ``encodings`` on the :class:`~posenc.encodings.EncodingParams`
    of each shape (its hyper-parameters from ``encoding_cfg``, the config's ``encoding:``
    block, at that width and heads), in process: each problem once per encoding, followed by
    the encoding and the config keys of every width it is found at."""
    from posenc.encodings import REGISTRY, encoding_params

    problems: list[str] = []
    for name in encodings:
        found: dict[str, list[str]] = {}  # problem -> where
        for where, (d_model, n_heads) in shapes.items():
            params = encoding_params(name, encoding_cfg, d_model=d_model, n_heads=n_heads)
            for check in REGISTRY[name].checks:
                for problem in check(params):
                    found.setdefault(problem, []).append(where)
        problems += [f"{p} ({name} at {'; '.join(where)})" for p, where in found.items()]
    return problems


def _main(args: list[str]) -> None:
    from posenc.encodings import REGISTRY

    checking = args[:1] == ["--check"]
    entries = args[1:] if checking else args
    try:
        plugins.load(entries)
    except plugins.PluginError as error:
        sys.exit(f"{error}")
    registered = {entry: plugins.REGISTERED.get(plugins.resolve(entry, ".")) for entry in entries}
    origin = {name: entry for entry, names in registered.items() for name in names or []}
    if not checking:
        # Every plugin registers something, and every encoding it registers passes the probes.
        from posenc.probe import probe

        for entry in entries:
            if not registered[entry]:
                sys.exit(
                    f"plugin {entry}: registers no encodings (call posenc.encodings.register("
                    "EncodingSpec(...)) at import)"
                )
        for name, entry in origin.items():
            problem = probe(REGISTRY[name], entry)
            if problem:
                sys.exit(problem)
    if checking:
        asked = json.loads(sys.stdin.read())
        shapes = {where: tuple(shape) for where, shape in asked["shapes"].items()}
        print(json.dumps(run_checks(asked["encodings"], asked["encoding"], shapes), indent=1))
        return
    print(
        json.dumps(
            {
                name: {**spec.metadata(), "plugin": origin.get(name)}
                for name, spec in REGISTRY.items()
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    _main(sys.argv[1:])
