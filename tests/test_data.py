"""Data: the corpus and its split, LM windows, and the seeded passkey task."""

import pytest
import torch

from posenc.data import IGNORE, PasskeyTask, lm_batches, load_corpus, read_text


def test_default_corpus_ships_with_python():
    corpus = load_corpus()
    n = len(corpus.train) + len(corpus.val)
    assert n == len(read_text(None)) > 400_000  # ~465k characters of pydoc_data.topics
    assert len(corpus.train) == int(n * 0.9)
    assert corpus.vocab == tuple(sorted(corpus.vocab)) and 50 < corpus.vocab_size < 200
    assert load_corpus().sha256 == corpus.sha256  # the same text every time


def test_file_corpus_split_is_contiguous(tmp_path):
    text = "abcdefghij" * 10 + "XYZ"
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    corpus = load_corpus(str(path), val_fraction=0.2)

    def decode(ids):
        return "".join(corpus.vocab[i] for i in ids.tolist())

    # The first 80 % trains, the rest validates: the validation text is never in training.
    assert decode(corpus.train) + decode(corpus.val) == text
    assert decode(corpus.train) == text[: int(len(text) * 0.8)]
    assert "X" in corpus.vocab  # the vocabulary covers the validation text too


def test_missing_corpus_names_the_key(tmp_path):
    with pytest.raises(FileNotFoundError, match="config key extrapolation.corpus"):
        load_corpus(str(tmp_path / "absent.txt"))


def test_lm_batches_are_shifted_windows_and_seeded():
    tokens = torch.arange(1000)
    batch = lm_batches(tokens, seq_len=16)
    x, y = batch(torch.Generator().manual_seed(3), 8)
    assert x.shape == y.shape == (8, 16)
    torch.testing.assert_close(y, x + 1)  # targets are the next token
    x2, _ = batch(torch.Generator().manual_seed(3), 8)
    torch.testing.assert_close(x, x2)
    with pytest.raises(ValueError, match="too short"):
        lm_batches(torch.arange(10), seq_len=16)


@pytest.mark.parametrize("length", [2, 5, 64])
def test_passkey_sequence_hides_exactly_one_key(length):
    task = PasskeyTask(num_filler=6, num_keys=4)
    x, y = task.sample(torch.Generator().manual_seed(0), 32, length)
    assert x.shape == y.shape == (32, length)
    assert (x[:, -1] == task.query).all()
    is_key = (x >= 6) & (x < 10)
    assert (is_key.sum(-1) == 1).all()  # one passkey per row, somewhere before QUERY
    assert (y[:, :-1] == IGNORE).all()  # only the answer is scored ...
    torch.testing.assert_close(y[:, -1], x[is_key])  # ... and it is the hidden key


def test_passkey_batches_cover_the_training_lengths_deterministically():
    task = PasskeyTask()
    batches = task.batches(min_len=4, max_len=9)
    gen = torch.Generator().manual_seed(0)
    lengths = {batches(gen, 2)[0].shape[1] for _ in range(200)}
    assert lengths == set(range(4, 10))
    a = batches(torch.Generator().manual_seed(5), 4)
    b = batches(torch.Generator().manual_seed(5), 4)
    torch.testing.assert_close(a, b)
    with pytest.raises(ValueError):
        task.batches(min_len=9, max_len=4)
