"""The tasks' shapes, torch-free (the config's checks read them at parse time): each task's
Chomsky level, alphabets and answer length as Delétang et al.'s code defines them (the
generators, :mod:`.generators`, draw from these), and what follows from them: the positions a
sequence takes and how many distinct inputs a length has."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MODULUS = 5  # their experiments/constants.py: ModularArithmetic(modulus=5)
# Fresh draws a test at N may make per batch it needs, before too few unseen inputs remain
# (the config's check holds the share of unseen inputs to twice its inverse).
MAX_DRAWS = 20
N_OPERATORS = 3  # '+', '*', '-'


@dataclass(frozen=True)
class Shape:
    level: str  # Chomsky hierarchy level (their experiments/constants.py TASK_LEVELS)
    input_size: int
    output_size: int
    shared_output: bool  # output symbol j is input symbol j (same token id)
    output_length: Callable[[int], int]


def _one(n: int) -> int:
    return 1


SHAPES: dict[str, Shape] = {
    "even_pairs": Shape("regular", 2, 2, False, _one),
    "parity_check": Shape("regular", 2, 2, False, _one),
    "cycle_navigation": Shape("regular", 3, 5, False, _one),
    "modular_arithmetic": Shape("regular", MODULUS + 4, MODULUS, True, _one),
    "reverse_string": Shape("dcf", 2, 2, True, lambda n: n),
    "duplicate_string": Shape("cs", 2, 2, True, lambda n: 2 * n),
    "odds_first": Shape("cs", 2, 2, True, lambda n: n),
    "bucket_sort": Shape("cs", 5, 5, True, lambda n: n),
    "missing_duplicate_string": Shape("cs", 4, 2, True, _one),
}


def shape_of(task: str) -> Shape:
    if task not in SHAPES:
        raise ValueError(f"unknown task {task!r}; known: {sorted(SHAPES)}")
    return SHAPES[task]


def input_length(task: str, length: int) -> int:
    """The input length n the task draws for a requested ``length`` (modular arithmetic cuts an
    even length by one, as their code does)."""
    return length - 1 if task == "modular_arithmetic" and length % 2 == 0 else length


def sequence_length(task: str, length: int) -> int:
    """Positions the model reads for a requested input ``length``: n + m."""
    n = input_length(task, length)
    return n + shape_of(task).output_length(n)


def input_space(task: str, length: int) -> int:
    """How many distinct inputs of ``length`` the task draws (each uniformly likely): every
    string over its input alphabet, but for missing duplicate (a half string, one place of
    its two copies blanked) and modular arithmetic (operands and operators alternating)."""
    n = input_length(task, length)
    if task == "missing_duplicate_string":
        return 1 if n == 1 else 2 ** (n // 2) * 2 * (n // 2)
    if task == "modular_arithmetic":
        return MODULUS ** ((n + 1) // 2) * N_OPERATORS ** (n // 2)
    return shape_of(task).input_size ** n
