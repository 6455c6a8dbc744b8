"""The pre-registration record (``config/preregistration.yaml``): for every threshold and recipe
setting, its value, the commit that fixed it and, where results of the claims it decides had
been seen by then, which commit's results and what they showed.

The record is history, written once from ``git log``; this module only reads it, checks its
shape (one line naming the row and the field for a malformed row), looks up what a key holds
now, and hands the report its rows. Torch-free: a code constant's module is imported only when
its current value is asked for.
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# A commit as the record names it: git's short form.
SHA = re.compile(r"[0-9a-f]{7}")
# Keys under these roots name code constants by module path; every other key is a config path.
# A key under analyses names a file of the analyses/ folder, whose package is posenc.analyses.
CODE_ROOTS = ("analyses", "posenc")
# The only reason a row may have no commit: its key is new in uncommitted work.
NEW_KEY_NOTE = "fixed in this change, before any run of it"
FIELDS = ("key", "value", "fixed_at", "changed_after", "note")
CHANGED_AFTER_FIELDS = ("commit", "result")


class PreregistrationError(ValueError):
    """A malformed record: one line naming the file, the row and the field."""


@dataclass(frozen=True)
class ChangedAfter:
    commit: str
    result: str


@dataclass(frozen=True)
class Row:
    key: str
    value: Any
    fixed_at: str | None
    changed_after: ChangedAfter | None
    note: str | None = None

    @property
    def in_code(self) -> bool:
        return self.key.split(".", 1)[0] in CODE_ROOTS


def load(path: str | Path) -> list[Row]:
    """The record's rows, checked (:func:`parse`)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise PreregistrationError(f"{path}: not valid YAML ({err})".replace("\n", " ")) from err
    return parse(data, str(path))


def parse(data: Any, source: str = "pre-registration record") -> list[Row]:
    """Rows from the record's YAML data; a malformed row is a :class:`PreregistrationError`
    naming ``source``, the row (its key where it has one) and the field."""
    if not isinstance(data, list) or not data:
        raise PreregistrationError(f"{source}: must be a non-empty list of rows")
    rows, seen = [], set()
    for index, item in enumerate(data, start=1):
        row = _row(item, f"{source}: row {index}")
        if row.key in seen:
            raise PreregistrationError(f"{source}: row {index} ({row.key}): key listed twice")
        seen.add(row.key)
        rows.append(row)
    return rows


def _row(item: Any, where: str) -> Row:
    if not isinstance(item, dict):
        raise PreregistrationError(f"{where}: must be a mapping with fields {', '.join(FIELDS)}")
    key = item.get("key")
    if not isinstance(key, str) or not re.fullmatch(r"\w+(\.\w+)+", key):
        raise PreregistrationError(f"{where}: field 'key' must be a dotted path, got {key!r}")
    where = f"{where} ({key})"

    def fail(field: str, problem: str) -> PreregistrationError:
        return PreregistrationError(f"{where}: field '{field}' {problem}")

    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        raise fail(unknown[0], f"is not one of {', '.join(FIELDS)}")
    for field in ("value", "fixed_at", "changed_after"):
        if field not in item:
            raise fail(field, "is missing")
    note = item.get("note")
    if note is not None and (not isinstance(note, str) or not note.strip()):
        raise fail("note", "must be a non-empty string when given")
    fixed_at = item["fixed_at"]
    if fixed_at is None:
        if not note or NEW_KEY_NOTE not in note:
            raise fail("fixed_at", f"may be null only with the note '{NEW_KEY_NOTE}'")
    elif not _is_sha(fixed_at):
        raise fail("fixed_at", f"must be a 7-character commit, got {fixed_at!r}")
    return Row(key, item["value"], fixed_at, _changed_after(item["changed_after"], fail), note)


def _changed_after(value: Any, fail) -> ChangedAfter | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail("changed_after", "must be null or a mapping with commit and result")
    unknown = sorted(set(value) - set(CHANGED_AFTER_FIELDS))
    if unknown:
        raise fail(f"changed_after.{unknown[0]}", "is not one of commit, result")
    if not _is_sha(value.get("commit")):
        raise fail(
            "changed_after.commit", f"must be a 7-character commit, got {value.get('commit')!r}"
        )
    result = value.get("result")
    if not isinstance(result, str) or not result.strip():
        raise fail("changed_after.result", "must say, in a sentence, what result had been seen")
    return ChangedAfter(value["commit"], " ".join(result.split()))


def _is_sha(value: Any) -> bool:
    return isinstance(value, str) and SHA.fullmatch(value) is not None


def config_value(config: dict, key: str) -> Any:
    """The value at dotted ``key`` in ``config``; a ``KeyError`` naming the key if absent."""
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"config key {key}: not in the config")
        node = node[part]
    return node


def current_value(key: str, config: dict) -> Any:
    """What ``key`` holds now: the config's value, or a code constant's (its module imported)."""
    if key.split(".", 1)[0] not in CODE_ROOTS:
        return config_value(config, key)
    module, _, name = key.rpartition(".")
    if module.split(".", 1)[0] == "analyses":
        module = f"posenc.{module}"
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise KeyError(f"code setting {key}: {err}") from err


def missing(rows: list[Row], keys: list[str]) -> list[str]:
    """The ``keys`` that have no row, in their order."""
    recorded = {r.key for r in rows}
    return [k for k in keys if k not in recorded]


def mismatches(rows: list[Row], config: dict) -> list[str]:
    """One line per row whose value is not what its key holds now (or whose key is gone)."""
    problems = []
    for row in rows:
        try:
            now = current_value(row.key, config)
        except KeyError as err:
            problems.append(f"{row.key}: recorded {_text(row.value)}, but {err.args[0]}")
            continue
        if now != row.value:
            problems.append(f"{row.key}: recorded {_text(row.value)}, now {_text(now)}")
    return problems


def appendix(rows: list[Row], config: dict | None = None) -> dict[str, Any]:
    """The record as the report's appendix shows it: each row with its value as text and, for a
    config key this run's ``config`` sets otherwise, the run's value beside the recorded one
    (code constants are the code's; the tests hold them to the record); and how many rows there
    are and how many were fixed after results had been seen."""
    shown = []
    for row in rows:
        run_value = None
        if config is not None and not row.in_code:
            try:
                value = config_value(config, row.key)
            except KeyError:
                value = row.value
            run_value = _text(value) if value != row.value else None
        shown.append(
            {
                "key": row.key,
                "value": _text(row.value),
                "run_value": run_value,
                "fixed_at": row.fixed_at,
                "changed_after": (
                    {"commit": row.changed_after.commit, "result": row.changed_after.result}
                    if row.changed_after
                    else None
                ),
                "note": " ".join(row.note.split()) if row.note else None,
            }
        )
    return {
        "rows": shown,
        "total": len(shown),
        "changed_after": sum(row.changed_after is not None for row in rows),
    }


def _text(value: Any) -> str:
    """A value as the config writes it: JSON's spelling of numbers, lists and strings."""
    return json.dumps(value, ensure_ascii=False)
