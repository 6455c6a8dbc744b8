"""FIRE held against its paper, written again here from the formula alone.

Li et al., "Functional Interpolation for Relative Positions Improves Long Context Transformers"
(ICLR 2024, arXiv 2310.04418), section 3 (FIRE): for a query at position i and a key at j <= i,

    b(i, j) = f_theta( psi(i - j) / psi(max(L, i)) ),   psi(x) = log(c x + 1),

with c > 0 and the threshold L both learned, and f_theta an MLP from one input to one output
per head (Linear(1, 32) -> ReLU -> Linear(32, H) in the paper's experiments and in the
PyTorch code of its appendix, where c starts at 0.1 and L is |s| times a fixed initial value,
512 at L_train = 2048, with s learned from 1, and eps = 1e-6 is added to the normaliser).

Nothing of posenc's FIRE code is imported here: not ``fire_bias``, not ``fire_reference``.
The reference below reads only the module's weights, so a wrong formula, a wrong activation,
a missing or misplaced threshold or log would each show. The comparison is at float32
tolerance (the module computes in float32) against this float64 loop-free reference, for
several weight draws, values of c, thresholds and positions, queries far past L and past the
study's L_train = 128 among them.
"""

from __future__ import annotations

import math

import pytest
import torch

from posenc.encodings import build
from posenc.model import ModelConfig, TransformerStack

# The study's L_train (extrapolation.lm.seq_len in config/config.yaml): positions are chosen to
# run well past it.
L_TRAIN = 128
# The paper's hidden width and initial c (the appendix code's mlp_width and init_c).
PAPER_WIDTH = 32
PAPER_INIT_C = 0.1


def paper_bias(
    q_pos: list[float],
    k_pos: list[float],
    c: float,
    threshold: float,
    w1: torch.Tensor,
    b1: torch.Tensor,
    w2: torch.Tensor,
    b2: torch.Tensor,
    eps: float = 0.0,
) -> torch.Tensor:
    """b(h, i, j) = [W2 relu(W1 x + b1) + b2]_h with x = psi(i - j) / (psi(max(L, i)) + eps),
    psi(x) = log(c x + 1), for i >= j: the paper's formula, in float64. ``eps = 0`` is the
    paper's text; the appendix code's 1e-6 is passed where a test needs it. Entries with
    j > i (outside the paper's causal formula) are NaN. (H, Lq, Lk)."""
    i = torch.tensor(q_pos, dtype=torch.float64)[:, None]  # (Lq, 1)
    j = torch.tensor(k_pos, dtype=torch.float64)[None, :]  # (1, Lk)

    def psi(x: torch.Tensor) -> torch.Tensor:
        return torch.log(c * x + 1)

    normaliser = psi(torch.clamp(i, min=threshold)) + eps  # psi(max(L, i)), (Lq, 1)
    x = psi(i - j) / normaliser  # (Lq, Lk); psi of a negative distance is not the paper's
    hidden = torch.relu(x[..., None] * w1.double()[:, 0] + b1.double())  # (Lq, Lk, W)
    bias = hidden @ w2.double().T + b2.double()  # (Lq, Lk, H)
    bias = bias.masked_fill((j > i)[..., None], float("nan"))
    return bias.permute(2, 0, 1)


def weights(module) -> tuple[torch.Tensor, ...]:
    """The MLP's weights, copied out of the module: (W1 (W, 1), b1 (W,), W2 (H, W), b2 (H,))."""
    return tuple(
        p.detach().clone()
        for p in (module.hidden.weight, module.hidden.bias, module.out.weight, module.out.bias)
    )


def fire(n_heads: int, threshold: float, seed: int, c: float, scale: float = 1.0):
    """A FIRE module at ``threshold``, its MLP drawn from ``seed`` (wider than at
    initialisation, so the ReLU's kinks fall inside [0, 1]), c and the threshold's multiplier
    set."""
    torch.manual_seed(seed)
    module = build("fire", {"fire": {"threshold": threshold}}, d_model=4 * n_heads, n_heads=n_heads)
    with torch.no_grad():
        for p in (module.hidden.weight, module.hidden.bias, module.out.weight, module.out.bias):
            torch.nn.init.normal_(p, std=2.0)
        module.c.fill_(c)
        module.threshold_scale.fill_(scale)
    return module


def assert_matches_paper(module, q_pos, k_pos, c, threshold, eps=0.0, rtol=1e-5, atol=1e-5):
    got = module.score_bias(torch.tensor(q_pos), torch.tensor(k_pos), causal=True)
    want = paper_bias(q_pos, k_pos, c, threshold, *weights(module), eps=eps)
    assert got.dtype == torch.float32 and got.shape == want.shape
    causal = ~want.isnan()
    assert causal.any()
    torch.testing.assert_close(got.double()[causal], want[causal], rtol=rtol, atol=atol)


# Queries below L, at L, past L, past L_train and far past it (up to 512x L_train).
POSITIONS = [0, 1, 2, 3, 7, 31, 32, 33, 100, 127, 128, 129, 255, 512, 1000, 4095, 65535]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("threshold", [1.0, 8.0, 32.0, 100.5, 512.0])
@pytest.mark.parametrize("c", [0.01, 0.1, 1.0, 3.0])
def test_bias_is_the_papers_formula(seed, threshold, c):
    module = fire(n_heads=4, threshold=threshold, seed=seed, c=c)
    pos = [float(p) for p in POSITIONS]
    # With the paper's formula exactly (no eps) wherever psi(L) >= 1: the appendix code's
    # eps = 1e-6 moves x by eps / psi(L) relative, under float32's tolerance there. (With a
    # small psi(L), c = 0.01 and L = 8 say, eps moves the bias by 1e-4 relative.)
    if math.log(c * threshold + 1) >= 1:
        assert_matches_paper(module, pos, pos, c, threshold)
    # And with the appendix code's eps, at every c and L.
    assert_matches_paper(module, pos, pos, c, threshold, eps=1e-6)


@pytest.mark.parametrize("scale", [1.0, 0.25, 3.0, -2.0])
def test_learned_threshold_is_the_absolute_multiple_of_its_initial_value(scale):
    # The appendix code learns L as |s| * L_0 (s from 1): a negative s is the same L as -s.
    threshold = 32.0
    module = fire(n_heads=2, threshold=threshold, seed=3, c=0.1, scale=scale)
    assert module.threshold().item() == pytest.approx(abs(scale) * threshold)
    pos = [float(p) for p in POSITIONS]
    assert_matches_paper(module, pos, pos, 0.1, abs(scale) * threshold, eps=1e-6)


def test_float_positions_and_a_long_window_match_the_paper():
    # Position Interpolation hands FIRE float positions; a 16x window is what the study
    # evaluates at its longest. Every (query, key) pair of a 2048-token causal window, sampled.
    module = fire(n_heads=3, threshold=32.0, seed=4, c=0.1)
    q = [float(p) for p in range(0, 16 * L_TRAIN, 37)]
    k = [float(p) for p in range(0, 16 * L_TRAIN, 41)]
    assert_matches_paper(module, q, k, 0.1, 32.0)
    interpolated = [p / 4 for p in q]  # 4x PI: queries back inside L_train, off the integers
    assert_matches_paper(module, interpolated, interpolated, 0.1, 32.0)


def test_the_reference_would_catch_each_plausible_slip():
    # The comparison is not vacuous: the formula with one piece changed differs from the module
    # by far more than the tolerance, past L_train.
    module = fire(n_heads=2, threshold=32.0, seed=5, c=0.1)
    pos = [float(p) for p in [0, 5, 31, 64, 200, 1000]]
    got = module.score_bias(torch.tensor(pos), torch.tensor(pos), causal=True).double()
    w1, b1, w2, b2 = weights(module)
    right = paper_bias(pos, pos, 0.1, 32.0, w1, b1, w2, b2)
    causal = ~right.isnan()
    slips = {
        "no threshold (L = 1)": paper_bias(pos, pos, 0.1, 1.0, w1, b1, w2, b2),
        "c not applied (c = 1)": paper_bias(pos, pos, 1.0, 32.0, w1, b1, w2, b2),
        "no ReLU (a linear f)": paper_bias(pos, pos, 0.1, 32.0, w1, b1 + 1e3, w2, b2)
        - (w2.double() @ torch.full_like(b1, 1e3).double())[:, None, None],
    }
    for name, wrong in slips.items():
        assert (got[causal] - wrong[causal]).abs().max() > 1e-2, name
    torch.testing.assert_close(got[causal], right[causal], rtol=1e-5, atol=1e-5)


def test_settings_are_the_papers():
    module = build("fire", d_model=64, n_heads=8)
    params = dict(module.named_parameters())
    # A two-layer MLP, 1 -> 32 -> one output per head, plus c and the threshold's multiplier:
    # nothing else is learned.
    assert {name: tuple(p.shape) for name, p in params.items()} == {
        "hidden.weight": (PAPER_WIDTH, 1),
        "hidden.bias": (PAPER_WIDTH,),
        "out.weight": (8, PAPER_WIDTH),
        "out.bias": (8,),
        "c": (),
        "threshold_scale": (),
    }
    assert all(p.requires_grad for p in params.values())  # c and L are learned
    assert module.c.item() == pytest.approx(PAPER_INIT_C)
    assert module.threshold_scale.item() == 1.0  # L starts at its configured value
    # The study's initial L keeps the paper's ratio L_0 / L_train = 512 / 2048.
    assert module.params.hyper.threshold / L_TRAIN == 512 / 2048
    # The MLP keeps nn.Linear's default initialisation, as the appendix code does:
    # U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases.
    for layer in (module.hidden, module.out):
        bound = 1 / math.sqrt(layer.in_features)
        assert layer.weight.abs().max() <= bound and layer.bias.abs().max() <= bound
        assert layer.weight.abs().max() > bound / 2  # drawn, not zero


def test_bias_at_initialisation_matches_the_paper():
    # The module as built (no weights redrawn) gives the paper's bias, far past L_train.
    torch.manual_seed(6)
    module = build("fire", d_model=16, n_heads=4)
    pos = [float(p) for p in POSITIONS]
    assert_matches_paper(module, pos, pos, PAPER_INIT_C, module.params.hyper.threshold)


def test_one_fire_serves_every_layer():
    # posenc's design, not a claim about the paper: one FIRE module, its bias computed once per
    # forward, serves every layer (the encoding's docstring says how this may differ from the
    # paper's models). A deeper stack learns no more FIRE parameters.
    def fire_params(n_layers: int) -> int:
        enc = build("fire", d_model=16, n_heads=4)
        stack = TransformerStack(ModelConfig(d_model=16, n_heads=4, n_layers=n_layers), enc)
        return sum(p.numel() for n, p in stack.named_parameters() if n.startswith("encoding."))

    assert fire_params(1) == fire_params(4) == 2 * PAPER_WIDTH + 4 * PAPER_WIDTH + 4 + 2
