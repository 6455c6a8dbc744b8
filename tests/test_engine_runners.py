"""Every engine's runner on Llama 3.1 8B, through the protocol posenc runs it by: it answers
ok, its inverse frequencies are transformers' to 2 float32 ulps, and the angles read from its
tables are the ones its rotary forward turns unit vectors by. An engine not built here skips,
naming ``make engines`` (CI carries only the engines in ``.venv``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from posenc import engines
from posenc.shipped.reading import ZOO_KEYS

ROOT = Path(__file__).resolve().parents[1]
POSITIONS = [0, 1, 100, 8191, 131071]


def _wrapped(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.remainder(a - b + math.pi, 2 * math.pi).sub(math.pi).abs().max())


@pytest.mark.parametrize("name", list(engines.ENGINES))
def test_the_runner_reads_llama_31_as_transformers_does(name):
    if engines.interpreter(name) is None:
        pytest.skip(f"{name} is not installed: `make engines` builds it")
    entry = json.loads((ROOT / "posenc" / "zoo" / "llama-3.1-8b.json").read_text())
    request = {
        "name": "llama-3.1-8b",
        "config": {k: v for k, v in entry.items() if k not in ZOO_KEYS},
        "context": 131072,
        "positions": POSITIONS,
        "layer_types": [{"name": "all layers", "kind": "full"}],
    }
    answer = engines.run(name, [request])
    result = answer["models"]["llama-3.1-8b"]
    assert result["status"] == "ok", result["reason"]
    assert answer["version"] == engines.version_of(name)
    layer = result["layers"]["all layers"]
    assert layer["source"] and layer["how"]

    config = AutoConfig.for_model(**request["config"])
    reference = LlamaRotaryEmbedding(config).inv_freq.float()
    ours = torch.tensor(layer["inv_freq"], dtype=torch.float32)
    ulp = torch.nextafter(reference, torch.full_like(reference, math.inf)) - reference
    assert ours.shape == reference.shape
    assert float(((ours - reference).abs() / ulp).max()) <= 2

    angles = torch.tensor(layer["angles"], dtype=torch.float64)
    forward = torch.tensor(layer["forward_angles"], dtype=torch.float64)
    assert angles.shape == (len(POSITIONS), reference.numel())
    assert _wrapped(angles, forward) <= 1e-6
