"""Which tokens a language model's evaluation scores at each window length, in the two modes
:mod:`posenc.evaluate` reports:

* ``all``: every token of non-overlapping windows of length L, the same number of tokens T at
  every length (T / L windows, spread evenly over the text). The usual number, but a longer
  window scores different text, and its early tokens get more context, so lengths are not
  strictly comparable (Press et al. 2022, Appendix B).
* ``segment``: only the last ``S`` tokens of windows that *end at the same positions* at every L.
  The scored tokens are identical at every length; only the context before them grows. The
  comparison across lengths is then paired, and free of the ~±0.08 bits/char that scoring
  different text adds here.

Index arithmetic only, no model: the readout and the variance benchmarks read the same windows.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def all_token_windows(n_tokens: int, length: int, tokens: int) -> Tensor:
    """Starts of the non-overlapping windows of mode ``all``: ``tokens // length`` windows, so
    every length scores the same number of tokens. Window s reads tokens[s : s+L] and predicts
    tokens[s+1 : s+L+1]; the windows are spread evenly over the text."""
    count, available = tokens // length, (n_tokens - 1) // length
    if count < 1 or count > available:
        raise ValueError(
            f"{n_tokens} tokens cannot hold {tokens} scored tokens in whole windows of "
            f"{length}: extrapolation.lm.eval.tokens must be a multiple of the longest length "
            f"and at most {available * length} here"
        )
    picks = torch.linspace(0, available - 1, count).round().long()
    return picks * length


def segment_window_ends(n_tokens: int, max_length: int, segment: int, n_windows: int) -> Tensor:
    """Last input index + 1 of each window for mode ``segment``, the same at every length.

    Window of length L ending at e reads tokens[e-L : e] and predicts tokens[e-L+1 : e+1]; its
    last ``segment`` predictions are scored. The ends start at ``max_length`` (so the longest
    window fits) and are spread over the rest of the text, at least ``segment`` apart so no
    token is scored twice.
    """
    room = n_tokens - 1 - max_length  # ends may range over [max_length, n_tokens - 1]
    if n_windows < 1 or room < (n_windows - 1) * segment:
        raise ValueError(
            f"{n_tokens} tokens cannot hold {n_windows} scored segments of {segment} tokens "
            f"after a context of {max_length}: lower extrapolation.lm.eval.segment_windows, "
            "segment or the largest multiplier"
        )
    stride = room // max(n_windows - 1, 1)
    return max_length + stride * torch.arange(n_windows)


def window_fragments(
    corpus, mode: str, length: int, *, longest: int, tokens: int, segment: int, windows: int
) -> np.ndarray:
    """The fragment of validation text (:attr:`posenc.data.CharCorpus.val_fragments`) that
    holds each scored window's last scored character, in window order, for the windows
    :func:`posenc.evaluate.bits_per_char` scores in ``mode`` at ``length`` (``longest``: the
    longest length evaluated, where mode ``segment``'s windows end): the clusters the intervals
    resample."""
    if mode == "segment":
        last = segment_window_ends(len(corpus.val), longest, segment, windows)
    else:
        last = all_token_windows(len(corpus.val), length, tokens) + length
    return corpus.fragment_of(last.numpy())
