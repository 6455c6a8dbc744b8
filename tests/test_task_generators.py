"""The algorithmic tasks (analyses/tasks/generators.py) against hand-worked examples and brute
force: each answer as Delétang et al.'s code defines it, and the decoder layout around it."""

import itertools

import pytest
import torch

from posenc.analyses.tasks import generators as g
from posenc.batches import IGNORE


def _draw(task, length, batch_size=64, seed=3):
    return g.task_of(task).draw(torch.Generator().manual_seed(seed), batch_size, length)


# Hand-worked examples: the cited code's docstrings (odds_first: its code, which the docstring
# contradicts), in the task's own symbols.
def test_modular_arithmetic_docstring_examples():
    P, M, T = g.PLUS, g.MINUS, g.TIMES
    assert g.evaluate_expression([1, P, 2, T, 3]) == 2  # 1 + 2 * 3 = 7 = 2 (mod 5)
    assert g.evaluate_expression([1, M, 1, M, 1]) == 4  # 1 - 1 - 1 = -1 = 4
    assert g.evaluate_expression([0, T, 1, P, 4, T, 3, M, 2]) == 0  # 0 + 12 - 2 = 10 = 0
    assert g.evaluate_expression([3, M, 2, T, 4]) == 0  # 3 - 8 = -5 = 0: * binds first
    assert g.evaluate_expression([4]) == 4


def test_modular_arithmetic_vectorised_matches_the_evaluator():
    for length in (1, 3, 7, 15):
        x, y = _draw("modular_arithmetic", length, 256)
        assert x.shape == (256, length) and y.shape == (256, 1)
        assert set(x[:, 1::2].unique().tolist()) <= {g.PLUS, g.MINUS, g.TIMES}
        assert int(x[:, ::2].max()) < g.MODULUS
        for row, answer in zip(x.tolist(), y[:, 0].tolist(), strict=True):
            assert g.evaluate_expression(row) == answer


def test_modular_arithmetic_even_length_is_cut_to_odd():
    x, _ = _draw("modular_arithmetic", 8)
    assert x.shape[1] == 7
    assert g.sequence_length("modular_arithmetic", 8) == 8  # 7 symbols + 1 answer


def test_cycle_navigation_docstring_examples():
    # actions 0, 1, 2 move -1, 0, +1: "1 -1 0 -1 -1 -> class 3" and "1 1 1 -1 -> class 2"
    def final(moves):
        return sum(moves) % 5

    assert final([1, -1, 0, -1, -1]) == 3
    assert final([1, 1, 1, -1]) == 2
    x, y = _draw("cycle_navigation", 9)
    for row, answer in zip(x.tolist(), y[:, 0].tolist(), strict=True):
        assert final([a - 1 for a in row]) == answer


def test_parity_and_even_pairs_by_brute_force():
    for length in (1, 2, 5):
        for bits in itertools.product([0, 1], repeat=length):
            pairs = sum(
                (a, b) in ((0, 1), (1, 0)) for a, b in itertools.pairwise(bits)
            )  # 01s and 10s counted one by one
            x = torch.tensor([bits])
            assert int((x[:, :-1] != x[:, 1:]).sum(1) % 2) == pairs % 2
    x, y = _draw("parity_check", 11)
    assert y[:, 0].tolist() == [sum(r) % 2 for r in x.tolist()]
    x, y = _draw("even_pairs", 11)
    assert y[:, 0].tolist() == [
        sum(a != b for a, b in itertools.pairwise(r)) % 2 for r in x.tolist()
    ]
    # docstring: 001110 -> class 0, 0101001 -> class 1
    for bits, want in (([0, 0, 1, 1, 1, 0], 0), ([0, 1, 0, 1, 0, 0, 1], 1)):
        assert sum(a != b for a, b in itertools.pairwise(bits)) % 2 == want


def test_string_tasks_by_hand():
    x, y = _draw("reverse_string", 6)
    assert y.tolist() == [r[::-1] for r in x.tolist()]
    x, y = _draw("duplicate_string", 5)
    assert y.tolist() == [r + r for r in x.tolist()]
    x, y = _draw("bucket_sort", 8)
    assert y.tolist() == [sorted(r) for r in x.tolist()]
    assert int(x.max()) == 4  # five symbols
    x, y = _draw("odds_first", 7)
    assert y.tolist() == [r[1::2] + r[0::2] for r in x.tolist()]
    # their code on "00110101": [1::2] = 0111, [::2] = 0100
    bits = [0, 0, 1, 1, 0, 1, 0, 1]
    assert bits[1::2] + bits[0::2] == [0, 1, 1, 1, 0, 1, 0, 0]


@pytest.mark.parametrize("length", [2, 7, 10])
def test_missing_duplicate_string(length):
    x, y = _draw("missing_duplicate_string", length)
    half = length // 2
    assert x.shape == (64, length)
    for row, answer in zip(x.tolist(), y[:, 0].tolist(), strict=True):
        body, pad = row[: 2 * half], row[2 * half :]
        assert pad == [g.PAD] * (length % 2)
        assert body.count(g.MISSING) == 1
        i = body.index(g.MISSING)
        twin = i + half if i < half else i - half
        assert body[twin] == answer
        filled = body[:i] + [answer] + body[i + 1 :]
        assert filled[:half] == filled[half:]
    x, y = _draw("missing_duplicate_string", 1)
    assert x.unique().tolist() == [1] and y.unique().tolist() == [1]


@pytest.mark.parametrize("task", sorted(g.TASKS))
def test_decoder_layout(task):
    t = g.task_of(task)
    gen = torch.Generator().manual_seed(0)
    inputs, targets = g.batch(task, gen, 4, 9)
    x, y = t.draw(torch.Generator().manual_seed(0), 4, 9)
    n, m = x.shape[1], y.shape[1]
    assert m == t.output_length(n)
    assert inputs.shape == targets.shape == (4, n + m)
    assert inputs.dtype == targets.dtype == torch.long
    sep = g.sep_token(task)
    assert (inputs[:, :n] == x).all() and (inputs[:, n] == sep).all()
    answer = g.output_token(task, y)
    assert (inputs[:, n + 1 :] == answer[:, :-1]).all()  # teacher forcing: y_1..y_{m-1}
    assert (targets[:, :n] == IGNORE).all() and (targets[:, n:] == answer).all()
    assert int(inputs.max()) < g.vocab_size(task) and int(answer.max()) < sep
    assert int(inputs.min()) >= 0


def test_vocabularies():
    assert g.vocab_size("reverse_string") == 3  # 0, 1, SEP
    assert g.vocab_size("parity_check") == 5  # 0, 1, even, odd, SEP
    assert g.vocab_size("cycle_navigation") == 9  # 3 actions, 5 states, SEP
    assert g.vocab_size("modular_arithmetic") == 10  # 5 residues, + - * _, SEP
    assert g.vocab_size("missing_duplicate_string") == 5  # 0, 1, missing, pad, SEP
    with pytest.raises(ValueError, match="unknown task"):
        g.vocab_size("nope")


def test_seeded():
    a = g.batch("bucket_sort", torch.Generator().manual_seed(5), 8, 6)
    b = g.batch("bucket_sort", torch.Generator().manual_seed(5), 8, 6)
    c = g.batch("bucket_sort", torch.Generator().manual_seed(6), 8, 6)
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])


def test_batches_share_one_length_uniform_over_the_range():
    draw = g.batches("reverse_string", 4)
    gen = torch.Generator().manual_seed(1)
    widths = {draw(gen, 3)[0].shape[1] for _ in range(200)}
    assert widths == {2, 4, 6, 8}  # n in 1..4, n + m = 2n


def test_scores():
    targets = torch.tensor([[IGNORE, IGNORE, 1, 0], [IGNORE, IGNORE, 1, 0]])
    logits = torch.zeros(2, 4, 3)
    logits[0, 2, 1] = logits[0, 3, 0] = 1.0  # both right
    logits[1, 2, 1] = logits[1, 3, 2] = 1.0  # second wrong
    logits[:, :2, 2] = 5.0  # unscored places, wrong, change nothing
    assert g.exact_match(logits, targets).tolist() == [1.0, 0.0]
    assert g.token_accuracy(logits, targets).tolist() == [1.0, 0.5]
