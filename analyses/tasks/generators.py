"""Algorithmic tasks of Delétang et al. 2023 ("Neural Networks and the Chomsky Hierarchy"), as
Ruoss et al. 2023 ("Randomized Positional Encodings Boost Length Generalization of
Transformers") train them, posed to a causal decoder.

Every definition follows the public code of google-deepmind/randomized_positional_encodings
(commit e8c64749d8cad7772dc7ade75b32ef9b2b29b466), cited per task as ``file: Class.method``.
google-deepmind/neural_networks_chomsky_hierarchy (commit 2b8eb4b) holds the same files with
the same ``sample_batch`` bodies; only the constructors differ, its defaults being the sizes
Ruoss et al.'s experiments/constants.py passes (binary strings, 5 symbols for bucket sort,
modulus 5: "We use 2 in the paper", and 5).
Their models are encoders that read the input and emit the output in one pass; ours is a
causal decoder, so a sequence here is

    x_1 .. x_n SEP y_1 .. y_m

and the model is fed ``x SEP y_1 .. y_{m-1}`` (length n + m) and scored only on predicting
y_1 .. y_m (targets IGNORE elsewhere). The answer is teacher-forced: one forward pass gives the
argmax at every answer position from the true prefix, and greedy decoding reproduces the whole
answer exactly when every one of those argmaxes is right, so :func:`exact_match` of one pass is
greedy decoding's exact match.

Token ids: the input alphabet is 0 .. I-1. An output alphabet that names the input's own
symbols (a copied, reversed or sorted string; the missing bit; a residue mod 5) reuses those
ids, so the model writes the symbols it reads; an output alphabet of classes (parity, the
cycle's final state) gets ids I .. I+O-1 of its own. SEP is the last id.

Pure: torch and a caller's seeded ``torch.Generator`` only; the same generator state gives the
same batch on every machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from posenc.analyses.tasks.catalogue import (  # noqa: F401 -- sequence_length, input_space: re-exported
    MODULUS,
    SHAPES,
    input_length,
    input_space,
    sequence_length,
)
from posenc.batches import IGNORE

_SOURCE = "google-deepmind/randomized_positional_encodings@e8c6474"


@dataclass(frozen=True)
class Task:
    """One task: its alphabets, answer length and answer, as the cited code defines them.

    ``draw(generator, batch_size, length)`` returns the input symbols (B, n) and answer
    symbols (B, m), both in the task's own alphabets (0 .. size-1); ``n`` is ``length`` except
    where the cited code changes it (modular arithmetic's odd lengths)."""

    name: str
    source: str  # file: Class.method of the cited code
    level: str  # Chomsky hierarchy level (their experiments/constants.py TASK_LEVELS)
    input_size: int
    output_size: int
    shared_output: bool  # output symbol j is input symbol j (same token id)
    output_length: Callable[[int], int]
    draw: Callable[[torch.Generator, int, int], tuple[Tensor, Tensor]]

    def input_length(self, length: int) -> int:
        """The input length n the task actually draws for a requested ``length``."""
        return input_length(self.name, length)


def _bits(generator: torch.Generator, batch_size: int, length: int, size: int = 2) -> Tensor:
    return torch.randint(0, size, (batch_size, length), generator=generator)


def _one(answer: Tensor) -> Tensor:
    return answer.reshape(-1, 1)


# --- regular ---------------------------------------------------------------------------------


def _even_pairs(generator, batch_size, length):
    # tasks/regular/even_pairs.py: EvenPairs.sample_batch. Class 1 iff the count of unequal
    # neighbours (01 and 10 together) is odd, i.e. iff the first and last bits differ.
    x = _bits(generator, batch_size, length)
    return x, _one((x[:, :-1] != x[:, 1:]).sum(1) % 2)


def _parity_check(generator, batch_size, length):
    # tasks/regular/parity_check.py: ParityCheck.sample_batch. Class = number of 1s mod 2.
    x = _bits(generator, batch_size, length)
    return x, _one(x.sum(1) % 2)


def _cycle_navigation(generator, batch_size, length):
    # tasks/regular/cycle_navigation.py: CycleNavigation.sample_batch. Actions 0, 1, 2 move
    # -1, 0, +1 (the code's ``actions - 1``) on a cycle of 5 from state 0; class = final state.
    x = _bits(generator, batch_size, length, 3)
    return x, _one((x - 1).sum(1) % 5)


PLUS, MINUS, TIMES = MODULUS + 0, MODULUS + 1, MODULUS + 2  # OP_BY_CHARACTER: + 0, - 1, * 2
BLANK = MODULUS + 3  # '_': in the input alphabet, never drawn
OPERATORS = (PLUS, TIMES, MINUS)  # their default ('+', '*', '-'), drawn uniformly


def evaluate_expression(tokens: list[int]) -> int:
    """One modular-arithmetic expression, residues and operator ids alternating: products
    first, then sums and differences, modulo 5 (their _evaluate_expression: subtractions become
    additions of the negated next factor, then products of each '+'-separated term, summed)."""
    total, term, sign = 0, tokens[0], 1
    for op, value in zip(tokens[1::2], tokens[2::2], strict=True):
        if op == TIMES:
            term *= value
        else:
            total += sign * term
            term, sign = value, (1 if op == PLUS else -1)
    return (total + sign * term) % MODULUS


def _modular_arithmetic(generator, batch_size, length):
    # tasks/regular/modular_arithmetic.py: ModularArithmetic.sample_batch. An even length is
    # cut by one (expressions have odd length): residues at even places, operators between.
    if length % 2 == 0:
        length -= 1
    residues = torch.randint(0, MODULUS, (batch_size, length // 2 + 1), generator=generator)
    ops = torch.tensor(OPERATORS)[
        torch.randint(0, len(OPERATORS), (batch_size, length // 2), generator=generator)
    ]
    x = torch.empty(batch_size, length, dtype=torch.long)
    x[:, ::2], x[:, 1::2] = residues, ops
    # Vectorised: products of runs joined by '*', signed by the operator before the run.
    value = residues[:, 0].clone()  # the current product
    sign = torch.ones(batch_size, dtype=torch.long)
    total = torch.zeros(batch_size, dtype=torch.long)
    for i in range(length // 2):
        op, r = ops[:, i], residues[:, i + 1]
        times = op == TIMES
        total = torch.where(times, total, total + sign * value)
        sign = torch.where(times, sign, torch.where(op == PLUS, 1, -1))
        value = torch.where(times, (value * r) % MODULUS, r)
    return x, _one((total + sign * value) % MODULUS)


# --- deterministic context-free ----------------------------------------------------------------


def _reverse_string(generator, batch_size, length):
    # tasks/dcf/reverse_string.py: ReverseString.sample_batch (vocab_size=2 in constants.py).
    x = _bits(generator, batch_size, length)
    return x, x.flip(1)


# --- context-sensitive -----------------------------------------------------------------------


def _duplicate_string(generator, batch_size, length):
    # tasks/cs/duplicate_string.py: DuplicateString.sample_batch (vocab_size=2, duplication 2).
    x = _bits(generator, batch_size, length)
    return x, torch.cat([x, x], 1)


def _odds_first(generator, batch_size, length):
    # tasks/cs/odds_first.py: OddsFirst.sample_batch (vocab_size=2). The code puts the symbols
    # at 0-based odd indices first, ``[:, 1::2]`` then ``[:, ::2]`` (s_2 s_4 .. s_1 s_3 ..);
    # its docstring's example says the reverse. The code made their data, so we follow it.
    x = _bits(generator, batch_size, length)
    return x, torch.cat([x[:, 1::2], x[:, ::2]], 1)


def _bucket_sort(generator, batch_size, length):
    # tasks/cs/bucket_sort.py: BucketSort.sample_batch (vocab_size=5 in constants.py).
    x = _bits(generator, batch_size, length, 5)
    return x, x.sort(1).values


MISSING, PAD = 2, 3  # missing_duplicate_string's placeholder and odd-length padding tokens


def _missing_duplicate_string(generator, batch_size, length):
    # tasks/cs/missing_duplicate_string.py: MissingDuplicateString.sample_batch. A bit string
    # of length // 2 twice, one place of the two copies replaced by 2, an odd length padded
    # with 3; the answer is the replaced bit. Length 1: input 1, answer 1, as their code sets.
    if length == 1:
        ones = torch.ones(batch_size, 1, dtype=torch.long)
        return ones, ones.clone()
    half = _bits(generator, batch_size, length // 2)
    doubled = torch.cat([half, half], 1)
    where = torch.randint(0, doubled.shape[1], (batch_size,), generator=generator)
    rows = torch.arange(batch_size)
    answer = doubled[rows, where].clone()
    doubled[rows, where] = MISSING
    pad = torch.full((batch_size, length % 2), PAD, dtype=torch.long)
    return torch.cat([doubled, pad], 1), _one(answer)


SOURCES = {  # file: Class.method of the cited code, and the function drawing from it
    "even_pairs": ("tasks/regular/even_pairs.py: EvenPairs.sample_batch", _even_pairs),
    "parity_check": ("tasks/regular/parity_check.py: ParityCheck.sample_batch", _parity_check),
    "cycle_navigation": (
        "tasks/regular/cycle_navigation.py: CycleNavigation.sample_batch",
        _cycle_navigation,
    ),
    "modular_arithmetic": (
        "tasks/regular/modular_arithmetic.py: ModularArithmetic.sample_batch",
        _modular_arithmetic,
    ),
    "reverse_string": ("tasks/dcf/reverse_string.py: ReverseString.sample_batch", _reverse_string),
    "duplicate_string": (
        "tasks/cs/duplicate_string.py: DuplicateString.sample_batch",
        _duplicate_string,
    ),
    "odds_first": ("tasks/cs/odds_first.py: OddsFirst.sample_batch", _odds_first),
    "bucket_sort": ("tasks/cs/bucket_sort.py: BucketSort.sample_batch", _bucket_sort),
    "missing_duplicate_string": (
        "tasks/cs/missing_duplicate_string.py: MissingDuplicateString.sample_batch",
        _missing_duplicate_string,
    ),
}
TASKS: dict[str, Task] = {
    name: Task(
        name,
        source,
        SHAPES[name].level,
        SHAPES[name].input_size,
        SHAPES[name].output_size,
        SHAPES[name].shared_output,
        SHAPES[name].output_length,
        draw,
    )
    for name, (source, draw) in SOURCES.items()
}


def task_of(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {sorted(TASKS)}")
    return TASKS[name]


def vocab_size(task: str) -> int:
    """Input symbols, the output's own symbols (none where they are the input's), SEP."""
    t = task_of(task)
    return t.input_size + (0 if t.shared_output else t.output_size) + 1


def sep_token(task: str) -> int:
    return vocab_size(task) - 1


def output_token(task: str, symbols: Tensor) -> Tensor:
    """Token ids of answer symbols."""
    t = task_of(task)
    return symbols if t.shared_output else symbols + t.input_size


def batch(
    task: str, generator: torch.Generator, batch_size: int, length: int
) -> tuple[Tensor, Tensor]:
    """(inputs, targets), long, (B, n + m): ``x SEP y_1..y_{m-1}`` and IGNORE at the n input
    places, ``y_1..y_m`` at the answer's (the target at place i is the token at i + 1)."""
    if length < 1 or batch_size < 1:
        raise ValueError(f"length and batch_size must be positive: {length}, {batch_size}")
    t = task_of(task)
    x, y = t.draw(generator, batch_size, length)
    n, m = x.shape[1], y.shape[1]
    if m != t.output_length(n):  # the cited code's own output_length, held to its answers
        raise AssertionError(f"{task}: answer of {m} for input {n}")
    y = output_token(task, y)
    sep = torch.full((batch_size, 1), sep_token(task), dtype=torch.long)
    sequence = torch.cat([x, sep, y], 1)  # (B, n + 1 + m)
    inputs = sequence[:, :-1]
    targets = torch.full_like(inputs, IGNORE)
    targets[:, n:] = y
    return inputs, targets


def batches(task: str, max_length: int, min_length: int = 1):
    """posenc.batches.BatchFn: each batch one length uniform in [min_length, max_length],
    drawn from the same generator before the batch (Ruoss et al.'s uniform curriculum)."""

    def draw(generator: torch.Generator, batch_size: int, step: int = 0):
        length = int(torch.randint(min_length, max_length + 1, (1,), generator=generator))
        return batch(task, generator, batch_size, length)

    return draw


def _scored(logits: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    mask = targets != IGNORE
    right = (logits.argmax(-1) == targets) & mask
    return right, mask


def exact_match(logits: Tensor, targets: Tensor) -> Tensor:
    """Per sequence (B,), 1.0 where every answer token's argmax is right (greedy decoding's
    exact match under one teacher-forced pass), else 0.0."""
    right, mask = _scored(logits, targets)
    return (right.sum(1) == mask.sum(1)).float()


def token_accuracy(logits: Tensor, targets: Tensor) -> Tensor:
    """Per sequence (B,), the share of answer tokens whose teacher-forced argmax is right
    (Ruoss et al.'s accuracy_fn, per sequence)."""
    right, mask = _scored(logits, targets)
    return right.sum(1).float() / mask.sum(1).clamp(min=1).float()
