"""The shipped section's measurements: each scaling type's frequencies (posenc and the float64
formula) against a loop written from the paper, and transformers' within the agreement bound;
the precision scan and the distinguishability scan against brute force at small L; the float32
path against transformers' own forward; the issue's Llama 3.1 figures."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc.shipped import formula
from posenc.shipped.frequencies import LayerType, layer_types, posenc_frequencies, ulps
from posenc.shipped.precision import distinguishability, path_angles, precision_rows
from posenc.shipped.reading import build_config, rotary_class

ZOO = Path(__file__).resolve().parents[1] / "posenc" / "zoo"
AGREE_ULPS = 16  # config.yaml shipped.thresholds.agree_ulps
D, BASE, L = 64, 10000.0, 2048
PHI_SHORT = [1.0 + 0.01 * i for i in range(D // 2)]
PHI_LONG = [1.0 + 1.5 * i for i in range(D // 2)]


def by_hand(kind: str, p: dict) -> list[float]:
    """The papers' frequencies, one pair at a time (d = 64, base 1e4, L = 2048)."""
    out = []
    s = p.get("factor", 1.0)
    for i in range(D // 2):
        w = 1.0 / BASE ** (2 * i / D)  # Su et al. 2021
        if kind == "linear":  # Chen et al. 2023: positions / s
            w = w / s
        elif kind == "yarn":  # Peng et al. 2023, code's rounded ramp over pair indices
            low = math.floor(D * math.log(L / (32 * 2 * math.pi)) / (2 * math.log(BASE)))
            high = math.ceil(D * math.log(L / (1 * 2 * math.pi)) / (2 * math.log(BASE)))
            ramp = min(max((i - low) / (high - low), 0), 1)
            w = (1 - ramp) * w + ramp * w / s
        elif kind == "llama3":  # Meta's apply_scaling: low 1, high 4
            lam = 2 * math.pi / w
            if lam > L:
                w = w / s
            elif lam >= L / 4:
                smooth = (L / lam - 1) / 3
                w = (1 - smooth) * w / s + smooth * w
        elif kind == "longrope":  # Ding et al. 2024 as Phi-3: short factors up to L
            w = w / PHI_SHORT[i]
        elif kind == "proportional":  # Barbero et al. 2024: the fastest p·d/2 pairs turn
            w = w / s if i < int(0.25 * D // 2) else 0.0
        out.append(w)
    return out


CASES = {
    "default": {},
    "linear": {"factor": 4.0},
    "dynamic": {"factor": 4.0},
    "yarn": {"factor": 8.0},
    "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
    "longrope": {"factor": 16.0, "short_factor": PHI_SHORT, "long_factor": PHI_LONG},
    "proportional": {"partial_rotary_factor": 0.25},
}


def llama_config(kind: str, params: dict):
    rope = {"rope_type": kind, "rope_theta": BASE, **params}
    if kind not in ("default", "linear", "dynamic", "proportional"):
        rope["original_max_position_embeddings"] = L
    entry = {
        "model_type": "llama",
        "hidden_size": 4 * D,
        "num_attention_heads": 4,
        "head_dim": D,
        "max_position_embeddings": L * int(params.get("factor", 1)),
        "rope_parameters": rope,
    }
    return build_config(entry, kind)


@pytest.mark.parametrize("kind", CASES)
def test_frequencies_against_the_paper_loop_and_transformers(kind):
    params = CASES[kind]
    (lt,), module, why = layer_types(llama_config(kind, params))
    assert why is None and lt.rope_type == kind
    expected = np.array(by_hand(kind, params))
    np.testing.assert_allclose(lt.formula, expected, rtol=1e-13, atol=0)
    np.testing.assert_allclose(lt.posenc, expected, rtol=1e-13, atol=0)
    assert ulps(lt.transformers, expected) <= AGREE_ULPS
    assert lt.transformers_factor == pytest.approx(lt.formula_factor, rel=1e-6)
    assert lt.posenc_factor == pytest.approx(lt.formula_factor, rel=1e-12)


def test_attention_factors_follow_the_papers():
    yarn = layer_types(llama_config("yarn", CASES["yarn"]))[0][0]
    assert yarn.formula_factor == pytest.approx(0.1 * math.log(8.0) + 1)
    rope = layer_types(llama_config("longrope", CASES["longrope"]))[0][0]
    assert rope.formula_factor == pytest.approx(math.sqrt(1 + math.log(16) / math.log(L)))


def test_llama3_empty_band_is_a_step():
    params = {"factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0}
    lt = LayerType("all", "llama3", BASE, D, {**params, "original_max_position_embeddings": L}, L)
    got = np.array(posenc_frequencies(lt).inv_freq)
    plain = np.array(formula.plain(D, BASE))
    step = np.where(2 * np.pi / plain > L, plain / 16, plain)
    np.testing.assert_allclose(got, step, rtol=1e-15)


def test_ulps_counts_float32_spacing():
    one = np.array([1.0])
    assert ulps(one + 2**-23, one) == pytest.approx(1.0)
    assert ulps(np.array([0.0]), np.array([0.0])) == 0.0


def _bf16_integer(p: int) -> float:
    """p rounded to bfloat16's 8 significant bits, ties to even, by hand."""
    if p < 256:
        return float(p)
    shift = p.bit_length() - 8
    q, r = divmod(p, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q % 2):
        q += 1
    return float(q << shift)


def test_precision_scan_against_brute_force():
    inv32 = np.array(by_hand("llama3", CASES["llama3"]), dtype=np.float32)
    omega = np.array(by_hand("llama3", CASES["llama3"]))
    positions = torch.arange(0, 600)
    rows = precision_rows(positions, inv32, omega, seed=0)

    def wrap(x):
        return abs(x - 2 * math.pi * round(x / (2 * math.pi)))

    for path, position_of in (("float32", float), ("positions_bf16", _bf16_integer)):
        for r in rows[path][::37]:
            p, q = r["position"], r["q"]
            got = [float(np.float32(position_of(p)) * w) for w in inv32]
            got_q = [float(np.float32(position_of(q)) * w) for w in inv32]
            brute = max(wrap(g - p * w) for g, w in zip(got, omega))
            relative = max(wrap((g - gq) - (p - q) * w) for g, gq, w in zip(got, got_q, omega))
            assert r["max_angle_error"] == pytest.approx(brute, rel=1e-9, abs=1e-15)
            assert r["relative_error"] == pytest.approx(relative, rel=1e-9, abs=1e-12)
    for r in rows["float32"]:
        assert r["inv_freq_part"] == pytest.approx(
            max(r["position"] * abs(float(a) - b) for a, b in zip(inv32, omega)), abs=1e-15
        )


def test_distinguishability_against_brute_force():
    inv32 = np.array(formula.plain(16, BASE), dtype=np.float32)
    n = 400
    sampled = torch.tensor([500, 1000, 3000])
    found = distinguishability(inv32, 5000, n, sampled, window=4)
    for path, entry in found.items():
        rows = path_angles(torch.arange(n), torch.tensor(inv32), path)
        table = torch.cat((rows.float().cos(), rows.float().sin()), -1)
        if path == "storage_bf16":
            table = torch.cat(
                (
                    path_angles(torch.arange(n), torch.tensor(inv32), "float32").float().cos(),
                    path_angles(torch.arange(n), torch.tensor(inv32), "float32").float().sin(),
                ),
                -1,
            ).to(torch.bfloat16)
        first = next(
            (q for q in range(n) if any(bool((table[q] == table[p]).all()) for p in range(q))),
            None,
        )
        assert entry["first_repeat"] == first, path
    assert found["positions_bf16"]["first_repeat"] == 257
    assert found["float32"]["sampled_beyond"] == 3


def _zoo(name: str) -> dict:
    return json.loads((ZOO / f"{name}.json").read_text())


def test_float32_path_is_transformers_forward():
    config = build_config(_zoo("llama-3.1-8b"))
    module = rotary_class(config)(config)
    positions = torch.tensor([0, 1, 4097, 131071, 10485759])
    cos, sin = module(torch.zeros(1, 5, 128), positions[None])
    theta = path_angles(positions, module.inv_freq, "float32").float()
    assert torch.equal(cos[0, :, :64], theta.cos())
    assert torch.equal(sin[0, :, :64], theta.sin())


def test_llama31_figures_of_the_issue():
    """0.005 rad at 131 071; 0.43 rad at 10 485 759, of which 0.19 from the float32 product."""
    (lt,), _, _ = layer_types(build_config(_zoo("llama-3.1-8b")))
    rows = precision_rows(torch.tensor([131071, 10485759]), lt.transformers, lt.formula, 0)
    near, far = rows["float32"]
    assert near["max_angle_error"] == pytest.approx(0.005, abs=5e-4)
    assert far["max_angle_error"] == pytest.approx(0.43, abs=0.01)
    assert far["product_part"] == pytest.approx(0.19, abs=0.01)
    assert 3.0e-7 < float(np.max(np.abs(lt.transformers - lt.formula) / lt.formula)) < 3.3e-7


def test_the_config_names_zoo_models_and_editing_one_reruns_the_section(tmp_path, monkeypatch):
    """A model the zoo does not hold stops the run naming the key; the rule's ``data`` param
    holds a digest of each zoo file it reads, so an edit reruns it and a moved run does not."""
    from posenc.analyses.shipped import spec

    cfg = {"models": ["llama-3.1-8b", "no-such-model"], "window": 8, "exact_max_positions": 64}
    (problem,) = spec.check_config({"shipped": cfg})
    assert "shipped.models" in problem and "'no-such-model'" in problem
    config = {"shipped": {**cfg, "models": ["llama-3.1-8b", "bloom-560m"]}}
    digests = spec.data(config)
    files = [k for k in digests if k.endswith(".json")]
    assert files == ["llama-3.1-8b.json", "bloom-560m.json"]  # as the config names them
    # and each engine the section runs, by its version: installing another reruns it.
    from posenc.engines import installed, version_of

    engines = {k: v for k, v in digests.items() if k.startswith("engine ")}
    assert engines == {f"engine {name}": version_of(name) for name in installed()}
    # and each runner's file, which no import reaches: editing one reruns the section.
    assert sorted(k for k in digests if k.startswith("runner ")) == [
        f"runner {name}" for name in sorted(installed())
    ]
    monkeypatch.chdir(tmp_path)  # where the run is does not enter the digests
    assert spec.data(config) == digests
    zoo = tmp_path / "zoo"
    shutil.copytree(spec.ZOO, zoo)
    monkeypatch.setattr(spec, "ZOO", zoo)
    (zoo / "llama-3.1-8b.json").write_text((zoo / "llama-3.1-8b.json").read_text() + " ")
    edited = spec.data(config)
    assert edited["llama-3.1-8b.json"] != digests["llama-3.1-8b.json"]
    assert edited["bloom-560m.json"] == digests["bloom-560m.json"]
    assert len(spec.data({"shipped": {**cfg, "models": "all"}})) >= 20
