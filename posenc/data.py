"""Data for the extrapolation experiment: a character corpus and a synthetic retrieval task.

Both are torch-only and seeded through an explicit ``torch.Generator`` owned by the caller, so a
training run can save the generator's state in its checkpoint and resume bit for bit.

* Character-level language modelling on text that ships with every CPython
  (``pydoc_data.topics``, ~465k characters) or on any UTF-8 file named in the config. The split
  is contiguous (first 90 % train, last 10 % validation), so validation text is never seen in
  training, not even as overlapping windows.
* Passkey retrieval (Mohtashami & Jaggi 2023): find the one passkey token hidden in a haystack
  of random tokens. The answer is exact, so accuracy is exact match; the data are unlimited, so
  the task cannot be memorised, which makes it the right place to test length generalisation
  (the setting of Kazemnejad et al. 2023: train on lengths up to N, test up to 4N).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

# A batch function draws ``batch_size`` examples from ``generator``: (inputs, targets), both
# (B, L) long tensors; targets equal to IGNORE are not scored (cross_entropy's ignore_index).
IGNORE = -100
BatchFn = Callable[[torch.Generator, int], tuple[Tensor, Tensor]]


def read_text(path: str | None) -> str:
    """The corpus text: ``pydoc_data.topics`` when ``path`` is None, else a UTF-8 file.

    The topics dict is joined in sorted key order, so the text does not depend on dict order.
    """
    if path is None:
        from pydoc_data.topics import topics

        return "\n\n".join(topics[k] for k in sorted(topics))
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"config key extrapolation.corpus = {path!r}: no such file")
    return file.read_text(encoding="utf-8")


@dataclass(frozen=True)
class CharCorpus:
    """A text as character ids, with its vocabulary and a contiguous train/validation split."""

    vocab: tuple[str, ...]  # id -> character
    train: Tensor  # (N_train,) long
    val: Tensor  # (N_val,) long
    sha256: str  # of the UTF-8 text: evaluation checks it is the text the model trained on

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)


def load_corpus(path: str | None = None, val_fraction: float = 0.1) -> CharCorpus:
    """Character vocabulary of the whole text (so validation has no unknown characters), then
    the first ``1 - val_fraction`` of it for training and the rest for validation."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    text = read_text(path)
    vocab = tuple(sorted(set(text)))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    n_train = int(len(ids) * (1.0 - val_fraction))
    return CharCorpus(
        vocab=vocab,
        train=ids[:n_train],
        val=ids[n_train:],
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def lm_batches(tokens: Tensor, seq_len: int) -> BatchFn:
    """Random windows of ``seq_len + 1`` tokens: inputs are the first L, targets the last L."""
    if len(tokens) <= seq_len + 1:
        raise ValueError(f"corpus of {len(tokens)} tokens is too short for windows of {seq_len}")
    offsets = torch.arange(seq_len + 1)

    def batch(generator: torch.Generator, batch_size: int) -> tuple[Tensor, Tensor]:
        starts = torch.randint(0, len(tokens) - seq_len, (batch_size, 1), generator=generator)
        window = tokens[starts + offsets]  # (B, L+1)
        return window[:, :-1], window[:, 1:]

    return batch


@dataclass(frozen=True)
class PasskeyTask:
    """Passkey retrieval over random tokens (Mohtashami & Jaggi 2023; Chen et al. 2023 test
    Position Interpolation with it): a haystack of random filler tokens hides one passkey token
    at a random position; the last token is QUERY, and the answer is the passkey.

    Token ids: filler ``[0, num_filler)``, passkeys ``[num_filler, num_filler + num_keys)``,
    then QUERY. A sequence of length L (the model's input) is::

        f f f ... k ... f f QUERY      target at QUERY: k

    Only that one target is scored, so accuracy is exact match and chance is ``1 / num_keys``.
    Retrieving the passkey needs content-based attention over the whole sequence and no
    positional arithmetic at all: a model that generalises in length keeps its accuracy when
    the haystack grows; one whose encoding misleads attention at unseen positions or distances
    loses it. The data are unlimited, so the task cannot be memorised.
    """

    num_filler: int = 16
    num_keys: int = 16

    @property
    def vocab_size(self) -> int:
        return self.num_filler + self.num_keys + 1

    @property
    def query(self) -> int:
        return self.num_filler + self.num_keys

    def sample(self, generator: torch.Generator, batch_size: int, length: int):
        """(inputs, targets), each (B, L); targets are IGNORE except at the final QUERY."""
        if length < 2:
            raise ValueError(f"a passkey sequence needs length >= 2, got {length}")
        B = batch_size
        inputs = torch.randint(0, self.num_filler, (B, length), generator=generator)
        where = torch.randint(0, length - 1, (B,), generator=generator)  # anywhere before QUERY
        key = self.num_filler + torch.randint(0, self.num_keys, (B,), generator=generator)
        inputs[torch.arange(B), where] = key
        inputs[:, -1] = self.query
        targets = torch.full((B, length), IGNORE, dtype=torch.long)
        targets[:, -1] = key
        return inputs, targets

    def batches(self, min_len: int, max_len: int) -> BatchFn:
        """Training batches whose length is drawn per batch from [min_len, max_len], so the model
        sees every length up to ``max_len`` = N (a batch has one length)."""
        if not 2 <= min_len <= max_len:
            raise ValueError(f"need 2 <= min_len <= max_len, got {min_len}, {max_len}")

        def batch(generator: torch.Generator, batch_size: int) -> tuple[Tensor, Tensor]:
            length = int(torch.randint(min_len, max_len + 1, (1,), generator=generator))
            return self.sample(generator, batch_size, length)

        return batch
