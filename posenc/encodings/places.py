"""Where an encoding acts on a transformer, one base class per place:

* ``none``  -- nowhere (NoPE): :class:`NoPE`;
* ``input`` -- a vector added to the token embedding before the first block: :class:`InputEncoding`;
* ``qk``    -- a transform of queries and keys inside every attention layer: :class:`QKEncoding`;
* ``bias``  -- an additive bias on the attention scores of every layer: :class:`BiasEncoding`.

Each class owns what the analyses ask of an encoding acting there (its similarity kernel, its
timed workload, its cost), so no analysis branches on a class. A module is built from
:class:`EncodingParams`: the model's shape, common to every encoding, and the encoding's own
hyper-parameters (``hyper``), which its spec declares (:mod:`posenc.encodings.registry`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from posenc.encodings.registry import EncodingSpec

ActsOn = Literal["none", "input", "qk", "bias"]


@dataclass(frozen=True)
class EncodingParams:
    """What a module is built with: the shape every encoding shares, and its own
    hyper-parameters (an instance of its spec's ``params`` dataclass; None for an encoding
    that declares none). :func:`posenc.encodings.build` makes one from the config."""

    d_model: int
    n_heads: int = 1
    max_len: int = 2048  # rows of a learned table (L_max)
    angle_dtype: torch.dtype = torch.float32
    hyper: Any = None

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


class PositionalEncoding(nn.Module):
    """Base: acts nowhere. Subclasses override the one hook where they act.

    ``positions`` are 1-D tensors of (possibly non-integer) positions. Float positions let the
    extrapolation analysis apply Position Interpolation without touching the model.

    Besides the hooks, each place of action says what the analyses need of it, so that no
    analysis branches on a name or on ``acts_on``: :meth:`kernel` (the positional similarity
    K(p, q) that the similarity analysis plots) and :meth:`workload` (the work the complexity
    analysis times). A subclass acting in a new way overrides them too.
    """

    acts_on: ActsOn = "none"
    # Whether its own work grows as L² (a materialised (Lq, Lk) score bias) rather than L: the
    # complexity analysis times such encodings only up to its ``bias_max_len``.
    quadratic_cost: bool = False
    # The registry entry it was built from (set by :func:`posenc.encodings.build`), so that
    # whoever holds a model reads its encoding's capabilities from its spec.
    spec: EncodingSpec | None = None

    def __init__(self, params: EncodingParams):
        super().__init__()
        self.params = params

    def input_encoding(self, positions: Tensor) -> Tensor | None:  # (L, d_model)
        return None

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        return q, k

    def score_bias(self, q_pos: Tensor, k_pos: Tensor, causal: bool) -> Tensor | None:
        return None  # else (H, Lq, Lk)

    def layers(self, n_layers: int) -> tuple[bool, ...]:
        """Its layout: in which of a stack's ``n_layers`` layers it acts (True), counted from
        the input; every layer unless it says otherwise (a RoPE/NoPE hybrid's NoPE layers). The
        model applies ``rotate`` and ``score_bias`` in those layers only; an input encoding,
        added once before the stack, acts in all."""
        return (True,) * n_layers

    def windows(self, n_layers: int) -> tuple[int | None, ...]:
        """Its attention windows, declared beside :meth:`layers`: per layer, the number of
        most recent tokens a query may attend to (a key ``j`` is visible from query ``i`` when
        ``0 <= i - j < window``, counted in tokens, not positions), or None for full causal
        attention. None everywhere unless it says otherwise: a hybrid that keeps RoPE to
        short distances by windowing its RoPE layers (Yang et al. 2025's RNoPE-SWA)."""
        return (None,) * n_layers

    def heads(self, n_heads: int) -> tuple[int, ...]:
        """Its heads, as :meth:`layers` is its layers: the group of each of ``n_heads`` heads,
        heads of one group encoded alike. One group (all 0) unless it says otherwise: a RoPE
        whose head h has its own base, a bias with a slope per head. The analyses measure an
        encoding with more than one group group by group (``group=`` of :meth:`kernel`,
        :meth:`frequencies`, :meth:`angle_table`), at the head count of their models."""
        return (0,) * n_heads

    @property
    def groups(self) -> tuple[int, ...]:
        """The distinct groups of this module's heads, in head order."""
        return tuple(dict.fromkeys(head_layout(self, self.params.n_heads)))

    def group_heads(self, group: int) -> list[int]:
        """The heads of ``group`` in this module (a ValueError naming the groups if none)."""
        found = [h for h, g in enumerate(head_layout(self, self.params.n_heads)) if g == group]
        if not found:
            raise ValueError(
                f"{type(self).__name__} has no head in group {group} at "
                f"{self.params.n_heads} heads (groups {list(self.groups)})"
            )
        return found

    def kernel(self, positions: Tensor, group: int | None = None) -> Tensor:
        """K(p, q) over ``positions``: how alike the encoding makes two positions, for the
        heads of ``group``, or averaged over every head (None). Shape (N, N).

        Nowhere: every pair alike (ones)."""
        n = positions.shape[0]
        return torch.ones(n, n, dtype=torch.float64, device=positions.device)

    def frequencies(self, group: int = 0) -> Tensor | None:
        """The angular frequencies omega_i of the waves this encoding writes a position p into
        (angles p * omega_i) in the heads of ``group``, float64, shape (pairs,); None for an
        encoding without waves."""
        return None

    def pair_decay(self, distance: Tensor) -> Tensor | None:
        """The factor each wave's term of a score carries at relative distance r = n - m of a
        causal query n after its key m, beside its rotation (float64, shape (R, pairs) for
        ``distance`` (R,)); None where the waves are not scaled (a pure rotation)."""
        return None

    def angle_table(self, positions: Tensor, dtype: torch.dtype, group: int = 0) -> Tensor | None:
        """The table of sines and cosines of those angles for ``positions``, with positions and
        angles computed in ``dtype`` (a model uses float32 or wider; the aliasing analysis asks
        for low precision on purpose): the rows an input encoding adds, or the cos/sin a
        rotation turns by in the heads of ``group``. Shape (L, 2 * pairs); None for an encoding
        without waves."""
        return None

    def workload(self, positions: Tensor, batch: int, causal: bool) -> Callable[[], object] | None:
        """A zero-argument call doing this encoding's own work for ``positions``; None when
        there is none (NoPE)."""
        return None


def head_layout(encoding: PositionalEncoding, n_heads: int) -> tuple[int, ...]:
    """The groups of ``encoding``'s heads (:meth:`PositionalEncoding.heads`), checked: one
    non-negative int per head, and one group for an input encoding, which is added once to
    the embedding that every head reads."""
    found = tuple(encoding.heads(n_heads))
    name = type(encoding).__name__
    if len(found) != n_heads or not all(type(g) is int and g >= 0 for g in found):
        raise ValueError(
            f"{name}.heads({n_heads}) must give one non-negative int per head, got {found!r}"
        )
    if encoding.acts_on == "input" and len(set(found)) > 1:
        raise ValueError(
            f"{name} acts on the input, which every head reads alike: its heads() cannot give "
            "more than one group"
        )
    return found


def heads_label(layout: tuple[int, ...], group: int) -> str:
    """The heads of ``group`` in a head layout (:func:`head_layout`), as a label: "1 3"."""
    return " ".join(str(h) for h, of in enumerate(layout) if of == group)


def head_groups(encoding: PositionalEncoding) -> dict[int, str]:
    """Each group of heads of an encoding whose heads differ, with the name the analyses give
    it (``name+heads 1 3``), in head order; empty when its heads are alike (one group, measured
    as one head, as it always was)."""
    layout = head_layout(encoding, encoding.params.n_heads)
    if len(set(layout)) == 1:
        return {}
    name = encoding.spec.name if encoding.spec is not None else type(encoding).__name__
    return {g: f"{name}+heads {heads_label(layout, g)}" for g in dict.fromkeys(layout)}


def group_calls(encoding: PositionalEncoding) -> list[tuple[int, ...]]:
    """The arguments that ask each group of ``encoding``'s heads for what it computes by
    group (``kernel``, ``frequencies``, ``angle_table``): no argument when its heads are
    alike, so that a subclass written before groups existed is called as it always was."""
    return [(g,) for g in head_groups(encoding)] or [()]


class InputEncoding(PositionalEncoding):
    """Adds a vector per position to the token embedding (:meth:`input_encoding`)."""

    acts_on = "input"

    def kernel(self, positions: Tensor, group: int | None = None) -> Tensor:
        """Cosine similarity of the position vectors (one vector for every head)."""
        table = self.input_encoding(positions).double()  # (N, D)
        unit = table / table.norm(dim=-1, keepdim=True)
        return unit @ unit.T

    def workload(self, positions, batch, causal):
        return lambda: self.input_encoding(positions)


class QKEncoding(PositionalEncoding):
    """Transforms queries and keys in every attention layer (:meth:`rotate`)."""

    acts_on = "qk"

    def kernel(self, positions: Tensor, group: int | None = None) -> Tensor:
        """K(p, q) = tr(R_p^T R_q) / Dh: every basis vector e_j transformed at p and at q, as
        the score of a query at p and a key at q averaged over the basis, in the heads of
        ``group`` (alike, so its first), or averaged over every head (None)."""
        dh, n = self.params.head_dim, positions.shape[0]
        # One group: one head is every head (the shape single-group encodings always had).
        heads = 1 if len(self.groups) == 1 else self.params.n_heads
        basis = torch.eye(dh, dtype=torch.float64, device=positions.device)[:, None, None, :]
        basis = basis.expand(dh, heads, n, dh)  # (Dh, H, N, Dh): e_j at every position
        q, k = self.rotate(basis, basis, positions, positions)
        if heads == 1:
            return torch.einsum("jpd,jqd->pq", q[:, 0], k[:, 0]) / dh
        picked = range(heads) if group is None else self.group_heads(group)[:1]
        per_head = [torch.einsum("jpd,jqd->pq", q[:, h], k[:, h]) / dh for h in picked]
        return torch.stack(per_head).mean(dim=0)

    def workload(self, positions, batch, causal):
        p, length = self.params, positions.shape[0]
        q, k = _random_qk((batch, p.n_heads, length, p.head_dim), positions.device)
        return lambda: self.rotate(q, k, positions, positions)


@functools.lru_cache(maxsize=1)
def _random_qk(shape: tuple[int, ...], device: torch.device) -> tuple[Tensor, Tensor]:
    """Seeded uniform queries and keys of ``shape`` (B, H, L, Dh) for :meth:`workload`. Kept
    for the next call: every rotary encoding timed at one width and length rotates the same
    ones, and drawing a GiB of them took longer than rotating it (the rotation's cost does not
    depend on the values)."""
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.empty(shape, device=device).uniform_(-1.0, 1.0, generator=g)
    return q, torch.empty(shape, device=device).uniform_(-1.0, 1.0, generator=g)


class BiasEncoding(PositionalEncoding):
    """Adds a bias to the attention scores of every layer (:meth:`score_bias`)."""

    acts_on = "bias"
    quadratic_cost = True  # the (H, Lq, Lk) bias is materialised

    def heads(self, n_heads: int) -> tuple[int, ...]:
        """Every head its own group: a score bias has a slope, a bucket table or an output per
        head (ALiBi, T5, KERPLE, FIRE)."""
        return tuple(range(n_heads))

    def kernel(self, positions: Tensor, group: int | None = None) -> Tensor:
        """exp(bias(p, q)) of the heads of ``group``, or averaged over every head (None): the
        factor the bias puts on attention weights (bidirectional, so both orders of a pair
        count)."""
        factor = self.score_bias(positions, positions, causal=False).double().exp()
        if group is None:
            return factor.mean(dim=0)
        return factor[self.group_heads(group)].mean(dim=0)

    def workload(self, positions, batch, causal):
        return lambda: self.score_bias(positions, positions, causal)


class NoPE(PositionalEncoding):
    """No positional information: every hook is neutral."""

    acts_on = "none"


# Each place of action's class: what the analyses ask of an encoding acting there.
PLACES: dict[str, type[PositionalEncoding]] = {
    "none": NoPE,
    "input": InputEncoding,
    "qk": QKEncoding,
    "bias": BiasEncoding,
}
