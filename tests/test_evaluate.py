"""Evaluation: context-extension transforms, the two scoring modes, undefined learned rows."""

import math

import pytest
import torch
from torch import nn

from posenc.context_extension import extension_setup, ntk_base, pi_positions, rope_base
from posenc.data import PasskeyTask
from posenc.encodings import REGISTRY, inverse_frequencies
from posenc.evaluate import (
    all_token_windows,
    bits_per_char,
    evaluate_lm,
    evaluate_passkey,
    segment_window_ends,
)
from posenc.train import build_model

CPU = torch.device("cpu")


def tiny_model(encoding, vocab=7, max_len=8, seed=0):
    torch.manual_seed(seed)
    return build_model(
        vocab,
        {"d_model": 16, "n_heads": 2, "n_layers": 1},
        encoding,
        {"t5_bias": {"max_distance": 8}},
        max_len=max_len,
    ).eval()


def test_pi_positions_squeeze_into_the_trained_range():
    torch.testing.assert_close(pi_positions(8, 8), torch.arange(8.0))
    torch.testing.assert_close(pi_positions(6, 8), torch.arange(6.0))  # shorter: unchanged
    squeezed = pi_positions(32, 8)
    torch.testing.assert_close(squeezed, torch.arange(32.0) / 4)
    assert squeezed.dtype == torch.float32 and squeezed.max() < 8


@pytest.mark.parametrize("head_dim", [4, 16, 64])
@pytest.mark.parametrize("scale", [2.0, 4.0, 16.0])
def test_ntk_base_interpolates_the_lowest_frequency_and_keeps_the_highest(head_dim, scale):
    base = 10000.0
    new = ntk_base(base, scale, head_dim)
    assert new == pytest.approx(base * scale ** (head_dim / (head_dim - 2)), rel=1e-12)
    before, after = inverse_frequencies(head_dim, base), inverse_frequencies(head_dim, new)
    assert float(after[0]) == float(before[0]) == 1.0  # theta_0 = base^0: extrapolated
    assert float(after[-1]) == pytest.approx(float(before[-1]) / scale, rel=1e-12)  # interpolated


def test_ntk_base_keeps_the_base_within_the_trained_length_and_rejects_tiny_heads():
    assert ntk_base(10000.0, 1.0, 16) == 10000.0
    assert ntk_base(10000.0, 0.5, 16) == 10000.0
    with pytest.raises(ValueError, match="head dimension > 2"):
        ntk_base(10000.0, 2.0, 2)


def test_extension_setup_dispatches():
    assert extension_setup(None, 32, 8, 16, 100.0) == (None, 100.0)
    positions, base = extension_setup("pi", 32, 8, 16, 100.0)
    torch.testing.assert_close(positions, pi_positions(32, 8))
    assert base == 100.0
    positions, base = extension_setup("ntk", 32, 8, 16, 100.0)
    assert positions is None and base == ntk_base(100.0, 4.0, 16)
    with pytest.raises(ValueError, match="unknown context extension 'yarn'"):
        extension_setup("yarn", 32, 8, 16, 100.0)


def test_rope_base_changes_the_model_and_is_restored():
    model = tiny_model("rope")
    tokens = torch.randint(0, 7, (1, 8))
    with torch.no_grad():
        before = model(tokens)
        with rope_base(model, 1e6):
            assert model.stack.encoding.base == 1e6
            changed = model(tokens)
        after = model(tokens)
    assert model.stack.encoding.base == 10000.0
    torch.testing.assert_close(before, after)
    assert not torch.allclose(before, changed)
    with pytest.raises(ValueError, match="rope"), rope_base(tiny_model("alibi"), 1.0):
        pass


class PositionOracle(nn.Module):
    """Hand-made model: predicts next = (token + 1) mod V with logit = its position p, so
    P(correct at p) = e^p / (e^p + V - 1) and its NLL is log(1 + (V - 1) e^-p) nats."""

    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab

    def forward(self, tokens, positions=None):
        B, L = tokens.shape
        p = torch.arange(L, dtype=torch.float32) if positions is None else positions
        logits = torch.zeros(B, L, self.vocab)
        logits.scatter_(2, ((tokens + 1) % self.vocab)[..., None], p.expand(B, L)[..., None])
        return logits


def nll(p, vocab):
    return math.log(1 + (vocab - 1) * math.exp(-p))


def test_mode_all_scores_every_token_of_non_overlapping_windows():
    V, L = 5, 4
    text = torch.arange(13) % V  # the oracle is right at every position, with confidence p
    assert all_token_windows(13, L, tokens=12).tolist() == [0, 4, 8]  # (13-1)//4 windows
    result = bits_per_char(
        PositionOracle(V), text, L, "all", tokens_scored=12, segment=0, segment_ends=None
    )
    expected = sum(nll(p, V) for p in range(L)) / L / math.log(2)
    assert result["bits_per_char"] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert result["tokens_scored"] == 3 * L and result["windows"] == 3 and result["defined"]
    assert result["window_bits"] == pytest.approx([expected] * 3, rel=1e-5)


def test_mode_all_scores_the_same_number_of_tokens_at_every_length():
    text = torch.randint(0, 5, (1000,), generator=torch.Generator().manual_seed(0))
    model = ContentOracle(5)
    for L in (4, 8, 16, 32):
        result = bits_per_char(
            model, text, L, "all", tokens_scored=256, segment=0, segment_ends=None
        )
        assert result["tokens_scored"] == 256 and result["windows"] == 256 // L
        # Windows hold equal token counts: their mean is the overall mean.
        assert sum(result["window_bits"]) / result["windows"] == pytest.approx(
            result["bits_per_char"]
        )
    with pytest.raises(ValueError, match="cannot hold 2048 scored tokens"):
        all_token_windows(1000, 32, tokens=2048)


def test_mode_segment_scores_the_last_tokens_with_growing_context():
    V, segment = 5, 2
    text = torch.arange(30) % V
    ends = segment_window_ends(30, max_length=8, segment=segment, n_windows=2)
    assert ends.tolist() == [8, 29]  # the longest window fits; spread over the rest
    for L in (2, 4, 8):
        result = bits_per_char(
            PositionOracle(V),
            text,
            L,
            "segment",
            tokens_scored=0,
            segment=segment,
            segment_ends=ends,
        )
        # Scored: the window's last two positions, L-2 and L-1, in each of the two windows.
        expected = (nll(L - 2, V) + nll(L - 1, V)) / 2 / math.log(2)
        assert result["bits_per_char"] == pytest.approx(expected, rel=1e-5, abs=1e-6)
        assert result["tokens_scored"] == 2 * segment


class ContentOracle(nn.Module):
    """Hand-made model that ignores position: guesses next = (token + 1) mod V, logit 3."""

    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab

    def forward(self, tokens, positions=None):
        logits = torch.zeros(*tokens.shape, self.vocab)
        return logits.scatter_(2, ((tokens + 1) % self.vocab)[..., None], 3.0)


def test_mode_segment_scores_the_same_tokens_at_every_length():
    V, segment, n = 4, 3, 200
    text = torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(0))
    ends = segment_window_ends(n, max_length=32, segment=segment, n_windows=5)
    # The scored targets are tokens e-segment+1 .. e of each end e, whatever the length.
    scored = [i for e in ends.tolist() for i in range(e - segment + 1, e + 1)]
    hit = math.log(1 + (V - 1) * math.exp(-3.0))  # NLL when the guess is right
    miss = math.log(math.exp(3.0) + V - 1)  # and when it is wrong
    expected = (
        sum(hit if int(text[i]) == (int(text[i - 1]) + 1) % V else miss for i in scored)
        / len(scored)
        / math.log(2)
    )
    model = ContentOracle(V)
    by_mode = {
        mode: [
            bits_per_char(
                model, text, L, mode, tokens_scored=32, segment=segment, segment_ends=ends
            )["bits_per_char"]
            for L in (4, 8, 32)
        ]
        for mode in ("all", "segment")
    }
    assert by_mode["segment"] == pytest.approx([expected] * 3, rel=1e-6)
    # Mode (a) scores different text at each length: a position-blind model still moves.
    assert len({round(b, 9) for b in by_mode["all"]}) > 1


def test_segment_windows_must_fit():
    with pytest.raises(ValueError, match="cannot hold 10 scored segments"):
        segment_window_ends(100, max_length=64, segment=8, n_windows=10)


def test_learned_is_undefined_beyond_lmax_not_a_crash():
    model = tiny_model("learned", max_len=8)
    text = torch.randint(0, 7, (400,), generator=torch.Generator().manual_seed(1))
    ends = segment_window_ends(400, 16, 4, 3)
    inside = bits_per_char(model, text, 8, "all", tokens_scored=32, segment=4, segment_ends=ends)
    beyond = bits_per_char(
        model, text, 16, "segment", tokens_scored=32, segment=4, segment_ends=ends
    )
    assert inside["defined"] and math.isfinite(inside["bits_per_char"])
    assert beyond["defined"] is False and beyond["bits_per_char"] is None
    assert "L_max" in beyond["reason"]
    accuracy = evaluate_passkey(
        model,
        PasskeyTask(num_symbols=3, key_len=2),
        train_len=8,
        multipliers=[1, 2],
        sequences=4,
        seed=0,
        batch_size=4,
        device=CPU,
    )
    assert accuracy[0]["defined"] and accuracy[1]["defined"] is False
    assert accuracy[1]["accuracy"] is None and accuracy[1]["correct"] == []


@pytest.mark.parametrize("encoding", ["learned", "rope", "alibi"])
def test_evaluate_lm_rows(encoding):
    model = tiny_model(encoding, max_len=8)
    tokens = torch.randint(0, 7, (600,), generator=torch.Generator().manual_seed(2))
    rows = evaluate_lm(
        model,
        tokens[:500],
        tokens[500:],
        train_len=8,
        multipliers=[1, 2, 4],
        tokens=64,
        segment=4,
        segment_windows=3,
        batch_tokens=64,
        device=CPU,
    )
    methods = {r["method"] for r in rows}
    assert methods == {"plain", *REGISTRY[encoding].extensions}  # as the registry declares
    train_rows = [r for r in rows if r["split"] == "train"]
    assert len(train_rows) == 1 and train_rows[0]["length"] == 8 and train_rows[0]["defined"]
    for r in rows:
        undefined = encoding == "learned" and r["multiplier"] > 1
        assert r["defined"] is not undefined
    if REGISTRY[encoding].extensions:  # at L_train every extension is the plain model
        at_one = {
            r["method"]: r["bits_per_char"]
            for r in rows
            if r["multiplier"] == 1 and r["mode"] == "segment"
        }
        assert at_one["pi"] == at_one["ntk"] == at_one["plain"]
        assert model.stack.encoding.base == 10000.0  # restored after NTK


class PositionReader(nn.Module):
    """Solves passkey retrieval by position: at the i-th step after QUERY it outputs the
    symbol i places after KEY; ``wrong_step`` (if set) names a step it always gets wrong."""

    def __init__(self, task: PasskeyTask, wrong_step: int | None = None):
        super().__init__()
        self.task, self.wrong_step = task, wrong_step

    def forward(self, tokens, positions=None):
        task, n = self.task, self.task.key_len
        key_at = (tokens == task.key_marker).int().argmax(-1, keepdim=True)  # (B, 1)
        answer = tokens.gather(1, key_at + 1 + torch.arange(n))  # (B, n)
        if self.wrong_step is not None:
            answer[:, self.wrong_step] = (answer[:, self.wrong_step] + 1) % task.num_symbols
        guess = torch.zeros_like(tokens)
        guess[:, -n:] = answer  # the predictions at QUERY and at the fed answer tokens
        return nn.functional.one_hot(guess, task.vocab_size).float()  # (B, L, V)


def passkey_rows(model, task, sequences=10, batch_size=3):
    return evaluate_passkey(
        model,
        task,
        train_len=8,
        multipliers=[1, 2, 4],
        sequences=sequences,
        seed=0,
        batch_size=batch_size,
        device=CPU,
    )


def test_passkey_accuracy_is_exact_match_on_fixed_sequences():
    task = PasskeyTask(num_symbols=4, key_len=3)
    rows = passkey_rows(PositionReader(task), task)
    assert [r["length"] for r in rows] == [8, 16, 32]
    assert [r["accuracy"] for r in rows] == [1.0, 1.0, 1.0]
    assert [r["token_accuracy"] for r in rows] == [1.0, 1.0, 1.0]
    for r in rows:
        assert r["correct"] == [1] * 10 and r["tokens_correct"] == [3] * 10
        assert r["chance"] == 4.0**-3 and r["key_len"] == 3
        assert r["position_blind_bound"] == task.position_blind_bound(r["length"])
    # One key token always wrong: no sequence is right, though two thirds of the tokens are.
    rows = passkey_rows(PositionReader(task, wrong_step=2), task)
    assert [r["accuracy"] for r in rows] == [0.0, 0.0, 0.0]
    assert [r["token_accuracy"] for r in rows] == pytest.approx([2 / 3] * 3)
    assert rows[0]["correct"] == [0] * 10 and rows[0]["tokens_correct"] == [2] * 10


def test_passkey_outcomes_are_per_sequence_and_seeded():
    """A model that always answers symbol 0: outcomes vary by sequence, their mean is the
    accuracy, and the batch size does not change which sequences are drawn."""
    task = PasskeyTask(num_symbols=3, key_len=1)

    class Zero(nn.Module):
        def forward(self, tokens, positions=None):
            return nn.functional.one_hot(torch.zeros_like(tokens), task.vocab_size).float()

    model = Zero()
    rows = passkey_rows(model, task, sequences=64, batch_size=64)
    again = passkey_rows(model, task, sequences=64, batch_size=7)
    for r, s in zip(rows, again):
        assert len(r["correct"]) == r["sequences"] == 64
        assert r["accuracy"] == sum(r["correct"]) / 64 == r["token_accuracy"]
        assert 0 < sum(r["correct"]) < 64  # about a third, not all or none
        assert r["correct"] == s["correct"]
