"""The texts the character language model trains on, named by ``extrapolation.corpus``.

Torch-free: the workflow reads the names at parse time (which file a rule takes as input, which
setting is a built-in). ``posenc.data`` turns a text into character ids and splits it.

* ``null``: ``pydoc_data.topics`` (~465k characters, ships with every CPython), split into
  interleaved whole blocks.
* ``"python-stdlib"``: the ``.py`` sources of the running CPython's standard library (~12M
  characters in 3.11), small enough to read in a fraction of a second and too large for the
  models we train to memorise. Split by whole files (:func:`read_stdlib`).
* any other string: a UTF-8 text file, split like the pydoc topics.
"""

from __future__ import annotations

import functools
import os
import platform
import sysconfig
from dataclasses import dataclass
from pathlib import Path

STDLIB = "python-stdlib"

# Directories whose .py files are not the standard library proper. Tests: CPython's test suite
# (test/), the packages' own test folders (ctypes/test, tkinter/test, unittest/test,
# distutils/tests, lib2to3/tests, idlelib/idle_test). site-packages and dist-packages hold
# third-party code installed next to the interpreter (pip, setuptools, a distribution's
# packages), which differs between installations of one CPython.
EXCLUDED_DIRS = frozenset({"test", "tests", "idle_test", "site-packages", "dist-packages"})


def corpus_file(setting: str | None) -> str | None:
    """The file a corpus setting names, or None for a built-in text (null, ``python-stdlib``):
    a rule's input, and what the config check requires to exist."""
    return None if setting in (None, STDLIB) else setting


def stdlib_root() -> Path:
    """The running interpreter's standard library folder (``sysconfig``'s ``stdlib`` path: the
    base installation's, also inside a virtual environment)."""
    return Path(sysconfig.get_paths()["stdlib"])


def is_stdlib_source(relative: str) -> bool:
    """Whether the file at ``relative`` (a POSIX path under the standard library folder) is
    part of the ``python-stdlib`` corpus: a ``.py`` file that is not a test and says nothing
    about the machine it was built on. Excluded:

    * every file below a directory named ``test``, ``tests`` or ``idle_test`` (at any depth),
      and every ``test_*.py`` file anywhere: the tests, with their data files (lib2to3's test
      data holds deliberately non-UTF-8 sources);
    * every file below ``site-packages`` or ``dist-packages``: third-party code;
    * ``_sysconfigdata_*.py`` and every file below a ``config-*`` directory (the build's
      compiler flags and install paths; ``python-config.py``): two builds of one CPython
      version would otherwise differ in text;
    * ``__pycache__`` holds no ``.py`` files.

    ``doctest.py`` and ``unittest/`` (but not ``unittest/test/``) are library code and stay.
    """
    *folders, name = relative.split("/")
    return (
        name.endswith(".py")
        and not name.startswith(("test_", "_sysconfigdata_"))
        and not any(f in EXCLUDED_DIRS or f.startswith("config-") for f in folders)
    )


@dataclass(frozen=True)
class Sources:
    """A text made of whole files: ``text`` is every file's text in ``paths`` order, and file
    i is ``text[starts[i]:starts[i + 1]]`` (``starts`` has one entry more than ``paths``)."""

    text: str
    paths: tuple[str, ...]  # relative POSIX paths, sorted
    starts: tuple[int, ...]  # character offsets, then len(text)
    python: str  # the interpreter version whose library it is


@functools.cache
def read_stdlib(root: str | None = None) -> Sources:
    """The ``python-stdlib`` corpus: every :func:`is_stdlib_source` file under ``root`` (the
    running interpreter's standard library by default), in sorted order of its relative POSIX
    path (code-point order, so the same on every file system), each decoded as UTF-8 (PEP
    3120's default; no newline translation, so the text is the files' bytes) and, unless empty,
    followed by a newline if it does not end with one, concatenated. A file that is not valid
    UTF-8 is left out (none is, in CPython 3.11 once the tests are excluded). The same
    interpreter gives the same text on every machine: the SHA-256 that training records pins
    it, and another CPython version is another text.

    Cached per process (a text of ~12M characters, read in well under a second): training,
    evaluation and the baselines of one process read it once.
    """
    base = Path(root) if root is not None else stdlib_root()
    if not base.is_dir():
        raise FileNotFoundError(f"corpus {STDLIB}: no standard library folder at {base}")
    found = []
    for folder, subfolders, files in os.walk(base):  # symlinked folders are not followed
        rel = Path(folder).relative_to(base).as_posix()
        prefix = "" if rel == "." else f"{rel}/"
        # Pruned here too, so the test suite's thousands of files are not even listed.
        subfolders[:] = [
            d for d in subfolders if d not in EXCLUDED_DIRS and not d.startswith("config-")
        ]
        found += [prefix + f for f in files if is_stdlib_source(prefix + f)]
    paths, texts = [], []
    for rel in sorted(found):
        try:
            text = (base / rel).read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        paths.append(rel)
        texts.append(text if not text or text.endswith("\n") else text + "\n")
    if not paths:
        raise FileNotFoundError(f"corpus {STDLIB}: no Python sources under {base}")
    starts = [0]
    for text in texts:
        starts.append(starts[-1] + len(text))
    return Sources("".join(texts), tuple(paths), tuple(starts), platform.python_version())


def read_text(setting: str | None) -> str:
    """The corpus text: ``pydoc_data.topics`` when ``setting`` is None, the standard library's
    sources for ``python-stdlib`` (:func:`read_stdlib`), else a UTF-8 file.

    The topics dict is joined in sorted key order, so the text does not depend on dict order.
    """
    if setting is None:
        from pydoc_data.topics import topics

        return "\n\n".join(topics[k] for k in sorted(topics))
    if setting == STDLIB:
        return read_stdlib().text
    file = Path(setting)
    if not file.is_file():
        raise FileNotFoundError(f"config key extrapolation.corpus = {setting!r}: no such file")
    return file.read_text(encoding="utf-8")
