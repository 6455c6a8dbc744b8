"""The project's one attention layer and transformer block; any registry encoding plugs in.

Shapes: B batch, L sequence length, D model width, H heads, Dh = D / H head width.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

from posenc.encodings import PositionalEncoding, build
from posenc.model_config import UNSCALED_EMBEDDING_STD, ModelConfig

# Query rows per block in _BiasWithGradAttention: a block's scores (B·H, 32, <=L) stay small
# enough for the CPU caches at the sizes we train, and causal blocks skip the keys after them.
_QUERY_BLOCK = 32


class _BiasWithGradAttention(torch.autograd.Function):
    """Softmax attention with an additive bias that needs a gradient, blockwise over queries.

    Why: given a mask that requires grad, torch's CPU ``scaled_dot_product_attention`` leaves
    its fused kernel for the math path (full (B, H, L, L) scores through cache-cold bmm, a
    NaN-safe softmax, the causal half computed and thrown away), which made T5 the slowest
    encoding by far. Same formula, so the same numbers up to float rounding:

        y = softmax(q k^T / sqrt(Dh) + bias + causal mask) v

    Query rows go in blocks of ``_QUERY_BLOCK``: a causal block computes only the keys at or
    before its last row (about half the work at L = 128), and each block's scores are small.
    The backward is written out (dV, dP, dS = softmax backward, dQ, dK) and sums dS over the
    batch for the bias gradient. The bias must be finite (a learned table); the causal mask is
    added here, so every row keeps at least one key and needs no NaN guard.
    """

    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, bias: Tensor, causal: bool) -> Tensor:
        B, H, L, Dh = q.shape  # self-attention: k, v are (B, H, L, Dh) too; bias (H, L, L)
        scale = Dh**-0.5  # SDPA's default
        # One batch dimension for bmm; copies the strided views of the qkv projection.
        q, k, v = (t.reshape(B * H, L, Dh) for t in (q, k, v))
        if causal:  # folded into the small (H, L, L) bias once, not into every block
            future = torch.ones(L, L, dtype=torch.bool, device=q.device).triu(1)
            bias = bias.masked_fill(future, float("-inf"))
        blocks = [(r0, min(r0 + _QUERY_BLOCK, L)) for r0 in range(0, L, _QUERY_BLOCK)]
        out = q.new_empty(B * H, L, Dh)
        probs = []  # per block (B·H, rows, keys), kept for the backward
        for r0, r1 in blocks:
            n_keys = r1 if causal else L  # a causal block sees no key after its last row
            scores = q.new_empty(B, H, r1 - r0, n_keys)
            scores.copy_(bias[:, r0:r1, :n_keys])  # broadcast over the batch
            scores = scores.view(B * H, r1 - r0, n_keys)
            scores.baddbmm_(q[:, r0:r1], k[:, :n_keys].transpose(1, 2), alpha=scale)
            p = torch.softmax(scores, dim=-1)
            out[:, r0:r1] = torch.bmm(p, v[:, :n_keys])
            probs.append(p)
        ctx.save_for_backward(q, k, v, *probs)
        ctx.blocks, ctx.scale = blocks, scale
        return out.view(B, H, L, Dh)

    @staticmethod
    @once_differentiable  # the saved probabilities carry no graph: say so rather than be wrong
    def backward(ctx, grad_out: Tensor):
        q, k, v, *probs = ctx.saved_tensors
        B, H, L, Dh = grad_out.shape
        BH = B * H
        need_q, need_k, need_v, need_bias = ctx.needs_input_grad[:4]
        grad_out = grad_out.reshape(BH, L, Dh)
        dq = torch.empty_like(q) if need_q else None  # every row block writes its rows
        dk = torch.zeros_like(k) if need_k else None
        dv = torch.zeros_like(v) if need_v else None
        dbias = q.new_zeros(H, L, L) if need_bias else None  # causal: stays 0 above the diagonal
        for (r0, r1), p in zip(ctx.blocks, probs):
            n_keys = p.shape[-1]
            do = grad_out[:, r0:r1]  # (B·H, rows, Dh)
            if need_v:
                dv[:, :n_keys] += torch.bmm(p.transpose(1, 2), do)
            dp = torch.bmm(do, v[:, :n_keys].transpose(1, 2))  # (B·H, rows, keys)
            # dS = P * (dP - rowsum(dP * P)), the one fused kernel autograd's softmax uses.
            ds = torch._softmax_backward_data(dp, p, -1, p.dtype)
            if need_bias:
                dbias[:, r0:r1, :n_keys] = ds.view(B, H, r1 - r0, n_keys).sum(0)
            if need_q:
                dq[:, r0:r1] = torch.bmm(ds, k[:, :n_keys]).mul_(ctx.scale)
            if need_k:
                dk[:, :n_keys].add_(torch.bmm(ds.transpose(1, 2), q[:, r0:r1]), alpha=ctx.scale)
        shape = (B, H, L, Dh)
        return (
            dq.view(shape) if need_q else None,
            dk.view(shape) if need_k else None,
            dv.view(shape) if need_v else None,
            dbias,
            None,
        )


class Attention(nn.Module):
    """Multi-head self-attention via ``F.scaled_dot_product_attention``.

    The encoding acts here in two ways: ``rotate`` on queries and keys (RoPE) and
    ``score_bias`` on the logits (ALiBi, T5). Input encodings were added before the stack.
    A bias that needs a gradient (T5's learned table) on the CPU goes through
    ``_BiasWithGradAttention`` instead: same formula, several times faster there.
    ``window``: the layer's attention window (:meth:`PositionalEncoding.windows`), applied in
    every path; None is full attention, the paths exactly as they were.
    """

    def __init__(
        self,
        cfg: ModelConfig,
        encoding: PositionalEncoding,
        positional: bool = True,
        window: int | None = None,
    ):
        super().__init__()
        if cfg.d_model % cfg.n_heads:
            raise ValueError(f"d_model {cfg.d_model} is not divisible by n_heads {cfg.n_heads}")
        self.cfg = cfg
        self.encoding = encoding  # shared by every layer: one set of parameters per model
        # False: a layer the encoding's layout leaves without position (a hybrid's NoPE layer).
        self.positional = positional
        self.window = window
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        # Evaluation-time hooks, None in training and in ordinary evaluation (which then runs
        # the fused kernels untouched): ``query_scale`` maps positions to a multiplier of each
        # query's logits (a temperature: log-n scaling, Llama 4's schedule), of the whole
        # logit q.k + b when ``scale_bias``, of q.k alone when not; ``observer`` receives the
        # attention probabilities (B, H, L, L) of every forward, computed explicitly, since
        # the fused kernels never form them. See :func:`query_temperature` and
        # :func:`observing`.
        self.query_scale: Callable[[Tensor], Tensor] | None = None
        self.scale_bias = True
        self.observer: Callable[[Tensor], None] | None = None

    def forward(self, x: Tensor, positions: Tensor, bias: Tensor | None = None) -> Tensor:
        """``bias``: the encoding's score bias for ``positions`` if the caller has it already
        (the stack computes it once for all layers); None computes it here."""
        B, L, D = x.shape
        H = self.cfg.n_heads
        q, k, v = self.qkv(x).view(B, L, 3, H, D // H).permute(2, 0, 3, 1, 4)  # 3 × (B, H, L, Dh)
        if self.positional:
            q, k = self.encoding.rotate(q, k, positions, positions)
            if bias is None:
                bias = self.encoding.score_bias(positions, positions, self.cfg.causal)
        else:
            bias = None
        if self.query_scale is not None:  # (L,) or (B, L) multipliers, one per query
            scale = self.query_scale(positions).to(q.dtype)
            scale = scale[None, None, :, None] if scale.dim() == 1 else scale[:, None, :, None]
            q = q * scale  # t (q.k)
            if bias is not None and self.scale_bias:  # t (q.k + b): (1 or B, H, L, L)
                bias = bias.to(q.dtype) * scale
        # Keys out of the window, (L, L), True where hidden; None: plain (causal) attention.
        hidden = window_hidden(L, self.window, self.cfg.causal, x.device)
        dropout = self.cfg.dropout if self.training else 0.0
        if self.observer is not None:
            y = self._observed(q, k, v, bias, hidden)
        elif bias is None and hidden is None:
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=dropout, is_causal=self.cfg.causal
            )
        elif bias is None:
            # A windowed layer without a bias: a boolean mask (True: attend), (1, 1, L, L).
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=~hidden[None, None], dropout_p=dropout
            )
        elif (
            bias.requires_grad
            and bias.dim() == 3
            and dropout == 0.0
            and q.device.type == "cpu"
            and q.dtype in (torch.float32, torch.float64)
        ):
            # A learned bias (T5) under autograd: CPU SDPA would fall back to its slow math path.
            # A window is folded into the bias: every row keeps its own key, so stays finite.
            bias = bias.to(q.dtype)
            if hidden is not None:
                bias = bias.masked_fill(hidden, float("-inf"))
            y = _BiasWithGradAttention.apply(q, k, v, bias, self.cfg.causal)
        else:
            mask = bias.to(q.dtype)
            blocked = hidden if hidden is not None else _future(L, self.cfg.causal, x.device)
            if blocked is not None:
                # SDPA takes either is_causal or a mask: fold the causal mask into the bias.
                mask = mask.masked_fill(blocked, float("-inf"))
            # Given as (1, H, L, L): with a 3-D mask torch's CPU SDPA takes its slow math
            # kernel (torch 2.13), with a 4-D one its fused kernel; the broadcast is the same.
            mask = mask if mask.dim() == 4 else mask[None]
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        return self.out(y.transpose(1, 2).reshape(B, L, D))

    def _observed(
        self, q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, hidden: Tensor | None = None
    ) -> Tensor:
        """Attention with its probabilities formed and handed to the observer: the same
        formula as the fused kernels, so the same output up to float rounding."""
        L = q.shape[-2]
        scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5  # (B, H, L, L)
        if bias is not None:
            scores = scores + bias.to(q.dtype)
        blocked = hidden if hidden is not None else _future(L, self.cfg.causal, q.device)
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        self.observer(probs)
        return probs @ v


def _future(L: int, causal: bool, device: torch.device) -> Tensor | None:
    """The keys after each query, (L, L) True above the diagonal; None when not causal."""
    return torch.ones(L, L, dtype=torch.bool, device=device).triu(1) if causal else None


def window_hidden(
    L: int, window: int | None, causal: bool, device: torch.device | None = None
) -> Tensor | None:
    """The keys a sliding window of ``window`` tokens hides, (L, L), True where hidden: causal,
    key j is visible from query i when 0 <= i - j < window; not causal, when |i - j| < window.
    Counted in tokens (indices), not positions, as a KV cache of the last ``window`` tokens
    counts them, so that interpolated or shifted positions leave it as it is. None: no window."""
    if window is None:
        return None
    index = torch.arange(L, device=device)
    back = index[:, None] - index[None, :]  # (L, L): i - j
    if causal:
        return (back < 0) | (back >= window)
    return back.abs() >= window


class Block(nn.Module):
    """Pre-LayerNorm block (GPT-2): x + Attn(LN(x)), then x + MLP(LN(x))."""

    def __init__(
        self,
        cfg: ModelConfig,
        encoding: PositionalEncoding,
        positional: bool = True,
        window: int | None = None,
    ):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg, encoding, positional, window)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model),
            nn.GELU(),
            nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model),
            nn.Dropout(cfg.dropout),
        )

    def forward(self, x: Tensor, positions: Tensor, bias: Tensor | None = None) -> Tensor:
        x = x + self.attn(self.ln1(x), positions, bias)
        return x + self.mlp(self.ln2(x))


def layout(encoding: PositionalEncoding, n_layers: int) -> tuple[bool, ...]:
    """The layers ``encoding`` acts in (:meth:`PositionalEncoding.layers`), checked: one bool
    per layer, and every layer for an input encoding, which is added once before the stack."""
    acts = tuple(encoding.layers(n_layers))
    if len(acts) != n_layers or not all(isinstance(a, bool) for a in acts):
        raise ValueError(
            f"{type(encoding).__name__}.layers({n_layers}) must give one bool per layer, got "
            f"{acts!r}"
        )
    if encoding.acts_on == "input" and not all(acts):
        raise ValueError(
            f"{type(encoding).__name__} acts on the input, once before every layer: its layers() "
            "cannot leave a layer out"
        )
    return acts


def window_layout(encoding: PositionalEncoding, n_layers: int) -> tuple[int | None, ...]:
    """The attention window of each layer (:meth:`PositionalEncoding.windows`), checked: one
    per layer, each None (full attention) or a whole number of tokens >= 1 (the query's own
    key, at least, stays visible)."""
    found = tuple(encoding.windows(n_layers))
    if len(found) != n_layers or not all(w is None or (type(w) is int and w >= 1) for w in found):
        raise ValueError(
            f"{type(encoding).__name__}.windows({n_layers}) must give one window per layer, "
            f"None or an int >= 1, got {found!r}"
        )
    return found


class TransformerStack(nn.Module):
    """Blocks over continuous inputs (B, L, D): the object the equivariance analysis probes."""

    def __init__(self, cfg: ModelConfig, encoding: PositionalEncoding):
        super().__init__()
        self.cfg = cfg
        self.encoding = encoding
        self.layout = layout(encoding, cfg.n_layers)
        self.windows = window_layout(encoding, cfg.n_layers)
        self.blocks = nn.ModuleList(
            Block(cfg, encoding, acts, window)
            for acts, window in zip(self.layout, self.windows, strict=True)
        )

    def forward(self, x: Tensor, positions: Tensor | None = None) -> Tensor:
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        pe = self.encoding.input_encoding(positions)
        if pe is not None:
            x = x + pe.to(x.dtype)
        # Every layer shares the one encoding module, so a score bias (ALiBi, T5) is the same in
        # every layer: compute it once per forward; T5's gather and its backward then run once.
        bias = self.encoding.score_bias(positions, positions, self.cfg.causal)  # (H, L, L) | None
        for block in self.blocks:
            x = block(x, positions, bias)
        return x


class LanguageModel(nn.Module):
    """Decoder-only LM: token embedding -> stack -> LayerNorm -> tied output head."""

    def __init__(self, vocab_size: int, cfg: ModelConfig, encoding: PositionalEncoding):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, cfg.d_model)
        # Scaled: fairseq's recipe for Vaswani et al.'s models (Press et al. train with it):
        # weights at std d^-1/2 times sqrt(d), so tokens enter at unit RMS, beside the
        # sinusoidal table's 1/sqrt(2). Unscaled: GPT-2's std (Radford et al. 2019).
        std = cfg.d_model**-0.5 if cfg.scale_embeddings else UNSCALED_EMBEDDING_STD
        nn.init.normal_(self.embed.weight, std=std)
        self.drop = nn.Dropout(cfg.dropout)
        self.stack = TransformerStack(cfg, encoding)
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.embed_scale = cfg.d_model**0.5 if cfg.scale_embeddings else 1.0

    def forward(self, tokens: Tensor, positions: Tensor | None = None) -> Tensor:
        x = self.embed(tokens) * self.embed_scale  # (B, L, D)
        x = self.stack(self.drop(x), positions)  # (B, L, D)
        return self.ln_f(x) @ self.embed.weight.T  # (B, L, vocab)


def make_stack(
    encoding: str,
    encoding_cfg: dict | None,
    d_model: int,
    n_heads: int,
    n_layers: int,
    causal: bool,
    **shape,
) -> TransformerStack:
    """A stack with registry encoding ``encoding``, its hyper-parameters from ``encoding_cfg``
    (the config's ``encoding:`` block); ``shape`` (``max_len``, ``angle_dtype``) goes to
    :func:`~posenc.encodings.build`."""
    cfg = ModelConfig(d_model=d_model, n_heads=n_heads, n_layers=n_layers, causal=causal)
    module = build(encoding, encoding_cfg, d_model=d_model, n_heads=n_heads, **shape)
    return TransformerStack(cfg, module)


def _attention_layers(model: nn.Module) -> list[Attention]:
    return [m for m in model.modules() if isinstance(m, Attention)]


# What a query temperature multiplies: the whole logit q.k + b (a softmax temperature, as
# log-n scaling's motivation has it), or q alone, leaving an additive score bias unscaled.
TEMPERATURE_SCOPES = ("logits", "query")


@contextmanager
def query_temperature(
    model: nn.Module,
    scale: Callable[[Tensor], Tensor],
    layers: Sequence[int] | None = None,
    scope: str = "logits",
) -> Iterator[None]:
    """Within the block, attention layers of ``model`` multiply each query's logits by
    ``scale(positions)``, applied after the encoding: a temperature. ``layers``: which, by
    index among the model's attention layers counted from the input (Llama 4 scales its NoPE
    layers only); None, every one. ``scope``: ``"logits"`` scales the whole logit,
    t (q.k + b), an additive score bias (ALiBi, T5, KERPLE, FIRE) with the content; ``"query"``
    scales q alone, t q.k + b. The two differ only where there is a bias."""
    if scope not in TEMPERATURE_SCOPES:
        raise ValueError(f"scope must be one of {', '.join(TEMPERATURE_SCOPES)}, got {scope!r}")
    every = _attention_layers(model)
    chosen = range(len(every)) if layers is None else list(layers)
    wrong = [i for i in chosen if not (type(i) is int and 0 <= i < len(every))]
    if wrong:
        raise ValueError(
            f"layers {wrong} out of range: the model has {len(every)} attention layers "
            f"(0 to {len(every) - 1})"
        )
    picked = [every[i] for i in dict.fromkeys(chosen)]
    for layer in picked:
        layer.query_scale, layer.scale_bias = scale, scope == "logits"
    try:
        yield
    finally:
        for layer in picked:
            layer.query_scale, layer.scale_bias = None, True


@contextmanager
def observing(model: nn.Module, observe: Callable[[int, Tensor], None]) -> Iterator[None]:
    """Within the block, every forward of ``model`` hands each attention layer's probabilities
    (B, H, L, L) to ``observe(layer_index, probs)``; outside it the fused kernels run as
    before, so ordinary evaluation pays nothing for the readout."""
    layers = _attention_layers(model)
    for i, layer in enumerate(layers):
        layer.observer = lambda probs, i=i: observe(i, probs)
    try:
        yield
    finally:
        for layer in layers:
            layer.observer = None
