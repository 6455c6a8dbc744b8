"""Which project code a job runs, and a digest of what that code means, found without importing it.

Snakemake reruns a job when its params change, but it does not see the modules its script
imports. So every rule's ``code`` param is :meth:`CodeGraph.digest` of the modules its entry
points import, directly or transitively, that belong to the project (``posenc/``, the
analyses' folders as ``posenc.analyses``, ``workflow/scripts/`` and the script's own folder):
a change there reruns the rule and re-keys the between-workflow cache, and a change elsewhere
does not.

Only a change of meaning counts. Each module is hashed as the canonical source of its syntax
tree (``ast.unparse``) with comments, docstrings and bare string statements gone, so that a
reworded comment or docstring, or a reformatting, reruns nothing. A module that reads
its own ``__doc__`` keeps its docstrings: there they are behaviour.

The imports are read from the syntax tree: every ``import`` and ``from ... import`` anywhere in
the module (inside functions too, where the project imports torch lazily), except under
``if TYPE_CHECKING:``, which never runs. A package's ``__init__`` that imports every module of
its folder by listing it (``pkgutil.iter_modules(__path__)``: the registry of encodings, where
a new family is one new file) imports each of them. Other imports the source cannot name
(``importlib`` with a computed name) are the entry points' business: a rule lists them as
roots.

Parsing every module on each parse of the workflow would cost about 0.4 s, most of a no-op
run. Each file's normalised digest and imports are kept in a cache keyed by a hash of its raw
bytes, this module's own source and the Python version (whose ``ast`` may differ), so that a
parse reads and hashes the files and parses only those that changed. Torch-free and
import-free: it runs at parse time.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """Remove every statement that is only a string (docstrings, string "comments"); a body
    left empty gets ``pass``, so the tree still unparses."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        kept = [
            s
            for s in body
            if not (
                isinstance(s, ast.Expr)
                and isinstance(s.value, ast.Constant)
                and isinstance(s.value.value, str)
            )
        ]
        if len(kept) != len(body):
            # A module may be empty; a function or class needs a statement to unparse.
            node.body = kept if kept or isinstance(node, ast.Module) else [ast.Pass()]
    return tree


def _reads_doc(tree: ast.AST) -> bool:
    """Whether the module reads its own docstring (the global ``__doc__``: a command's help
    text, say). Copying an object's ``__doc__`` attribute along, as documentation, is not
    behaviour that a result depends on."""
    return any(isinstance(n, ast.Name) and n.id == "__doc__" for n in ast.walk(tree))


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


# The names of an import entry that stands for every module of the importing package's folder.
EVERY_MODULE = ["<every module of its folder>"]


def _lists_its_folder(node: ast.AST) -> bool:
    """Whether ``node`` is ``pkgutil.iter_modules(__path__)``: a package listing its own
    modules, to import each."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "iter_modules"
        and bool(node.args)
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "__path__"
    )


def _imports(tree: ast.AST) -> list[list]:
    """Every import statement as ``[level, module, [names]]`` (``import a.b`` is
    ``[0, "a.b", []]``), skipping ``if TYPE_CHECKING:`` blocks; a package's listing of its own
    modules is ``[1, "", EVERY_MODULE]``."""
    found: list[list] = []

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend([0, alias.name, []] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append([node.level, node.module or "", [a.name for a in node.names]])
        elif _lists_its_folder(node):
            found.append([1, "", EVERY_MODULE])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def analyse(source: bytes, filename: str = "<module>") -> dict:
    """A module's normalised digest and its imports, from its source."""
    tree = ast.parse(source, filename)
    found = _imports(tree)
    if not _reads_doc(tree):
        tree = _strip_docstrings(tree)
    canonical = ast.unparse(tree)
    return {"digest": hashlib.sha256(canonical.encode()).hexdigest(), "imports": found}


def package_dir(name: str) -> Path | None:
    """Where the top-level package ``name`` would be imported from, found without importing
    it (``PYTHONPATH`` and editable installs included), or None."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class Module:
    name: str  # dotted, as imported (a script's own name for an entry point)
    path: Path
    package: str  # what a relative import in it is relative to


class CodeGraph:
    """The project's modules and their imports, as far as the source says.

    ``packages`` maps each project package to its folder (``posenc`` wherever it is imported
    from, ``posenc.analyses`` in the workflow's folder). A dotted name resolves through the
    longest mapped package it lies in, so a sub-package may live outside its parent's folder,
    as setuptools' ``package-dir`` maps it; its parents' ``__init__`` still run first, and
    its modules are labelled by their dotted names. ``root`` is what module names
    outside those packages (scripts) are written relative to, so that digests do not depend
    on where the checkout lies. ``cache`` is a JSON file of per-file results, keyed by a hash
    of each file's bytes; :meth:`save` writes it back when it gained entries.
    """

    def __init__(self, packages: dict[str, Path], root: Path, cache: Path | None = None):
        # Resolved once: every module path below is built from these, so comparing and
        # keying paths needs no further resolve() (a parse calls these thousands of times).
        self.packages = {k: Path(v).resolve() for k, v in packages.items()}
        self.root = Path(root).resolve()
        self._found: dict[tuple, list[Module]] = {}
        self._edges: dict[tuple, list[Module]] = {}
        self._labels: dict[tuple[Path, str], str] = {}
        self.cache_path = Path(cache) if cache else None
        self._cache: dict[str, dict] = {}
        self._used: dict[str, dict] = {}
        self._dirty = False
        self._files: dict[Path, dict] = {}
        self.covered: dict[str, dict] = {}  # digest -> {"roots", "modules"} it covers
        if self.cache_path and self.cache_path.is_file():
            try:
                data = json.loads(self.cache_path.read_text())
                if data.get("version") == self._version():
                    self._cache = data["files"]
            except (ValueError, KeyError, TypeError):
                self._cache = {}  # a damaged cache is rebuilt, never trusted

    @staticmethod
    def _version() -> str:
        """What the cached entries depend on besides a file's bytes: this module's own code
        (how it normalises and reads imports) and the Python whose ``ast`` it uses."""
        own = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
        return f"{own}-py{sys.version_info[0]}.{sys.version_info[1]}"

    def info(self, path: Path) -> dict:
        """``{"digest", "imports"}`` of one file, from the cache when its bytes are known."""
        path = Path(path)
        if path in self._files:
            return self._files[path]
        raw = path.read_bytes()
        key = hashlib.sha256(raw).hexdigest()
        entry = self._cache.get(key)
        if entry is None:
            entry = analyse(raw, str(path))
            self._cache[key] = entry
            self._dirty = True
        self._used[key] = entry
        self._files[path] = entry
        return entry

    def save(self) -> None:
        """Write the cache (only the entries this process used, so it does not grow without
        bound), atomically, when something new was parsed."""
        if not (self.cache_path and self._dirty):
            return
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.cache_path.parent, suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"version": self._version(), "files": self._used}, f)
        os.replace(tmp, self.cache_path)
        self._dirty = False

    # ----- resolution

    def _find(self, dotted: str, search: tuple[Path, ...]) -> list[Module]:
        """The project modules that importing ``dotted`` executes: each package's
        ``__init__`` on the way and the module itself; [] outside the project (or when
        ``dotted`` names no module, as ``from a import name`` may)."""
        key = (dotted, search)
        if key not in self._found:
            self._found[key] = self._lookup(dotted, search)
        return self._found[key]

    def _mapped(self, dotted: str) -> str | None:
        """The longest mapped package that ``dotted`` is or lies in (``posenc.analyses`` over
        ``posenc`` for ``posenc.analyses.aliasing``), or None."""
        found = [p for p in self.packages if dotted == p or dotted.startswith(f"{p}.")]
        return max(found, key=len, default=None)

    def _lookup(self, dotted: str, search: tuple[Path, ...]) -> list[Module]:
        parts = dotted.split(".")
        top = self._mapped(dotted)
        found = []
        if top is not None:
            folder = self.packages[top]
            parent = top.rpartition(".")[0]
            if parent:  # a mapped sub-package runs its parents' __init__ first
                found += self._find(parent, search)
        else:
            top = parts[0]
            for d in search:
                if (d / f"{top}.py").is_file():
                    return [Module(top, d / f"{top}.py", "")] if len(parts) == 1 else []
                if (d / top / "__init__.py").is_file():
                    folder = d / top
                    break
            else:
                return []
        if (folder / "__init__.py").is_file():
            found.append(Module(top, folder / "__init__.py", top))
        depth = top.count(".") + 1
        for i, part in enumerate(parts[depth:], depth):
            name, parent = ".".join(parts[: i + 1]), ".".join(parts[:i])
            if (folder / f"{part}.py").is_file():
                found.append(Module(name, folder / f"{part}.py", parent))
                return found if i == len(parts) - 1 else []
            folder = folder / part
            if not folder.is_dir():
                return []
            if (folder / "__init__.py").is_file():
                found.append(Module(name, folder / "__init__.py", name))
        return found

    def _resolve(self, module: Module, entry: list, search: tuple[Path, ...]) -> list[Module]:
        level, name, names = entry
        if names == EVERY_MODULE and module.path.name == "__init__.py":
            return [
                Module(f"{module.package}.{path.stem}", path, module.package)
                for path in sorted(module.path.parent.glob("*.py"))
                if path.name != "__init__.py"
            ]
        if level:
            base = module.package.split(".") if module.package else []
            if level > 1:
                base = base[: len(base) - (level - 1)]
            name = ".".join([*base, name] if name else base)
            if not name:
                return []
        found = list(self._find(name, search))  # a copy: the lookups are memoised
        for sub in names:  # `from a import b` may import the module a.b
            if sub != "*":
                found += self._find(f"{name}.{sub}", search)
        return found

    def entry(self, path: Path) -> Module:
        """The module a file is, when it is an entry point: a package's module by its
        dotted name, else a script by its stem."""
        path = Path(path).resolve()
        # The deepest mapped folder holding it names it (a mapped sub-package may lie inside
        # its parent's folder).
        by_depth = sorted(self.packages.items(), key=lambda kv: len(kv[1].parts), reverse=True)
        for top, folder in by_depth:
            if path.is_relative_to(folder):
                rel = path.relative_to(folder).with_suffix("").parts
                dotted = ".".join([top, *rel]).removesuffix(".__init__")
                package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
                return Module(dotted, path, package)
        return Module(path.stem, path, "")

    def closure(self, roots: Iterable[Path | str]) -> list[Module]:
        """Every project module the entry points ``roots`` import, directly or transitively,
        the roots included, in a stable order. A script's folder is on ``sys.path`` when it
        runs, so its siblings resolve as top-level modules (the first root's folder, as
        Python puts the running script's folder first)."""
        roots = [Path(r) for r in roots]
        search = tuple(dict.fromkeys(r.resolve().parent for r in roots[:1]))
        seen: dict[Path, Module] = {}
        todo = [self.entry(r) for r in roots]
        # A package's module runs its packages' __init__ first (when imported by name).
        todo += [m for e in list(todo) if e.package for m in self._find(e.name, search)]
        while todo:
            module = todo.pop()
            if module.path in seen:
                continue
            seen[module.path] = module
            edges = (module, search)
            if edges not in self._edges:
                self._edges[edges] = [
                    m
                    for entry in self.info(module.path)["imports"]
                    for m in self._resolve(module, entry, search)
                ]
            todo.extend(self._edges[edges])
        return sorted(seen.values(), key=lambda m: self.label(m))

    def label(self, module: Module) -> str:
        """A module's name in a digest: its dotted name inside a package, else its path
        relative to ``root``, so that moving the checkout changes nothing."""
        path = module.path
        if (path, module.name) not in self._labels:
            if any(path.is_relative_to(folder) for folder in self.packages.values()):
                found = module.name
            elif path.is_relative_to(self.root):
                found = path.relative_to(self.root).as_posix()
            else:
                found = path.name  # a file outside the checkout (a plugin elsewhere): its name
            self._labels[path, module.name] = found
        return self._labels[path, module.name]

    def digest(self, roots: Iterable[Path | str], extra: Iterable[Path | str] = ()) -> dict:
        """``{"digest", "modules", "roots"}``: a digest of the meaning of every module in the
        closure of ``roots`` and in that of each file of ``extra`` (a plugin: run from its own
        folder), the modules' names (what a change to reruns the rule) and the entry points'."""
        modules = {self.label(m): m for m in self.closure(roots)} if roots else {}
        for path in extra:
            modules |= {self.label(m): m for m in self.closure([path])}
        h = hashlib.sha256()
        for label in sorted(modules):
            h.update(f"{label}\0{self.info(modules[label].path)['digest']}\n".encode())
        entries = [self.label(self.entry(r)) for r in [*roots, *extra]]
        found = {"digest": h.hexdigest()[:16], "modules": sorted(modules), "roots": entries}
        self.covered[found["digest"]] = {"roots": entries, "modules": found["modules"]}
        return found


def project_graph(root: Path | str, cache: Path | str | None = None) -> CodeGraph:
    """The graph of a workflow checkout at ``root``: ``posenc`` wherever Python imports it
    from, ``posenc.analyses`` in the checkout's ``analyses/`` (where ``pyproject.toml`` maps
    it; the Snakefile checks that this is the installed one, ``posenc.analysis.discover``)."""
    root = Path(root)
    packages = {"posenc.analyses": root / "analyses"}
    found = package_dir("posenc")
    if found is not None:
        packages["posenc"] = found
    return CodeGraph(packages, root, cache)


def main(argv: list[str] | None = None) -> None:
    """``python -m posenc.codegraph FILE ...``: the modules the entry points FILE import,
    and their digest."""
    import argparse

    parser = argparse.ArgumentParser(description="the project modules that FILE imports")
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--root", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    result = project_graph(args.root).digest(args.roots)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
