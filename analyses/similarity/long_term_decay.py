"""The long-term decay of rotary encodings (Su et al. 2021, section 3.4.3 and Fig. 2): the
relative upper bound against the relative distance, and how it falls."""

from collections.abc import Callable

import torch
from torch import Tensor


def relative_upper_bound(
    theta: Tensor, max_distance: int, device, decay: Callable[[Tensor], Tensor | None] | None = None
) -> Tensor:
    """Su et al. 2021, eq. (37): (1/(d/2)) sum_{j=1}^{d/2} |S_j(r)| with
    S_j = sum_{i<j} a_i(r) e^{i r theta_i}, for the rotation frequencies ``theta`` (d/2,) and
    r = 0..max_distance. Shape (max_distance + 1,). a_i(r) = 1 for a pure rotation (RoPE);
    ``decay`` gives each pair's scale at distance r where the encoding has one
    (:meth:`~posenc.encodings.PositionalEncoding.pair_decay`: xPos's zeta_i^(r/gamma), Sun et
    al. 2022), so that the bound is of the scores the encoding really gives."""
    theta = theta.to(device=device, dtype=torch.float64)
    r = torch.arange(max_distance + 1, dtype=torch.float64, device=device)
    terms = torch.exp(1j * r[:, None] * theta[None, :])  # (R, d/2)
    scale = decay(r) if decay is not None else None
    if scale is not None:
        terms = terms * scale.to(device=device, dtype=torch.float64)
    return torch.cumsum(terms, dim=1).abs().mean(dim=1)


def spearman(x: Tensor, y: Tensor) -> float:
    """Spearman's rank correlation (no ties expected in continuous data)."""
    rx, ry = (t.argsort().argsort().double() for t in (x, y))
    return torch.corrcoef(torch.stack((rx, ry)))[0, 1].item()


def decay_summary(bound: Tensor) -> dict[str, float]:
    """How the bound falls: rank correlation with distance, and its largest value over the far
    half of the range relative to its value at distance 0."""
    r = torch.arange(len(bound), dtype=torch.float64, device=bound.device)
    far = bound[len(bound) // 2 :]
    return {
        "at_zero": bound[0].item(),
        "spearman": spearman(r, bound),
        "far_max_ratio": (far.max() / bound[0]).item(),
    }
