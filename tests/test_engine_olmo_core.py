"""The olmo-core runner (posenc/engines/runners/run_olmo_core.py) on Llama 3.1 8B: it answers ok,
its inverse frequencies are transformers' to 2 float32 ulps, and the angles read from its tables
are the ones its rotary forward turns unit vectors by."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE, DISTRIBUTION = "olmo-core", "ai2-olmo-core"
RUNNER = ROOT / "posenc" / "engines" / "runners" / "run_olmo_core.py"
POSITIONS = [0, 1, 100, 8191, 131071]
ZOO_KEYS = ("source", "advertised_context", "confirmed", "notes")


def _interpreter() -> Path | None:
    """.venv's Python where the lock carries the engine, else its own under .engines/."""
    try:
        importlib.metadata.version(DISTRIBUTION)
        return Path(sys.executable)
    except importlib.metadata.PackageNotFoundError:
        own = ROOT / ".engines" / ENGINE / "bin" / "python"
        return own if own.is_file() else None


def test_llama31_matches_transformers(tmp_path):
    python = _interpreter()
    if python is None:
        pytest.skip(f"{ENGINE} is not installed: make engines builds it")
    entry = json.loads((ROOT / "posenc" / "zoo" / "llama-3.1-8b.json").read_text())
    config = {k: v for k, v in entry.items() if k not in ZOO_KEYS}
    request = {
        "engine": ENGINE,
        "models": [
            {
                "name": "llama-3.1-8b",
                "config": config,
                "context": 131072,
                "positions": POSITIONS,
                "layer_types": [{"name": "all layers", "kind": "full"}],
            }
        ],
    }
    env = dict(os.environ, KERAS_BACKEND="torch", PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    answer_path = tmp_path / "answer.json"
    proc = subprocess.run(
        [str(python), str(RUNNER), str(answer_path)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer = json.loads(answer_path.read_text())
    assert answer["engine"] == ENGINE
    got = answer["models"]["llama-3.1-8b"]
    assert got["status"] == "ok", got["reason"]
    layer = got["layers"]["all layers"]

    import torch
    from transformers import AutoConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    reference = LlamaRotaryEmbedding(AutoConfig.for_model(**config)).inv_freq.float()
    inv_freq = torch.tensor(layer["inv_freq"], dtype=torch.float64)
    assert inv_freq.shape == reference.shape
    ulp = torch.as_tensor(np.spacing(reference.numpy()), dtype=torch.float64)
    assert ((inv_freq - reference.double()).abs() <= 2 * ulp).all()

    angles = torch.tensor(layer["angles"], dtype=torch.float64)
    forward = torch.tensor(layer["forward_angles"], dtype=torch.float64)
    assert angles.shape == forward.shape == (len(POSITIONS), reference.numel())
    delta = torch.remainder(angles - forward + torch.pi, 2 * torch.pi) - torch.pi
    assert delta.abs().max() <= 1e-6
