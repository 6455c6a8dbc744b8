"""Data: the corpus and its split, LM windows, and the seeded passkey task."""

import numpy as np
import pytest
import torch

from posenc import data
from posenc.data import IGNORE, PasskeyTask, lm_batches, load_corpus, read_text


def test_default_corpus_ships_with_python():
    corpus = load_corpus()
    n = len(corpus.train) + len(corpus.val) + corpus.val_verbatim_removed
    assert n == len(read_text(None)) > 400_000  # ~465k characters of pydoc_data.topics
    # Every tenth whole block of 4096 characters validates, less what repeats training text.
    held = len(corpus.val) + corpus.val_verbatim_removed
    assert held == corpus.val_blocks * 4096 == (n // 4096 // 10) * 4096
    # pydoc's topics quote one another: about half of the held-out blocks repeat training text.
    assert 0.3 < corpus.val_verbatim_removed / held < 0.7 and len(corpus.val) > 16_384
    assert corpus.vocab == tuple(sorted(corpus.vocab)) and 50 < corpus.vocab_size < 200
    assert load_corpus().sha256 == corpus.sha256  # the same text every time


def test_file_corpus_split_is_interleaved_whole_blocks(tmp_path):
    text = "".join(chr(ord("a") + i) * 10 for i in range(10)) + "XYZ"  # 10 blocks of 10 + tail
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    corpus = load_corpus(str(path), val_fraction=0.2, block=10)

    def decode(ids):
        return "".join(corpus.vocab[i] for i in ids.tolist())

    # Blocks 4 and 9 (one in every five, never the first) validate, whole; the rest and the
    # partial tail train. The validation text is never in training.
    assert decode(corpus.val) == "e" * 10 + "j" * 10
    assert decode(corpus.train) == "".join(c * 10 for c in "abcdfghi") + "XYZ"
    assert corpus.val_blocks == 2 and "X" in corpus.vocab  # vocabulary covers both splits


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


def test_validation_blocks_spread_evenly():
    from posenc.data import validation_blocks

    assert validation_blocks(30, 0.1) == [9, 19, 29]
    assert validation_blocks(7, 0.3) == [3, 6]
    assert validation_blocks(3, 0.1) == []


def test_a_text_too_short_for_one_validation_block_names_the_key(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("abc" * 100, encoding="utf-8")
    with pytest.raises(ValueError, match="extrapolation.split_block"):
        load_corpus(str(path), val_fraction=0.1, block=100)


def test_the_interleaved_split_is_fair_where_the_contiguous_one_is_not():
    """The reason for the split: a bigram model counted on the training text scores the
    validation text about as well as held-out training text when the split interleaves blocks,
    but not when validation is the contiguous tail (the alphabetical end of the pydoc topics).
    Held-out training text is cut from the training split the same way validation was."""
    from posenc.analyses.extrapolation.compute import ngram_baselines
    from posenc.data import validation_blocks

    def split(ids, interleaved, block=4096, fraction=0.1):
        if not interleaved:
            cut = int(len(ids) * (1 - fraction))
            return ids[:cut], ids[cut:]
        held = set(validation_blocks(len(ids) // block, fraction))
        blocks = [ids[i : i + block] for i in range(0, len(ids), block)]
        return (
            [t for i, b in enumerate(blocks) if i not in held for t in b],
            [t for i, b in enumerate(blocks) if i in held for t in b],
        )

    corpus = load_corpus()
    index = {c: i for i, c in enumerate(corpus.vocab)}
    ids = [index[c] for c in read_text(None)]
    gaps = {}
    for interleaved in (False, True):
        train, val = split(ids, interleaved)
        fit, held = split(train, interleaved)
        v = corpus.vocab_size
        gaps[interleaved] = (
            ngram_baselines(fit, val, v)["bigram"] - ngram_baselines(fit, held, v)["bigram"]
        )
    print("bigram validation minus held-out training bits/char:", gaps)
    assert gaps[False] < -0.1, gaps  # the contiguous tail is easier: a topic effect
    assert abs(gaps[True]) < 0.05, gaps


def passkey_parts(task, inputs):
    """(KEY index, QUERY index, body) of each row, read back from the inputs alone."""
    key_at = (inputs == task.key_marker).int().argmax(-1)
    query_at = (inputs == task.query).int().argmax(-1)
    bodies = [torch.cat([row[:k], row[k + 1 : q]]) for row, k, q in zip(inputs, key_at, query_at)]
    return key_at, query_at, bodies


@pytest.mark.parametrize("length", [7, 8, 23, 64])
def test_passkey_sequence_is_haystack_key_query_answer(length):
    task = PasskeyTask(num_symbols=5, key_len=3)
    x, y = task.sample(torch.Generator().manual_seed(0), 64, length)
    assert x.shape == y.shape == (64, length) and x.dtype == y.dtype == torch.long
    assert ((x == task.key_marker).sum(-1) == 1).all() and ((x == task.query).sum(-1) == 1).all()
    assert ((x >= 0) & (x < task.vocab_size)).all()
    key_at, query_at, _ = passkey_parts(task, x)
    assert (query_at == length - 3).all()  # QUERY, then the first n - 1 key tokens fed back
    assert (key_at + 3 < query_at).all()  # the key lies wholly before QUERY
    key = torch.stack([x[r, k + 1 : k + 4] for r, k in enumerate(key_at.tolist())])
    assert (key < task.num_symbols).all()  # ordinary symbols: no marker inside the key
    torch.testing.assert_close(y[:, -3:], key)  # the targets are the key, in order ...
    torch.testing.assert_close(x[:, -2:], key[:, :2])  # ... fed back one step late
    assert (y[:, :-3] == IGNORE).all()  # nothing else is scored


def test_passkey_body_counts_are_balanced_and_the_key_is_uniform():
    """No symbol is more frequent than another by more than one, at any length; the key is
    what follows KEY, so its first symbol is uniform over V."""
    task = PasskeyTask(num_symbols=4, key_len=2)
    for length in (5, 9, 30):
        x, _ = task.sample(torch.Generator().manual_seed(length), 200, length)
        M = length - task.key_len - 1
        for body in passkey_parts(task, x)[2]:
            counts = torch.bincount(body, minlength=task.num_symbols)
            assert len(body) == M and counts.sum() == M
            assert counts.min() == M // 4 and counts.max() == -(-M // 4)
    x, y = task.sample(torch.Generator().manual_seed(1), 8000, 30)
    share = torch.bincount(y[:, -2], minlength=4) / 8000  # the first key token
    assert (share - 0.25).abs().max() < 0.02, share  # 4.6 standard errors
    key_at = (x == task.key_marker).int().argmax(-1)
    assert set(key_at.tolist()) == set(range(30 - 2 - 1 - 2 + 1))  # every place the key fits


def test_passkey_chance_and_blind_bound():
    task = PasskeyTask(num_symbols=16, key_len=3)
    assert task.vocab_size == 18 and task.min_length == 7
    assert task.chance == 16.0**-3
    # M = 60 body symbols, at most 4 of each: 4/60 * 4/59 * 4/58.
    assert task.position_blind_bound(64) == pytest.approx(4**3 / (60 * 59 * 58))
    assert task.chance < task.position_blind_bound(64) < 1.3 * task.chance
    assert task.position_blind_bound(4 * 64) < 1.1 * task.chance  # -> V^-n as M grows
    with pytest.raises(ValueError, match="needs length >= 7"):
        task.sample(torch.Generator(), 1, 6)
    with pytest.raises(ValueError, match="num_symbols >= 2"):
        PasskeyTask(num_symbols=1)


def test_passkey_batches_cover_the_training_lengths_deterministically():
    task = PasskeyTask(num_symbols=4, key_len=2)
    batches = task.batches(min_len=5, max_len=9)
    gen = torch.Generator().manual_seed(0)
    lengths = {batches(gen, 2)[0].shape[1] for _ in range(200)}
    assert lengths == set(range(5, 10))
    a = batches(torch.Generator().manual_seed(5), 4)
    b = batches(torch.Generator().manual_seed(5), 4)
    torch.testing.assert_close(a, b)
    with pytest.raises(ValueError):
        task.batches(min_len=9, max_len=5)
    with pytest.raises(ValueError, match="needs 5"):
        task.batches(min_len=4, max_len=9)  # too short for KEY, key, QUERY, answer


def test_no_stretch_of_validation_text_occurs_in_the_training_text():
    """Checked without hashes: every 64-character window of the validation text, against the
    set of the training text's windows (pydoc topics, the default and test configs' corpus)."""
    corpus = load_corpus()
    text = {}
    for split in ("train", "val"):
        text[split] = "".join(corpus.vocab[i] for i in getattr(corpus, split).tolist())
    w = data.VERBATIM
    seen = {text["train"][i : i + w] for i in range(len(text["train"]) - w + 1)}
    assert not any(text["val"][i : i + w] in seen for i in range(len(text["val"]) - w + 1))


def test_window_hashes_against_the_formula():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 5, size=300)
    big, mod = 0x100000001B3, 1 << 64
    for w in (1, 2, 3, 7, 16, 64):
        want = [
            sum((int(ids[i + k]) + 1) * pow(big, w - 1 - k, mod) for k in range(w)) % mod
            for i in range(len(ids) - w + 1)
        ]
        assert data.window_hashes(ids, w).tolist() == want, w
    assert len(data.window_hashes(ids[:3], 4)) == 0


def test_verbatim_stretches_are_cut_and_the_joins_checked_again():
    """Validation "xyz" + a copy of a training stretch + "uvw": the copy goes; what is left is
    joined and checked again, so no window of the result occurs in training."""
    vocab = "abcdefghijklmnopqrstuvwxyz"
    ids = lambda s: torch.tensor([vocab.index(c) for c in s])  # noqa: E731
    train = "abcdefghij" * 3
    val = "xyz" + "cdefgh" + "uvw"
    kept, removed = data.drop_verbatim(ids(train), ids(val), width=4)
    assert "".join(vocab[i] for i in kept.tolist()) == "xyzuvw" and removed == 6
    # A join that itself repeats training text is cut on the next pass: "zz" goes first,
    # which joins "a" and "b" into "ab", a window of training too.
    kept, removed = data.drop_verbatim(ids("abzz"), ids("qazzbq"), width=2)
    assert "".join(vocab[i] for i in kept.tolist()) == "qq" and removed == 4


def test_length_curriculum_grows_the_longest_length_from_min_len_to_n():
    task = PasskeyTask(num_symbols=16, key_len=1)
    batches = task.batches(8, 64, ramp_steps=100)
    gen = torch.Generator().manual_seed(0)
    assert {batches(gen, 2, 0)[0].shape[1] for _ in range(20)} == {8}  # step 0: min_len only
    assert max(batches(gen, 2, 50)[0].shape[1] for _ in range(200)) == 36  # halfway
    assert max(batches(gen, 2, 100)[0].shape[1] for _ in range(400)) == 64  # ramp done
    assert [PasskeyTask.longest(8, 64, 100, s) for s in (0, 1, 50, 99, 100, 5000)] == [
        8,
        8,
        36,
        63,
        64,
        64,
    ]
    flat = task.batches(8, 64)  # no curriculum: the whole range from the first step
    assert max(flat(gen, 2, 0)[0].shape[1] for _ in range(400)) == 64
    with pytest.raises(ValueError, match="ramp_steps"):
        task.batches(8, 64, ramp_steps=-1)


def test_the_tuning_span_is_neither_trained_on_nor_scored(tmp_path):
    """Whole blocks of the tuning span come out of the training text, none from validation,
    spread over the text; without a tuning fraction the split is as before."""
    rng = np.random.default_rng(0)
    text = "".join(rng.choice(list("abcdefghij"), size=40 * 256))
    path = tmp_path / "t.txt"
    path.write_text(text)
    plain = load_corpus(str(path), val_fraction=0.1, block=256)
    tuned = load_corpus(str(path), val_fraction=0.1, block=256, tune_fraction=0.1)
    assert len(plain.tune) == 0 and plain.tune_units == 0
    assert torch.equal(plain.val, tuned.val)  # validation untouched
    held = data.validation_blocks(40, 0.1)
    tune = data.tuning_units(40, held, 0.1)
    assert tuned.tune_units == len(tune) == 3 and not set(tune) & set(held)
    assert len(tuned.train) == len(plain.train) - len(tuned.tune)
    ids = data.char_ids(text)[1]
    expected = torch.cat([ids[i * 256 : (i + 1) * 256] for i in tune])
    assert torch.equal(tuned.tune, expected)
    with pytest.raises(ValueError, match="tune_fraction"):
        load_corpus(str(path), val_fraction=0.1, block=256, tune_fraction=1.0)
