"""Data for the extrapolation experiment: a character corpus and a synthetic retrieval task.

Both are torch-only and seeded through an explicit ``torch.Generator`` owned by the caller, so a
training run can save the generator's state in its checkpoint and resume bit for bit.

* Character-level language modelling on one of the texts ``extrapolation.corpus`` names
  (:mod:`posenc.corpora`): ``pydoc_data.topics`` (~465k characters, ships with every CPython),
  any UTF-8 file, or ``python-stdlib``, the running CPython's standard library sources (~12M
  characters). A single text is split by interleaved whole blocks (every tenth block of a few
  thousand characters is validation), so validation text is never seen in training, not even
  as overlapping windows, and is drawn from the same distribution as the training text. A
  text may repeat itself, though (pydoc's topics quote one another), so every stretch of
  validation text of :data:`VERBATIM` characters that occurs verbatim in the training text is
  cut from validation: what is scored is held out, not a copy of what was trained on. A
  contiguous split would make validation the alphabetical tail of the pydoc topics: a bigram
  model finds that tail 0.23 bits/char easier than the rest, which a model's train/validation
  gap would then mistake for generalisation. The standard library is split the same way, by
  whole files in place of blocks, so that no file is cut between the two splits.
* Passkey retrieval (Mohtashami & Jaggi 2023): a multi-token key, drawn from the same symbols
  as the haystack around it and found only by where it stands (right after a KEY marker), is
  repeated after a QUERY marker. No token's identity or frequency gives the key away, so a
  model that ignores order cannot do better than chance; one that reads positions can. The
  answer is exact, so accuracy is exact match; the data are unlimited, so the task cannot be
  memorised, which makes it the right place to test length generalisation (the setting of
  Kazemnejad et al. 2023: train on lengths up to N, test beyond).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from posenc.corpora import STDLIB, read_stdlib, read_text

# A batch function draws ``batch_size`` examples from ``generator`` for training step ``step``
# (a curriculum reads it; the training loop restores both on resume): (inputs, targets), both
# (B, L) long tensors; targets equal to IGNORE are not scored (cross_entropy's ignore_index).
IGNORE = -100
BatchFn = Callable[[torch.Generator, int, int], tuple[Tensor, Tensor]]


@dataclass(frozen=True)
class CharCorpus:
    """A text as character ids, with its vocabulary and an interleaved split: by whole blocks
    of one text, or by whole files of a text made of files (``files`` > 0)."""

    vocab: tuple[str, ...]  # id -> character
    train: Tensor  # (N_train,) long: the training blocks (or files), in text order
    val: Tensor  # (N_val,) long: the validation blocks (or files), in text order
    sha256: str  # of the UTF-8 text: evaluation checks it is the text the model trained on
    val_blocks: int = 0  # how many whole blocks validation holds (0 when split by files)
    block: int = 0  # characters per block (0 when split by files)
    files: int = 0  # how many whole files the text holds (0: one text, split by blocks)
    val_files: int = 0  # how many of them are validation
    python: str | None = None  # the CPython version whose standard library it is, if it is
    val_verbatim_removed: int = 0  # validation characters cut as verbatim repeats of training

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)


def validation_blocks(n_blocks: int, val_fraction: float) -> list[int]:
    """Which of ``n_blocks`` whole blocks are validation: block i when floor((i+1) f) >
    floor(i f), i.e. one block in every 1/f, spread evenly over the text (blocks 9, 19, 29, ...
    for f = 0.1), never the first. The same rule picks whole files of a text made of files."""
    return [i for i in range(n_blocks) if int((i + 1) * val_fraction) > int(i * val_fraction)]


def char_ids(text: str) -> tuple[tuple[str, ...], Tensor]:
    """(vocabulary, ids): the distinct characters in code-point order (``sorted(set(text))``)
    and the text as their indices, a (len(text),) long tensor.

    Through numpy, not a Python list of ints: the code points are the text's UTF-32 encoding
    read as an array, and a lookup table from code point to id maps them all at once (~0.2 s
    for the standard library's 12M characters, against seconds for a list comprehension and
    ``torch.tensor``). ``surrogatepass``: a lone surrogate is one code point, as in the str.
    """
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    present = np.flatnonzero(np.bincount(points)) if len(points) else np.zeros(0, np.int64)
    lookup = np.zeros(int(present[-1]) + 1 if len(present) else 0, dtype=np.int64)
    lookup[present] = np.arange(len(present))
    return tuple(map(chr, present.tolist())), torch.from_numpy(lookup[points])


def load_corpus(
    path: str | None = None, val_fraction: float = 0.1, block: int = 4096
) -> CharCorpus:
    """Character vocabulary of the whole text (so validation has no unknown characters), then
    the split.

    A single text (``path`` None: the pydoc topics; or a file) is cut into blocks of ``block``
    characters, of which a ``val_fraction`` of the whole blocks, evenly interleaved
    (:func:`validation_blocks`), are validation and the rest (with the final partial block) are
    training. ``python-stdlib`` (:func:`posenc.corpora.read_stdlib`) is split by whole files
    instead: file i of the sorted list is validation by the same rule, and ``block`` is not
    used. No file is ever cut, so a validation file's functions are never seen in training,
    not even their first lines; with f = 0.1, 73 of CPython 3.11's 732 files, 10.8 % of its
    characters. Windows are drawn within each split's concatenation, so a training window may
    span the seam where a validation block (or file) was cut out, as it spans the seams
    between topics or files."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    if path == STDLIB:
        return _by_files(val_fraction)
    if block < 1:
        raise ValueError(f"block must be a positive number of characters, got {block}")
    text = read_text(path)
    vocab, ids = char_ids(text)
    n_whole = len(ids) // block
    held_out = validation_blocks(n_whole, val_fraction)
    if not held_out:
        raise ValueError(
            f"a text of {len(ids)} characters holds {n_whole} blocks of {block}: too few for a "
            f"validation fraction of {val_fraction} (lower extrapolation.split_block)"
        )
    spans = [(i * block, (i + 1) * block) for i in held_out]
    return _split(text, vocab, ids, spans, val_blocks=len(held_out), block=block)


# No stretch of this many characters of validation text occurs verbatim in the training text:
# a text that repeats itself (pydoc's topics quote one another; the standard library repeats
# licence headers and idioms) would otherwise let a model score validation text it has seen.
VERBATIM = 64


def window_hashes(ids: np.ndarray, width: int) -> np.ndarray:
    """A 64-bit polynomial hash of every window of ``width`` ids, one per start:
    (len(ids) - width + 1,) uint64, H = sum_k (x_{i+k} + 1) B^(width-1-k) mod 2^64. Equal
    windows hash alike; distinct ones collide with probability about 2^-64 per pair.

    Built by doubling (H of a window of a + b is H_a B^b + H_b of the window a further on),
    so a window of 64 costs 6 passes over the text, not 64."""
    n = len(ids) - width + 1
    if n <= 0 or width < 1:
        return np.zeros(0, dtype=np.uint64)
    base = 0x100000001B3  # the FNV prime: odd, so the map is invertible mod 2^64

    def join(left, left_len, right, right_len):
        m = len(ids) - (left_len + right_len) + 1
        shift = np.uint64(pow(base, right_len, 1 << 64))
        return left[:m] * shift + right[left_len : left_len + m]

    part, part_len = ids.astype(np.uint64) + np.uint64(1), 1  # windows of 1, 2, 4, ...
    out, out_len = None, 0
    w = width
    while w:
        if w & 1:
            if out is None:
                out, out_len = part, part_len
            else:
                out, out_len = join(out, out_len, part, part_len), out_len + part_len
        w >>= 1
        if w:
            part, part_len = join(part, part_len, part, part_len), 2 * part_len
    return out[:n]


def verbatim_in(seen: np.ndarray, val: np.ndarray, width: int = VERBATIM) -> np.ndarray:
    """A mask over ``val``: the characters covered by some window of ``width`` whose hash is
    in ``seen`` (the sorted hashes of the training text's windows)."""
    hashes = window_hashes(val, width)
    found = np.searchsorted(seen, hashes)
    starts = np.flatnonzero(seen[np.minimum(found, len(seen) - 1)] == hashes) if len(seen) else []
    edges = np.zeros(len(val) + 1, dtype=np.int64)
    edges[starts] += 1  # starts are distinct, so plain fancy-index adds are exact
    edges[np.asarray(starts) + width] -= 1
    return np.cumsum(edges[:-1]) > 0


def drop_verbatim(train: Tensor, val: Tensor, width: int = VERBATIM) -> tuple[Tensor, int]:
    """``val`` without every stretch that occurs verbatim in ``train`` (the stretches are cut
    out and what is left joined), and how many characters were cut. Cutting joins text that
    was apart, so the joined text is checked again until no window of it occurs in training."""
    # Sorted, duplicates kept: searchsorted needs order only (np.unique on 11M hashes takes
    # seconds where a sort takes a tenth of one).
    seen = np.sort(window_hashes(train.numpy(), width))
    v = val.numpy()
    removed = 0
    while len(v) >= width:
        covered = verbatim_in(seen, v, width)
        if not covered.any():
            break
        removed += int(covered.sum())
        v = v[~covered]
    return torch.from_numpy(np.ascontiguousarray(v)), removed


def _split(text: str, vocab: tuple[str, ...], ids: Tensor, held_out, **counts) -> CharCorpus:
    """The corpus with the character ranges ``held_out`` (start, end) as validation and the
    rest as training, each in text order, less every validation stretch of :data:`VERBATIM`
    characters that occurs verbatim in training (:func:`drop_verbatim`); ``counts`` say how it
    was cut."""
    is_val = torch.zeros(len(ids), dtype=torch.bool)
    for start, end in held_out:
        is_val[start:end] = True
    train = ids[~is_val]
    val, removed = drop_verbatim(train, ids[is_val])
    if not len(val):
        raise ValueError(
            "every validation character repeats training text verbatim: no held-out text left"
        )
    return CharCorpus(
        vocab=vocab,
        train=train,
        val=val,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        val_verbatim_removed=removed,
        **counts,
    )


def _by_files(val_fraction: float) -> CharCorpus:
    """The standard library's sources, validation a ``val_fraction`` of the whole files."""
    sources = read_stdlib()
    vocab, ids = char_ids(sources.text)
    held_out = validation_blocks(len(sources.paths), val_fraction)
    if not held_out:
        raise ValueError(
            f"corpus {STDLIB}: {len(sources.paths)} files are too few for a validation "
            f"fraction of {val_fraction} (raise extrapolation.val_fraction)"
        )
    spans = [(sources.starts[i], sources.starts[i + 1]) for i in held_out]
    return _split(
        sources.text,
        vocab,
        ids,
        spans,
        files=len(sources.paths),
        val_files=len(held_out),
        python=sources.python,
    )


def trained_corpus(data: dict):
    """The corpus a training log or checkpoint describes (``data``: its setting, the
    validation fraction, the split block and the SHA-256 it trained on), split as it was;
    refuses a text that has changed since (another file's content, or for ``python-stdlib``
    another CPython's library), whose numbers would describe another text."""
    corpus = load_corpus(data["corpus"], data["val_fraction"], data["split_block"])
    if corpus.sha256 != data["sha256"]:
        versions = (
            f" (trained under CPython {data['python']}, read under {corpus.python})"
            if data.get("python") and corpus.python
            else ""
        )
        raise ValueError(
            f"corpus {data['corpus'] or 'pydoc_data.topics'} differs from the text the model "
            f"was trained on (SHA-256 mismatch){versions}; retrain it"
        )
    return corpus


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
