"""How a training step gets its batch: the protocol (a function of a generator, a batch size
and the step, returning inputs and targets), random windows of a token stream, and randomized
positions drawn after each batch (Ruoss et al. 2023). Seeded through the caller's
``torch.Generator`` only, so a resumed run draws the same batches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

# A batch function draws ``batch_size`` examples from ``generator`` for training step ``step``
# (a curriculum reads it; the training loop restores both on resume): (inputs, targets), both
# (B, L) long tensors; targets equal to IGNORE are not scored (cross_entropy's ignore_index).
IGNORE = -100
BatchFn = Callable[[torch.Generator, int, int], tuple[Tensor, Tensor]]


def lm_batches(tokens: Tensor, seq_len: int) -> BatchFn:
    """Random windows of ``seq_len + 1`` tokens: inputs are the first L, targets the last L."""
    if len(tokens) <= seq_len + 1:
        raise ValueError(f"corpus of {len(tokens)} tokens is too short for windows of {seq_len}")
    offsets = torch.arange(seq_len + 1)

    def batch(generator: torch.Generator, batch_size: int, step: int = 0) -> tuple[Tensor, Tensor]:
        starts = torch.randint(0, len(tokens) - seq_len, (batch_size, 1), generator=generator)
        window = tokens[starts + offsets]  # (B, L+1)
        return window[:, :-1], window[:, 1:]

    return batch


@dataclass(frozen=True)
class RandomizedPositions:
    """Randomized positional encodings (Ruoss et al. 2023, ACL, arXiv 2305.16843): a sequence of
    n tokens gets the positions of a sorted random subset of n of [0, L_rand), L_rand =
    ``max_position`` >> the training length, in place of 0..n-1.

    Trained so, an encoding meets every position up to L_rand in training, and every gap of
    order, so a longer test sequence (drawn the same way at evaluation) asks for no position
    it has never seen: only for more of them, closer together. One draw per batch: every
    sequence of a batch shares it, so an encoding's score bias is computed once per forward,
    as with plain positions; over a run's thousands of batches the draws still cover
    [0, L_rand).
    """

    max_position: int

    def __post_init__(self):
        if self.max_position < 1:
            raise ValueError(f"L_rand must be positive, got {self.max_position}")

    def sample(self, generator: torch.Generator, length: int) -> Tensor:
        """Sorted distinct positions, shape (length,), long, from ``generator``."""
        if length > self.max_position:
            raise ValueError(
                f"randomized positions draw {length} distinct positions from [0, "
                f"{self.max_position}): raise extrapolation.randomized_positions.max_position"
            )
        return torch.randperm(self.max_position, generator=generator)[:length].sort().values

    def batches(self, batches: BatchFn) -> Callable[[torch.Generator, int, int], tuple]:
        """``batches`` with the positions of each batch drawn after it from the same generator
        (whose state a resumed run restores): (inputs, targets, positions)."""

        def batch(
            generator: torch.Generator, batch_size: int, step: int = 0
        ) -> tuple[Tensor, Tensor, Tensor]:
            inputs, targets = batches(generator, batch_size, step)
            return inputs, targets, self.sample(generator, inputs.shape[1])

        return batch

    def sampler(self, seed: int) -> Callable[[int], Tensor]:
        """Evaluation's draws: a function of the length, from its own generator seeded with
        ``seed``, so every model evaluated with one seed sees the same positions."""
        generator = torch.Generator().manual_seed(seed)
        return lambda length: self.sample(generator, length)
