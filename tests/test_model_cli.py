"""``posenc model PATH ...``: a zoo file end to end, the naming rule, and every bad input as one
line naming the file and the key, with nothing written."""

from __future__ import annotations

import json
import shutil
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


def test_a_zoo_file_end_to_end(tmp_path, capsys):
    out = tmp_path / "models"
    assert main(["model", str(ZOO / "gpt-oss-20b.json"), "--out", str(out)]) == 0
    page = out / "gpt-oss-20b" / "index.html"
    assert capsys.readouterr().out.strip() == str(page)
    assert "gpt-oss-20b" in page.read_text()
    m = json.loads((out / "gpt-oss-20b" / "model.json").read_text())
    (name,) = m["inv_freq"]
    assert len(m["inv_freq"][name]["transformers"]) == 32
    assert m["attention_factor"][name]["transformers"] == pytest.approx(1.3465735902799727)
    assert set(m["precision"][name]) == {
        "float32",
        "module_bf16",
        "positions_bf16",
        "storage_bf16",
    }
    assert m["distinguishability"][name]["positions_bf16"]["first_repeat"] == 257


def test_a_folder_is_named_by_itself(tmp_path, capsys):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    assert main(["model", str(folder), "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "my-model" / "model.json").is_file()
    assert main(["model", str(folder / "config.json"), "--out", str(tmp_path / "p")]) == 0
    assert (tmp_path / "p" / "my-model" / "index.html").is_file()


def _bad(tmp_path: Path, case: str) -> tuple[Path, str]:
    """A bad input and the key its error must name."""
    path = tmp_path / f"{case}.json"
    if case == "missing":
        return path, "no such file"
    if case == "not_json":
        path.write_text("{model_type: llama")
        return path, "not JSON"
    entry = dict(LLAMA)
    key = {
        "rope_type": "rope_scaling.rope_type",
        "longrope": "rope_scaling.short_factor",
        "odd_head_dim": "head_dim",
        "odd_rotated": "rotary_pct",  # the key the file sets
        "model_type": "model_type",
    }[case]
    if case == "rope_type":
        entry["rope_scaling"] = {"rope_type": "ntk-by-vibes", "factor": 2.0}
    elif case == "longrope":
        entry["rope_scaling"] = {"rope_type": "longrope", "factor": 8.0}
    elif case == "odd_head_dim":
        entry["head_dim"] = 63
    elif case == "odd_rotated":
        entry.update(model_type="gpt_neox", head_dim=None, hidden_size=400, rotary_pct=0.25)
        entry.pop("head_dim")
        entry["num_attention_heads"] = 4  # 100 × 0.25 = 25 rotated dims
    elif case == "model_type":
        entry["model_type"] = "not_a_model_type"
    path.write_text(json.dumps(entry))
    return path, key


@pytest.mark.parametrize(
    "case",
    ["missing", "not_json", "rope_type", "longrope", "odd_head_dim", "odd_rotated", "model_type"],
)
def test_bad_input_is_one_line_and_nothing_is_written(tmp_path, capsys, case):
    path, key = _bad(tmp_path, case)
    good = tmp_path / "good.json"
    shutil.copy(ZOO / "llama-2-7b.json", good)
    out = tmp_path / "out"
    assert main(["model", str(good), str(path), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if not line.startswith("[transformers]")]
    assert len(lines) == 1, captured.err
    assert str(path) in lines[0] and key in lines[0], lines[0]
    assert not out.exists()
    assert captured.out == ""
