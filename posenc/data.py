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

The corpus is here; the batches (and randomized positions) are in :mod:`posenc.batches`, the
passkey task in :mod:`posenc.passkey`, and both are importable from here too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from posenc.batches import IGNORE, BatchFn, RandomizedPositions, lm_batches
from posenc.corpora import STDLIB, read_stdlib, read_text
from posenc.passkey import PasskeyTask

# What other modules read from here: the corpus, and the batches and the passkey task, whose
# own modules these names come from.
__all__ = [
    "IGNORE",
    "NEAR_VERBATIM",
    "VERBATIM",
    "BatchFn",
    "CharCorpus",
    "PasskeyTask",
    "RandomizedPositions",
    "char_ids",
    "drop_verbatim",
    "lm_batches",
    "load_corpus",
    "tuning_units",
    "read_text",
    "trained_corpus",
    "validation_blocks",
    "verbatim_in",
    "verbatim_share",
    "window_hashes",
]


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
    # The tuning span: whole blocks (or files) neither trained on nor scored, read only by the
    # recipe pilots (benchmarks/recipe_pilots.py), so that a recipe is chosen on text the study
    # does not score. Empty unless a tuning fraction is asked for.
    tune: Tensor = torch.zeros(0, dtype=torch.long)
    tune_units: int = 0  # how many whole blocks (or files) the tuning span holds
    # Where each fragment of validation text starts in ``val``: a fragment is a maximal run of
    # validation characters contiguous in the source text (a held-out block or file, cut again
    # where a verbatim repeat was removed). Windows in one fragment share a topic and a style,
    # so the intervals resample fragments, not windows (posenc.estimates).
    val_fragments: tuple[int, ...] = (0,)

    def fragment_of(self, positions) -> np.ndarray:
        """The fragment (an index into :attr:`val_fragments`) holding each position of
        ``val``."""
        return np.searchsorted(np.asarray(self.val_fragments), np.asarray(positions), "right") - 1

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


def tuning_units(n_units: int, held_out: list[int], tune_fraction: float) -> list[int]:
    """Which of the ``n_units`` blocks (or files) not in ``held_out`` form the tuning span: a
    ``tune_fraction`` of them, picked from the remaining ones by the rule of
    :func:`validation_blocks`, so the span is spread evenly over the text as well."""
    if not tune_fraction:
        return []
    held = set(held_out)
    rest = [i for i in range(n_units) if i not in held]
    return [rest[j] for j in validation_blocks(len(rest), tune_fraction)]


def load_corpus(
    path: str | None = None,
    val_fraction: float = 0.1,
    block: int = 4096,
    tune_fraction: float = 0.0,
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
    between topics or files.

    ``tune_fraction`` > 0 also holds a tuning span out of the training text
    (:func:`tuning_units`): neither trained on nor scored, for choosing a recipe."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    if not 0.0 <= tune_fraction < 1.0:
        raise ValueError(f"tune_fraction must be in [0, 1), got {tune_fraction}")
    if path == STDLIB:
        return _by_files(val_fraction, tune_fraction)
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
    tune = [(i * block, (i + 1) * block) for i in tuning_units(n_whole, held_out, tune_fraction)]
    return _split(text, vocab, ids, spans, tune, val_blocks=len(held_out), block=block)


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
    # Looked up in sorted order, so that the search walks ``seen`` forward (its memory in
    # order): 10x faster than random probes into the standard library's 10M hashes.
    order = np.argsort(hashes)
    found = np.empty(len(hashes), dtype=np.int64)
    found[order] = np.searchsorted(seen, hashes[order])
    starts = np.flatnonzero(seen[np.minimum(found, len(seen) - 1)] == hashes) if len(seen) else []
    edges = np.zeros(len(val) + 1, dtype=np.int64)
    edges[starts] += 1  # starts are distinct, so plain fancy-index adds are exact
    edges[np.asarray(starts) + width] -= 1
    return np.cumsum(edges[:-1]) > 0


# Shorter repeats than VERBATIM stay in validation (an idiom, a common call); how much of the
# scored text sits inside one of this many characters or more is reported beside the scores.
NEAR_VERBATIM = 32


def verbatim_share(train: Tensor, val: Tensor, width: int = NEAR_VERBATIM) -> float:
    """The share of ``val``'s characters inside some stretch of ``width`` characters that
    occurs verbatim in ``train``."""
    if len(val) < width:
        return 0.0
    seen = np.sort(window_hashes(train.numpy(), width))
    return float(verbatim_in(seen, val.numpy(), width).mean())


def drop_verbatim(train: Tensor, val: Tensor, width: int = VERBATIM) -> tuple[Tensor, int]:
    """``val`` without every stretch that occurs verbatim in ``train`` (the stretches are cut
    out and what is left joined), and how many characters were cut. Cutting joins text that
    was apart, so the joined text is checked again until no window of it occurs in training."""
    kept = kept_after_verbatim(train, val, width)
    v = val.numpy()[kept]
    return torch.from_numpy(np.ascontiguousarray(v)), len(val) - len(kept)


def kept_after_verbatim(
    train: Tensor, val: Tensor, width: int = VERBATIM, seen: np.ndarray | None = None
) -> np.ndarray:
    """The indices of ``val`` that :func:`drop_verbatim` keeps, in order (``seen``: the sorted
    hashes of ``train``'s windows of ``width``, when the caller has them already)."""
    # Sorted, duplicates kept: searchsorted needs order only (np.unique on 11M hashes takes
    # seconds where a sort takes a tenth of one).
    if seen is None:
        seen = np.sort(window_hashes(train.numpy(), width))
    v, kept = val.numpy(), np.arange(len(val))
    while len(kept) >= width:
        covered = verbatim_in(seen, v[kept], width)
        if not covered.any():
            break
        kept = kept[~covered]
    return kept


def _split(
    text: str, vocab: tuple[str, ...], ids: Tensor, held_out, tune=(), **counts
) -> CharCorpus:
    """The corpus with the character ranges ``held_out`` (start, end) as validation, ``tune``
    as the tuning span and the rest as training, each in text order, less every validation
    (and tuning) stretch of :data:`VERBATIM` characters that occurs verbatim in training
    (:func:`drop_verbatim`); ``counts`` say how it was cut."""
    is_val = torch.zeros(len(ids), dtype=torch.bool)
    for start, end in held_out:
        is_val[start:end] = True
    is_tune = torch.zeros(len(ids), dtype=torch.bool)
    for start, end in tune:
        is_tune[start:end] = True
    train = ids[~is_val & ~is_tune]
    seen = np.sort(window_hashes(train.numpy(), VERBATIM))  # one sort for both held-out parts
    tuning = ids[is_tune][kept_after_verbatim(train, ids[is_tune], seen=seen)] if tune else ids[:0]
    kept = kept_after_verbatim(train, ids[is_val], seen=seen)
    val, removed = ids[is_val][kept], int(is_val.sum()) - len(kept)
    source = np.flatnonzero(is_val.numpy())[kept]  # each kept character's place in the text
    fragments = (0, *(np.flatnonzero(np.diff(source) != 1) + 1).tolist()) if len(source) else (0,)
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
        val_fragments=fragments,
        tune=tuning,
        tune_units=len(tune),
        **counts,
    )


def _by_files(val_fraction: float, tune_fraction: float = 0.0) -> CharCorpus:
    """The standard library's sources, validation a ``val_fraction`` of the whole files (and
    the tuning span a ``tune_fraction`` of the rest)."""
    sources = read_stdlib()
    vocab, ids = char_ids(sources.text)
    held_out = validation_blocks(len(sources.paths), val_fraction)
    if not held_out:
        raise ValueError(
            f"corpus {STDLIB}: {len(sources.paths)} files are too few for a validation "
            f"fraction of {val_fraction} (raise extrapolation.val_fraction)"
        )
    spans = [(sources.starts[i], sources.starts[i + 1]) for i in held_out]
    tune = [
        (sources.starts[i], sources.starts[i + 1])
        for i in tuning_units(len(sources.paths), held_out, tune_fraction)
    ]
    return _split(
        sources.text,
        vocab,
        ids,
        spans,
        tune,
        files=len(sources.paths),
        val_files=len(held_out),
        python=sources.python,
    )


def trained_corpus(data: dict):
    """The corpus a training log or checkpoint describes (``data``: its setting, the
    validation fraction, the split block and the SHA-256 it trained on), split as it was;
    refuses a text that has changed since (another file's content, or for ``python-stdlib``
    another CPython's library), whose numbers would describe another text."""
    corpus = load_corpus(
        data["corpus"], data["val_fraction"], data["split_block"], data.get("tune_fraction", 0.0)
    )
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
