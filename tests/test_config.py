"""A wrong config key or value stops the run before any job starts, naming the key."""

import copy

import pytest
import yaml
from workflow_utils import ROOT, copy_workflow, snakemake

from posenc.config import ConfigError, validate_config
from posenc.encodings import ENCODINGS

SCHEMA = ROOT / "config" / "schema.yaml"


def load(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def merged(override):
    """config.yaml with ``override`` merged in, recursively (as snakemake --configfile does)."""
    def update(base, new):
        for k, v in new.items():
            if isinstance(v, dict) and isinstance(base.get(k), dict):
                update(base[k], v)
            else:
                base[k] = v
        return base

    return update(copy.deepcopy(load("config.yaml")), override)


@pytest.mark.parametrize("name", ["config.yaml", "test.yaml", "gpu.yaml"])
def test_shipped_configs_are_valid(name):
    if not (ROOT / "config" / name).exists():
        pytest.skip(f"{name} not present")
    validate_config(merged(load(name)), SCHEMA)


def test_schema_encoding_names_are_the_registry():
    enum = yaml.safe_load((ROOT / "config/schema/encoding_name.yaml").read_text())["enum"]
    assert tuple(enum) == ENCODINGS


# (override, the key the message must name, a fragment of the reason)
BAD = [
    ({"sede": 1}, "sede", "unknown config key"),
    ({"encodings": ["rope", "pe3"]}, "encodings.1", "'pe3'"),
    ({"encodings": []}, "encodings", "should be non-empty"),
    ({"encodings": ["rope", "rope"]}, "encodings", "non-unique"),
    ({"device": "tpu"}, "device", "'tpu'"),
    ({"seed": 1.5}, "seed", "not of type 'integer'"),
    ({"seed": -1}, "seed", "minimum"),
    ({"seed": "zero"}, "seed", "not of type"),
    ({"encoding": {"base": 1}}, "encoding.base", "less than or equal to the minimum"),
    ({"encoding": {"t5_num_buckets": 31}}, "encoding.t5_num_buckets", "multiple of 2"),
    ({"encoding": {"rope_bsae": 10}}, "encoding.rope_bsae", "unknown config key"),
    ({"name": 3}, "name", "not of type 'string'"),
    ({"equivariance": {"d_model": 33}}, "equivariance.d_model", "33"),
    ({"equivariance": {"d_model": 0}}, "equivariance.d_model", "0"),
    ({"similarity": {"dims": [16, 63]}}, "similarity.dims.1", "multiple of 2"),
    ({"rotation": {"d_values": [4, 7]}}, "rotation.d_values.1", "multiple of 2"),
    ({"aliasing": {"max_log2_len": -3}}, "aliasing.max_log2_len", "-3"),
    ({"extrapolation": {"lm": {"seq_len": 0}}}, "extrapolation.lm.seq_len", "0"),
    ({"extrapolation": {"lm": {"seq_len": -128}}}, "extrapolation.lm.seq_len", "-128"),
    ({"extrapolation": {"lm": {"eval": {"multipliers": [0.5, 1, 2]}}}},
     "extrapolation.lm.eval.multipliers", "0.5"),
    ({"extrapolation": {"seeds": [0, 1.5]}}, "extrapolation.seeds.1", "1.5"),
    ({"extrapolation": {"seeds": []}}, "extrapolation.seeds", "non-empty"),
    ({"extrapolation": {"corpus": "no/such/corpus.txt"}}, "extrapolation.corpus",
     "no/such/corpus.txt"),
    ({"extrapolation": {"thresholds": {"alibi_flat_margin_bits": "small"}}},
     "extrapolation.thresholds.alibi_flat_margin_bits", "'small'"),
    ({"extrapolation": {"lm": {"seq_len": 64}}}, "extrapolation.lm.seq_len", "t5_max_distance"),
    ({"extrapolation": {"model": {"d_model": 62}}}, "extrapolation.model.d_model", "62"),
    ({"equivariance": {"thresholds": {"equal_ulps": [64]}}},
     "equivariance.thresholds.equal_ulps", "[64]"),
]


@pytest.mark.parametrize("override,key,reason", BAD, ids=[b[1] for b in BAD])
def test_bad_config_names_key(override, key, reason):
    with pytest.raises(ConfigError) as err:
        validate_config(merged(override), SCHEMA)
    message = str(err.value)
    assert key in message and reason in message, message


def test_bad_config_stops_snakemake_before_any_job(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    (work / "bad.yaml").write_text("encodings: [rope, pe3]\n")
    proc = snakemake(work, "--cores", "1", "--configfile", "bad.yaml", check=False)
    assert proc.returncode != 0
    assert "config key encodings.1 = 'pe3'" in proc.stdout
    assert "Building DAG" not in proc.stdout  # failed at parse time: no job was even planned
    assert not (work / "results").exists()


def test_device_cuda_without_a_gpu_fails_at_once(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    work = copy_workflow(tmp_path / "wf")
    proc = snakemake(work, "--cores", "1", "--configfile", "config/test.yaml",
                     "--config", "device=cuda", check=False)
    assert proc.returncode != 0
    assert "config key 'device' is 'cuda' but torch sees no CUDA device" in proc.stdout
    assert not (work / "results").exists()
