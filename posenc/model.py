"""The project's one attention layer and transformer block; any registry encoding plugs in.

Shapes: B batch, L sequence length, D model width, H heads, Dh = D / H head width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc.encodings import EncodingParams, PositionalEncoding, build


@dataclass(frozen=True)
class ModelConfig:
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    causal: bool = True
    dropout: float = 0.0
    mlp_ratio: int = 4
    # Multiply token embeddings by sqrt(d_model) (Vaswani et al. 2017 §3.4; fairseq's default,
    # which Press et al. 2022 trained with). Without it, 0.02-scale token embeddings are
    # drowned by a unit-amplitude sinusoidal table added to them.
    scale_embeddings: bool = False


class Attention(nn.Module):
    """Multi-head self-attention via ``F.scaled_dot_product_attention``.

    The encoding acts here in two ways: ``rotate`` on queries and keys (RoPE) and
    ``score_bias`` on the logits (ALiBi, T5). Input encodings were added before the stack.
    """

    def __init__(self, cfg: ModelConfig, encoding: PositionalEncoding):
        super().__init__()
        if cfg.d_model % cfg.n_heads:
            raise ValueError(f"d_model {cfg.d_model} is not divisible by n_heads {cfg.n_heads}")
        self.cfg = cfg
        self.encoding = encoding  # shared by every layer: one set of parameters per model
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        B, L, D = x.shape
        H = self.cfg.n_heads
        q, k, v = self.qkv(x).view(B, L, 3, H, D // H).permute(2, 0, 3, 1, 4)  # 3 × (B, H, L, Dh)
        q, k = self.encoding.rotate(q, k, positions, positions)
        bias = self.encoding.score_bias(positions, positions, self.cfg.causal)  # (H, L, L) | None
        dropout = self.cfg.dropout if self.training else 0.0
        if bias is None:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=self.cfg.causal)
        else:
            mask = bias.to(q.dtype)
            if self.cfg.causal:
                # SDPA takes either is_causal or a mask: fold the causal mask into the bias.
                future = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
                mask = mask.masked_fill(future, float("-inf"))
            # Given as (1, H, L, L): with a 3-D mask torch's CPU SDPA takes its slow math
            # kernel (torch 2.13), with a 4-D one its fused kernel; the broadcast is the same.
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[None], dropout_p=dropout)
        return self.out(y.transpose(1, 2).reshape(B, L, D))


class Block(nn.Module):
    """Pre-LayerNorm block (GPT-2): x + Attn(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, cfg: ModelConfig, encoding: PositionalEncoding):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg, encoding)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model),
            nn.GELU(),
            nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model),
            nn.Dropout(cfg.dropout),
        )

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x), positions)
        return x + self.mlp(self.ln2(x))


class TransformerStack(nn.Module):
    """Blocks over continuous inputs (B, L, D): the object the equivariance analysis probes."""

    def __init__(self, cfg: ModelConfig, encoding: PositionalEncoding):
        super().__init__()
        self.cfg = cfg
        self.encoding = encoding
        self.blocks = nn.ModuleList(Block(cfg, encoding) for _ in range(cfg.n_layers))

    def forward(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        pe = self.encoding.input_encoding(positions)
        if pe is not None:
            x = x + pe.to(x.dtype)
        for block in self.blocks:
            x = block(x, positions)
        return x


class LanguageModel(nn.Module):
    """Decoder-only LM: token embedding -> stack -> LayerNorm -> tied output head."""

    def __init__(self, vocab_size: int, cfg: ModelConfig, encoding: PositionalEncoding):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, cfg.d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.drop = nn.Dropout(cfg.dropout)
        self.stack = TransformerStack(cfg, encoding)
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.embed_scale = cfg.d_model**0.5 if cfg.scale_embeddings else 1.0

    def forward(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        x = self.embed(tokens) * self.embed_scale  # (B, L, D)
        x = self.stack(self.drop(x), positions)  # (B, L, D)
        return self.ln_f(x) @ self.embed.weight.T  # (B, L, vocab)


def make_stack(
    encoding: str, d_model: int, n_heads: int, n_layers: int, causal: bool, **encoding_kwargs
) -> TransformerStack:
    """A stack with registry encoding ``encoding``; ``encoding_kwargs`` go to EncodingParams."""
    cfg = ModelConfig(d_model=d_model, n_heads=n_heads, n_layers=n_layers, causal=causal)
    params = EncodingParams(d_model=d_model, n_heads=n_heads, **encoding_kwargs)
    return TransformerStack(cfg, build(encoding, params))
