"""The implementations the conformance analysis compares: each library's own positional code,
built from configs (no weights), driven the way the library's own attention drives it, and ours
(posenc) beside them.

A :class:`Library` is data: a name, the distribution whose version is recorded, and one
function per capability it has (RoPE, a sinusoidal table, ALiBi slopes, T5 buckets, RoPE
scaling, fixed NTK rescaling), None where it has none. Each function imports its library when
called, so a library that is not installed raises ImportError there and the harness
(compute.py) turns it into n/a rows with the reason; nothing here runs at import time.

What each library does, read from its pinned source (versions in requirements.txt):

* transformers: ``LlamaRotaryEmbedding`` (half-split layout) computes ``position_ids.float() *
  inv_freq.float()`` and casts cos/sin to the input's dtype; its ``inv_freq`` is a buffer, so
  ``.to(bfloat16)`` rounds the frequencies themselves. No angle cache for the default type.
* x-transformers: ``RotaryEmbedding`` (interleaved pairs) takes integer positions from its
  caller and computes ``t.type_as(inv_freq) * inv_freq`` with autocast disabled on the
  tensor's device; a ``.to(bfloat16)`` makes both the positions and the product bfloat16.
* rotary-embedding-torch: ``rotate_queries_or_keys`` (interleaved pairs) builds the positions
  in the input's dtype (``get_seq_pos(dtype=t.dtype)``) and caches the angles of the first
  call of up to ``cache_max_seq_len`` (8192) positions; autocast is disabled for CUDA only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from posenc.encodings import t5_bucket_by_hand

# Layouts of a head's rotation pairs: Su et al.'s (2i, 2i+1), or GPT-NeoX's (i, i + d/2).
INTERLEAVED, HALF = "interleaved", "half"


@dataclass
class Rope:
    """One library's RoPE, freshly built: ``module`` is what a model would cast or move, and
    ``rotate(q, k)`` rotates (B, H, L, d) queries and keys at positions 0..L-1 through the
    library's own API; ``layout`` names which coordinates it pairs."""

    layout: str
    module: nn.Module
    rotate: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]


@dataclass(frozen=True)
class Library:
    """An implementation and what it offers; a capability it lacks is None."""

    name: str
    distribution: str | None  # for importlib.metadata; None for ours
    rope: Callable[[int, float, int], Rope] | None = None  # (head_dim, base, max_len)
    # (positions (L,), d, base) -> (L, d) in ``sinusoidal_layout``, float64
    sinusoidal: Callable[[Tensor, int, float], Tensor] | None = None
    sinusoidal_layout: str = INTERLEAVED  # or "concatenated": [sin ... | cos ...]
    alibi: Callable[[int], list[float]] | None = None  # H -> slopes
    t5: Callable[[Tensor, bool, int, int], Tensor] | None = None  # (rel, bidirectional, nb, md)
    # (their method, head_dim, base, factor, original_length, params) -> (inv_freq, factor)
    scaling: Callable[..., tuple[list[float], float]] | None = None
    # (head_dim, base, factor, original_length, lengths) -> inv_freq after each call, in order
    dynamic: Callable[..., list[list[float]]] | None = None
    # (head_dim, base, factor) -> inv_freq of the library's fixed NTK-aware rescaling
    fixed_ntk: Callable[[int, float, float], list[float]] | None = None


# ----------------------------------------------------------------------------- transformers


def _llama_config(head_dim: int, base: float, max_len: int, rope_parameters: dict | None = None):
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=head_dim,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=head_dim,
        max_position_embeddings=max_len,
        rope_parameters={"rope_type": "default", "rope_theta": base, **(rope_parameters or {})},
    )


def _transformers_rope(head_dim: int, base: float, max_len: int) -> Rope:
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    module = LlamaRotaryEmbedding(_llama_config(head_dim, base, max_len))

    def rotate(q, k):
        # As LlamaModel: integer position ids (1, L), the hidden states' dtype for cos/sin.
        positions = torch.arange(q.shape[-2], device=q.device)[None]
        cos, sin = module(q, positions)
        return apply_rotary_pos_emb(q, k, cos, sin)

    return Rope(HALF, module, rotate)


def _transformers_scaling(method, head_dim, base, factor, original_length, params):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    rope_parameters = {"rope_type": method, "factor": float(factor), **params}
    max_len = original_length  # dynamic NTK divides by it: the trained length L
    if method in ("yarn", "llama3"):
        # These read L from rope_parameters, and the model's context is the stretched one.
        rope_parameters["original_max_position_embeddings"] = original_length
        max_len = round(factor * original_length)
    config = _llama_config(head_dim, base, max_len, rope_parameters)
    inv_freq, attention_factor = ROPE_INIT_FUNCTIONS[method](config, None)
    return inv_freq.double().tolist(), float(attention_factor)


def _transformers_dynamic(head_dim, base, factor, original_length, lengths):
    """The frequencies a "dynamic" LlamaRotaryEmbedding uses after each forward at ``lengths``,
    in order, on one module (its update keeps the largest length seen)."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    rope_parameters = {"rope_type": "dynamic", "factor": float(factor)}
    module = LlamaRotaryEmbedding(_llama_config(head_dim, base, original_length, rope_parameters))
    x = torch.zeros(1)
    seen = []
    for length in lengths:
        module(x, torch.arange(length)[None])
        seen.append(module.inv_freq.double().tolist())
    return seen


def _transformers_t5(rel, bidirectional, num_buckets, max_distance):
    from transformers.models.t5.modeling_t5 import T5Attention

    return T5Attention._relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )


# ----------------------------------------------------------------------------- x-transformers


def _x_rope(head_dim: int, base: float, max_len: int) -> Rope:
    from x_transformers.x_transformers import RotaryEmbedding, apply_rotary_pos_emb

    module = RotaryEmbedding(head_dim, base=base)

    def rotate(q, k):
        # As AttentionLayers: integer positions, one (freqs, scale) for queries and keys.
        freqs, scale = module(torch.arange(q.shape[-2], device=q.device))
        return apply_rotary_pos_emb(q, freqs, scale), apply_rotary_pos_emb(k, freqs, scale)

    return Rope(INTERLEAVED, module, rotate)


def _x_sinusoidal(positions: Tensor, d: int, base: float) -> Tensor:
    """ScaledSinusoidalEmbedding's [sin | cos] table without its learned gain (initialised at
    d^-1/2): divided by the gain it multiplied by."""
    from x_transformers.x_transformers import ScaledSinusoidalEmbedding

    module = ScaledSinusoidalEmbedding(d, theta=base)
    with torch.no_grad():
        table = module(torch.zeros(1, positions.shape[0]), pos=positions)
        return (table / module.scale).double()


def _x_alibi(n_heads: int) -> list[float]:
    """The slopes as its bias applies them: minus the bias one position apart."""
    from x_transformers.x_transformers import AlibiPositionalBias

    bias = AlibiPositionalBias(heads=n_heads)(2, 2)  # (H, 2, 2): -slope * |i - j|
    return (-bias[:, 1, 0]).double().tolist()


def _x_t5(rel, bidirectional, num_buckets, max_distance):
    from x_transformers.x_transformers import RelativePositionBias

    return RelativePositionBias._relative_position_bucket(
        rel, causal=not bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )


def _x_fixed_ntk(head_dim, base, factor):
    from x_transformers.x_transformers import RotaryEmbedding

    return (
        RotaryEmbedding(head_dim, base=base, base_rescale_factor=factor).inv_freq.double().tolist()
    )


# ------------------------------------------------------------------- rotary-embedding-torch


def _lucidrains_rope(head_dim: int, base: float, max_len: int) -> Rope:
    from rotary_embedding_torch import RotaryEmbedding

    module = RotaryEmbedding(dim=head_dim, theta=base)

    def rotate(q, k):
        # Its README's path: positions 0..L-1 built by the module itself.
        return module.rotate_queries_or_keys(q), module.rotate_queries_or_keys(k)

    return Rope(INTERLEAVED, module, rotate)


def _lucidrains_fixed_ntk(head_dim, base, factor):
    from rotary_embedding_torch import RotaryEmbedding

    module = RotaryEmbedding(dim=head_dim, theta=base, theta_rescale_factor=factor)
    return module.freqs.detach().double().tolist()


# ----------------------------------------------------------------------------- ours


def _ours_rope(interleaved: bool) -> Callable[[int, float, int], Rope]:
    def make(head_dim: int, base: float, max_len: int) -> Rope:
        from posenc.encodings import build

        # The registry's RoPE itself: what these libraries are held against.
        config = {"rope": {"base": base, "interleaved": interleaved}}
        module = build("rope", config, d_model=head_dim)

        def rotate(q, k):
            positions = torch.arange(q.shape[-2], device=q.device)
            return module.rotate(q, k, positions, positions)

        return Rope(INTERLEAVED if interleaved else HALF, module, rotate)

    return make


def _ours_sinusoidal(positions, d, base):
    from posenc.encodings import sinusoidal_table

    return sinusoidal_table(positions, d, base, torch.float32).double()


def _ours_alibi(n_heads):
    from posenc.encodings import alibi_slopes

    return alibi_slopes(n_heads).tolist()


def _ours_t5(rel, bidirectional, num_buckets, max_distance):
    from posenc.encodings import t5_relative_bucket

    return t5_relative_bucket(rel, bidirectional, num_buckets, max_distance)


OURS = "posenc"
OURS_HALF = "posenc-half-split"

LIBRARIES: tuple[Library, ...] = (
    Library(
        OURS,
        None,
        rope=_ours_rope(True),
        sinusoidal=_ours_sinusoidal,
        alibi=_ours_alibi,
        t5=_ours_t5,
    ),
    Library(OURS_HALF, None, rope=_ours_rope(False)),
    Library(
        "transformers",
        "transformers",
        rope=_transformers_rope,
        t5=_transformers_t5,
        scaling=_transformers_scaling,
        dynamic=_transformers_dynamic,
    ),
    Library(
        "x-transformers",
        "x-transformers",
        rope=_x_rope,
        sinusoidal=_x_sinusoidal,
        sinusoidal_layout="concatenated",
        alibi=_x_alibi,
        t5=_x_t5,
        fixed_ntk=_x_fixed_ntk,
    ),
    Library(
        "rotary-embedding-torch",
        "rotary-embedding-torch",
        rope=_lucidrains_rope,
        fixed_ntk=_lucidrains_fixed_ntk,
    ),
)

# Our method names against transformers' rope_type (ours "pi" is their "linear").
TRANSFORMERS_METHODS = {"pi": "linear", "dynamic": "dynamic", "yarn": "yarn", "llama3": "llama3"}


def paper_alibi_slopes(n: int) -> list[float]:
    """Press et al.'s ``get_slopes``, as published with the paper (ofirpress/
    attention_with_linear_biases): the reference the slopes are checked against."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + paper_alibi_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


# Raffel et al.'s bucket of one relative position (key - query), as the Mesh TensorFlow code
# writes it, in Python floats: the registry's own naive loop, which holds our T5 module too.
paper_t5_bucket = t5_bucket_by_hand
