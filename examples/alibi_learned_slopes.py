"""A plugin to copy: ALiBi with learned slopes, registered through posenc's public API.

Press et al. (2022) add -m_h |i - j| to the attention scores of head h, with fixed slopes
m_h = 2^(-8h/H). Here each head's slope is a parameter, started at Press et al.'s value and
kept positive by learning its logarithm: does letting the model choose how fast each head
forgets help, or hurt length generalisation? Run every analysis on it, next to the encodings
you know, with one command:

    posenc card examples/alibi_learned_slopes.py --config test --against rope alibi

A plugin is a Python file that calls ``register(EncodingSpec(...))`` at import. The module is a
``PositionalEncoding`` subclass that overrides the one hook where it acts:
``input_encoding(positions)`` for an input table, ``rotate(q, k, q_pos, k_pos)`` for queries
and keys, or ``score_bias(q_pos, k_pos, causal)`` for the attention scores, as here.
"""

from torch import nn

# The public API, and Press et al.'s slopes as the registry computes them.
from posenc.encodings import EncodingSpec, PositionalEncoding, alibi_slopes, register


class LearnedSlopeALiBi(PositionalEncoding):
    """A per-head linear distance penalty, -m_h |i - j|, with m_h = exp(log_slope_h) learned."""

    def __init__(self, params):
        super().__init__(params)
        self.log_slope = nn.Parameter(alibi_slopes(params.n_heads).float().log())

    def score_bias(self, q_pos, k_pos, causal):
        # (H, Lq, Lk): distances in float32 whatever the positions' dtype. The model masks the
        # future itself under causal attention, so the bias is the same formula both ways.
        distance = (q_pos.float()[:, None] - k_pos.float()[None, :]).abs()
        return -self.log_slope.exp()[:, None, None] * distance


register(
    EncodingSpec(
        "alibi_learned",
        "bias",
        LearnedSlopeALiBi,
        relative=True,
        learned=True,
        citation="press2022",
        summary="ALiBi with each head's slope learned (started at Press et al.'s).",
    )
)
