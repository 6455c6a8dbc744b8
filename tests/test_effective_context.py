"""The effective context of the extrapolation LMs (posenc/effective_context.py scores, analyses/
extrapolation/context.py aggregates): each target scored from exactly k characters, as the
model scores that slice alone; a model that reads one character scores the same at every k;
the targets fixed, distinct and the same for every model; the effective-context rule on hand
numbers; the claims show it; bad config values named before any job."""

import io
import math
import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml
from torch import nn

from posenc.analyses.extrapolation.claims import CLAIMS
from posenc.analyses.extrapolation.context import effective_context, effective_length
from posenc.analyses.extrapolation.literature import LITERATURE
from posenc.analyses.extrapolation.spec import SPEC
from posenc.effective_context import context_bits, context_targets, target_bits
from posenc.train import build_model

ROOT = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")
LENGTHS = [1, 2, 4, 8, 16]


class PreviousCharacter(nn.Module):
    """Logits that depend on the previous character only (a bigram table): whatever context
    it is given, its prediction of a target is the same."""

    def __init__(self, vocab: int):
        super().__init__()
        self.table = nn.Parameter(
            torch.randn(vocab, vocab, generator=torch.Generator().manual_seed(0))
        )

    def forward(self, x, positions=None):  # (B, L) -> (B, L, V)
        return self.table[x]


def text(n: int = 600, vocab: int = 11) -> torch.Tensor:
    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(1))


def test_a_model_that_reads_one_character_scores_the_same_at_every_length():
    tokens = text()
    out = context_bits(PreviousCharacter(11), tokens, lengths=LENGTHS, targets=50, batch_tokens=7)
    first = out["target_bits"]["1"]
    for k in LENGTHS:
        assert out["target_bits"][str(k)] == first  # exact: the same logits, same targets
    assert out["lengths"] == LENGTHS and out["targets"] == 50


@pytest.mark.parametrize("encoding", ["none", "sinusoidal", "rope", "alibi", "t5_bias"])
def test_each_target_is_scored_as_the_model_scores_its_k_characters_alone(encoding):
    torch.manual_seed(0)
    model = build_model(
        11,
        {"n_layers": 1, "d_model": 16, "n_heads": 2, "dropout": 0.0},
        encoding,
        None,
        max_len=16,
    ).eval()
    tokens = text()
    targets = context_targets(len(tokens), 16, 9)
    for k in (1, 3, 16):
        # Batches of one window and of all of them: the batching changes nothing.
        for batch_tokens in (k, 10_000):
            bits = target_bits(model, tokens, targets, k, batch_tokens=batch_tokens)
            for t, b in zip(targets.tolist(), bits.tolist()):
                with torch.no_grad():
                    logits = model(tokens[t - k : t][None])[0, -1]  # the slice, positions 0..k-1
                naive = -F.log_softmax(logits.double(), -1)[tokens[t]].item() / math.log(2)
                assert b == pytest.approx(naive, rel=1e-5, abs=1e-6)


def test_a_k_character_context_ignores_what_lies_before_it():
    """Changing every character more than k before a target leaves its bits at k unchanged,
    and changing one within k changes them: the context is exactly k characters."""
    torch.manual_seed(0)
    model = build_model(
        11, {"n_layers": 1, "d_model": 16, "n_heads": 2, "dropout": 0.0}, "rope", None
    ).eval()
    tokens = text()
    t, k = torch.tensor([300]), 8
    base = target_bits(model, tokens, t, k)
    far = tokens.clone()
    far[: 300 - k] = (far[: 300 - k] + 1) % 11
    assert torch.equal(target_bits(model, far, t, k), base)
    near = tokens.clone()
    near[300 - k] = (near[300 - k] + 1) % 11
    assert not torch.equal(target_bits(model, near, t, k), base)


def test_the_targets_are_fixed_distinct_sorted_and_leave_room_for_the_longest_context():
    first = context_targets(10_000, 128, 500)
    assert torch.equal(first, context_targets(10_000, 128, 500))  # the same for every model
    assert len(set(first.tolist())) == 500 and torch.equal(first, first.sort().values)
    assert int(first.min()) >= 128 and int(first.max()) < 10_000
    # Spread over the text, not bunched at its start: uniform draws cover each half.
    assert (first < 5_000).sum() > 150 and (first >= 5_000).sum() > 150
    with pytest.raises(ValueError, match=r"extrapolation\.lm\.eval\.context\.targets = 9873"):
        context_targets(10_000, 128, 9873)


def test_every_length_scores_the_same_targets_and_the_mean_is_theirs():
    model = PreviousCharacter(11)
    tokens = text()
    out = context_bits(model, tokens, lengths=[16, 4], targets=30, batch_tokens=64)
    where = context_targets(len(tokens), 16, 30)
    for k in (4, 16):
        assert out["target_bits"][str(k)] == target_bits(model, tokens, where, k).tolist()
        assert out["bits_per_char"][str(k)] == pytest.approx(np.mean(out["target_bits"][str(k)]))


def test_a_model_trained_on_randomized_positions_reads_them_drawn_per_length():
    from posenc.batches import RandomizedPositions

    torch.manual_seed(0)
    cfg = {"n_layers": 1, "d_model": 16, "n_heads": 2, "dropout": 0.0}
    model = build_model(11, cfg, "learned", None, max_len=64).eval()
    tokens, randomized = text(), RandomizedPositions(64)

    def score(positions_of):
        return context_bits(
            model, tokens, lengths=[4, 16], targets=20, batch_tokens=64, positions_of=positions_of
        )["target_bits"]

    drawn = score(lambda k: randomized.sampler(k))
    assert drawn == score(lambda k: randomized.sampler(k))  # seeded: the same draws
    assert drawn["16"] != score(None)["16"]  # not positions 0..k-1


# ----------------------------------------------------------------------------- aggregate


def interval(high: float) -> dict:
    return {"estimate": high / 2, "low": 0.0, "high": high}


@pytest.mark.parametrize(
    ("highs", "expected"),
    [
        ({8: 0.4, 16: 0.06, 32: 0.05, 64: 0.01, 128: 0.0}, 32),  # at the margin counts
        ({8: 0.4, 16: 0.3, 32: 0.2, 64: 0.051, 128: 0.0}, 128),  # only the full context
        ({8: 0.01, 16: 0.2, 32: 0.02, 64: 0.0, 128: 0.0}, 8),  # the shortest that is within
    ],
)
def test_the_effective_context_is_the_shortest_length_within_the_margin(highs, expected):
    assert effective_length({k: interval(h) for k, h in highs.items()}, 0.05) == expected


def records(rises: dict[int, float], seeds=(0, 1, 2), targets=40, encoding="rope"):
    """Evaluation records whose bits at k are a per-target base plus ``rises[k]``, so every
    paired rise is exact; the bases differ by seed and target."""
    rng = random.Random(0)
    out = []
    for seed in seeds:
        base = [2.0 + rng.random() for _ in range(targets)]
        out.append(
            {
                "task": "lm",
                "encoding": encoding,
                "seed": seed,
                "context": {
                    "lengths": sorted(rises),
                    "targets": targets,
                    "target_bits": {str(k): [b + r for b in base] for k, r in rises.items()},
                },
            }
        )
    return out


def test_the_aggregate_pairs_lengths_and_finds_the_effective_context_on_hand_numbers():
    rises = {8: 0.5, 16: 0.2, 32: 0.04, 64: 0.01, 128: 0.0}
    evals = records(rises) + records({k: 0.3 * (k < 128) for k in rises}, encoding="alibi")
    fragments = [i // 5 for i in range(40)]
    ngram = {"4-gram": [3.0] * 40, "5-gram": [2.9] * 40}
    rows, summary, ev = effective_context(
        evals, level=0.95, margin=0.05, fragments=fragments, ngram_bits=ngram
    )
    rope = summary["encodings"]["rope"]
    for k, r in rises.items():  # a shift common to every target and seed: an exact rise
        assert rope["rise"][str(k)]["estimate"] == pytest.approx(r)
        assert rope["rise"][str(k)]["high"] - rope["rise"][str(k)]["low"] == pytest.approx(0)
    assert ev["effective_context_chars"] == {"rope": 32, "alibi": 128}
    full = np.mean([e["context"]["target_bits"]["128"] for e in evals[:3]])
    assert ev["full_context_minus_5gram"]["rope"]["estimate"] == pytest.approx(full - 2.9)
    assert summary["references"]["4-gram"]["estimate"] == pytest.approx(3.0)
    assert summary["fragments"] == 8 and summary["full"] == 128
    model_rows = [r for r in rows if r["kind"] == "model"]
    assert len(model_rows) == 10 and {r["encoding"] for r in rows} >= {"4-gram", "5-gram"}


def test_records_scored_with_other_targets_do_not_pair():
    evals = records({8: 0.1, 128: 0.0}) + records({8: 0.1, 128: 0.0}, targets=30, seeds=(3,))
    with pytest.raises(ValueError, match="different lengths or targets"):
        effective_context(evals, level=0.95, margin=0.05)


def test_no_record_scored_gives_nothing():
    assert effective_context(
        [{"task": "lm", "encoding": "rope", "seed": 0}], level=0.95, margin=0.05
    ) == ([], {}, {})


# ----------------------------------------------------------------------------- claims


def test_every_length_claim_shows_the_effective_context_and_the_distance_to_the_5_gram():
    by_id = {c.id: c for c in CLAIMS}
    length_claims = [(f"extrapolation.{row.claim}", row.encodings) for row in LITERATURE]
    length_claims += [
        ("extrapolation.fire_best_long", ("fire", "alibi", "kerple", "rope", "t5_bias")),
        ("extrapolation.ntk_helps_rope", ("rope",)),
    ]
    for cid, encodings in length_claims:
        shows = by_id[cid].shows
        for e in encodings:
            assert f"effective_context_chars.{e}" in shows, cid
            assert f"full_context_minus_5gram.{e}" in shows, cid
        # Shown, never deciding: no check or precondition reads them.
        read = [c.evidence for c in (*by_id[cid].checks, *by_id[cid].requires)]
        assert not [r for r in read if "context" in r], cid


# ----------------------------------------------------------------------------- config


def default_config():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda x: x["lm"]["eval"]["context"].update(lengths=[8, 256, 128]),
            "extrapolation.lm.eval.context.lengths = [8, 256, 128]: 256 longer than "
            "extrapolation.lm.seq_len = 128",
        ),
        (
            lambda x: x["lm"]["eval"]["context"].update(lengths=[8, 64]),
            "extrapolation.lm.eval.context.lengths = [8, 64]: must include "
            "extrapolation.lm.seq_len = 128",
        ),
        (
            lambda x: x["lm"]["eval"]["context"].update(targets=0),
            "extrapolation.lm.eval.context.targets",
        ),
        (
            lambda x: x["lm"]["eval"]["context"].update(lengths=[128]),
            "extrapolation.lm.eval.context.lengths",
        ),
        (lambda x: x["lm"]["eval"]["context"].pop("targets"), "extrapolation.lm.eval.context"),
        (lambda x: x["lm"]["eval"]["context"].update(k=[8]), "extrapolation.lm.eval.context"),
        (lambda x: x["lm"]["eval"].pop("context"), "extrapolation.lm.eval"),
        (
            lambda x: x["thresholds"].update(effective_context_margin_bits=0),
            "effective_context_margin_bits",
        ),
    ],
)
def test_a_bad_context_setting_is_named_before_any_job(edit, message):
    from configs import encoding_meta

    from posenc.config import ConfigError, validate_config, workflow_schema

    config = default_config()
    edit(config["extrapolation"])
    analyses = sorted(p.parent.name for p in ROOT.glob("analyses/*/schema.yaml"))
    schema = workflow_schema(ROOT, analyses, encoding_meta())
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_config(config, schema, SPEC.checks)


@pytest.mark.parametrize("name", ["config.yaml", "test.yaml", "gpu.yaml"])
def test_every_shipped_config_scores_its_full_context(name):
    from configs import load, merged

    config = merged(load(name)) if name != "config.yaml" else load(name)
    xp = config["extrapolation"]
    assert max(xp["lm"]["eval"]["context"]["lengths"]) == xp["lm"]["seq_len"]
    assert [p for check in SPEC.checks for p in check(config)] == []


def test_the_test_config_scores_few_targets():
    from configs import load

    assert load("test.yaml")["extrapolation"]["lm"]["eval"]["context"]["targets"] <= 64


# ----------------------------------------------------------------------------- the job


def test_the_evaluation_job_records_the_context_of_a_trained_model(tmp_path):
    sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
    import evaluate_model as evaluate_script
    import train_model as train_script

    corpus = tmp_path / "corpus.txt"
    words = "the quick brown fox jumps over lazy dog and cat".split()
    rng = random.Random(0)
    corpus.write_text(" ".join(rng.choice(words) for _ in range(600)) + ".", encoding="utf-8")
    cfg = {
        "data": {"corpus": str(corpus), "val_fraction": 0.1, "split_block": 256, "seq_len": 16},
        "model": {"n_layers": 1, "d_model": 16, "n_heads": 2, "dropout": 0.0},
        "train": {
            "batch_size": 2,
            "steps": 4,
            "lr": 3e-3,
            "weight_decay": 0.1,
            "warmup_steps": 1,
            "min_lr_ratio": 0.1,
            "grad_clip": 1.0,
            "checkpoint_every": 0,
            "max_loss": 20.0,
            "bf16": False,
            "progress_interval_s": 1e9,
        },
        "encoding": {"rope": {"base": 10000}},
    }
    model, meta, _ = train_script.compute("lm", "rope", 0, cfg, CPU, progress=io.StringIO())
    settings = {
        "multipliers": [1, 2],
        "tokens": 64,
        "segment": 8,
        "segment_windows": 2,
        "batch_tokens": 64,
        "context": {"lengths": [4, 16], "targets": 12},
    }
    record = evaluate_script.compute(model, meta, settings, CPU)
    context = record["context"]
    assert context["lengths"] == [4, 16] and context["targets"] == 12
    assert all(len(context["target_bits"][k]) == 12 for k in ("4", "16"))
    assert context["target_bits"]["4"] != context["target_bits"]["16"]
    without = {k: v for k, v in settings.items() if k != "context"}
    assert "context" not in evaluate_script.compute(model, meta, without, CPU)
