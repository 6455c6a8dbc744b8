"""Character n-gram references: what counting the training text alone scores on held-out text.

A trained transformer that scores no better than an n-gram model of its training text has
learned no more than n − 1 characters of context, and a claim about how it uses positions far
away is not a finding. These references put every bits/char figure on a ladder:

* ``uniform``: log2 V, every one of the V characters equally likely;
* ``unigram`` and ``bigram``: counts with add-one (Laplace) smoothing (Jurafsky & Martin,
  *Speech and Language Processing*, ch. 3);
* ``3-gram``, ``4-gram``, ``5-gram``: interpolated Kneser–Ney (Kneser & Ney 1995; Chen &
  Goodman 1999, "An empirical study of smoothing techniques for language modeling", §2.7 and
  §3), the strongest classical smoothing: absolute discounting at every order, each order
  interpolated with the next lower one, the lower orders counting how many distinct
  characters precede a context (continuation counts) rather than how often it occurs. The
  discount of each order is Ney et al.'s estimate D = n₁ / (n₁ + 2 n₂) from the counts of
  counts; the lowest order is interpolated with the uniform distribution, so every character
  of the vocabulary has a probability.

Each reference is the mean of −log2 p over every validation character, each in the context
of the characters before it in the validation text (the first ones: the end of the training
text). Pure Python; deterministic.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence

LADDER = ("uniform", "unigram", "bigram", "3-gram", "4-gram", "5-gram")


class KneserNey:
    """An interpolated Kneser–Ney character model of order ``order`` over ``vocab_size``
    symbols, counted on ``train``."""

    def __init__(self, train: Sequence[int], order: int, vocab_size: int):
        if order < 1:
            raise ValueError(f"order must be >= 1, got {order}")
        if not train:
            raise ValueError("KneserNey needs a non-empty training text")
        self.order, self.vocab_size = order, vocab_size
        text = tuple(train)
        # The highest order counts occurrences; each lower one counts the distinct characters
        # seen before each of its n-grams (how many contexts it completes).
        counts: dict[int, Counter] = {order: Counter(zip(*(text[i:] for i in range(order))))}
        for k in range(order - 1, 0, -1):
            counts[k] = Counter(g[1:] for g in counts[k + 1])
        self.counts = counts
        self.totals: dict[int, Counter] = {}
        self.types: dict[int, Counter] = {}
        self.discounts: dict[int, float] = {}
        for k, table in counts.items():
            totals, types = Counter(), Counter()
            for gram, c in table.items():
                totals[gram[:-1]] += c
                types[gram[:-1]] += 1
            self.totals[k], self.types[k] = totals, types
            of = Counter(table.values())
            n1, n2 = of.get(1, 0), of.get(2, 0)
            self.discounts[k] = n1 / (n1 + 2 * n2) if n1 + n2 else 0.5

    def probability(self, context: Sequence[int], char: int) -> float:
        """p(char | the last order − 1 characters of ``context``), interpolated down to the
        uniform distribution; orders whose context was never seen pass the lower estimate on."""
        p = 1.0 / self.vocab_size
        for k in range(1, self.order + 1):
            history = tuple(context[len(context) - (k - 1) :]) if k > 1 else ()
            if len(history) < k - 1:
                break
            total = self.totals[k].get(history, 0)
            if not total:
                continue
            d = self.discounts[k]
            c = self.counts[k].get((*history, char), 0)
            p = (max(c - d, 0.0) + d * self.types[k][history] * p) / total
        return p

    def bits(self, val: Sequence[int], before: Sequence[int] = ()) -> float:
        """Mean −log2 p over ``val``, each character in the context of those before it
        (``before``, the end of the training text, for the first ones)."""
        if not val:
            raise ValueError("bits needs a non-empty validation text")
        width = self.order - 1
        text = [*before[len(before) - width :], *val] if width else list(val)
        start = len(text) - len(val)
        total = 0.0
        for i in range(start, len(text)):
            total -= math.log2(self.probability(text[max(0, i - width) : i], text[i]))
        return total / len(val)


def add_one(train: Sequence[int], val: Sequence[int], vocab_size: int) -> dict[str, float]:
    """Unigram and bigram bits/char with add-one smoothing."""
    unigram, pairs = Counter(train), Counter(zip(train[:-1], train[1:]))
    starts: dict[int, int] = defaultdict(int)
    for a in train[:-1]:
        starts[a] += 1
    n, v = len(train), vocab_size
    uni = -sum(math.log2((unigram[c] + 1) / (n + v)) for c in val) / len(val)
    contexts = [train[-1], *val[:-1]]
    bi = -sum(
        math.log2((pairs[(a, b)] + 1) / (starts[a] + v)) for a, b in zip(contexts, val)
    ) / len(val)
    return {"unigram": uni, "bigram": bi}


def ladder(
    train: Sequence[int], val: Sequence[int], vocab_size: int, orders: Sequence[int] = (3, 4, 5)
) -> dict[str, float]:
    """Every reference of :data:`LADDER` (the Kneser–Ney ``orders`` given) on ``val``."""
    if not train or not val:
        raise ValueError("the n-gram ladder needs a non-empty training and validation text")
    out = {"uniform": math.log2(vocab_size), **add_one(train, val, vocab_size)}
    for n in orders:
        out[f"{n}-gram"] = KneserNey(train, n, vocab_size).bits(val, train)
    return out
