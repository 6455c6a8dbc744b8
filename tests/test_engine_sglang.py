"""SGLang's runner on Llama 3.1 8B: its frequencies are transformers' to 2 float32 ulps, and
its cache's angles are the ones its forward turns unit vectors by."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

ROOT = Path(__file__).resolve().parents[1]
ENGINE = "sglang"
RUNNER = ROOT / "posenc" / "engines" / "runners" / "run_sglang.py"
POSITIONS = [0, 1, 100, 8191, 131071]
NOT_CONFIG = ("source", "advertised_context", "confirmed", "notes")


def _python() -> Path:
    """SGLang's own interpreter (engines/sglang.txt says why not posenc's)."""
    return ROOT / ".engines" / ENGINE / "bin" / "python"


def _wrapped(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.remainder(a - b + math.pi, 2 * math.pi).sub(math.pi).abs().max())


def test_sglang_llama31_matches_transformers(tmp_path):
    python = _python()
    if not python.exists():
        pytest.skip(f"{ENGINE} is not installed: `make engines` builds it")
    entry = json.loads((ROOT / "posenc" / "zoo" / "llama-3.1-8b.json").read_text())
    request = {
        "engine": ENGINE,
        "models": [
            {
                "name": "llama-3.1-8b",
                "config": entry,
                "context": 131072,
                "positions": POSITIONS,
                "layer_types": [{"name": "all layers", "kind": "full"}],
            }
        ],
    }
    answer_path = tmp_path / "answer.json"
    subprocess.run(
        [str(python), str(RUNNER), str(answer_path)],
        input=json.dumps(request),
        text=True,
        check=True,
        capture_output=True,
        timeout=600,
    )
    answer = json.loads(answer_path.read_text())
    result = answer["models"]["llama-3.1-8b"]
    assert result["status"] == "ok", result["reason"]
    layer = result["layers"]["all layers"]

    config = AutoConfig.for_model(**{k: v for k, v in entry.items() if k not in NOT_CONFIG})
    reference = LlamaRotaryEmbedding(config).inv_freq.float()
    ours = torch.tensor(layer["inv_freq"], dtype=torch.float32)
    ulp = torch.nextafter(reference, torch.full_like(reference, math.inf)) - reference
    assert ours.shape == reference.shape
    assert float(((ours - reference).abs() / ulp).max()) <= 2

    angles = torch.tensor(layer["angles"], dtype=torch.float64)
    forward = torch.tensor(layer["forward_angles"], dtype=torch.float64)
    assert angles.shape == (len(POSITIONS), reference.numel())
    assert _wrapped(angles, forward) <= 1e-6
