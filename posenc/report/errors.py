"""What the report raises on a result file it cannot show, and how it reads one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from posenc.io import read_json


class ReportError(ValueError):
    """A result file the report cannot show; the message starts with the file's path."""


def read_result(path: str | Path, what: str) -> Any:
    """The JSON in ``path``; a missing or malformed file is a :class:`ReportError` that names
    it as ``what`` ("metrics", "claims", ...)."""
    try:
        return read_json(path)
    except FileNotFoundError:
        raise ReportError(f"{path}: {what} file is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: {what} file is not valid JSON ({e})") from None
