"""SGLang's rotary tables for a config.json, built the way SGLang's model code builds them.

SGLang reads the HF config itself: ``ModelConfig`` loads config.json through
``sglang.srt.utils.hf_transformers.config.get_config`` (transformers' AutoConfig under SGLang's
compatibility patches), and each model's attention calls ``get_rope`` with arguments its
decoder layer takes from that config. This runner loads the config the same way (from a
temporary folder, as ``sglang.launch_server --model-path DIR`` would) and repeats each model
file's ``get_rope`` call; ``how`` names the file and line it follows. No weights, no GPU:
SGLang's CPU platform (``SGLANG_USE_CPU_ENGINE=1``) and the PyTorch ``forward_native`` path
stand in for its CUDA/CPU kernels (sgl-kernel), which are not installed here.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import tempfile
import types
from importlib.metadata import version

import torch

# Set before SGLang is imported. SGLANG_USE_CPU_ENGINE=1 is SGLang's own switch for its CPU
# backend: without it (and without a GPU) RotaryEmbedding.__init__ imports vllm._custom_ops
# for a fallback kernel (layers/rotary_embedding/base.py, "use_fallback_kernel"). It changes
# which kernel the module would use, not how its tables are computed.
os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _protocol  # noqa: E402
from sglang.srt.layers.rotary_embedding import get_rope  # noqa: E402
from sglang.srt.layers.rotary_embedding.base import LinearScalingRotaryEmbedding  # noqa: E402
from sglang.srt.layers.rotary_embedding.rope_variant import (  # noqa: E402
    DynamicNTKScalingRotaryEmbedding,
    Phi3LongRoPEScaledRotaryEmbedding,
)
from sglang.srt.layers.rotary_embedding.yarn import YaRNScalingRotaryEmbedding  # noqa: E402

# posenc's provenance annotations in its zoo entries; not config.json fields.
ANNOTATIONS = ("source", "advertised_context", "confirmed", "notes")
KIND_TO_LAYER_TYPE = {"full": "full_attention", "sliding": "sliding_attention"}
TORCHVISION_STUB_NOTE = (
    "torchvision is stubbed (empty modules) while SGLang's config loader is imported: "
    "sglang.srt.configs imports it at module level for multimodal image preprocessing, and "
    "PyPI's torchvision wheels link torch's CUDA libraries, so they cannot load beside the CPU "
    "torch 2.13.0. Nothing on the rotary path uses it; the stub is removed after the import."
)


class _TorchvisionStub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``import torchvision[.x]`` with empty modules whose attributes are empty
    classes (enough for module-level ``T.InterpolationMode``-style references)."""

    class Module(types.ModuleType):
        __path__: list = []

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    def find_spec(self, name, path=None, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return self.Module(spec.name)

    def exec_module(self, module):
        pass


def _import_get_config():
    """SGLang's config loader, imported with torchvision stubbed (see TORCHVISION_STUB_NOTE)."""
    # transformers caches "torchvision available?" on first ask: ask before the stub exists,
    # so transformers keeps its torchvision-free paths.
    from transformers.utils import import_utils

    import_utils.is_torchvision_available()
    import transformers.image_utils  # noqa: F401  (reads the cached answer at import)

    stub = _TorchvisionStub()
    sys.meta_path.insert(0, stub)
    try:
        from sglang.srt.utils import hf_transformers_patches
        from sglang.srt.utils.hf_transformers.config import get_config
    finally:
        sys.meta_path.remove(stub)
        for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
            del sys.modules[name]
    hf_transformers_patches.apply_all()  # as SGLang applies them before loading a config
    return get_config


get_config = _import_get_config()


def _source_line(module: str, text: str, after: str = "") -> str:
    """``sglang/…/file.py:line`` of the first line containing ``text`` (after the first line
    containing ``after``), read from the file without importing it: SGLang's model modules
    import its GPU kernels at module level."""
    path = importlib.util.find_spec(module).origin
    rel = path.split("site-packages/", 1)[-1]
    with open(path) as source:
        lines = source.read().splitlines()
    start = next((i for i, line in enumerate(lines) if after in line), 0) if after else 0
    for number in range(start, len(lines)):
        if text in lines[number]:
            return f"{rel}:{number + 1}"
    return rel


def _rope_call(c, layer_type: str, notes: list) -> tuple[dict, str]:
    """get_rope's arguments as the config's SGLang model file passes them."""
    model_type = c.model_type
    # Phi3ForCausalLM and MistralForCausalLM (models/mistral.py) subclass LlamaForCausalLM.
    if model_type in ("llama", "phi3", "mistral"):
        # LlamaDecoderLayer: rope_parameters is the scaling dict; a top-level
        # original_max_position_embeddings is copied into it (llama.py, "rope_scaling[").
        rope_parameters = getattr(c, "rope_parameters", None)
        if rope_parameters is not None:
            base, rope_scaling = rope_parameters.get("rope_theta", 10000), dict(rope_parameters)
        else:
            base, rope_scaling = getattr(c, "rope_theta", 10000), getattr(c, "rope_scaling", None)
        top = getattr(c, "original_max_position_embeddings", None)
        if rope_scaling is not None and top:
            if rope_scaling.get("original_max_position_embeddings") not in (None, top):
                notes.append(
                    "SGLang overwrites rope_parameters' original_max_position_embeddings "
                    f"({rope_scaling['original_max_position_embeddings']}) with the top-level "
                    f"value ({top})."
                )
            rope_scaling["original_max_position_embeddings"] = top
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        kwargs = dict(
            head_size=head_dim,
            rotary_dim=int(getattr(c, "partial_rotary_factor", 1) * head_dim),
            max_position=getattr(c, "max_position_embeddings", 8192),
            base=base,
            rope_scaling=rope_scaling,
            is_neox_style=getattr(c, "rope_is_neox_style", True),
        )
        where = (
            f"{_source_line('sglang.srt.models.llama', 'self.rotary_emb = get_rope(')} "
            "(arguments from LlamaDecoderLayer, "
            + _source_line(
                "sglang.srt.models.llama",
                "if rope_scaling is not None and getattr(",
                "class LlamaDecoderLayer",
            )
            + " copies a top-level original_max_position_embeddings)"
        )
    elif model_type == "qwen2":
        # Qwen2DecoderLayer: get_rope_config gives (rope_theta, rope_parameters).
        rope_parameters = getattr(c, "rope_parameters", None)
        if rope_parameters is not None:
            base = rope_parameters.get("rope_theta", getattr(c, "rope_theta", 10000))
            rope_scaling = rope_parameters
        else:
            base, rope_scaling = getattr(c, "rope_theta", 10000), getattr(c, "rope_scaling", None)
        if hasattr(c, "original_num_attention_heads"):
            head_dim = c.hidden_size // c.original_num_attention_heads
        else:
            head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        kwargs = dict(
            head_size=head_dim,
            rotary_dim=head_dim,
            max_position=getattr(c, "max_position_embeddings", 32768),
            base=base,
            rope_scaling=rope_scaling,
            dual_chunk_attention_config=getattr(c, "dual_chunk_attention_config", None),
        )
        where = _source_line("sglang.srt.models.qwen2", "self.rotary_emb = get_rope(")
    elif model_type == "gemma3_text":
        # Gemma3Attention: sliding layers take the local base, full layers the global base,
        # and BOTH get rope_scaling {"rope_type": "default"}: the config's scaling is dropped.
        rope_parameters = c.rope_parameters
        nested = isinstance(rope_parameters, dict) and "full_attention" in rope_parameters
        if layer_type == "sliding_attention":
            base = (
                rope_parameters["sliding_attention"].get("rope_theta", 10000.0)
                if nested
                else getattr(c, "rope_local_base_freq", 10000.0)
            )
        elif nested:
            base = rope_parameters["full_attention"].get("rope_theta", 1000000.0)
        else:
            base = rope_parameters.get("rope_theta", 10000.0) if rope_parameters else 10000.0
        dropped = (rope_parameters.get(layer_type) if nested else rope_parameters) or {}
        if dropped.get("rope_type", "default") != "default":
            notes.append(
                f"SGLang's Gemma 3 ignores this layer type's rope_type "
                f"{dropped.get('rope_type')!r} (factor {dropped.get('factor')}): it passes "
                'rope_scaling={"rope_type": "default"} for every layer.'
            )
        head_dim = getattr(c, "head_dim", c.hidden_size // c.num_attention_heads)
        kwargs = dict(
            head_size=head_dim,
            rotary_dim=int(getattr(c, "partial_rotary_factor", 1) * head_dim),
            max_position=c.max_position_embeddings,
            base=base,
            rope_scaling={"rope_type": "default"},
            is_neox_style=getattr(c, "rope_is_neox_style", True),
        )
        where = (
            f"{_source_line('sglang.srt.models.gemma3_causal', 'self.rotary_emb = get_rope(')} "
            "(rope_scaling set at "
            + _source_line(
                "sglang.srt.models.gemma3_causal",
                'self.rope_scaling = {"rope_type": "default"}',
                "# Global attention" if layer_type == "full_attention" else "# Local attention",
            )
            + ")"
        )
    elif model_type == "gpt_oss":
        # GptOssDecoderLayer passes rope_parameters whole (truncate included).
        head_dim = getattr(c, "head_dim", c.hidden_size // c.num_attention_heads)
        kwargs = dict(
            head_size=head_dim,
            rotary_dim=head_dim,
            max_position=getattr(c, "max_position_embeddings", 8192),
            base=c.rope_parameters["rope_theta"],
            rope_scaling=c.rope_parameters,
        )
        where = _source_line("sglang.srt.models.gpt_oss", "self.rotary_emb = get_rope(")
    else:
        raise NotImplementedError(
            f"this runner does not yet repeat SGLang's rotary call for model_type {model_type}"
        )
    return kwargs, where


def _inv_freq(rope, long: bool) -> torch.Tensor | None:
    """The frequencies the engine's own ``_compute_inv_freq`` gives (as its cache uses them);
    None where the cache is built from something no method returns on its own."""
    if isinstance(rope, (LinearScalingRotaryEmbedding, DynamicNTKScalingRotaryEmbedding)):
        return None  # see the note added in measure()
    if isinstance(rope, Phi3LongRoPEScaledRotaryEmbedding):
        return rope._compute_inv_freq(rope.long_factor if long else rope.short_factor)
    if isinstance(rope, YaRNScalingRotaryEmbedding):
        return rope._compute_inv_freq(rope.scaling_factor)
    return rope._compute_inv_freq(rope.base)


def _table_and_rotate(rope, positions: torch.Tensor, context: int):
    """(cos, sin) rows a run of length ``context`` reads for ``positions``, whether LongRoPE's
    long rows are used, and a rotate(x, positions) through the engine's forward."""
    if isinstance(rope, Phi3LongRoPEScaledRotaryEmbedding):
        k = rope.original_max_position_embeddings
        # The forward's own rule: the whole batch reads the long rows (stored after the k short
        # rows) when ANY of its positions is > k. A run of length `context` holds position
        # context - 1, so the probe batch carries that position too and drops its row.
        long = context - 1 > k
        table = rope.long_short_cos_sin_cache
        rows = positions + k if long else positions
        run_position = torch.tensor([context - 1])

        def rotate_rows(q, pos):
            out, _ = rope.forward(torch.cat([pos, run_position]), q, q.clone())
            return out[: pos.shape[0]]

        pad = lambda q: torch.cat([q, torch.zeros(1, q.shape[1])])  # noqa: E731
    else:
        long = False
        # As ModelRunner's reserve_rope_cache_for_long_sequences does for the context length.
        rope._ensure_cos_sin_cache_length(context - 1)
        table = rope.cos_sin_cache
        rows = positions

        def rotate_rows(q, pos):
            out, _ = rope.forward_native(pos, q, q.clone())
            return out

        pad = lambda q: q  # noqa: E731

    if int(rows.max()) >= table.shape[0]:
        raise ValueError(
            f"position {int(positions.max())} is past SGLang's cos/sin cache of "
            f"{table.shape[0]} rows"
        )
    cos, sin = table.index_select(0, rows).float().chunk(2, dim=-1)

    def rotate(x, pos):
        # SGLang rotates the first rotary_dim dims of each head; pad the probe to a head.
        q = torch.zeros(x.shape[0], rope.head_size)
        q[:, : x.shape[1]] = x
        return rotate_rows(pad(q), pos)[:, : x.shape[1]]

    return cos, sin, long, rotate


def _load_config(config: dict):
    """SGLang's hf_config for a model folder holding this config.json."""
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "config.json"), "w") as out:
            json.dump(config, out)
        return get_config(folder, trust_remote_code=False)


BUILT = "self.rotary_emb = Gemma3RotaryEmbedding("


def _gemma3(hf_config, model: dict, notes: list) -> dict:
    """Gemma 3 as SGLang runs it everywhere but on Intel AMX CPUs: Gemma3TextModel builds one
    Gemma3RotaryEmbedding per layer type (transformers' rope functions: the full layers' linear
    scaling kept) and passes its cos/sin to every layer (Gemma3Attention.forward_native with
    apply_rotary_pos_emb). Each attention's own get_rope module, which drops the scaling, is
    used only under ``_is_cpu and _is_cpu_amx_available``: said in the notes."""
    import copy

    from sglang.srt.layers.rotary_embedding import apply_rotary_pos_emb

    try:
        from sglang.srt.models.gemma3_causal import Gemma3RotaryEmbedding
    except ImportError as error:
        # Its model file imports GPU-serving packages (einops, tvm_ffi, compressed_tensors,
        # ...) at module level; the per-attention get_rope modules this runner can build
        # are the AMX-CPU path, not what a GPU serves, so they would misreport it.
        raise RuntimeError(
            f"SGLang's Gemma 3 model file does not import in this CPU interpreter ({error}); "
            "on GPUs it applies a Gemma3RotaryEmbedding per layer type built from the config"
        ) from None

    params = hf_config.rope_parameters
    nested = isinstance(params, dict) and "full_attention" in params
    layers = {}
    for layer in model["layer_types"]:
        sliding = layer["kind"] == "sliding"
        cfg = copy.deepcopy(hf_config)
        if sliding:  # as Gemma3TextModel.__init__: default rope at the local base
            theta = (
                params["sliding_attention"].get("rope_theta", 10000.0)
                if nested
                else (getattr(hf_config, "rope_local_base_freq", 10000.0))
            )
            cfg.rope_parameters = {"rope_type": "default", "rope_theta": theta}
        else:
            full = params["full_attention"] if nested else params
            cfg.rope_parameters = {**full, "rope_theta": full.get("rope_theta", 1000000.0)}
        rope = Gemma3RotaryEmbedding(config=cfg)
        positions = torch.as_tensor(model["positions"], dtype=torch.long)
        x = torch.zeros(1, dtype=torch.float32)
        cos, sin = rope(x, positions[None, :])
        cos, sin = cos.reshape(len(positions), -1), sin.reshape(len(positions), -1)
        pairs = cos.shape[-1] // 2
        angles, _ = _protocol.angles_from_cos_sin(cos[:, :pairs], sin[:, :pairs])

        def rotate(v, _positions, cos=cos, sin=sin):
            q = v[:, None, :]  # (tokens, heads, head_dim), as forward_native unflattens it
            return apply_rotary_pos_emb(q, q.clone(), cos, sin)[0][:, 0, :]

        layer_notes = notes + [
            "Gemma 3's rotary embedding as SGLang's Gemma3TextModel builds it for GPUs (one "
            "Gemma3RotaryEmbedding per layer type, cos/sin passed to every layer); on Intel AMX "
            "CPUs SGLang instead uses each attention's get_rope module with "
            'rope_scaling={"rope_type": "default"}, which drops a full layer\'s linear factor.'
        ]
        layers[layer["name"]] = {
            "inv_freq": rope.inv_freq.double().tolist(),
            "attention_factor": float(rope.attention_scaling),
            "angles": angles,
            "forward_angles": _protocol.forward_probe(rotate, model["positions"], pairs, "half"),
            "source": _protocol.source_of(Gemma3RotaryEmbedding),
            "how": (
                f"Gemma3RotaryEmbedding(config with rope_parameters={cfg.rope_parameters!r}) as "
                f"{_source_line('sglang.srt.models.gemma3_causal', BUILT)} builds it, applied "
                "by apply_rotary_pos_emb as Gemma3Attention.forward_native does"
            ),
            "notes": layer_notes,
        }
    return layers


def measure(model: dict) -> dict:
    config = {k: v for k, v in model["config"].items() if k not in ANNOTATIONS}
    config_notes = [TORCHVISION_STUB_NOTE]
    hf_config = _load_config(config)
    if hf_config.model_type == "gemma3_text":
        return _gemma3(hf_config, model, config_notes)
    positions = torch.as_tensor(model["positions"], dtype=torch.long)
    context = model["context"]
    layers = {}
    for layer in model["layer_types"]:
        notes = list(config_notes)
        kwargs, where = _rope_call(hf_config, KIND_TO_LAYER_TYPE[layer["kind"]], notes)
        rope = get_rope(**kwargs)
        cos, sin, long, rotate = _table_and_rotate(rope, positions, context)
        angles, _ = _protocol.angles_from_cos_sin(cos, sin)
        pairs = rope.rotary_dim // 2
        # Phi3LongRoPEScaledRotaryEmbedding has no flag: it always rotates neox-style halves.
        layout = "half" if getattr(rope, "is_neox_style", True) else "interleaved"
        notes += [
            "Tables built in float32 (torch's default dtype here). On CUDA SGLang keeps the "
            "cos/sin cache in float32 whatever the model dtype (base.py, RotaryEmbedding "
            "__init__); on its CPU backend it casts the cache to the model dtype.",
            "forward_angles come from forward_native (SGLang's PyTorch path; the LongRoPE "
            "module's own forward); on GPU SGLang applies the same cos/sin cache through its "
            "sgl-kernel/FlashInfer rope kernel.",
        ]
        attention_factor = None
        scaling = kwargs.get("rope_scaling") or {}
        if isinstance(rope, YaRNScalingRotaryEmbedding):
            attention_factor = rope.mscale
            notes.append("SGLang multiplies cos and sin by mscale in its cache.")
            if "attention_factor" in scaling and "attn_factor" not in scaling:
                notes.append(
                    f"SGLang's get_rope ignores the config's attention_factor "
                    f"({scaling['attention_factor']}): its YaRN reads only attn_factor "
                    f"(and mscale/mscale_all_dim); mscale used: {rope.mscale}."
                )
        if isinstance(rope, Phi3LongRoPEScaledRotaryEmbedding):
            attention_factor = rope.long_mscale if long else rope.short_mscale
            notes.append(
                "SGLang picks LongRoPE's factors per forward batch: long factors for the whole "
                "batch when any of its positions exceeds original_max_position_embeddings "
                f"({rope.original_max_position_embeddings}), else short ones, so a prompt "
                "whose first prefill chunk ends before that length caches keys rotated with "
                f"the short factors. For a run of length {context}: long factors={long}."
            )
        if isinstance(rope, (LinearScalingRotaryEmbedding, DynamicNTKScalingRotaryEmbedding)):
            notes.append(
                "inv_freq null: SGLang's linear scaling divides positions by the factor and its "
                "dynamic NTK scaling rescales the base inside _compute_cos_sin_cache, so neither "
                "has a method returning the frequencies its cache uses; angles are its cache's."
            )
        inv_freq = _inv_freq(rope, long)
        layers[layer["name"]] = {
            "inv_freq": None if inv_freq is None else inv_freq.double().tolist(),
            "attention_factor": attention_factor,
            "angles": angles,
            "forward_angles": _protocol.forward_probe(rotate, model["positions"], pairs, layout),
            "source": _protocol.source_of(type(rope)),
            "how": (
                f"get_rope({_protocol.call_text(kwargs)}) as {where} calls it, with hf_config "
                "from SGLang's "
                "get_config(<folder with the config.json>); cache extended to the context as "
                f"{_source_line('sglang.srt.utils.common', 'def reserve_rope_cache_for_long')}"
                " does for ModelRunner"
            ),
            "notes": notes,
        }
    return layers


if __name__ == "__main__":
    _protocol.run("sglang", version("sglang"), measure)
