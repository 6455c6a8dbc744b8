"""``make engines``: each engine that posenc's own environment does not carry gets an interpreter
of its own, ``.engines/<name>/``, built from the pinned ``engines/<name>.txt``. A file whose
comments give the command ``pip install --no-deps -r engines/<name>.txt`` is installed so,
every package pinned in it: the engine declares dependencies its rotary code does not import
(or omits one it does), and the file says which.

A folder is rebuilt only when its files changed (their digest is kept in the folder), so the
command is cheap to repeat; a failed build leaves no folder behind, and the others go on.
``python -m posenc.engines.build [NAME...]`` (default: every engine with a file).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from posenc.engines import ENGINES, engines_dir, in_venv

STAMP = ".posenc-built"


def files_of(name: str, root: Path) -> list[Path]:
    return [p for p in (root / f"{name}.txt",) if p.is_file()]


def no_deps(file: Path) -> bool:
    """Whether the file's own comments say it installs with ``--no-deps``."""
    comments = [ln for ln in file.read_text().splitlines() if ln.startswith("#")]
    return any(f"--no-deps -r engines/{file.name}" in ln for ln in comments)


def digest(files: list[Path]) -> str:
    h = hashlib.sha256(sys.version.encode())
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def build(name: str, root: Path, target: Path) -> str:
    """Build (or keep) ``target`` for engine ``name``; a one-line report."""
    files = files_of(name, root)
    stamp = digest(files)
    if (target / STAMP).is_file() and (target / STAMP).read_text() == stamp:
        return f"{name}: up to date ({size_mb(target):.0f} MB)"
    shutil.rmtree(target, ignore_errors=True)
    start = time.monotonic()
    base = getattr(sys, "_base_executable", sys.executable)
    steps = [[base, "-m", "venv", str(target)]]
    pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    steps.append([*pip, *(["--no-deps"] if no_deps(files[0]) else []), "-r", str(files[0])])
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"{name}: {' '.join(step[-3:])} failed: {last}")
    (target / STAMP).write_text(stamp)
    return f"{name}: built in {time.monotonic() - start:.0f} s ({size_mb(target):.0f} MB)"


def main(argv: list[str]) -> int:
    root = Path.cwd() / "engines"
    names = argv or [n for n in ENGINES if files_of(n, root)]
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        print(f"make engines: unknown engine {', '.join(unknown)}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        if in_venv(name):
            print(f"{name}: in .venv (the lock's engines extra)")
            continue
        if not files_of(name, root):
            print(f"{name}: no engines/{name}.txt: it cannot be built here", file=sys.stderr)
            failed.append(name)
            continue
        try:
            print(build(name, root, engines_dir() / name), flush=True)
        except RuntimeError as error:
            print(f"make engines: {error}", file=sys.stderr)
            failed.append(name)
    if failed:
        print(f"make engines: not built: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
