"""Passkey retrieval needs position: a predictor that sees only the bag (multiset) of tokens
of its causal prefix is at chance, one that reads positions is exact.

The reference is the task this one replaced (one key token from a vocabulary of its own, in
i.i.d. filler), which such a predictor solves outright by spotting the odd token out: the same
checks would fail there, so they can fail.
"""

import math

import pytest
import torch
from configs import merged

from posenc.analyses.extrapolation.spec import check_config
from posenc.data import IGNORE, PasskeyTask


def old_task_sample(generator, batch_size, length, num_filler=16, num_keys=16):
    """The replaced task: filler [0, F), one key from [F, F + K) somewhere, QUERY last."""
    inputs = torch.randint(0, num_filler, (batch_size, length), generator=generator)
    where = torch.randint(0, length - 1, (batch_size,), generator=generator)
    key = num_filler + torch.randint(0, num_keys, (batch_size,), generator=generator)
    inputs[torch.arange(batch_size), where] = key
    inputs[:, -1] = num_filler + num_keys
    targets = torch.full_like(inputs, IGNORE)
    targets[:, -1] = key
    return inputs, targets


# Permutation-invariant predictors: each turns the token counts of a causal prefix, (B, S)
# over the S guessable symbols, into a guess of the next key token.
def most_frequent(counts):
    return counts.argmax(-1)


def rarest_present(counts):
    return torch.where(counts > 0, counts, counts.max() + 1).argmin(-1)


def largest_present(counts):
    ids = torch.arange(counts.shape[-1])
    return torch.where(counts > 0, ids, -1).max(-1).values


PREDICTORS = (most_frequent, rarest_present, largest_present)


def bag_scores(inputs, targets, symbols, predictor):
    """Per scored step, the fraction of rows where ``predictor`` applied to the bag of the
    prefix up to that position is right; and the exact-match fraction over all steps."""
    B = inputs.shape[0]
    steps = (targets[0] != IGNORE).nonzero().flatten().tolist()  # the same in every row
    right = []
    for t in steps:
        prefix = inputs[:, : t + 1]
        counts = torch.zeros(B, symbols, dtype=torch.long)
        counts.scatter_add_(1, prefix.clamp(max=symbols - 1), (prefix < symbols).long())
        right.append(predictor(counts) == targets[:, t])
    right = torch.stack(right, -1)  # (B, steps)
    return right.float().mean(0).tolist(), right.all(-1).float().mean().item()


def test_a_bag_of_tokens_solves_the_old_task():
    x, y = old_task_sample(torch.Generator().manual_seed(0), 4000, 64)
    exact = {p.__name__: bag_scores(x, y, 32, p)[1] for p in PREDICTORS}
    assert exact["largest_present"] == 1.0, exact  # the odd token out: the only id >= F


@pytest.mark.parametrize("predictor", PREDICTORS)
@pytest.mark.parametrize("length", [16, 64, 256])
def test_a_bag_of_tokens_is_at_chance_on_the_passkey_task(predictor, length):
    """Every step's accuracy stays under the bound that holds for any bag predictor,
    ceil(M/V) / (M - i), and exact match under their product: both about chance."""
    task = PasskeyTask(num_symbols=16, key_len=3)
    sequences = 20000
    x, y = task.sample(torch.Generator().manual_seed(length), sequences, length)
    per_step, exact = bag_scores(x, y, task.num_symbols, predictor)
    M = length - task.key_len - 1
    for i, accuracy in enumerate(per_step):
        bound = math.ceil(M / 16) / (M - i)
        assert accuracy <= bound + 4 * math.sqrt(bound / sequences), (i, accuracy, bound)
    bound = task.position_blind_bound(length)
    assert exact <= bound + 4 * math.sqrt(bound / sequences), (exact, bound)
    assert exact < 0.002  # against 1.0 on the old task


def test_a_key_inserted_into_iid_filler_would_leak_through_its_counts():
    """Why the haystack is balanced: with i.i.d. filler around an inserted key, the most
    frequent symbol is the key's first token well above chance, and more so the shorter the
    haystack, a cue that fades with length."""
    task = PasskeyTask(num_symbols=16, key_len=3)
    generator = torch.Generator().manual_seed(0)
    x, y = task.sample(generator, 20000, 32)
    key_at = (x == task.key_marker).int().argmax(-1, keepdim=True)
    j = torch.arange(32)
    filler = (j < 28) & ((j < key_at) | (j > key_at + 3))  # body outside the key, before QUERY
    x[filler] = torch.randint(0, 16, (int(filler.sum()),), generator=generator)
    per_step, _ = bag_scores(x, y, task.num_symbols, most_frequent)
    assert per_step[0] > 2 * task.position_blind_bound(32), per_step


def test_reading_positions_solves_the_passkey_task():
    """The task is solvable: find KEY, read the symbol as many places after it as the step."""
    task = PasskeyTask(num_symbols=16, key_len=3)
    x, y = task.sample(torch.Generator().manual_seed(0), 1000, 64)
    key_at = (x == task.key_marker).int().argmax(-1, keepdim=True)  # (B, 1)
    read = x.gather(1, key_at + 1 + torch.arange(3))  # (B, 3)
    torch.testing.assert_close(read, y[:, -3:])


def test_config_check_needs_room_for_the_key():
    config = merged({"extrapolation": {"passkey": {"task": {"key_len": 4, "min_len": 8}}}})
    problems = check_config(config)
    assert any("extrapolation.passkey.task.min_len = 8" in p and "= 9" in p for p in problems), (
        problems
    )
    assert not check_config(merged({}))
