"""The engine check's own machinery, without any engine: the protocol end to end through a
runner in a subprocess (a stand-in engine that returns transformers' numbers, or numbers
changed on purpose), the comparison's verdicts, and the refusals. Each real engine's runner
has its own test (test_engine_<name>.py)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from posenc import engines
from posenc.engines import ENGINES, Engine, EngineError, resolve
from posenc.engines.check import engine_checks
from posenc.engines.compare import compare_layer
from posenc.shipped.frequencies import layer_types
from posenc.shipped.model import at_context
from posenc.shipped.reading import build_config

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "posenc" / "zoo"
THRESHOLDS = {"agree_ulps": 16, "angle_rad": 0.1}
POSITIONS = [0, 1, 100, 4095, 8191, 131071]

# A stand-in engine: it answers with transformers' own float32 frequencies and their float32
# angles, perturbed as the request's config asks (``_perturb``: scale one frequency; ``_skew``:
# its forward turns pairs by other angles than its tables'), through the real protocol.
FAKE_RUNNER = """
import sys
import torch
import _protocol
from transformers import AutoConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding


def measure(model):
    cfg = dict(model["config"])
    perturb, skew = cfg.pop("_perturb", None), cfg.pop("_skew", 0.0)
    if cfg.get("model_type") != "llama":
        raise _protocol.CannotExpress("no model for " + cfg.get("model_type"))
    config = AutoConfig.for_model(**cfg)
    inv = LlamaRotaryEmbedding(config).inv_freq.float()
    if perturb:
        inv[perturb[0]] *= perturb[1]
    p = torch.tensor(model["positions"])
    angles = (p.float()[:, None] * inv[None, :]).double()

    def rotate(x, positions):
        a = (positions.float()[:, None] * inv[None, :]) + skew
        n = inv.numel()
        return torch.cat((x[:, :n] * a.cos(), x[:, :n] * a.sin()), dim=1)

    forward = _protocol.forward_probe(rotate, model["positions"], inv.numel(), "half")
    return {
        lt["name"]: {
            "inv_freq": inv.double().tolist(),
            "attention_factor": 1.0,
            "angles": angles.tolist(),
            "forward_angles": forward,
            "source": _protocol.source_of(LlamaRotaryEmbedding),
            "how": "the stand-in",
            "notes": [],
        }
        for lt in model["layer_types"]
    }


_protocol.run("fake", "0", measure)
"""


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """The stand-in engine's blocks for the cases below, from one run of its interpreter (as
    the section runs each engine once for the whole zoo)."""
    runners = tmp_path_factory.mktemp("runners")
    (runners / "_protocol.py").write_text(
        (ROOT / "posenc/engines/runners/_protocol.py").read_text()
    )
    (runners / "run_fake.py").write_text(FAKE_RUNNER)

    @dataclasses.dataclass(frozen=True)
    class Fake(Engine):
        @property
        def runner(self) -> Path:
            return runners / "run_fake.py"

    llama = json.loads((ZOO / "llama-3.1-8b.json").read_text())
    cases = {
        "same": llama,
        # Pair 10's ω ≈ 0.128 rad/position: 1e-4 of it moves the angle at 131071 by 1.7 rad.
        "perturbed": llama | {"_perturb": [10, 1.0001]},
        "skewed": llama | {"_perturb": [10, 1.0001], "_skew": 0.01},
        "skewed_below_float32": llama | {"_skew": 1e-9},
        "qwen3": json.loads((ZOO / "qwen3-8b.json").read_text()),
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(ENGINES, "fake", Fake("fake", "pytest", "Fake"))
        found = engine_checks(
            [(entry, name, 131072 if name != "qwen3" else 40960) for name, entry in cases.items()],
            ["fake"],
            {"per_octave": 2, "seed": 0},
            THRESHOLDS,
        )
    return {name: block["fake"] for name, block in found.items()}


def test_an_engine_that_computes_what_transformers_does_agrees(fake):
    block = fake["same"]
    assert block["status"] == "ok" and block["agrees"] is True
    (row,) = block["rows"]
    assert row["freq_ulps_transformers"] == 0 and row["angle_rad_transformers"] == 0
    assert row["forward_matches_tables"] is True and row["differences"] == []
    # Its angles against the float64 formula are float32's own rounding at 131071, not 0.
    assert 0 < row["angle_rad_formula"] < 0.05
    assert row["source"].startswith("transformers/models/llama/modeling_llama.py:")


def test_a_changed_frequency_is_a_confirmed_difference_naming_the_pair(fake):
    block = fake["perturbed"]
    (row,) = block["rows"]
    assert block["agrees"] is False and row["confirmed"] is True
    assert row["freq_ulps_transformers"] > THRESHOLDS["agree_ulps"]
    assert "pair 10" in row["differences"][0]
    assert row["angle_rad_transformers"] > THRESHOLDS["angle_rad"]
    assert any("angles up to" in d for d in row["differences"])
    assert block["differences"][0]["confirmed"] is True


def test_a_forward_that_disagrees_with_its_tables_leaves_a_difference_unconfirmed(fake):
    (row,) = fake["skewed"]["rows"]
    assert row["forward_matches_tables"] is False
    assert row["differences"] and row["confirmed"] is False
    # A skew below the resolution of a float32 angle is the same reading.
    (row,) = fake["skewed_below_float32"]["rows"]
    assert row["forward_matches_tables"] is True


def test_a_config_the_engine_cannot_express_is_a_finding_not_an_error(fake):
    block = fake["qwen3"]
    assert block["status"] == "cannot_express"
    assert block["reasons"] == ["no model for qwen3"] and block["agrees"] is None


def test_frequencies_are_held_against_those_a_run_of_the_context_uses():
    # LongRoPE past its trained length: transformers switches to the long factors, and so
    # must the reference an engine is held to.
    entry = json.loads((ZOO / "phi-3-mini-128k-instruct.json").read_text())
    config = build_config(entry)
    (lt,) = layer_types(config)[0]
    _, long32 = at_context(config, lt, 131072)
    _, short32 = at_context(config, lt, 4096)
    assert not np.array_equal(long32, short32)
    p = np.array(POSITIONS[:4])
    got = {"inv_freq": short32.tolist(), "angles": (p[:, None] * short32).tolist()}
    row = compare_layer(config, lt, got, 131072, p.tolist(), THRESHOLDS)
    assert row["freq_ulps_transformers"] > THRESHOLDS["agree_ulps"]


def test_unknown_and_missing_engines_are_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("POSENC_ENGINES", str(tmp_path))
    with pytest.raises(EngineError, match="unknown engine 'vlm': the engines are vllm, sglang"):
        resolve(["vlm"])
    missing = [n for n in ENGINES if not engines.in_venv(n)]
    if not missing:
        pytest.skip("every engine is in this environment")
    with pytest.raises(EngineError, match=f"engine {missing[0]} not installed: run `make engines`"):
        resolve([missing[0]])
    # "all" shows every engine, a missing one as unavailable.
    assert resolve("all") == list(ENGINES)
    answer = engines.run(missing[0], [{"name": "m"}])
    assert answer["models"]["m"]["status"] == "unavailable"


def test_posenc_model_refuses_an_unknown_engine_before_reading_anything(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "posenc.cli", "model", str(tmp_path / "none.json"), "--engines",
         "nosuch", "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "posenc model: --engines: unknown engine 'nosuch': the engines are " + ", ".join(ENGINES)
    ]
    assert not (tmp_path / "out").exists()


def test_every_engine_has_a_runner_that_imports_nothing_of_posenc():
    for engine in ENGINES.values():
        assert engine.runner.is_file(), engine.name
        text = engine.runner.read_text()
        assert "import posenc" not in text and "from posenc" not in text, engine.name


def test_a_listed_engine_that_is_not_built_stops_the_run_before_any_job(tmp_path, monkeypatch):
    from posenc.analyses.shipped import spec

    monkeypatch.setenv("POSENC_ENGINES", str(tmp_path))  # nothing built here
    missing = next((n for n in ENGINES if not engines.in_venv(n)), None)
    cfg = {"models": ["llama-3.1-8b"], "window": 8, "exact_max_positions": 64}
    assert spec.check_config({"shipped": cfg | {"engines": "installed"}}) == []
    (problem,) = spec.check_config({"shipped": cfg | {"engines": [missing]}})
    assert problem == (
        f"config key shipped.engines: engine {missing} not installed: run `make engines` "
        f"(it builds .engines/{missing} from engines/<name>.txt)"
    )


@pytest.mark.skipif(not engines.in_venv("megatron-core"), reason="megatron-core not in .venv")
def test_posenc_model_writes_the_engines_object_keyed_by_engine(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "posenc.cli", "model", str(ZOO / "llama-3.2-1b.json"),
         "--engines", "megatron-core", "--out", str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    m = json.loads((tmp_path / "llama-3.2-1b/model.json").read_text())
    block = m["engines"]["megatron-core"]
    assert block["version"] == engines.version_of("megatron-core")
    assert block["status"] == "ok" and block["agrees"] is True and block["differences"] == []
    assert block["expressed"] == ["all layers"]
    page = (tmp_path / "llama-3.2-1b/index.html").read_text()
    assert "Training and serving engines" in page and "Megatron-Core" in page
