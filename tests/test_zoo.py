"""The zoo of shipped positional-encoding configs (posenc/zoo/*.json): every file is well formed,
says where its values come from, and builds offline with transformers 5.24, config and (for rotary
models) the model type's own rotary embedding module, whose frequency count must follow from the
file's head size and rotated fraction."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest

ZOO = Path(__file__).resolve().parents[1] / "posenc" / "zoo"
FILES = sorted(ZOO.glob("*.json"))
# Keys the zoo adds to a model's config.json; everything else is passed to transformers.
EXTRA_KEYS = {"source", "advertised_context", "confirmed", "notes"}
CONFIRMED = (
    "official config.json or model card",
    "transformers configuration/modeling file (defaults, docstrings)",
    "copy with stated provenance (duplicated from ",
)
NOT_ROTARY = {"bloom", "t5"}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def config_fields(entry: dict) -> dict:
    """The config.json part of a zoo entry, without model_type."""
    return {k: v for k, v in entry.items() if k not in EXTRA_KEYS | {"model_type"}}


def build_config(entry: dict):
    from transformers import AutoConfig

    return AutoConfig.for_model(entry["model_type"], **config_fields(entry))


def rotary_class(config):
    """The text rotary embedding class of the config's model type (vision ones excluded)."""
    package = type(config).__module__.split(".")[-2]
    module = importlib.import_module(f"transformers.models.{package}.modeling_{package}")
    names = [n for n in dir(module) if n.endswith("RotaryEmbedding") and "Vision" not in n]
    return getattr(module, names[0]) if names else None


def rotated_pairs(entry: dict) -> int:
    """head_dim x rotated fraction / 2, from the file's own fields."""
    if "qk_rope_head_dim" in entry:  # MLA: only the decoupled key part is rotated
        return entry["qk_rope_head_dim"] // 2
    head_dim = entry.get("head_dim") or entry["hidden_size"] // entry["num_attention_heads"]
    fraction = entry.get("partial_rotary_factor", entry.get("rotary_pct", 1.0))
    return int(head_dim * fraction) // 2


@pytest.fixture(scope="module")
def entries() -> dict[str, dict]:
    return {p.stem: load(p) for p in FILES}


def test_zoo_has_at_least_twenty_models():
    assert len(FILES) >= 20, [p.name for p in FILES]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_entry_is_well_formed(path):
    entry = load(path)
    assert isinstance(entry.get("model_type"), str) and entry["model_type"]
    assert entry.get("source"), "every entry names where its values were read"
    context = entry.get("advertised_context")
    assert isinstance(context, int) and not isinstance(context, bool) and context > 0
    assert isinstance(entry.get("confirmed"), str)
    assert entry["confirmed"].startswith(CONFIRMED), entry["confirmed"]
    assert "notes" not in entry or isinstance(entry["notes"], list)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_entry_builds_offline(path):
    entry = load(path)
    config = build_config(entry)
    assert config.model_type == entry["model_type"]
    text = config.get_text_config()
    rotary = rotary_class(config)
    if entry["model_type"] in NOT_ROTARY:
        assert rotary is None
        assert getattr(text, "rope_parameters", None) is None
        return
    assert rotary is not None, f"no rotary embedding class for {entry['model_type']}"
    module = rotary(text)
    inv_freqs = {
        name: buf
        for name, buf in module.named_buffers()
        if name.endswith("inv_freq") and "original" not in name
    }
    assert inv_freqs, "the rotary module holds no inv_freq"
    for name, inv_freq in inv_freqs.items():
        assert inv_freq.shape == (rotated_pairs(entry),), name
        assert bool((inv_freq > 0).all()) and bool((inv_freq[1:] < inv_freq[:-1]).all()), name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_v4_rope_fields_land_in_rope_parameters(path):
    """transformers 5.24 folds v4 rope_scaling and rope_theta (and GPT-NeoX's rotary_emb_base,
    Gemma 3's rope_local_base_freq) into rope_parameters, keeping the base as given."""
    entry = load(path)
    if entry["model_type"] in NOT_ROTARY:
        return
    params = build_config(entry).get_text_config().rope_parameters
    theta = entry.get("rope_theta", entry.get("rotary_emb_base"))
    if entry["model_type"] == "gemma3_text":
        assert params["sliding_attention"]["rope_theta"] == entry["rope_local_base_freq"]
        assert params["full_attention"]["rope_theta"] == theta
        assert params["full_attention"]["rope_type"] == entry["rope_scaling"]["rope_type"]
        return
    assert params["rope_theta"] == theta
    scaling = entry.get("rope_scaling") or {}
    expected_type = scaling.get("rope_type", scaling.get("type", "default"))
    if expected_type == "mrope":
        expected_type = "default"
    assert params["rope_type"] == expected_type
    for key, value in scaling.items():
        if key not in ("type", "rope_type"):
            assert params[key] == value, key


def test_qwen25_pair_differs_only_in_scaling(entries):
    shipped = entries["qwen2.5-7b-instruct"]
    yarn = entries["qwen2.5-7b-instruct-yarn4"]
    assert config_fields(shipped) | {"rope_scaling": None} == config_fields(yarn) | {
        "rope_scaling": None
    }
    assert shipped["model_type"] == yarn["model_type"]
    assert shipped["advertised_context"] == yarn["advertised_context"]
    assert shipped["rope_scaling"] is None
    assert yarn["rope_scaling"] == {
        "factor": 4.0,
        "original_max_position_embeddings": 32768,
        "type": "yarn",
    }


def test_qwen25_yarn_attention_factor():
    """Static YaRN x4 scales cos/sin by 0.1 ln 4 + 1 in transformers 5.24."""
    config = build_config(load(ZOO / "qwen2.5-7b-instruct-yarn4.json"))
    module = rotary_class(config)(config)
    assert module.attention_scaling == pytest.approx(0.1 * math.log(4.0) + 1.0)


def test_phi3_factor_lists_have_half_head_dim_entries(entries):
    entry = entries["phi-3-mini-128k-instruct"]
    half = entry["hidden_size"] // entry["num_attention_heads"] // 2
    assert half == 48
    assert len(entry["rope_scaling"]["long_factor"]) == half
    assert len(entry["rope_scaling"]["short_factor"]) == half


def test_special_fields_survive_into_the_config(entries):
    """The per-layer and per-model extras the analysis reads are kept by transformers 5.24."""
    scout = build_config(entries["llama-4-scout-17b-16e-instruct"])
    assert scout.no_rope_layers == [1, 1, 1, 0] * 12
    assert (scout.attn_temperature_tuning, scout.floor_scale, scout.attn_scale) == (True, 8192, 0.1)
    smol = build_config(entries["smollm3-3b"])
    assert smol.no_rope_layers.count(0) == 9
    oss = build_config(entries["gpt-oss-20b"])
    assert oss.rope_parameters["truncate"] is False
    assert oss.layer_types == entries["gpt-oss-20b"]["layer_types"]
    vl = build_config(entries["qwen2-vl-7b-instruct"]).get_text_config()
    assert vl.rope_parameters["mrope_section"] == [16, 24, 24]
    gemma3 = build_config(entries["gemma-3-4b-it"])
    assert gemma3.layer_types.count("full_attention") == 5
    deepseek = build_config(entries["deepseek-v3"]).rope_parameters
    assert (deepseek["mscale"], deepseek["mscale_all_dim"], deepseek["factor"]) == (1.0, 1.0, 40)


def test_llama4_shipped_integer_temperature_tuning_is_rejected(entries):
    """Recorded transformers 5.24 behaviour: the integer 4 the base Scout config ships for
    attn_temperature_tuning fails its strict bool field, so the zoo stores true."""
    from huggingface_hub.errors import StrictDataclassFieldValidationError

    fields = dict(entries["llama-4-scout-17b-16e-instruct"], attn_temperature_tuning=4)
    with pytest.raises(StrictDataclassFieldValidationError, match="attn_temperature_tuning"):
        build_config(fields)
