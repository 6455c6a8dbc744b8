"""Plugins: Python files or importable modules that register encodings through the public API,
``from posenc.encodings import EncodingSpec, PositionalEncoding, register``. The Snakefile (via
:mod:`posenc.encoding_metadata`) and every job load them the same way, from the config's
``plugins:``."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

_LOADED: dict[str, object] = {}
# The encodings each loaded plugin registered, by its resolved entry.
REGISTERED: dict[str, list[str]] = {}


class PluginError(ValueError):
    """A plugin that cannot be loaded; the message names it."""


def resolve(entry: str, root: str | Path) -> str:
    """A plugin file relative to the workflow's folder becomes absolute; a module name stays."""
    if entry.endswith(".py"):
        path = Path(entry)
        return str(path if path.is_absolute() else (Path(root) / path).resolve())
    return entry


def load(entries: list[str] | tuple[str, ...], root: str | Path = ".") -> None:
    """Import each plugin once per process (a second call with the same entries is a no-op),
    noting which encodings it registered (:data:`REGISTERED`)."""
    from posenc.encodings import REGISTRY

    for entry in entries:
        target = resolve(entry, root)
        if target in _LOADED:
            continue
        before = set(REGISTRY)
        try:
            if target.endswith(".py"):
                if not Path(target).is_file():
                    raise PluginError(f"plugin {entry}: no such file {target}")
                name = "posenc_plugin_" + hashlib.sha256(target.encode()).hexdigest()[:12]
                spec = importlib.util.spec_from_file_location(name, target)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
            else:
                module = importlib.import_module(target)
        except PluginError:
            raise
        except Exception as error:  # a plugin's own error, named with its file and line
            where = _where(error, target)
            raise PluginError(f"plugin {entry}: {type(error).__name__}: {error}{where}") from error
        _LOADED[target] = module
        REGISTERED[target] = [name for name in REGISTRY if name not in before]


def _where(error: BaseException, target: str) -> str:
    """`` (at FILE:LINE)`` of the deepest frame of ``error`` in the plugin's own file."""
    import traceback

    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if target.endswith(".py") and Path(f.filename).resolve() == Path(target).resolve()
    ]
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def sources(entries: list[str] | tuple[str, ...], root: str | Path = ".") -> list[Path]:
    """The source files of the plugins, found without importing them (for digests)."""
    found = []
    for entry in entries:
        target = resolve(entry, root)
        if target.endswith(".py"):
            found.append(Path(target))
        else:
            spec = importlib.util.find_spec(target)
            if spec is None or spec.origin is None:
                raise PluginError(f"plugin {entry}: no importable module of that name")
            found.append(Path(spec.origin))
    return found
