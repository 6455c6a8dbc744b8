"""RoPE scaling across libraries: transformers' ROPE_INIT_FUNCTIONS against posenc.rope_scaling
(inverse frequencies and attention factors, in float32 ulps), and every library's dynamic and
fixed NTK rescaling as effective NTK scales beside ours."""

from __future__ import annotations

from typing import Any

from posenc.analyses.conformance.libraries import TRANSFORMERS_METHODS, Library
from posenc.analyses.conformance.reference import EPS32, missing
from posenc.rope_scaling import scaled_rope


def relative_ulps(got: list[float], want: tuple[float, ...] | list[float]) -> float:
    """max_c |got_c − want_c| / |want_c|, in float32 epsilons."""
    return max(abs(g - w) / abs(w) for g, w in zip(got, want, strict=True)) / EPS32


def effective_ntk_scale(inv_freq: list[float], head_dim: int, base: float) -> float:
    """The NTK-aware scale s whose base·s^(d/(d−2)) gives these frequencies: the slowest pair
    is base^(−(d−2)/d) / s under NTK-aware scaling, so s = that over the measured one."""
    return base ** (-(head_dim - 2) / head_dim) / inv_freq[-1]


def scaling_conformance(cfg: dict, libraries: tuple[Library, ...]) -> dict[str, list[dict]]:
    """transformers' ROPE_INIT_FUNCTIONS against ours per method and factor; every library's
    dynamic and fixed NTK as effective NTK scales, next to ours."""
    sc = cfg["scaling"]
    d, base, L = sc["head_dim"], float(sc["base"]), sc["original_length"]
    methods, params = sc["methods"], sc["params"]
    rows, dynamic = [], []
    for lib in libraries:
        if lib.scaling is not None:
            for method in methods:
                for factor in sc["factors"]:
                    ours = scaled_rope(method, d, base, factor, L, params.get(method))
                    row: dict[str, Any] = {
                        "library": lib.name,
                        "method": method,
                        "their_method": TRANSFORMERS_METHODS[method],
                        "factor": factor,
                        "status": "measured",
                        "reason": None,
                    }
                    try:
                        inv_freq, attention = lib.scaling(
                            TRANSFORMERS_METHODS[method], d, base, factor, L, params.get(method, {})
                        )
                    except ImportError as error:
                        rows.append({**row, "status": "n/a", "reason": missing(error)})
                        continue
                    row |= {
                        "inv_freq_ulps": relative_ulps(inv_freq, ours.inv_freq),
                        "attention_factor": attention,
                        "ours_attention_factor": ours.attention_factor,
                        "attention_ulps": abs(attention - ours.attention_factor)
                        / ours.attention_factor
                        / EPS32,
                    }
                    rows.append(row)
        for factor in sc["factors"]:
            dynamic += _dynamic_rows(lib, sc, d, base, L, factor)
    return {"scaling": rows, "dynamic": dynamic}


def _dynamic_rows(lib: Library, sc: dict, d: int, base: float, L: int, factor: float) -> list:
    """What ``lib``'s dynamic NTK (each length on a fresh module, and the lengths in their
    order on one module) and fixed NTK rescaling do with ``factor``, as effective NTK scales;
    beside them ours: dynamic's s·l/L − (s − 1) (1 at l ≤ L), and the fixed NTK's s."""
    lengths = sc["dynamic_lengths"]
    rows = []
    base_row = {"library": lib.name, "factor": factor, "status": "measured", "reason": None}
    if lib.dynamic is not None:
        try:
            fresh = [lib.dynamic(d, base, factor, L, [length])[0] for length in lengths]
            in_order = lib.dynamic(d, base, factor, L, lengths)
        except ImportError as error:
            fresh = in_order = None
            reason = missing(error)
        for i, length in enumerate(lengths):
            formula = max(1.0, factor * length / L - (factor - 1))
            ours = scaled_rope("ntk", d, base, formula, L).inv_freq
            for option, seen in (("dynamic, fresh module", fresh), ("dynamic, in order", in_order)):
                row = {
                    **base_row,
                    "option": option,
                    "call": i,
                    "length": length,
                    "ours_scale": formula,
                }
                if seen is None:
                    rows.append({**row, "status": "n/a", "reason": reason})
                    continue
                rows.append(
                    {
                        **row,
                        "effective_scale": effective_ntk_scale(seen[i], d, base),
                        "ntk_ulps": relative_ulps(seen[i], ours),
                    }
                )
    if lib.fixed_ntk is not None:
        row = {**base_row, "option": "fixed NTK", "call": None, "length": None}
        row["ours_scale"] = factor
        try:
            inv_freq = lib.fixed_ntk(d, base, factor)
        except ImportError as error:
            return [*rows, {**row, "status": "n/a", "reason": missing(error)}]
        ours = scaled_rope("ntk", d, base, factor, L).inv_freq
        rows.append(
            {
                **row,
                "effective_scale": effective_ntk_scale(inv_freq, d, base),
                "ntk_ulps": relative_ulps(inv_freq, ours),
            }
        )
    return rows
