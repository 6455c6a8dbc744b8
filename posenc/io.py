"""Result files: written atomically, so an interrupted job never leaves half a file."""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    # mkstemp creates 0600; results are meant to be read and published: honour the umask.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _clean(value: Any) -> Any:
    """JSON has no NaN/inf: they become null, so a reader never parses a non-standard file."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:  # numpy / torch scalars
        return _clean(value.item())
    return value


def write_json(path: str | os.PathLike, data: Any) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(_clean(data), indent=2, sort_keys=False) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text())


def write_csv(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> None:
    """A tidy CSV: one row per dict, columns in first-seen order."""
    rows = [_clean(r) for r in rows]
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def save_figure(fig, png: str | os.PathLike, svg: str | os.PathLike | None = None, dpi: int = 150):
    """Save a matplotlib figure as PNG (screen) and SVG (print, vector), atomically."""
    import matplotlib.pyplot as plt

    # SVG text as paths would be heavy; keep text as text so the PDF stays searchable.
    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "posenc"  # deterministic element ids across runs
    for path, fmt in ((png, "png"), (svg, "svg")):
        if path is None:
            continue
        with atomic_path(path) as tmp:
            fig.savefig(
                tmp,
                format=fmt,
                dpi=dpi,
                bbox_inches="tight",
                metadata={"Date": None} if fmt == "svg" else {"Software": None},
            )
    plt.close(fig)
