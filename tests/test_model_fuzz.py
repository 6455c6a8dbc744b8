"""``posenc model`` never shows a traceback: 200 seeded mutations of the zoo's real configs
(types, signs, zeros, non-finite numbers, lengths, missing keys), each run in-process at a
context of at most 4096 positions. Each is either refused in one line with nothing written, or
gives a complete page and model.json with exit 0."""

from __future__ import annotations

import copy
import json
import math
import random
import sys
from pathlib import Path

import pytest

from posenc.cli import main
from posenc.shipped.reading import ZOO_KEYS

ZOO = Path(__file__).resolve().parents[1] / "posenc" / "zoo"
N_MUTATIONS = 200
SEED = 20261205


def paths(node, prefix=()):
    """Every key path into the config's own fields (the zoo's provenance keys left alone)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if not prefix and k in ZOO_KEYS:
                continue
            yield (*prefix, k)
            yield from paths(v, (*prefix, k))
    elif isinstance(node, list) and node and not isinstance(node[0], (dict, list)):
        yield from ((*prefix, i) for i in random.Random(len(node)).sample(range(len(node)), 2))


def mutate(entry: dict, rng: random.Random) -> tuple[dict, str]:
    """One mutation of one field, and what it was."""
    entry = copy.deepcopy(entry)
    where = rng.choice(list(paths(entry)))
    parent = entry
    for k in where[:-1]:
        parent = parent[k]
    key, value = where[-1], parent[where[-1]]
    choices = ["string", "negate", "zero", "nan", "inf", "null", "bool", "list", "object"]
    choices += ["huge", "tiny", "half"]
    if isinstance(parent, dict):
        choices.append("delete")
    if isinstance(value, list):
        choices += ["shorter", "longer", "empty"]
    kind = rng.choice(choices)
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 1
    new = {
        "string": str(value),
        "negate": -number,
        "zero": 0,
        "nan": math.nan,
        "inf": rng.choice((math.inf, -math.inf)),
        "null": None,
        "bool": rng.choice((True, False)),
        "list": [value],
        "object": {"value": value},
        "huge": number * 1e6 if isinstance(number, float) else number * 10**6,
        "tiny": number * 1e-30,
        "half": number + 0.5,
        "shorter": value[:-1] if isinstance(value, list) else None,
        "longer": value + value[-1:] if isinstance(value, list) else None,
        "empty": [],
    }.get(kind)
    if kind == "delete":
        del parent[key]
    else:
        parent[key] = new
    return entry, f"{kind} {'.'.join(map(str, where))}"


def mutations() -> list[tuple[str, dict, str, int]]:
    rng = random.Random(SEED)
    files = sorted(p for p in ZOO.glob("*.json"))
    out = []
    for _ in range(N_MUTATIONS):
        path = rng.choice(files)
        entry, what = mutate(json.loads(path.read_text()), rng)
        out.append((path.stem, entry, what, rng.choice((4096, 1024, 512, 256, 256))))
    return out


@pytest.fixture(autouse=True)
def _transformers_logs_here(capsys):
    """transformers' log handler keeps the stderr of the test that first imported it."""
    from transformers.utils import logging as tlog

    tlog._get_library_root_logger()
    if tlog._default_handler is not None:
        tlog._default_handler.stream = sys.stderr


def test_two_hundred_mutations_refuse_or_measure(tmp_path, capsys):
    outcomes = {"refused": 0, "measured": 0}
    unexpected = []
    for i, (stem, entry, what, context) in enumerate(mutations()):
        path = tmp_path / f"{i:03d}-{stem}.json"
        path.write_text(json.dumps(entry))  # NaN and Infinity as Python's json writes them
        out = tmp_path / f"out{i:03d}"
        status = main(["model", str(path), "--out", str(out), "--context", str(context)])
        captured = capsys.readouterr()
        lines = [
            line
            for line in captured.err.splitlines()
            if line.strip() and not line.startswith("[transformers]")
        ]
        label = f"{path.name} ({what})"
        if status == 2:
            outcomes["refused"] += 1
            assert len(lines) == 1, (label, lines)
            assert lines[0].startswith(f"posenc model: {path}: "), (label, lines)
            assert not out.exists() and captured.out == "", label
            if "could not measure" in lines[0]:  # the safety net: a case posenc should name
                unexpected.append(f"{label}: {lines[0]}")
        else:
            outcomes["measured"] += 1
            assert status == 0, (label, lines)
            assert all(line.startswith("posenc model: warning: ") for line in lines), lines
            folder = out / path.stem
            assert captured.out.strip() == str(folder / "index.html"), label
            m = json.loads((folder / "model.json").read_text())
            assert m["model"] == path.stem and "scheme" in m, label
            assert (folder / "index.html").read_text().rstrip().endswith("</html>"), label
    print(f"fuzz: {outcomes}")
    assert not unexpected, unexpected
    assert outcomes["refused"] and outcomes["measured"]  # both kinds of outcome are exercised
