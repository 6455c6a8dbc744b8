"""Passkey retrieval (Mohtashami & Jaggi 2023), the synthetic task of the extrapolation
experiment: a key found only by where it stands, repeated after a query. See
:class:`PasskeyTask`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from posenc.batches import IGNORE, BatchFn


@dataclass(frozen=True)
class PasskeyTask:
    """Passkey retrieval (Mohtashami & Jaggi 2023; Chen et al. 2023 test Position Interpolation
    with it) in a form that needs position: the key is a run of ``key_len`` ordinary symbols,
    told apart from the haystack only by standing right after a KEY marker.

    Token ids: symbols ``[0, num_symbols)`` (haystack and key alike), then KEY, then QUERY. A
    sequence of length L, the model's whole input (the answer tokens it is fed count), is::

        s s ... s KEY k1 k2 .. kn s ... s QUERY k1 .. k(n-1)
        targets:                          k1    k2 .. kn       (every other target IGNORE)

    The body (everything but the two markers and the fed answer, M = L - n - 1 symbols) is a
    random arrangement of a balanced multiset: every symbol occurs floor(M/V) or ceil(M/V)
    times (which ones get the extra is random), and the key is the n symbols that follow KEY,
    at a uniformly random place. Why balanced: a key inserted into i.i.d. filler makes its own
    symbols the most frequent ones, a cue that a model could use in place of position and that
    fades as the haystack grows, confounding length generalisation. Here the counts say
    nothing, at any length.

    Why it needs position: every permutation of the body has the same bag of tokens, and the
    key is a uniformly random window of it. Exact match (every key token's argmax right given
    the true prefix, i.e. greedy decoding right) therefore has chance ``V^-n`` for a blind
    guess, and :meth:`position_blind_bound` bounds what any predictor that sees only the bag of
    its causal prefix can reach. Teacher forcing puts the answer in the input: L counts it, so
    the model's positions are exactly 0..L-1 and a learned table of N rows covers L <= N.
    """

    num_symbols: int = 16
    key_len: int = 3

    def __post_init__(self):
        if self.num_symbols < 2 or self.key_len < 1:
            raise ValueError(
                f"a passkey task needs num_symbols >= 2 and key_len >= 1, got {self.num_symbols},"
                f" {self.key_len}"
            )

    @property
    def vocab_size(self) -> int:
        return self.num_symbols + 2

    @property
    def key_marker(self) -> int:
        return self.num_symbols

    @property
    def query(self) -> int:
        return self.num_symbols + 1

    @property
    def min_length(self) -> int:
        """KEY, the key, QUERY and the fed answer: no haystack at all."""
        return 2 * self.key_len + 1

    @property
    def chance(self) -> float:
        """Exact-match accuracy of a uniform guess of the key: V^-n."""
        return float(self.num_symbols) ** -self.key_len

    def position_blind_bound(self, length: int) -> float:
        """An upper bound on the exact-match accuracy of any predictor whose guess of key token
        i depends only on the bag (multiset) of its causal prefix.

        That bag is a function of the body's counts c and of k1..k(i-1); given those, k_i is a
        draw without replacement from the body's multiset, so P(k_i = s) = (c_s - used_s) /
        (M - i) <= ceil(M/V) / (M - i). The product over i bounds exact match; it is within a
        factor (1 + V/M)^n of V^-n (0.067 per token against 1/16 at M = 60, V = 16).
        """
        M = self._body_length(length)
        most = -(-M // self.num_symbols)  # ceil(M / V)
        bound = 1.0
        for i in range(self.key_len):
            bound *= most / (M - i)
        return bound

    def _body_length(self, length: int) -> int:
        if length < self.min_length:
            raise ValueError(
                f"a passkey sequence with a key of {self.key_len} tokens needs length >= "
                f"{self.min_length}, got {length}"
            )
        return length - self.key_len - 1

    def sample(self, generator: torch.Generator, batch_size: int, length: int):
        """(inputs, targets), each (B, L) long; targets are IGNORE except the last n."""
        B, V, n = batch_size, self.num_symbols, self.key_len
        M = self._body_length(length)
        # A balanced multiset (symbol j % V at j = 0..M-1) in a random order, then a random
        # relabelling of the symbols, so that which symbols occur once more is random too.
        order = torch.rand(B, M, generator=generator).argsort(dim=-1, stable=True)  # (B, M)
        relabel = torch.rand(B, V, generator=generator).argsort(dim=-1, stable=True)  # (B, V)
        body = relabel.gather(1, order % V)  # (B, M)
        start = torch.randint(0, M - n + 1, (B, 1), generator=generator)  # key = body[start:+n]
        key = body.gather(1, start + torch.arange(n))  # (B, n)

        # Input index j reads body[j] before KEY, body[j - 1] after it up to QUERY at M + 1,
        # then the fed answer body[start + j - M - 2].
        j = torch.arange(length).expand(B, -1)  # (B, L)
        source = torch.where(j < start, j, torch.where(j <= M, j - 1, start + j - M - 2))
        inputs = body.gather(1, source.clamp(0, M - 1))
        inputs[j == start] = self.key_marker
        inputs[:, M + 1] = self.query
        targets = torch.full((B, length), IGNORE, dtype=torch.long)
        targets[:, M + 1 :] = key
        return inputs, targets

    def batches(self, min_len: int, max_len: int, ramp_steps: int = 0) -> BatchFn:
        """Training batches whose length is drawn per batch from [min_len, longest(step)], so the
        model sees every length up to ``max_len`` = N (a batch has one length).

        ``ramp_steps`` > 0 is a curriculum over lengths: the longest length drawn grows linearly
        from ``min_len`` at step 0 to ``max_len`` at step ``ramp_steps``, then stays there.
        Short haystacks first: the retrieval circuit (a previous-token head, then a head that
        reads the token after KEY) is found on sequences where few tokens compete for
        attention, and then holds as they grow (curriculum learning, Bengio et al. 2009;
        without it, sinusoidal and learned tables learned the task in no pilot run).
        """
        if not self.min_length <= min_len <= max_len:
            raise ValueError(
                f"need {self.min_length} <= min_len <= max_len (a key of {self.key_len} tokens "
                f"needs {self.min_length}), got {min_len}, {max_len}"
            )
        if ramp_steps < 0:
            raise ValueError(f"ramp_steps must be >= 0, got {ramp_steps}")

        def batch(generator: torch.Generator, batch_size: int, step: int = 0):
            longest = self.longest(min_len, max_len, ramp_steps, step)
            length = int(torch.randint(min_len, longest + 1, (1,), generator=generator))
            return self.sample(generator, batch_size, length)

        return batch

    @staticmethod
    def longest(min_len: int, max_len: int, ramp_steps: int, step: int) -> int:
        """The longest training length at ``step`` under the curriculum of :meth:`batches`."""
        if ramp_steps <= 0 or step >= ramp_steps:
            return max_len
        return min_len + (max_len - min_len) * step // ramp_steps
