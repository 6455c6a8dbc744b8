"""vLLM's rotary tables for a config.json, built the way vLLM's model code builds them.

vLLM reads the HF config itself: ``ModelConfig`` loads config.json through
``vllm.transformers_utils.config.get_config`` (transformers' config class, then vLLM's
``patch_rope_parameters``), and each model's attention calls ``get_rope`` with arguments it
takes from that config. This runner loads the config the same way (from a temporary folder, as
``vllm serve DIR --max-model-len CONTEXT`` would) and repeats each model file's ``get_rope``
call; ``how`` names the file and line it follows. No weights, no GPU: the ``forward_native``
path (vLLM's PyTorch implementation) stands in for the CUDA/CPU kernels, which this CPU build
of torch cannot load.
"""

from __future__ import annotations

import inspect
import json
import os
import tempfile
from importlib.metadata import version

import torch

# Set before vLLM is imported: no hub look-ups (the config is local) and quiet logs.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

import _protocol  # noqa: E402
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES  # noqa: E402
from vllm.config import DeviceConfig, ModelConfig, VllmConfig, set_current_vllm_config  # noqa: E402
from vllm.model_executor.layers import rotary_embedding as vre  # noqa: E402
from vllm.model_executor.models import ModelRegistry  # noqa: E402

# posenc's provenance annotations in its zoo entries; not config.json fields.
ANNOTATIONS = ("source", "advertised_context", "confirmed", "notes")
KIND_TO_LAYER_TYPE = {"full": "full_attention", "sliding": "sliding_attention"}


def _line(module, text: str) -> str:
    """``path.py:line`` of the first line of ``module`` containing ``text`` (for ``how``)."""
    path = _protocol.source_of(module).split(":")[0]
    for number, line in enumerate(inspect.getsource(module).splitlines(), 1):
        if text in line:
            return f"{path}:{number}"
    return path


def _rope_calls(hf_config, layer_type: str) -> tuple[dict, str]:
    """get_rope's keyword arguments as the config's vLLM model file passes them."""
    from vllm.model_executor.models import gemma3, gpt_oss, llama, qwen2

    c = hf_config
    model_type = c.model_type
    # Phi3ForCausalLM subclasses LlamaForCausalLM; MistralAttention (models/mistral.py)
    # subclasses LlamaAttention, whose get_rope call it keeps.
    if model_type in ("llama", "phi3", "mistral"):
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        kwargs = dict(
            head_size=head_dim,
            max_position=c.max_position_embeddings,
            rope_parameters=getattr(c, "rope_parameters", None),
            is_neox_style=True,
        )
        where = _line(llama, "self.rotary_emb = get_rope(")
    elif model_type == "qwen2":
        kwargs = dict(
            head_size=c.hidden_size // c.num_attention_heads,
            max_position=c.max_position_embeddings,
            rope_parameters=c.rope_parameters,
            dual_chunk_attention_config=getattr(c, "dual_chunk_attention_config", None),
        )
        where = _line(qwen2, "self.rotary_emb = get_rope(")
    elif model_type == "gemma3_text":
        # Gemma 3 keeps one rope_parameters dict per layer type (local base for sliding).
        kwargs = dict(
            head_size=c.head_dim,
            max_position=c.max_position_embeddings,
            rope_parameters=c.rope_parameters[layer_type],
            is_neox_style=True,
        )
        where = _line(gemma3, "self.rotary_emb = get_rope(")
    elif model_type == "gpt_oss":
        # vLLM's gpt-oss rebuilds a yarn dict from selected keys and keeps float32 tables.
        p = c.rope_parameters
        kwargs = dict(
            head_size=c.head_dim,
            max_position=c.max_position_embeddings,
            dtype=torch.float32,
            rope_parameters={
                "rope_theta": p["rope_theta"],
                "rope_type": "yarn",
                "factor": p["factor"],
                "original_max_position_embeddings": p["original_max_position_embeddings"],
                "beta_fast": p["beta_fast"],
                "beta_slow": p["beta_slow"],
                "truncate": p.get("truncate", True),
            },
            is_neox_style=gpt_oss.OAIAttention.rope_is_neox_style,
        )
        where = _line(gpt_oss, "self.rotary_emb = get_rope(")
    else:
        raise NotImplementedError(
            f"this runner does not yet repeat vLLM's rotary call for model_type {model_type}"
        )
    return kwargs, where


def _inv_freq(rope) -> torch.Tensor | None:
    """The frequencies the engine's own ``_compute_inv_freq`` gives (as its cache uses them)."""
    if isinstance(rope, vre.Phi3LongRoPEScaledRotaryEmbedding):
        factors = rope.long_factor if rope.use_long_rope else rope.short_factor
        return rope._compute_inv_freq(factors)
    if isinstance(rope, vre.LinearScalingRotaryEmbedding):
        return None  # scales positions, not frequencies: see the note
    if isinstance(rope, vre.YaRNScalingRotaryEmbedding):
        return rope._compute_inv_freq(rope.scaling_factor)
    return rope._compute_inv_freq(rope.base)


def _table_and_rotate(rope, positions: torch.Tensor):
    """(cos, sin) rows the forward indexes for ``positions``, and a rotate(x, positions)."""
    if isinstance(rope, vre.Phi3LongRoPEScaledRotaryEmbedding):
        table = rope.long_short_cos_sin_cache
        # The forward's own index: long rows sit after original_max_position short rows.
        rows = (
            positions + rope.original_max_position_embeddings if rope.use_long_rope else positions
        )

        def forward(pos, q, k):
            return rope.forward(pos, q, k)
    else:
        table = rope.cos_sin_cache
        rows = positions  # LinearScaling with one factor: offset 0

        def forward(pos, q, k):
            return rope.forward_native(pos, q, k)

    if int(rows.max()) >= table.shape[0]:
        raise ValueError(
            f"position {int(positions.max())} is past vLLM's cos/sin cache of {table.shape[0]} rows"
        )
    cos, sin = table.index_select(0, rows).float().chunk(2, dim=-1)

    def rotate(x, pos):
        # vLLM rotates the first rotary_dim dims of each head; pad the probe to a head.
        q = torch.zeros(x.shape[0], rope.head_size)
        q[:, : x.shape[1]] = x
        out, _ = forward(pos, q, q.clone())
        return out[:, : x.shape[1]]

    return cos, sin, rotate


def _configs(config: dict, context: int, notes: list) -> VllmConfig:
    """vLLM's configs for ``vllm serve FOLDER --max-model-len CONTEXT`` (Phi-3's LongRoPE reads
    max_model_len from the current VllmConfig)."""
    if not config.get("architectures"):
        # A shipped config.json names its causal-LM class; without it vLLM would pick the bare
        # base model (e.g. Phi3Model), which its registry lacks.
        config = {
            **config,
            "architectures": [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[config["model_type"]]],
        }
        notes.append(f"architectures absent from the config: set to {config['architectures']}.")
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "config.json"), "w") as out:
            json.dump(config, out)
        try:
            model_config = ModelConfig(
                model=folder, skip_tokenizer_init=True, max_model_len=context
            )
        except ValueError as refusal:
            if "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in str(refusal):
                raise
            # vLLM takes max_position_embeddings as already scaled for YaRN/LongRoPE/llama3
            # (config/model.py, _get_and_verify_max_len) and refuses a longer run unless told.
            os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = "1"
            notes.append(
                f"vLLM refuses max_model_len {context} above max_position_embeddings "
                f"{config.get('max_position_embeddings')} for this scaling type unless "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (set here to measure the run)."
            )
            model_config = ModelConfig(
                model=folder, skip_tokenizer_init=True, max_model_len=context
            )
            del os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"]
        architectures = model_config.architectures or []
        if not any(a in ModelRegistry.get_supported_archs() for a in architectures):
            raise _protocol.CannotExpress(f"vLLM has no model for {architectures}")
        return VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"))


def measure(model: dict) -> dict:
    config = {k: v for k, v in model["config"].items() if k not in ANNOTATIONS}
    config_notes: list[str] = []
    vllm_config = _configs(config, model["context"], config_notes)
    model_config = vllm_config.model_config
    hf_config = model_config.hf_config
    positions = torch.as_tensor(model["positions"], dtype=torch.long)
    layers = {}
    with set_current_vllm_config(vllm_config):
        for layer in model["layer_types"]:
            layer_type = KIND_TO_LAYER_TYPE[layer["kind"]]
            kwargs, where = _rope_calls(hf_config, layer_type)
            rope = vre.get_rope(**kwargs)
            cos, sin, rotate = _table_and_rotate(rope, positions)
            angles, _ = _protocol.angles_from_cos_sin(cos, sin)
            pairs = rope.rotary_dim // 2
            # Phi3LongRoPEScaledRotaryEmbedding has no flag: it raises unless neox style.
            layout = "half" if getattr(rope, "is_neox_style", True) else "interleaved"
            inv_freq = _inv_freq(rope)
            notes = config_notes + [
                "Tables built in float32 (torch's default dtype here); in a served model vLLM "
                "builds them under the model dtype (set_default_torch_dtype), so they are cast "
                "to bfloat16/float16 unless the model file passes dtype=float32 (gpt-oss does).",
                "forward_angles come from forward_native (vLLM's PyTorch path); on GPU vLLM "
                "applies the same cos/sin cache through its CUDA/FlashInfer kernel.",
            ]
            attention_factor = None
            if isinstance(rope, vre.YaRNScalingRotaryEmbedding):
                attention_factor = rope.mscale
                notes.append("vLLM multiplies cos and sin by mscale in its cache.")
            if isinstance(rope, vre.Phi3LongRoPEScaledRotaryEmbedding):
                attention_factor = rope.long_mscale if rope.use_long_rope else rope.short_mscale
                notes.append(
                    "vLLM picks LongRoPE's long factors for every position once max_model_len "
                    f"({model_config.max_model_len}) exceeds original_max_position_embeddings "
                    f"({rope.original_max_position_embeddings}); use_long_rope="
                    f"{rope.use_long_rope}."
                )
            if isinstance(rope, vre.LinearScalingRotaryEmbedding):
                notes.append(
                    "vLLM's linear scaling keeps the unscaled inv_freq and divides positions by "
                    "the factor when it builds its cache, so it has no scaled frequency vector "
                    "(inv_freq null); its cache holds max_position * factor rows."
                )
            layers[layer["name"]] = {
                "inv_freq": None if inv_freq is None else inv_freq.double().tolist(),
                "attention_factor": attention_factor,
                "angles": angles,
                "forward_angles": _protocol.forward_probe(
                    rotate, model["positions"], pairs, layout
                ),
                "source": _protocol.source_of(type(rope)),
                "how": (
                    f"get_rope({_protocol.call_text(kwargs)}) as {where} calls it, with "
                    "hf_config from "
                    "vLLM's ModelConfig(model=<folder with the config.json>, "
                    "max_model_len=context)"
                ),
                "notes": notes,
            }
    return layers


if __name__ == "__main__":
    _protocol.run("vllm", version("vllm"), measure)
