"""Score biases: ALiBi's fixed slopes (Press et al. 2022), T5's learned buckets (Raffel et al.
2020), KERPLE's learned log kernel (Chi et al. 2022) and FIRE's learned MLP (Li et al. 2024),
each registered beside its class."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from posenc.encodings import naive
from posenc.encodings.functional import (
    FIRE_INIT_C,
    alibi_bias,
    fire_bias,
    kerple_log_bias,
    t5_relative_bucket,
)
from posenc.encodings.places import BiasEncoding, EncodingParams
from posenc.encodings.registry import EncodingSpec, register, setting


@dataclass(frozen=True)
class T5Params:
    num_buckets: int = setting(
        32, "buckets of relative distance (T5's 32)", minimum=4, multipleOf=2
    )
    max_distance: int = setting(
        32,
        "distance from which every offset shares the last bucket (T5's 128; the study's is a "
        "quarter of L_train, config/config.yaml says why)",
        minimum=2,
    )


@dataclass(frozen=True)
class FireParams:
    threshold: float = setting(
        32.0,
        "FIRE's L at initialisation, learned after (Li et al.: 512 for L_train = 2048; the "
        "study's is a quarter of L_train, config/config.yaml says why)",
        exclusiveMinimum=0,
    )
    mlp_width: int = setting(32, "FIRE's hidden width (Li et al.'s 32)", minimum=1)


class ALiBi(BiasEncoding):
    def score_bias(self, q_pos, k_pos, causal):
        return alibi_bias(q_pos, k_pos, self.params.n_heads, causal)


class T5Bias(BiasEncoding):
    def __init__(self, params: EncodingParams):
        super().__init__(params)
        self.bias = nn.Embedding(params.hyper.num_buckets, params.n_heads)
        nn.init.zeros_(self.bias.weight)  # starts as NoPE, learns its bias
        # The last bucket grid, (rounded q_pos, rounded k_pos, causal, buckets): the same
        # positions come back in every layer and every step, and t5_relative_bucket (a log over
        # Lq·Lk offsets) is worth skipping. Not state: no parameter, not in the state dict.
        self._bucket_cache: tuple[Tensor, Tensor, bool, Tensor] | None = None

    def buckets(self, q_pos: Tensor, k_pos: Tensor, causal: bool) -> Tensor:
        """The bucket of every (query, key) pair. Shape (Lq, Lk), int64, on the positions' device.

        Buckets depend on the positions only through their rounded values, so those are the
        cache key, compared by value: new positions (another length, Position Interpolation's
        float positions, another device) recompute; equal ones reuse the grid.
        """
        q_key, k_key = q_pos.round().long(), k_pos.round().long()
        cached = self._bucket_cache
        if (
            cached is not None
            and cached[2] == causal
            and all(
                c.device == x.device and c.shape == x.shape and torch.equal(c, x)
                for c, x in ((cached[0], q_key), (cached[1], k_key))
            )
        ):
            return cached[3]
        rel = k_key[None, :] - q_key[:, None]  # (Lq, Lk)
        own = self.params.hyper
        buckets = t5_relative_bucket(rel, not causal, own.num_buckets, own.max_distance)
        self._bucket_cache = (q_key, k_key, causal, buckets)
        return buckets

    def score_bias(self, q_pos, k_pos, causal):
        buckets = self.buckets(q_pos, k_pos, causal)  # (Lq, Lk)
        # The same lookup as self.bias(buckets).permute(2, 0, 1), but gathered straight into
        # (H, Lq·Lk) along the table's bucket axis: contiguous, and its backward (an index_add
        # over buckets) is several times faster on the CPU than nn.Embedding's.
        table = self.bias.weight.T  # (H, num_buckets)
        return table.index_select(1, buckets.flatten()).view(-1, *buckets.shape)  # (H, Lq, Lk)


# Chi et al.'s code clamps r1 and r2 at 1e-2 and draws them per head as r1 ~ U(0, 2),
# r2 ~ U(0, 1).
KERPLE_MIN = 1e-2


def _softplus_inverse(y: Tensor) -> Tensor:
    """x with log(1 + e^x) = y > 0."""
    return y + torch.log(-torch.expm1(-y))


class KerpleLog(BiasEncoding):
    """r1 and r2 are stored through a softplus, r = log(1 + e^raw), so they stay positive
    under any optimiser step or redraw; Chi et al.'s code keeps them positive by clamping the
    parameters in place at every forward instead. Initialised as that code: r1 ~ U(0, 2) and
    r2 ~ U(0, 1) per head, at least 1e-2."""

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        r1 = (2 * torch.rand(params.n_heads)).clamp(min=KERPLE_MIN)
        r2 = torch.rand(params.n_heads).clamp(min=KERPLE_MIN)
        self.r1_raw = nn.Parameter(_softplus_inverse(r1))  # (H,)
        self.r2_raw = nn.Parameter(_softplus_inverse(r2))  # (H,)

    def score_bias(self, q_pos, k_pos, causal):
        # float32 or wider: distances are exact integers there up to 2^24, not in bfloat16.
        dtype = torch.promote_types(self.r1_raw.dtype, torch.float32)
        softplus = nn.functional.softplus
        r1, r2 = softplus(self.r1_raw.to(dtype)), softplus(self.r2_raw.to(dtype))
        return kerple_log_bias(q_pos, k_pos, r1, r2)


class FIRE(BiasEncoding):
    """Li et al.'s 2-layer MLP of width ``mlp_width`` (32 in the paper), shared by the
    heads with one output each; c = 0.1 and L = ``threshold`` at initialisation, L as
    |s| times that value with s learned (1 at first), as in the authors' code.

    Its MLP runs over every (query, key) pair, but once per forward: the stack computes a score
    bias once for all of its layers (:class:`posenc.model.TransformerStack`).

    Held against the paper's formula, written again from the paper alone, in
    tests/test_fire_paper.py: the bias agrees to float32 tolerance for random weights, c from
    0.01 to 3, L from 1 to 512 and queries up to 65535 (past L and past L_train), and the
    settings are the paper's (ReLU MLP 1 -> 32 -> H, nn.Linear's initialisation, c and L
    learned, c from 0.1, L_0 / L_train = 512 / 2048). Where this module differs from the
    paper's text, each by design: the normaliser gets + 1e-6 and ψ takes |c x| (the authors'
    code: any learned c is valid); a key after the query gets the bias of the same distance
    (the paper is causal only); and one module, its bias computed once, serves every layer,
    the layer-shared form: a model with one FIRE per layer learns more position parameters."""

    def __init__(self, params: EncodingParams):
        super().__init__(params)
        own = params.hyper
        if own.mlp_width <= 0 or own.threshold <= 0:
            raise ValueError(
                f"FIRE needs a positive MLP width and threshold, got {own.mlp_width} "
                f"and {own.threshold}"
            )
        self.hidden = nn.Linear(1, own.mlp_width)
        self.out = nn.Linear(own.mlp_width, params.n_heads)
        self.c = nn.Parameter(torch.tensor(FIRE_INIT_C))
        self.threshold_scale = nn.Parameter(torch.tensor(1.0))

    def threshold(self) -> Tensor:
        """L = |s| · threshold (0-d)."""
        return (self.threshold_scale * self.params.hyper.threshold).abs()

    def score_bias(self, q_pos, k_pos, causal):
        # float32 or wider, autocast or not: the MLP's input tells distances near 1 apart by
        # about 1/L, finer than bfloat16's 2^-8 at lengths we evaluate.
        dtype = torch.promote_types(self.hidden.weight.dtype, torch.float32)
        weights = (self.hidden.weight, self.hidden.bias, self.out.weight, self.out.bias)
        with torch.autocast(q_pos.device.type, enabled=False):
            return fire_bias(
                q_pos,
                k_pos,
                self.c.to(dtype),
                self.threshold().to(dtype),
                *(w.to(dtype) for w in weights),
            )


register(
    EncodingSpec(
        "alibi",
        "bias",
        ALiBi,
        relative=True,
        learned=False,
        citation="press2022",
        summary="A per-head linear distance penalty on attention scores.",
        color="tab:red",
        marker="v",
        reference=naive.alibi_reference,
    )
)
register(
    EncodingSpec(
        "t5_bias",
        "bias",
        T5Bias,
        relative=True,
        learned=True,
        citation="raffel2020",
        summary="A learned per-head bias over log-spaced relative-distance buckets.",
        params=T5Params,
        color="tab:purple",
        marker="P",
        reference=naive.t5_reference,
    )
)
register(
    EncodingSpec(
        "kerple",
        "bias",
        KerpleLog,
        relative=True,
        learned=True,
        citation="chi2022",
        summary="A learned per-head logarithmic distance penalty, -r1 log(1 + r2 |i - j|).",
        color="tab:brown",
        marker="X",
        reference=naive.kerple_reference,
    )
)
register(
    EncodingSpec(
        "fire",
        "bias",
        FIRE,
        relative=False,  # past the threshold L the bias depends on the query's position too
        learned=True,
        citation="li2024",
        summary="A learned MLP bias of the log distance over the log query position (FIRE).",
        params=FireParams,
        color="tab:pink",
        marker="*",
        reference=naive.fire_reference,
    )
)
