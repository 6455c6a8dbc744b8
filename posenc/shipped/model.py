"""One shipped config's positional code, measured with no weights: the shared core of the
``shipped`` section (every zoo model) and of ``posenc model`` (any config.json).

A config is read with transformers' own config class for its model type (offline), its text
rotary module is built from it, and each layer type's frequencies are held against
``posenc.rope_scaling`` and the float64 formula (``formula.py``). The precision paths start
from the module's own float32 ``inv_freq`` and reproduce its forward's product
``position_ids.float() * inv_freq.float()`` elementwise (the same float32 operation, so the same
bits; a test checks it against the forward's cos), which every rotary module in the zoo shares.

Bad input raises :class:`ModelError` with one line naming the key. The config is read in
reading.py, the frequencies and spectrum are in frequencies.py, the precision paths in
precision.py, the layouts and discontinuities in layout.py; this module measures one model
with them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posenc.shipped import formula
from posenc.shipped.frequencies import LayerType, layer_types, spectrum, ulps
from posenc.shipped.layout import discontinuities, layout
from posenc.shipped.precision import (
    distinguishability,
    first_past,
    precision_rows,
    sample_positions,
)
from posenc.shipped.reading import ModelError, build_config


def at_context(config, lt: LayerType, context: int) -> tuple[np.ndarray, np.ndarray]:
    """(float64 ω, float32 inv_freq) a run at the advertised context uses: the module's buffer
    as built (or the formula rounded to float32 where transformers built none), except for
    LongRoPE past L, where transformers' update switches to the long factors."""
    w32 = lt.transformers if lt.transformers is not None else lt.formula.astype(np.float32)
    if lt.rope_type != "longrope" or context <= lt.original:
        return lt.formula, w32
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    omega, _ = formula.inv_freq("longrope", lt.width, lt.base, lt.params, lt.original + 1)
    text = config.get_text_config()
    tf_long = ROPE_INIT_FUNCTIONS["longrope"](text, None, seq_len=lt.original + 1)[0]
    return np.array(omega), tf_long.double().numpy()


def measure_settings(cfg: dict, seed: int) -> dict:
    """What :func:`measure` reads, from the ``shipped`` section's config block."""
    return {
        "per_octave": cfg["per_octave"],
        "seed": seed,
        "angle_rad": cfg["thresholds"]["angle_rad"],
        "exact_max_positions": cfg["exact_max_positions"],
        "window": cfg["window"],
        "t5_max_relative": cfg["t5_max_relative"],
    }


def measure(entry: dict, name: str, cfg: dict, where: str | None = None) -> dict:
    """Everything the section and ``posenc model`` report for one config (model.json)."""
    where = where or name
    config = build_config(entry, where)
    text = config.get_text_config()
    context = int(
        entry.get("advertised_context") or getattr(text, "max_position_embeddings", 0) or 0
    )
    if context < 2:
        raise ModelError(f"{where}: key max_position_embeddings missing (no context to measure)")
    lts, module, why = layer_types(config, where)
    positions = sample_positions(context, cfg["per_octave"], cfg["seed"])
    out: dict[str, Any] = {
        "model": name,
        "model_type": entry["model_type"],
        "context": context,
        "transformers_module": None if module is None else type(module).__name__,
        "transformers_problem": why,
        "inv_freq": {},
        "attention_factor": {},
        "layer_types": [],
    }
    for lt in lts:
        row: dict[str, Any] = {
            "layer_type": lt.name,
            "rope_type": lt.rope_type,
            "base": lt.base,
            "rotated_dims": lt.width,
            "original_length": lt.original,
            "problems": lt.problems,
        }
        out["inv_freq"][lt.name] = {
            "transformers": None if lt.transformers is None else lt.transformers.tolist(),
            "posenc": None if lt.posenc is None else lt.posenc.tolist(),
            "formula": lt.formula.tolist(),
        }
        out["attention_factor"][lt.name] = {
            "transformers": lt.transformers_factor,
            "posenc": lt.posenc_factor,
            "formula": lt.formula_factor,
        }
        if lt.transformers is not None and lt.posenc is not None:
            row["transformers_vs_posenc_ulps"] = ulps(lt.transformers, lt.posenc)
        if lt.transformers is not None:
            row["transformers_vs_formula_ulps"] = ulps(lt.transformers, lt.formula)
            row["factor_ulps"] = ulps(
                np.array([lt.transformers_factor], float), np.array([lt.formula_factor])
            )
        if lt.posenc is not None:
            row["posenc_vs_formula_ulps"] = ulps(lt.posenc, lt.formula)
        omega, w32 = at_context(config, lt, context)
        row["frequencies_at_context"] = "long factors" if lt.rope_type == "longrope" else "as built"
        row["spectrum"] = spectrum(lt, context, omega)
        rows = precision_rows(positions, w32, omega, cfg["seed"])
        row["precision"] = {
            path: {
                "at_context": rs[-1]["max_angle_error"],
                "max": max(r["max_angle_error"] for r in rs),
                "first_past": first_past(rs, cfg["angle_rad"]),
                "relative_max": max(r["relative_error"] for r in rs),
                **(
                    {
                        "product_part_at_context": rs[-1]["product_part"],
                        "inv_freq_part_at_context": rs[-1]["inv_freq_part"],
                    }
                    if path == "float32"
                    else {}
                ),
                "curve": rs,
            }
            for path, rs in rows.items()
        }
        row["distinguishability"] = distinguishability(
            w32, context, cfg["exact_max_positions"], positions, cfg["window"]
        )
        out["layer_types"].append(row)
    # The contract's top-level figures, by layer type (the curves stay in layer_types).
    out["precision"] = {
        lt["layer_type"]: {
            path: {k: v for k, v in p.items() if k != "curve"}
            for path, p in lt["precision"].items()
        }
        for lt in out["layer_types"]
    }
    out["distinguishability"] = {
        lt["layer_type"]: lt["distinguishability"] for lt in out["layer_types"]
    }
    out["layout"] = layout(config, entry, lts, context, cfg["t5_max_relative"])
    out["discontinuities"] = discontinuities(config, lts, context)
    return out
