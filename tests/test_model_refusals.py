"""``posenc model`` on nonsense: every malformed input a practitioner has met is refused in one
line naming the file, the key and what is valid, with nothing written and no traceback; what is
odd but measurable (a factor below 1, a trained length past the context) gives a flagged page
and a warning line; models with no rotary code get a page naming their scheme."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from posenc.cli import main

ZOO = Path(__file__).resolve().parents[1] / "posenc" / "zoo"
LLAMA = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_attention_heads": 4,
    "head_dim": 64,
    "max_position_embeddings": 4096,
    "rope_theta": 10000.0,
}


def zoo(name: str) -> dict:
    return json.loads((ZOO / f"{name}.json").read_text())


def llama(**changes) -> dict:
    return {**LLAMA, **changes}


def without(entry: dict, key: str) -> dict:
    return {k: v for k, v in entry.items() if k != key}


def scaled(rope_type: str, **params) -> dict:
    return llama(rope_scaling={"rope_type": rope_type, **params})


def phi3(**rope) -> dict:
    entry = zoo("phi-3-mini-128k-instruct")
    entry["rope_scaling"] = {**entry["rope_scaling"], **rope}
    return entry


@pytest.fixture(autouse=True)
def _transformers_logs_here(capsys):
    """transformers' log handler keeps the stderr of the test that first imported it; point it
    at this test's, or its warnings land in a closed file."""
    import sys

    from transformers.utils import logging as tlog

    tlog._get_library_root_logger()
    if tlog._default_handler is not None:
        tlog._default_handler.stream = sys.stderr  # not setStream: it flushes the closed one


def run(argv: list[str], capsys) -> tuple[int, list[str], str]:
    """(exit status, stderr lines less transformers' own log lines, stdout)."""
    status = main(argv)
    captured = capsys.readouterr()
    lines = [
        line
        for line in captured.err.splitlines()
        if line.strip() and not line.startswith("[transformers]")
    ]
    return status, lines, captured.out


# (case id, the config written (None: no file), the words the one line must hold). Each message
# names the key and what would be valid; the test prints nothing else.
REFUSED = [
    (
        "theta_string",
        llama(rope_theta="10000"),
        "key rope_theta = '10000' (a string): must be a finite number > 0",
    ),
    (
        "theta_null",
        llama(rope_theta=None),
        "key rope_theta = null: must be a finite number > 0 (or left out",
    ),
    (
        "layers_huge",
        llama(num_hidden_layers=48_000_000),
        "key num_hidden_layers = 48000000: must be at most 4096",
    ),
    (
        "hidden_over_heads_huge",
        without(llama(hidden_size=1 << 24, num_attention_heads=2), "head_dim"),
        "key hidden_size / num_attention_heads: a head of 8388608 dims",
    ),
    ("theta_zero", llama(rope_theta=0), "key rope_theta = 0: must be a finite number > 0"),
    ("theta_negative", llama(rope_theta=-10000.0), "key rope_theta = -10000.0: must be"),
    (
        "theta_nan",
        llama(rope_theta=math.nan),
        "key rope_theta = nan: must be a finite number > 0, not infinite or NaN",
    ),
    ("theta_inf", llama(rope_theta=math.inf), "key rope_theta = inf"),
    ("theta_bool", llama(rope_theta=True), "key rope_theta = True (true/false)"),
    ("theta_list", llama(rope_theta=[10000]), "key rope_theta = [10000] (a list)"),
    (
        "yarn_factor_zero",
        scaled("yarn", factor=0.0, original_max_position_embeddings=1024),
        "key rope_scaling.factor = 0.0: must be a finite number > 0",
    ),
    (
        "yarn_factor_negative",
        scaled("yarn", factor=-4.0, original_max_position_embeddings=1024),
        "key rope_scaling.factor = -4.0",
    ),
    (
        "yarn_factor_inf",
        scaled("yarn", factor=math.inf, original_max_position_embeddings=1024),
        "key rope_scaling.factor = inf",
    ),
    ("yarn_factor_string", scaled("yarn", factor="4"), "key rope_scaling.factor = '4' (a string)"),
    ("linear_factor_zero", scaled("linear", factor=0), "key rope_scaling.factor = 0"),
    ("linear_factor_negative", scaled("linear", factor=-2.0), "key rope_scaling.factor = -2.0"),
    (
        "linear_factor_missing",
        scaled("linear"),
        "key rope_scaling.factor missing (rope_type 'linear')",
    ),
    ("beta_fast_zero", scaled("yarn", factor=4.0, beta_fast=0), "key rope_scaling.beta_fast = 0"),
    (
        "truncate_string",
        scaled("yarn", factor=4.0, truncate="yes"),
        "key rope_scaling.truncate = 'yes' (a string): must be true or false",
    ),
    (
        "rope_type_unknown",
        scaled("ntk-by-vibes", factor=2.0),
        "key rope_scaling.rope_type = 'ntk-by-vibes' is unknown",
    ),
    (
        "rope_scaling_string",
        llama(rope_scaling="yarn"),
        "key rope_scaling = 'yarn' (a string): must be an object or null",
    ),
    (
        "partial_1_5_phi3",
        dict(zoo("phi-3-mini-128k-instruct"), partial_rotary_factor=1.5),
        "key partial_rotary_factor = 1.5: must be a number in (0, 1]",
    ),
    (
        "partial_1_5_mistral",
        dict(zoo("mistral-7b-v0.1"), partial_rotary_factor=1.5),
        "key partial_rotary_factor = 1.5: must be a number in (0, 1]",
    ),
    (
        "partial_zero",
        llama(partial_rotary_factor=0),
        "key partial_rotary_factor = 0: must be a number in (0, 1]",
    ),
    ("partial_negative", llama(partial_rotary_factor=-0.5), "key partial_rotary_factor = -0.5"),
    (
        "partial_odd_width",
        llama(partial_rotary_factor=0.3),
        "key partial_rotary_factor = 0.3: rotates int(64 × 0.3) = 19 dims",
    ),
    (
        "rotary_pct_odd_width",
        dict(without(llama(model_type="gpt_neox", hidden_size=400), "head_dim"), rotary_pct=0.25),
        "key rotary_pct = 0.25: rotates int(100 × 0.25) = 25 dims",
    ),
    ("head_dim_odd", llama(head_dim=63), "key head_dim: a head of 63 dims is odd"),
    ("head_dim_zero", llama(head_dim=0), "key head_dim = 0: must be a whole number > 0"),
    ("head_dim_float", llama(head_dim=64.5), "key head_dim = 64.5: must be a whole number > 0"),
    (
        "head_dim_huge",
        llama(head_dim=1 << 20),
        "key head_dim: a head of 1048576 dims; more than 4096",
    ),
    (
        "heads_zero",
        without(llama(num_attention_heads=0), "head_dim"),
        "key num_attention_heads = 0",
    ),
    (
        "head_below_two",
        without(llama(num_attention_heads=256), "head_dim"),
        "a head of 1 dims (hidden / heads) leaves no pair",
    ),
    (
        "longrope_short_length",
        phi3(short_factor=[1.0] * 47),
        "key rope_scaling.short_factor has 47 numbers: must have one per rotated pair, 48",
    ),
    (
        "longrope_long_length",
        phi3(long_factor=[1.0] * 64),
        "key rope_scaling.long_factor has 64 numbers: must have one per rotated pair, 48",
    ),
    (
        "longrope_string_item",
        phi3(short_factor=[1.0] * 47 + ["1.0"]),
        "key rope_scaling.short_factor[47] = '1.0' (a string)",
    ),
    (
        "longrope_zero_item",
        phi3(long_factor=[0.0] + [1.0] * 47),
        "key rope_scaling.long_factor[0] = 0.0",
    ),
    (
        "longrope_not_list",
        phi3(short_factor=1.0),
        "key rope_scaling.short_factor = 1.0: must be a list of numbers > 0",
    ),
    (
        "longrope_missing",
        phi3(short_factor=None),
        "key rope_scaling.short_factor missing (rope_type 'longrope')",
    ),
    (
        "max_position_missing",
        without(LLAMA, "max_position_embeddings"),
        "key max_position_embeddings missing: give the context to measure at with --context N",
    ),
    (
        "max_position_string",
        llama(max_position_embeddings="4096"),
        "key max_position_embeddings = '4096' (a string): must be a whole number > 0",
    ),
    (
        "max_position_float",
        llama(max_position_embeddings=4096.5),
        "key max_position_embeddings = 4096.5",
    ),
    (
        "max_position_negative",
        llama(max_position_embeddings=-1),
        "key max_position_embeddings = -1",
    ),
    (
        "original_string",
        scaled("yarn", factor=4.0, original_max_position_embeddings="1024"),
        "key rope_scaling.original_max_position_embeddings = '1024' (a string)",
    ),
    (
        "advertised_zero",
        llama(advertised_context=0),
        "key advertised_context = 0: must be a whole number > 0",
    ),
    (
        "mrope_section_sum",
        dict(
            zoo("qwen2-vl-7b-instruct"),
            rope_scaling={"type": "mrope", "mrope_section": [16, 24, 25]},
        ),
        "key rope_scaling.mrope_section = [16, 24, 25] (a list): must be three whole numbers > 0"
        " (t, h, w) summing to the 64 rotated pairs",
    ),
    (
        "text_config_string",
        llama(text_config="llama"),
        "key text_config = 'llama' (a string): must be an object or null",
    ),
    (
        "model_type_missing",
        without(LLAMA, "model_type"),
        "key model_type missing: must name a model type transformers knows",
    ),
    ("model_type_number", llama(model_type=7), "key model_type = 7: must name a model type"),
    (
        "model_type_unknown",
        llama(model_type="not_a_model_type"),
        "key model_type = 'not_a_model_type' is not a model type transformers knows",
    ),
    (
        "nested_theta_nan",
        llama(rope_parameters={"rope_type": "default", "rope_theta": math.nan}),
        "key rope_parameters.rope_theta = nan",
    ),
    (
        "text_config_theta",
        dict(zoo("qwen2-vl-7b-instruct"), text_config={"rope_theta": -1.0}),
        "key text_config.rope_theta = -1.0",
    ),
]


def write(tmp_path: Path, case: str, entry) -> Path:
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(entry))  # NaN and Infinity as Python's json writes them
    return path


@pytest.mark.parametrize("case,entry,words", REFUSED, ids=[c[0] for c in REFUSED])
def test_nonsense_is_refused_in_one_line(tmp_path, capsys, case, entry, words):
    path = write(tmp_path, case, entry)
    out = tmp_path / "out"
    status, lines, stdout = run(["model", str(path), "--out", str(out)], capsys)
    assert status == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"posenc model: {path}: "), lines[0]
    assert words in lines[0], lines[0]
    assert "could not measure" not in lines[0]  # the safety net is for configs not listed here
    assert not out.exists() and stdout == ""


def test_max_position_missing_is_measured_with_context(tmp_path, capsys):
    path = write(tmp_path, "c", without(LLAMA, "max_position_embeddings"))
    status, lines, stdout = run(
        ["model", str(path), "--out", str(tmp_path / "o"), "--context", "2048"], capsys
    )
    assert status == 0, lines
    m = json.loads((tmp_path / "o" / "c" / "model.json").read_text())
    assert m["contexts"] == [2048] and m["context_source"] == "--context"


def _reading_fails(monkeypatch):
    def refuse(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", refuse)


@pytest.mark.parametrize(
    "case,words",
    [
        ("missing", "no such file"),
        ("not_json", "not JSON"),
        ("array", "not a JSON object"),
        ("folder_without_config", "config.json: no such file"),
        ("unreadable", "cannot be read (Permission denied)"),
    ],
)
def test_files_that_are_not_configs(tmp_path, capsys, monkeypatch, case, words):
    path = tmp_path / f"{case}.json"
    if case == "not_json":
        path.write_text("{model_type: llama")
    elif case == "array":
        path.write_text("[1, 2]")
    elif case == "folder_without_config":
        path = tmp_path / "folder"
        path.mkdir()
    elif case == "unreadable":
        path.write_text(json.dumps(LLAMA))
        _reading_fails(monkeypatch)  # chmod 000 does not stop root, who runs CI here
    status, lines, stdout = run(["model", str(path), "--out", str(tmp_path / "o")], capsys)
    assert status == 2 and len(lines) == 1, lines
    assert str(path) in lines[0] and words in lines[0], lines[0]
    assert not (tmp_path / "o").exists() and stdout == ""


@pytest.mark.parametrize(
    "value", ["abc", "1", "0", "-5", "4096.5", str(2**60)], ids=lambda v: f"context_{v}"
)
def test_bad_context_is_one_line(tmp_path, capsys, value):
    path = write(tmp_path, "c", LLAMA)
    status, lines, _ = run(
        ["model", str(path), "--out", str(tmp_path / "o"), "--context", value], capsys
    )
    assert status == 2 and len(lines) == 1, lines
    assert lines[0] == (
        f"posenc model: --context {value}: must be a whole number of positions from 2 to 2^53"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_out_on_a_file_is_one_line(tmp_path, capsys, where):
    path = write(tmp_path, "c", LLAMA)
    blocker = tmp_path / "taken"
    blocker.write_text("mine")
    out = blocker if where == "file" else blocker / "models"
    status, lines, _ = run(["model", str(path), "--out", str(out)], capsys)
    assert status == 2 and len(lines) == 1, lines
    assert lines[0] == f"posenc model: --out {out}: {blocker} is a file, not a folder"
    assert blocker.read_text() == "mine"


@pytest.mark.parametrize(
    "case,entry,words",
    [
        (
            "yarn_factor_half",
            scaled("yarn", factor=0.5, original_max_position_embeddings=1024),
            "key rope_scaling.factor = 0.5 is below 1",
        ),
        (
            "yarn_factor_tiny",
            scaled("yarn", factor=1e-30, original_max_position_embeddings=1024),
            "key rope_scaling.factor = 1e-30 is below 1",
        ),
        (
            "original_past_max",
            scaled("yarn", factor=4.0, original_max_position_embeddings=8192),
            "original_max_position_embeddings = 8192 exceeds max_position_embeddings = 4096",
        ),
    ],
)
def test_odd_but_measurable_is_flagged(tmp_path, capsys, case, entry, words):
    path = write(tmp_path, case, entry)
    status, lines, stdout = run(
        ["model", str(path), "--out", str(tmp_path / "o"), "--context", "1024"], capsys
    )
    assert status == 0
    assert len(lines) == 1 and lines[0].startswith("posenc model: warning: "), lines
    assert words in lines[0], lines[0]
    page = (tmp_path / "o" / case / "index.html").read_text()
    m = json.loads((tmp_path / "o" / case / "model.json").read_text())
    assert "Flagged" in page and words in page
    assert m["warnings"] and m["flags"]


def test_two_inputs_of_one_name_get_two_folders(tmp_path, capsys):
    a, b = tmp_path / "a" / "model", tmp_path / "b" / "model"
    for folder, theta in ((a, 10000.0), (b, 500000.0)):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps(llama(rope_theta=theta)))
    out = tmp_path / "o"
    status, lines, stdout = run(
        ["model", str(a), str(b), "--out", str(out), "--context", "512"], capsys
    )
    assert status == 0
    assert stdout.split() == [
        str(out / "model" / "index.html"),
        str(out / "model-2" / "index.html"),
    ]
    assert lines == [
        f"posenc model: two inputs are named model: this one goes to {out / 'model-2'}"
    ]
    bases = [
        json.loads((out / f / "model.json").read_text())["layer_types"][0]["base"]
        for f in ("model", "model-2")
    ]
    assert bases == [10000.0, 500000.0]


@pytest.mark.parametrize(
    "case,entry,words",
    [
        (
            "bert",
            {"model_type": "bert", "max_position_embeddings": 512},
            "learned positions 0…511: nothing to extrapolate past 512",
        ),
        (
            "gpt2",
            {"model_type": "gpt2", "n_positions": 1024},
            "learned positions 0…1023: nothing to extrapolate past 1024",
        ),
        ("bloom", zoo("bloom-560m"), "ALiBi"),
        ("t5", zoo("t5-v1_1-base"), "T5 relative buckets"),
    ],
)
def test_non_rotary_models_name_their_scheme(tmp_path, capsys, case, entry, words):
    path = write(tmp_path, case, entry)
    status, lines, _ = run(["model", str(path), "--out", str(tmp_path / "o")], capsys)
    assert status == 0, lines
    page = (tmp_path / "o" / case / "index.html").read_text()
    m = json.loads((tmp_path / "o" / case / "model.json").read_text())
    assert words in m["scheme"]["words"] and words in page
    assert "No rotary code to measure" in page
    if case == "bloom":
        assert "slope m" in page and m["layout"]["alibi"]["transformers_ulps"] <= 16
    if case == "t5":
        assert m["layout"]["t5"]["transformers_mismatches"] == 0


def test_contexts_strict_and_the_page(tmp_path, capsys):
    path = ZOO / "qwen2.5-7b-instruct-yarn4.json"
    out = tmp_path / "o"
    argv = ["model", str(path), "--out", str(out), "--context", "4096", "--context", "512"]
    status, lines, stdout = run(argv, capsys)
    assert status == 0
    m = json.loads((out / path.stem / "model.json").read_text())
    assert m["contexts"] == [4096, 512] and m["context"] == 4096
    (lt,) = m["layer_types"]
    assert [b["context"] for b in lt["by_context"]] == [4096, 512]
    # bfloat16 positions repeat from 257 on (256 and 257 round to the same bfloat16).
    assert lt["by_context"][1]["verdict"]["positions_bf16"]["first_repeat"] == 257
    assert any("positions repeat from 257 on" in a["text"] for a in m["advice"])
    page = (out / path.stem / "index.html").read_text()
    assert "<svg" in page and "context 4096" in page and "context 512" in page
    assert "--fail-bg" in page  # the report's stylesheet, inlined
    status, lines, _ = run([*argv, "--strict"], capsys)
    assert status == 1 and lines[-1].startswith("posenc model: --strict: ")


def test_default_context_is_the_advertised_one(tmp_path, capsys):
    path = write(tmp_path, "c", llama(advertised_context=2048))
    assert run(["model", str(path), "--out", str(tmp_path / "o")], capsys)[0] == 0
    m = json.loads((tmp_path / "o" / "c" / "model.json").read_text())
    assert (m["context"], m["context_source"], m["default_context"]) == (
        2048,
        "advertised_context",
        2048,
    )
    page = (tmp_path / "o" / "c" / "index.html").read_text()
    assert "the file's advertised_context" in page


def test_a_hub_id_is_not_downloaded(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, lines, _ = run(["model", "Qwen/Qwen3-8B", "--out", "o"], capsys)
    assert status == 2
    assert lines == [
        "posenc model: Qwen/Qwen3-8B: no such file (posenc model reads files on disk; it does "
        "not download hub ids)"
    ]
    assert not (tmp_path / "o").exists()


def test_a_context_past_learned_positions_is_flagged(tmp_path, capsys):
    path = write(tmp_path, "bert", {"model_type": "bert", "max_position_embeddings": 512})
    argv = ["model", str(path), "--out", str(tmp_path / "o"), "--context", "1024"]
    assert run(argv, capsys)[0] == 0
    m = json.loads((tmp_path / "o" / "bert" / "model.json").read_text())
    assert m["flags"] == [
        "--context 1024 exceeds the 512 learned positions: positions 512…1023 have no vector"
    ]
    assert m["flags"][0] in (tmp_path / "o" / "bert" / "index.html").read_text()
