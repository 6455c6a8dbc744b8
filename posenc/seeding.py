"""Random draws keyed by what they are for: a generator per entry, seeded from the run's seed
and the entry's name, so an encoding's numbers are the same whatever else the run configures
(a report card's study and the main study, given one seed, measure one learned table alike).
One generator shared across entries would hand each the draws its predecessors left, and
adding an encoding would move the numbers of every encoding after it."""

from __future__ import annotations

import hashlib

import torch


def keyed_seed(seed: int, *key: object) -> int:
    """A 63-bit seed from ``seed`` and ``key`` (names, sizes), the same on every machine and
    in every process (unlike ``hash``, which Python salts per process)."""
    text = repr((int(seed), *key)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1


def keyed_generator(seed: int, *key: object) -> torch.Generator:
    """A CPU generator for the entry ``key`` of a run seeded ``seed`` (:func:`keyed_seed`)."""
    return torch.Generator().manual_seed(keyed_seed(seed, *key))
