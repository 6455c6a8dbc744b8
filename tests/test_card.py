"""The report card and ``posenc card``: plugins probed before any job, one line for each kind of
bad input with nothing written, the card's cells read from evidence and ledger outcomes, and
text from a plugin escaped in the report. (The whole command on the example plugin runs in
tests/test_platform.py.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fake_report import two_sections
from workflow_utils import run_watched

from posenc import card, cli
from posenc.analyses.aliasing.spec import SPEC as ALIASING
from posenc.analysis import CardColumn
from posenc.encodings import REGISTRY, EncodingSpec, PositionalEncoding
from posenc.io import save_figure, write_json
from posenc.probe import probe
from posenc.report import build_context, render

ROOT = Path(__file__).resolve().parents[1]
CSS = (ROOT / "report_templates" / "style.css").read_text()

HEADER = "import torch\nfrom posenc.encodings import EncodingSpec, PositionalEncoding, register\n"


def plugin(tmp_path: Path, body: str, name: str = "bad.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def bias_plugin(
    tmp_path: Path, score_bias: str, relative: bool = True, summary="A plugin."
) -> Path:
    """A plugin whose one encoding, ``mine``, acts on the scores: ``score_bias`` is the one
    line of its hook."""
    return plugin(
        tmp_path,
        "\n\nclass Mine(PositionalEncoding):\n"
        "    def score_bias(self, q_pos, k_pos, causal):\n"
        f"        {score_bias}\n\n\n"
        f"register(EncodingSpec('mine', 'bias', Mine, relative={relative}, learned=False,\n"
        f"                      citation='a test', summary={summary!r}))\n",
        f"mine_{'relative' if relative else 'absolute'}.py",
    )


def run_card(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``posenc card`` as a user runs it, from ``tmp_path``."""
    return run_watched(
        [sys.executable, "-m", "posenc.cli", "card", *args, "--config", "test"], cwd=tmp_path
    )


def error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr  # one line, no traceback
    return lines[0]


# ----------------------------------------------------------------------------- bad input


# A relative bias, -|i - j| in every head.
DISTANCE = "(-(q_pos[:, None] - k_pos[None, :]).abs().float().expand(self.params.n_heads, -1, -1))"
GOOD = f"return {DISTANCE}"


@pytest.mark.parametrize(
    "body,hook_says",
    [
        ("return torch.zeros(len(q_pos), len(k_pos))", "returned shape (3, 7)"),
        (f"return {DISTANCE} * float('nan')", "returned NaN"),
        ("raise RuntimeError('slopes not ready')", "raised RuntimeError: slopes not ready (at "),
        ("return None", "returned NoneType"),
    ],
    ids=["wrong shape", "nan", "raises", "no hook"],
)
def test_a_broken_hook_stops_the_card_with_one_line_and_writes_nothing(tmp_path, body, hook_says):
    path = bias_plugin(tmp_path, body)
    line = error_line(run_card(tmp_path, str(path)))
    assert line.startswith(f"posenc card: plugin {path}: encoding mine: hook score_bias: ")
    assert hook_says in line
    if "raises" in hook_says or "raised" in hook_says:
        assert f"{path}:" in line  # the plugin's own file and line
    assert not (tmp_path / "cards").exists()


def test_a_raising_hook_names_its_file_and_line(tmp_path):
    path = bias_plugin(tmp_path, "raise RuntimeError('slopes not ready')")
    lines = path.read_text().splitlines()
    lineno = next(i for i, line in enumerate(lines, 1) if "slopes not ready" in line)
    problem = probe(_loaded(path)["mine"], str(path))
    assert problem.endswith(f"raised RuntimeError: slopes not ready (at {path}:{lineno})")


def test_a_false_relative_claim_is_caught_by_the_shift_test(tmp_path):
    # A bias that depends on the query's absolute position, declared relative.
    path = bias_plugin(tmp_path, f"return {DISTANCE} - q_pos[None, :, None].float()")
    problem = probe(_loaded(path)["mine"], str(path))
    assert "hook score_bias: relative=True, but shifting" in problem
    # Declared absolute, the same bias passes.
    honest = bias_plugin(tmp_path, f"return {DISTANCE} - q_pos[None, :, None].float()", False)
    assert probe(_loaded(honest)["mine"], str(honest)) is None


@pytest.mark.parametrize(
    "source,says",
    [
        (None, "plugin {path}: no such file"),
        ("x = 1\n", "plugin {path}: registers no encodings"),
        (
            "from posenc.encodings import Rotary\n"
            "register(EncodingSpec('rope', 'qk', Rotary, relative=True, learned=False,\n"
            "                      citation='x', summary='x'))\n",
            "encoding 'rope' is registered already (at {path}:",
        ),
        ("import no_such_module\n", "ModuleNotFoundError: No module named 'no_such_module' (at"),
    ],
    ids=["missing file", "no encodings", "name collision", "import error"],
)
def test_a_plugin_that_cannot_load_stops_the_card_with_one_line(tmp_path, source, says):
    path = tmp_path / "plugin.py"
    if source is not None:
        plugin(tmp_path, source, "plugin.py")
    shown = "plugin.py" if source is None else str(path)
    line = error_line(run_card(tmp_path, "plugin.py"))
    assert says.format(path=shown) in line, line
    assert not (tmp_path / "cards").exists()


def test_an_unknown_baseline_is_named(tmp_path):
    path = bias_plugin(tmp_path, GOOD)
    line = error_line(run_card(tmp_path, str(path), "--against", "rope", "ropey"))
    assert "--against ropey: not a registered encoding" in line
    assert not (tmp_path / "cards").exists()


def test_a_working_plugin_passes_every_probe(tmp_path):
    path = bias_plugin(tmp_path, GOOD)
    assert probe(_loaded(path)["mine"], str(path)) is None
    # The example a newcomer copies, and every built-in, pass too.
    example = ROOT / "examples" / "alibi_learned_slopes.py"
    assert probe(_loaded(example)["alibi_learned"], str(example)) is None
    for spec in REGISTRY.values():
        assert probe(spec) is None, spec.name


def _loaded(path: Path) -> dict[str, EncodingSpec]:
    """The encodings ``path`` registers, loaded in a registry of their own (a fresh process's
    view), without touching this process' registry."""
    import posenc.encodings as enc

    saved = dict(enc.REGISTRY)
    try:
        namespace: dict = {"__file__": str(path)}
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        return {k: v for k, v in enc.REGISTRY.items() if k not in saved}
    finally:
        enc.REGISTRY.clear()
        enc.REGISTRY.update(saved)


def test_a_bare_positional_encoding_takes_its_places_behaviour(registered):
    # The contract: a PositionalEncoding subclass overriding its hook, registered with acts_on,
    # behaves as a built-in of that place (similarity kernel, timed workload, cost).
    from posenc.encodings import BiasEncoding, build

    class Flat(PositionalEncoding):
        def score_bias(self, q_pos, k_pos, causal):
            import torch

            return torch.zeros(self.params.n_heads, len(q_pos), len(k_pos))

    registered(EncodingSpec("flat", "bias", Flat, relative=True, learned=False,
                            citation="x", summary="x"))  # fmt: skip
    module = build("flat", d_model=8, n_heads=2)
    assert isinstance(module, Flat) and isinstance(module, BiasEncoding)
    assert module.acts_on == "bias" and module.quadratic_cost
    assert REGISTRY["flat"].module.__name__ == "Flat"


# ----------------------------------------------------------------------------- the card


def test_cells_read_evidence_and_each_entrys_verdict():
    ledger = [
        {
            "id": "a.claim",
            "outcomes": {"err": {"rope": "pass", "alibi": "fail"}, "other": {"rope": "fail"}},
        }
    ]
    evidence = {"err": {"rope": 0.5, "alibi": 2.0}, "acc": {"rope": {"4N": 0.9}}, "at": 4}
    columns = [
        CardColumn("error", "err", claim="a.claim"),
        CardColumn("accuracy at {at}N", "acc", key="{encoding}.{at}N"),
        CardColumn("judged elsewhere", "err", claim="a.claim", judged="other"),
    ]
    sections = [
        {"id": "a", "title": "A", "columns": columns, "evidence": evidence, "ledger": ledger}
    ]
    meta = {"rope": {"summary": "RoPE", "plugin": None}, "mine": {"summary": "M", "plugin": "p"}}
    data = card.build(sections, ["rope", "alibi", "mine"], meta)
    assert [c["label"] for c in data["columns"]] == ["error", "accuracy at 4N", "judged elsewhere"]
    rope, alibi, mine = data["rows"]
    assert [(c["text"], c["verdict"]) for c in rope["cells"]] == [
        ("0.5", "pass"),
        ("0.9", None),
        ("0.5", "fail"),  # the number shown, the verdict of other evidence
    ]
    assert alibi["cells"][0] == {
        "value": 2.0,
        "number": "2",
        "unit": "",
        "text": "2",
        "interval": None,
        "single": True,  # a number without an interval is marked as one measurement
        "verdict": "fail",
        "outcome": "fail",
    }
    assert alibi["cells"][1]["verdict"] == alibi["cells"][1]["outcome"] == "missing"
    assert data["marks"] == "† marks a single measurement, shown without an interval."
    assert mine["plugin"] == "p" and mine["cells"][0]["text"] == "—"
    # Each column carries the expected text of the claim that colours it (none here).
    assert [c["claim_expected"] for c in data["columns"]] == [None, None, None]


def test_an_estimate_shows_its_interval_and_the_marks_say_at_what_level():
    column = CardColumn("bits", "bits")
    interval = {"estimate": 1.5, "low": 1.25, "high": 1.75, "level": 0.95}
    sections = [
        {"id": "a", "title": "A", "columns": [column], "evidence": {"bits": {"rope": interval}},
         "ledger": []}
    ]  # fmt: skip
    data = card.build(sections, ["rope"], {})
    [cell] = data["rows"][0]["cells"]
    assert (cell["number"], cell["interval"], cell["single"]) == ("1.5", "1.25–1.75", False)
    assert data["marks"] == "A range beneath a number is its 95% interval."


def test_green_marks_only_a_property_that_holds():
    # A claim may assert that an encoding *lacks* its column's property: "most positions
    # collide" under "distinct to L, bfloat16". Its pass is a weakness confirmed, never green;
    # its fail (positions stay distinct) is red, as every failing claim is.
    ledger = [
        {
            "id": "aliasing.low_precision_collapse",
            "expected": "distinct fraction for each ≤ 0.5",
            "outcomes": {
                "collapse_distinct_fraction": {
                    "rope, bfloat16": "pass",
                    "sinusoidal, bfloat16": "fail",
                }
            },
        }
    ]
    evidence = {
        "distinct_at_length": {"rope, naive bfloat16": 0.01, "sinusoidal, naive bfloat16": 0.9}
    }
    # The aliasing section's own column, as its spec declares it.
    (column,) = (c for c in ALIASING.card if c.claim == "aliasing.low_precision_collapse")
    section = {"id": "aliasing", "title": "A", "columns": [column], "evidence": evidence,
               "ledger": ledger}  # fmt: skip
    data = card.build([section], ["rope", "sinusoidal"], {})
    rope, sinusoidal = (r["cells"][0] for r in data["rows"])
    assert (rope["verdict"], rope["outcome"]) == ("pass", "lacks")
    assert (sinusoidal["verdict"], sinusoidal["outcome"]) == ("fail", "fail")
    assert card.COLOURS["lacks"] != card.COLOURS["holds"]
    assert data["columns"][0]["claim_expected"] == "distinct fraction for each ≤ 0.5"
    # The legend names only the colours the card uses, and says what green means.
    assert [item["outcome"] for item in data["legend"]] == ["lacks", "fail"]
    assert card.OUTCOME_WORDS["holds"].startswith("has the property")
    # A claim that asserts the property colours its pass green, as before.
    assert card.outcome("pass") == "holds" and card.outcome(None) == "none"
    plain = CardColumn(**{**vars(column), "asserts_absence": ()})
    data = card.build([{**section, "columns": [plain]}], ["rope"], {})
    assert data["rows"][0]["cells"][0]["outcome"] == "holds"


def test_what_the_analyses_declare_about_their_columns_names_what_they_read():
    # Which verdicts mean an encoding lacks a property, and which numbers are in which unit, are
    # declared by the analyses beside their columns: each names evidence its column reads (or
    # is judged on), and each unit is one the card's caption explains.
    from posenc.analysis import discover

    declared = {"asserts_absence": set(), "units": set()}
    for spec in discover(ROOT).values():
        for column in spec.card:
            assert set(column.asserts_absence) <= set(column.judged_paths()), column.label
            for path, unit, factor in column.units:
                assert path in column.read() and unit in card.UNIT_WORDS, column.label
                assert isinstance(factor, (int, float)) and factor > 0
            declared["asserts_absence"] |= {(spec.id, p) for p in column.asserts_absence}
            declared["units"] |= {(spec.id, unit) for _, unit, _ in column.units}
    # The columns the card's colours and units were first written for still declare them.
    assert {
        ("aliasing", "collapse_distinct_fraction"),
        ("equivariance", "absolute_shift_weakest"),
    } <= declared["asserts_absence"]
    assert {u for _, u in declared["units"]} == set(card.UNIT_WORDS)


@pytest.mark.parametrize(
    "fields,says",
    [
        ({"asserts_absence": ("other",)}, "asserts_absence names 'other', not evidence"),
        ({"units": (("other", "%", 100),)}, "units entry ('other', '%', 100) must be"),
        ({"units": (("err", "%"),)}, "units entry ('err', '%') must be"),
    ],
    ids=["absence of unread evidence", "unit of unread evidence", "unit without factor"],
)
def test_a_column_declaring_evidence_it_does_not_read_is_refused(fields, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        CardColumn("error", "err", claim="a.claim", **fields)


def test_a_unit_the_caption_cannot_explain_stops_the_card():
    column = CardColumn("error", "err", units=(("err", "furlongs", 1),))
    section = {"id": "a", "title": "A", "columns": [column], "evidence": {"err": {"rope": 1.0}},
               "ledger": []}  # fmt: skip
    with pytest.raises(ValueError, match="unit 'furlongs' is not one the card's caption can"):
        card.build([section], ["rope"], {})


def test_a_column_that_mixes_units_names_the_unit_in_each_cell():
    # Shift invariance: relative encodings in eps of the dtype, absolute ones as a relative
    # change of the output. One unit per cell, and the caption says what each unit is.
    ledger = [
        {
            "id": "equivariance.relative_shift_invariance",
            "outcomes": {
                "relative_shift_ulps": {"rope": "pass"},
                "absolute_shift_weakest": {"sinusoidal": "pass"},
            },
        }
    ]
    evidence = {
        "relative_shift_ulps": {"rope": 1.6},
        "absolute_shift_weakest": {"sinusoidal": 0.441},
    }
    column = CardColumn(
        "shift invariance",
        ("relative_shift_ulps", "absolute_shift_weakest"),
        claim="equivariance.relative_shift_invariance",
        asserts_absence=("absolute_shift_weakest",),
        units=(("relative_shift_ulps", "ε", 1), ("absolute_shift_weakest", "%", 100)),
    )
    section = {"id": "equivariance", "title": "E", "columns": [column], "evidence": evidence,
               "ledger": ledger}  # fmt: skip
    data = card.build([section], ["rope", "sinusoidal"], {})
    rope, sinusoidal = (r["cells"][0] for r in data["rows"])
    assert (rope["text"], rope["number"], rope["unit"]) == ("1.6 ε", "1.6", "ε")
    assert sinusoidal["text"] == sinusoidal["number"] == "44.1%"
    # Invariant under a shift: holds. An absolute encoding changes: it lacks the property.
    assert (rope["outcome"], sinusoidal["outcome"]) == ("holds", "lacks")
    [units] = data["caption"]
    assert "ε, the machine epsilon of the dtype" in units and "%, a relative change" in units


def test_near_above_far_is_defined_as_its_claim_defines_it():
    # The number is the claim's own measurement (similarity.monotone_near: half periods of
    # the fastest wave, pi / omega_max); the column's note and caption, as its spec declares
    # them, say so, with omega_max from the section's summary and the claim's expected text.
    spec = discover_spec("similarity")
    [column] = [c for c in spec.card if c.claim == "similarity.monotone_near"]
    [claim] = [c for c in spec.claims if c.id == "similarity.monotone_near"]
    assert "fastest wave" in claim.statement
    assert "fastest wave" in column.note and "slowest" not in column.note
    ledger = [
        {
            "id": claim.id,
            "expected": "first offset not falling, in half periods, for each > 1",
            "outcomes": {"monotone_reach": {"rope kernel": "pass"}},
        }
    ]
    section = {
        "id": "similarity",
        "title": "S",
        "columns": [column],
        "evidence": {"monotone_reach": {"rope kernel": 1.27}},
        "summary": {"omega_max": 1.0},
        "ledger": ledger,
    }
    data = card.build([section], ["rope"], {})
    note = data["columns"][0]["note"]
    assert "fastest wave" in note and "slowest" not in note and "ω_max = 1)" in note
    [caption] = data["caption"]
    assert "fastest wave" in caption and "for each > 1" in caption
    assert data["rows"][0]["cells"][0]["outcome"] == "holds"


def discover_spec(name: str):
    from posenc.analysis import discover

    return discover(ROOT)[name]


@pytest.mark.parametrize("n_encodings", [7, 10, 14])
def test_the_card_is_drawn_at_the_width_the_pdf_prints_it(tmp_path, n_encodings):
    # Drawn 15 inches wide and printed at 7, the card's numbers were 3.5 pt. Now the figure
    # is no wider than the PDF's text (so it is printed at its own size) and no type in it is
    # smaller than 6 pt, however many encodings it has.
    import xml.etree.ElementTree as ET

    names = [f"encoding_{i}" for i in range(n_encodings)]
    columns = [CardColumn(f"property {j}", "x") for j in range(12)]
    evidence = {"x": {n: 0.00567 for n in names}}
    section = {"id": "a", "title": "A", "columns": columns, "evidence": evidence, "ledger": []}
    data = card.build([section], names, {})
    svg = tmp_path / "card.svg"
    save_figure(card.figure(data), tmp_path / "card.png", svg)
    root = ET.parse(svg).getroot()
    width_in = float(root.get("width").removesuffix("pt")) / 72
    assert width_in <= 7.0  # A4 less the PDF's margins: 178 mm
    sizes = [float(m) for m in re.findall(r"font-size: (\d+(?:\.\d+)?)px", svg.read_text())]
    assert sizes and min(sizes) >= 6


def test_each_cell_is_drawn_in_its_outcomes_colour_with_its_number():
    # Every state the legend names, inconclusive and no verdict (an n/a claim's) included,
    # coloured as the page's table colours it; a failure's number in bold.
    import matplotlib.pyplot as plt
    from matplotlib import colors

    names = ["holds", "lacks", "fails", "unsure", "unjudged", "unmeasured"]
    verdicts = {"holds": "pass", "lacks": "pass", "fails": "fail", "unsure": "inconclusive"}
    columns = [
        CardColumn("has it", ("x",), claim="a.has"),
        CardColumn("lacks it", ("y",), claim="a.lacks", asserts_absence=("y",)),
    ]
    values = {n: 0.25 * (i + 1) for i, n in enumerate(names[:-1])}
    evidence = {"x": values, "y": values}
    ledger = [
        {"id": "a.has", "outcomes": {"x": {n: v for n, v in verdicts.items() if n != "lacks"}}},
        {"id": "a.lacks", "outcomes": {"y": {"lacks": "pass"}}},
    ]
    section = {"id": "a", "title": "A", "columns": columns, "evidence": evidence,
               "ledger": ledger}  # fmt: skip
    data = card.build([section], names, {})
    fig = card.figure(data)
    [ax] = [a for a in fig.axes if a.collections]
    [mesh] = ax.collections
    drawn = np.array([colors.to_hex(c) for c in mesh.get_facecolors()]).reshape(2, len(names))
    shown = [[card.COLOURS[r["cells"][i]["outcome"]] for r in data["rows"]] for i in range(2)]
    assert drawn.tolist() == shown
    assert [r["cells"][0]["outcome"] for r in data["rows"]] == [
        "holds", "none", "fail", "inconclusive", "none", "missing"
    ]  # fmt: skip
    assert data["rows"][1]["cells"][1]["outcome"] == "lacks"
    texts = {(t.get_position(), t.get_text()): t for t in ax.texts}
    # The failure, a single measurement (no interval): its number marked †.
    assert texts[(2.5, 0.5), "0.75 †"].get_fontweight() == "bold"
    assert texts[(5.5, 0.5), "—"]  # not measured
    plt.close(fig)


def test_an_estimate_is_drawn_with_its_interval_beneath():
    import matplotlib.pyplot as plt

    interval = {"estimate": 1.5, "low": 1.25, "high": 1.75, "level": 0.95}
    section = {"id": "a", "title": "A", "columns": [CardColumn("bits", ("bits",))],
               "evidence": {"bits": {"rope": interval}}, "ledger": []}  # fmt: skip
    fig = card.figure(card.build([section], ["rope"], {}))
    [ax] = [a for a in fig.axes if a.collections]
    texts = {(t.get_position(), t.get_text()) for t in ax.texts}
    assert ((0.5, 0.36), "1.5") in texts and ((0.5, 0.76), "1.25–1.75") in texts
    plt.close(fig)


def test_plugin_text_is_escaped_in_the_card(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hostile = '<script>alert("card")</script>'
    meta = {"mine": {"summary": hostile, "plugin": "p.py"}}
    data = card.build([], ["mine"], meta)
    save_figure(card.figure(data), "card.png", "card.svg")
    write_json("card.json", {**data, "png": "card.png", "svg": "card.svg"})
    fake = two_sections(tmp_path)
    context = build_context(**fake, card="card.json")
    for medium in ("screen", "print"):
        html = render(context, fake["template_dir"], medium, CSS)
        assert "<script" not in html
        assert "&lt;script&gt;alert(&#34;card&#34;)&lt;/script&gt;" in html
        assert 'id="card"' in html and html.index('id="card"') < html.index('id="claims"')


def test_the_card_study_adds_what_the_sections_need():
    known = {name: {"plugin": None} for name in REGISTRY} | {"mine": {"plugin": "p.py"}}
    overrides, mine, added = cli.card_config([Path("/p.py")], ["alibi"], "test", known)
    assert mine == ["mine"]
    # The test config stretches RoPE and randomizes the learned table's positions.
    assert overrides["encodings"][:2] == ["mine", "alibi"]
    assert {"rope", "learned"} <= set(overrides["encodings"])
    assert {"rope", "learned"} <= set(added) and "alibi" not in added
    default, _, added = cli.card_config([Path("/p.py")], None, "default", known)
    base = cli.merged([ROOT / "config" / "config.yaml"])["encodings"]
    assert default["encodings"] == ["mine", *base] and added == {}


def test_the_card_json_is_plain_data(tmp_path):
    # Intervals, facts and routed cells alike: card.json holds what the report shows, unchanged
    # by a round trip through JSON (no tuples, no objects).
    interval = {"estimate": 1.5, "low": 1.2, "high": 1.9}
    evidence = {"bits": {"rope": interval}, "fact": {"rope": True}, "f": {"ours": 0.1}}
    columns = [
        CardColumn("bits", "bits"),
        CardColumn("fact", "fact"),
        CardColumn("routed", (), routes=(("rope", "f", "ours", None),)),
    ]
    section = {"id": "a", "title": "A", "columns": columns, "evidence": evidence, "ledger": []}
    data = card.build([section], ["rope"], {"rope": {"summary": "RoPE", "plugin": None}})
    assert [c["text"] for c in data["rows"][0]["cells"]] == ["1.5", "yes", "0.1"]
    assert json.loads(json.dumps(data)) == data


def test_routed_cells_read_each_encodings_own_evidence_and_claim():
    # An analysis of named formulas (conformance) routes each encoding to its own number.
    ledger = [
        {"id": "c.rope", "outcomes": {"rope_err": {"ours": "pass"}}},
        {"id": "c.t5", "outcomes": {"t5_bad": {"ours": "fail"}}},
    ]
    evidence = {"rope_err": {"ours": 0.1, "lib": 0.2}, "t5_bad": {"ours": 3}}
    column = CardColumn(
        "conformance",
        (),
        routes=(("rope", "rope_err", "ours", "c.rope"), ("t5_bias", "t5_bad", "ours", "c.t5")),
    )
    section = {"id": "c", "title": "C", "columns": [column], "evidence": evidence, "ledger": ledger}
    rows = card.build([section], ["rope", "t5_bias", "alibi"], {})["rows"]
    assert [r["cells"][0]["text"] for r in rows] == ["0.1", "3", "—"]
    assert [r["cells"][0]["verdict"] for r in rows] == ["pass", "fail", "missing"]
    # Columns travel to the card's job as plain data and come back the same, every field a
    # spec declares included.
    import dataclasses

    from posenc.analysis import discover

    declared = [c for spec in discover(ROOT).values() for c in spec.card]
    for c in [column, *declared]:
        assert CardColumn(**json.loads(json.dumps(dataclasses.asdict(c)))) == c
