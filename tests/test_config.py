"""A wrong config key or value stops the run before any job starts, naming the key.

The schema is assembled as the Snakefile assembles it: ``config/schema.yaml`` (the shared keys
and ``plugins``), one ``analyses/<id>/schema.yaml`` per analysis, and from the registry
(plugins' included) the encoding names and each encoding's block of ``encoding:``, generated
from the hyper-parameters it declares; the analyses' specs bring their semantic checks."""

import functools

import pytest
from configs import PLUGIN, encoding_meta, load, merged
from workflow_utils import ROOT, copy_workflow, snakemake

from posenc import encoding_metadata
from posenc.analysis import discover
from posenc.config import ConfigError, validate_config, workflow_schema
from posenc.encodings import ENCODINGS, REGISTRY

ANALYSES = sorted(p.parent.name for p in ROOT.glob("analyses/*/schema.yaml"))


def schema(encodings=None):
    """The workflow's schema, for the registry's metadata ``encodings`` (this process's)."""
    return workflow_schema(ROOT, ANALYSES, encoding_meta() if encodings is None else encodings)


@functools.cache
def checks():
    """Every spec's semantic checks (read when first needed: a spec a colleague is still
    writing fails the tests that need it, not the collection of this file)."""
    return tuple(check for spec in discover(ROOT).values() for check in spec.checks)


def validate(config, encodings=None):
    return validate_config(config, schema(encodings), checks())


@pytest.mark.parametrize("name", ["config.yaml", "test.yaml", "gpu.yaml"])
def test_shipped_configs_are_valid(name):
    if not (ROOT / "config" / name).exists():
        pytest.skip(f"{name} not present")
    validate(merged(load(name)))


def test_schema_is_assembled_from_the_folders_and_the_registry():
    assembled = schema()
    assert "plugins" in assembled["properties"]
    for name in ANALYSES:
        ref = assembled["properties"][name]["$ref"]
        assert ref == (ROOT / "analyses" / name / "schema.yaml").resolve().as_uri()
    # Every analysis section of the default config has its schema, and no hand-kept copy of
    # the encoding names is left: they come from the registry.
    sections = [k for k in load("config.yaml") if (ROOT / "analyses" / k).is_dir()]
    assert sections and set(sections) <= set(ANALYSES)
    assert assembled["x-encodings"] == list(ENCODINGS)
    assert not (ROOT / "config" / "schema" / "encoding_name.yaml").exists()
    # Nor of their hyper-parameters: one block per encoding that declares any, generated.
    blocks = assembled["properties"]["encoding"]["properties"]
    assert blocks == {n: s.metadata()["params"] for n, s in REGISTRY.items() if s.params}
    assert blocks["t5_bias"]["properties"]["max_distance"]["type"] == "integer"


def test_the_default_config_states_the_declared_defaults():
    # config.yaml's encoding: block shows the study's settings with why; they are the
    # defaults each encoding declares beside its class, so the two cannot disagree.
    stated = load("config.yaml")["encoding"]
    assert stated and all(REGISTRY[name].params for name in stated)
    for name, block in stated.items():
        assert block == {k: REGISTRY[name].settings()[k] for k in block}, name


def test_unknown_encoding_is_rejected_naming_the_key_and_the_known_names():
    with pytest.raises(ConfigError) as err:
        validate(merged({"encodings": [*ENCODINGS[:2], "pe3"]}))
    message = str(err.value)
    assert "config key encodings.2 = 'pe3'" in message
    assert all(repr(name) in message for name in ENCODINGS), message


def test_a_name_registered_by_a_plugin_is_accepted(tmp_path):
    # The Snakefile's path: the plugin registers its encoding, the registry's metadata names
    # it, and the schema built from those names accepts it (and still rejects a typo of it).
    (tmp_path / "plugin.py").write_text(PLUGIN.format(summary="Sinusoidal, base 500."))
    meta = encoding_metadata.metadata(["plugin.py"], root=tmp_path, cache=tmp_path / "cache")
    assert list(meta)[-1] == "plugin_sin500"
    config = merged({"plugins": ["plugin.py"], "encodings": [*ENCODINGS, "plugin_sin500"]})
    validate(config, meta)
    with pytest.raises(ConfigError, match="config key encodings.* = 'plugin_sin500'"):
        validate(config)  # without the plugin's names: unknown
    with pytest.raises(ConfigError, match="'plugin_sin5'"):
        validate(merged({"encodings": ["plugin_sin5"]}), meta)
    # Its hyper-parameter is a key of the encoding: block, typed and bounded as it declares.
    validate(merged({**config, "encoding": {"plugin_sin500": {"base": 200.0}}}), meta)
    with pytest.raises(ConfigError, match="encoding.plugin_sin500.base = 0.5"):
        validate(merged({**config, "encoding": {"plugin_sin500": {"base": 0.5}}}), meta)


def test_analysis_checks_run_after_the_schema():
    def custom(config):
        return [f"config key seed = {config['seed']}: rejected by a spec's check"]

    config = merged({})
    with pytest.raises(ConfigError, match="rejected by a spec's check"):
        validate_config(config, schema(), [*checks(), custom])
    # A schema error comes alone: the checks may assume a config of the right shape.
    with pytest.raises(ConfigError) as err:
        validate_config(merged({"seed": "zero"}), schema(), [custom])
    assert "rejected by a spec's check" not in str(err.value)


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
    (
        {"encoding": {"sinusoidal": {"base": 1}}},
        "encoding.sinusoidal.base",
        "less than or equal to the minimum",
    ),
    (
        {"encoding": {"t5_bias": {"num_buckets": 31}}},
        "encoding.t5_bias.num_buckets",
        "multiple of 2",
    ),
    ({"encoding": {"rope": {"bsae": 10}}}, "encoding.rope.bsae", "unknown config key"),
    ({"encoding": {"rope": {"interleaved": "no"}}}, "encoding.rope.interleaved", "'boolean'"),
    ({"encoding": {"fire": {"mlp_width": 1.5}}}, "encoding.fire.mlp_width", "'integer'"),
    ({"encoding": {"alibi": {"slope": 1}}}, "encoding.alibi", "unknown config key"),  # has none
    ({"encoding": {"rope_base": 10}}, "encoding.rope_base", "unknown config key"),  # flat, of old
    ({"name": 3}, "name", "not of type 'string'"),
    ({"equivariance": {"d_model": 33}}, "equivariance.d_model", "33"),
    ({"equivariance": {"d_modle": 16}}, "equivariance.d_modle", "unknown config key"),
    ({"equivariance": {"d_model": 18, "n_heads": 4}}, "equivariance.d_model", "not divisible"),
    ({"equivariance": {"d_model": 12, "n_heads": 4}}, "equivariance.d_model", "must be even"),
    ({"plugins": ["a.py", "a.py"]}, "plugins", "non-unique"),
    ({"equivariance": {"d_model": 0}}, "equivariance.d_model", "0"),
    ({"similarity": {"dims": [16, 63]}}, "similarity.dims.1", "multiple of 2"),
    ({"rotation": {"d_values": [4, 7]}}, "rotation.d_values.1", "multiple of 2"),
    ({"aliasing": {"max_log2_len": -3}}, "aliasing.max_log2_len", "-3"),
    ({"extrapolation": {"lm": {"seq_len": 0}}}, "extrapolation.lm.seq_len", "0"),
    ({"extrapolation": {"lm": {"seq_len": -128}}}, "extrapolation.lm.seq_len", "-128"),
    (
        {"extrapolation": {"lm": {"eval": {"multipliers": [0.5, 1, 2]}}}},
        "extrapolation.lm.eval.multipliers",
        "0.5",
    ),
    ({"extrapolation": {"lm": {"seeds": [0, 1.5]}}}, "extrapolation.lm.seeds.1", "1.5"),
    ({"extrapolation": {"passkey": {"seeds": []}}}, "extrapolation.passkey.seeds", "non-empty"),
    (
        {"extrapolation": {"corpus": "no/such/corpus.txt"}},
        "extrapolation.corpus",
        "no/such/corpus.txt",
    ),
    (
        {"extrapolation": {"thresholds": {"flat_margin_bits": "small"}}},
        "extrapolation.thresholds.flat_margin_bits",
        "'small'",
    ),
    (
        {"extrapolation": {"lm": {"seq_len": 64}}},
        "extrapolation.lm.seq_len",
        "t5_bias.max_distance",
    ),
    # Press et al.'s protocol for T5's bias: L_train >= 4x its maximum distance, not merely >=.
    (
        {"encoding": {"t5_bias": {"max_distance": 64}}},
        "extrapolation.lm.seq_len",
        "below 4 x encoding.t5_bias.max_distance = 256",
    ),
    ({"extrapolation": {"model": {"d_model": 62}}}, "extrapolation.model.d_model", "62"),
    (
        {"equivariance": {"thresholds": {"equal_ulps": [64]}}},
        "equivariance.thresholds.equal_ulps",
        "[64]",
    ),
]


@pytest.mark.parametrize("override,key,reason", BAD, ids=[b[1] for b in BAD])
def test_bad_config_names_key(override, key, reason):
    with pytest.raises(ConfigError) as err:
        validate(merged(override))
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
    proc = snakemake(
        work,
        "--cores",
        "1",
        "--configfile",
        "config/test.yaml",
        "--config",
        "device=cuda",
        check=False,
    )
    assert proc.returncode != 0
    assert "config key 'device' is 'cuda' but torch sees no CUDA device" in proc.stdout
    assert not (work / "results").exists()


# ----------------------------------------------------------------------------- encodings' checks


def with_encoding_checks(cache):
    """The Snakefile's checks: every spec's, then the configured encodings' own
    (``EncodingSpec.checks``) at every width the analyses build them at."""
    return [*checks(), encoding_metadata.encoding_check(discover(ROOT), ROOT, cache)]


def test_an_encodings_own_check_names_its_key_and_the_width(tmp_path):
    # Partial RoPE's default quarter of 4-wide complexity heads is one dimension: refused
    # before any job, naming the encoding's key and the keys of the width.
    config = merged(load("test.yaml"))
    config["encodings"] = ["rope", "rope_partial"]
    config["complexity"]["head_dim"] = 4
    config["extrapolation"]["randomized_positions"]["encodings"] = {"lm": [], "passkey": []}
    config["extension"]["stretch"]["encodings"] = ["rope"]
    with pytest.raises(ConfigError) as err:
        validate_config(config, schema(), with_encoding_checks(tmp_path))
    message = str(err.value)
    assert "config key encoding.rope_partial.fraction = 0.25: rotates int(0.25 x 4) = 1" in message
    assert "(rope_partial at complexity.d_models.0 = 8, complexity.head_dim = 4;" in message
    assert message.count("rope_partial.fraction") == 1  # one line for every width it fails at
    config["encoding"]["rope_partial"]["fraction"] = 0.5  # two of four: even at every width
    validate_config(config, schema(), with_encoding_checks(tmp_path))
    # The default study's heads (16 wide and up) take the quarter.
    validate_config(
        merged({"encodings": ["rope", "rope_partial"]}), schema(), with_encoding_checks(tmp_path)
    )


def test_encoding_checks_start_no_subprocess_unless_asked_and_are_cached(tmp_path, monkeypatch):
    import subprocess

    cache = tmp_path / "cache"
    encoding_metadata.metadata(root=ROOT, cache=cache)  # the registry's metadata, read once
    real_run = subprocess.run

    def no_subprocess(*args, **kwargs):
        raise AssertionError("a subprocess started")

    monkeypatch.setattr(encoding_metadata.subprocess, "run", no_subprocess)
    # No configured encoding declares a check: nothing to ask the registry (no torch).
    validate_config(
        merged({"encodings": ["none", "rope", "alibi"]}), schema(), with_encoding_checks(cache)
    )
    monkeypatch.setattr(encoding_metadata.subprocess, "run", real_run)
    bad = merged({"encodings": ["rope_partial"], "encoding": {"rope_partial": {"fraction": 0.1}}})
    with pytest.raises(ConfigError, match="rope_partial.fraction = 0.1"):
        validate_config(bad, schema(), with_encoding_checks(cache))
    # The same question again is read back; another fraction is a new one.
    monkeypatch.setattr(encoding_metadata.subprocess, "run", no_subprocess)
    with pytest.raises(ConfigError, match="rope_partial.fraction = 0.1"):
        validate_config(bad, schema(), with_encoding_checks(cache))
    bad["encoding"]["rope_partial"]["fraction"] = 0.3
    with pytest.raises(AssertionError, match="a subprocess started"):
        validate_config(bad, schema(), with_encoding_checks(cache))


def test_run_checks_reports_each_problem_once_per_encoding():
    where = {"a": (16, 4), "b": (32, 8), "c": (64, 4)}  # heads of 4, 4 and 16
    config = {"rope_partial": {"fraction": 0.25}}
    problems = encoding_metadata.run_checks(["rope", "rope_partial"], config, where)
    assert problems == [
        "config key encoding.rope_partial.fraction = 0.25: rotates int(0.25 x 4) = 1 of a "
        "head's 4 dimensions, which must be a positive even number (RoPE turns pairs) "
        "(rope_partial at a; b)"
    ]


def test_an_encodings_check_stops_snakemake_before_any_job(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    (work / "bad.yaml").write_text(
        "encodings: [rope_partial]\nencoding: {rope_partial: {fraction: 0.1}}\n"
    )
    proc = snakemake(work, "--cores", "1", "--configfile", "bad.yaml", check=False)
    assert proc.returncode != 0
    assert (
        "config key encoding.rope_partial.fraction = 0.1: rotates int(0.1 x 16) = 1" in proc.stdout
    )
    assert "Building DAG" not in proc.stdout
    assert not (work / "results").exists()
