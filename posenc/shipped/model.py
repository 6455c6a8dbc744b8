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
from posenc.shipped.reading import ModelError, _rope_dicts, build_config, stated_context


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


# Model types whose positions are a learned table of absolute positions 0…N−1.
LEARNED_ABSOLUTE = (
    "bert",
    "roberta",
    "xlm-roberta",
    "distilbert",
    "electra",
    "camembert",
    "gpt2",
    "gpt_neo",
    "gpt_bigcode",
    "opt",
    "bart",
    "mbart",
    "whisper",
    "biogpt",
    "xglm",
)


def default_context(entry: dict, text) -> tuple[int | None, str | None]:
    """The context measured when none is asked for: the advertised context where the file
    states one (``advertised_context``, a key posenc reads beside the config's own), else the
    config's ``max_position_embeddings``; with the key it came from."""
    for scope in (entry.get("text_config") or {}, entry):
        if isinstance(scope, dict) and scope.get("advertised_context"):
            return int(scope["advertised_context"]), "advertised_context"
    longest = getattr(text, "max_position_embeddings", None)
    if isinstance(longest, int) and not isinstance(longest, bool) and longest >= 1:
        return longest, "max_position_embeddings"
    return None, None


def scheme(entry: dict, text, lts: list, layout_: dict) -> dict:
    """Which positional scheme the model uses, in words, with what posenc measures of it."""
    if lts:
        kinds = sorted({lt.rope_type for lt in lts})
        return {"kind": "rotary", "words": f"rotary (RoPE; {', '.join(kinds)})"}
    if "alibi" in layout_:
        return {
            "kind": "alibi",
            "words": "ALiBi: a linear bias −m·distance per head, no rotary code",
        }
    if "t5" in layout_:
        return {
            "kind": "t5",
            "words": "T5 relative buckets: a learned scalar bias per head and distance bucket, "
            "no rotary code",
        }
    n = getattr(text, "max_position_embeddings", None)
    learned = entry["model_type"] in LEARNED_ABSOLUTE or (
        getattr(text, "position_embedding_type", None) == "absolute"
    )
    if learned and isinstance(n, int):
        return {
            "kind": "learned",
            "words": f"learned positions 0…{n - 1}: nothing to extrapolate past {n}",
            "positions": n,
        }
    return {
        "kind": "unknown",
        "words": f"no rotary code in transformers' {entry['model_type']} config, and no "
        "scheme posenc measures (ALiBi as BLOOM ships it, T5 buckets, learned positions)",
    }


def _per_context(config, lt: LayerType, context: int, cfg: dict) -> dict:
    """One layer type measured at one context: spectrum, precision per path, repeats."""
    omega, w32 = at_context(config, lt, context)
    positions = sample_positions(context, cfg["per_octave"], cfg["seed"])
    rows = precision_rows(positions, w32, omega, cfg["seed"])
    precision = {
        path: {
            "at_context": rs[-1]["max_angle_error"],
            "max": max(r["max_angle_error"] for r in rs),
            "first_past": first_past(rs, cfg["angle_rad"]),
            "relative_max": max(r["relative_error"] for r in rs),
            **(
                {
                    "product_part_at_context": rs[-1]["product_part"],
                    "inv_freq_part_at_context": rs[-1]["inv_freq_part"],
                    "inv_freq_part_wrapped_at_context": rs[-1]["inv_freq_part_wrapped"],
                }
                if path == "float32"
                else {}
            ),
            "curve": rs,
        }
        for path, rs in rows.items()
    }
    return {
        "context": context,
        "frequencies_at_context": "long factors"
        if lt.rope_type == "longrope" and context > lt.original
        else "as built",
        "spectrum": spectrum(lt, context, omega),
        "precision": precision,
        "distinguishability": distinguishability(
            w32, context, cfg["exact_max_positions"], positions, cfg["window"]
        ),
    }


def verdict(block: dict, threshold: float) -> dict[str, dict]:
    """Per path at one context: fails when an angle error at a sampled position up to the
    context passes ``threshold`` (rad) or a stored (cos, sin) row repeats an earlier one."""
    out = {}
    for path, p in block["precision"].items():
        d = block["distinguishability"][path]
        repeat = d["first_repeat"] if d["first_repeat"] is not None else d["sampled_first_repeat"]
        reasons = []
        if not p["max"] <= threshold:  # NaN fails too
            reasons.append("angle")
        if repeat is not None:
            reasons.append("repeat")
        out[path] = {
            "fails": bool(reasons),
            "reasons": reasons,
            "max_angle_error": p["max"],
            "first_past": p["first_past"],
            "first_repeat": repeat,
            "threshold": threshold,
        }
    return out


def measure(
    entry: dict,
    name: str,
    cfg: dict,
    where: str | None = None,
    contexts: list[int] | None = None,
) -> dict:
    """Everything the section and ``posenc model`` report for one config (model.json), at
    ``contexts`` (default: :func:`default_context`); the first is the one the top-level
    figures (``context``, ``precision``, ``distinguishability``) are at."""
    where = where or name
    config = build_config(entry, where)
    text = config.get_text_config()
    default, source = default_context(entry, text)
    if contexts:
        asked, source = list(dict.fromkeys(int(c) for c in contexts)), "--context"
    else:
        asked = [default] if default is not None else []
    lts, module, why = layer_types(config, where)
    if lts and not contexts and not stated_context(entry):
        raise ModelError(
            f"{where}: key max_position_embeddings missing: give the context to measure at "
            "with --context N (transformers' default would be a guess)"
        )
    if lts and (not asked or min(asked) < 2):
        raise ModelError(f"{where}: key max_position_embeddings missing (no context to measure)")
    context = asked[0] if asked else None
    out: dict[str, Any] = {
        "model": name,
        "model_type": entry["model_type"],
        "context": context,
        "contexts": asked,
        "context_source": source,
        "default_context": default,
        "transformers_module": None if module is None else type(module).__name__,
        "transformers_problem": why,
        "inv_freq": {},
        "attention_factor": {},
        "layer_types": [],
        "flags": [],
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
            if lt.transformers_factor is not None:
                row["factor_ulps"] = ulps(
                    np.array([lt.transformers_factor], float), np.array([lt.formula_factor])
                )
        if lt.posenc is not None:
            row["posenc_vs_formula_ulps"] = ulps(lt.posenc, lt.formula)
        if not np.all(np.isfinite(lt.formula)) or (
            lt.transformers is not None and not np.all(np.isfinite(lt.transformers))
        ):
            out["flags"].append(f"{lt.name}: an inverse frequency is not finite")
        blocks = [_per_context(config, lt, c, cfg) for c in asked]
        for block in blocks:
            block["verdict"] = verdict(block, cfg["angle_rad"])
        first = blocks[0]
        row["frequencies_at_context"] = first["frequencies_at_context"]
        row["spectrum"] = first["spectrum"]
        row["precision"] = first["precision"]
        row["distinguishability"] = first["distinguishability"]
        # The curves of the first context are in row["precision"]; the others' stay too (the
        # page's figure draws the longest), but not twice.
        row["by_context"] = [
            block
            if i
            else {k: v for k, v in block.items() if k != "precision"}
            | {
                "precision": {
                    p: {k: v for k, v in x.items() if k != "curve"}
                    for p, x in block["precision"].items()
                }
            }
            for i, block in enumerate(blocks)
        ]
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
    out["layout"] = layout(config, entry, lts, context or 1, cfg["t5_max_relative"])
    out["discontinuities"] = discontinuities(config, lts, context or 1)
    out["scheme"] = scheme(entry, text, lts, out["layout"])
    if out["scheme"]["kind"] == "learned" and contexts:
        n = out["scheme"]["positions"]
        out["flags"] += [
            f"--context {c} exceeds the {n} learned positions: positions {n}…{c - 1} have no vector"
            for c in asked
            if c > n
        ]
    stated_base = any(d.get("rope_theta") is not None for _, d in _rope_dicts(entry)) or any(
        scope.get(k) is not None
        for scope in (entry, entry.get("text_config") or {})
        for k in ("rope_theta", "rotary_emb_base")
    )
    if lts and not stated_base:
        out["flags"].append(
            "the file states no rope_theta: transformers' default base "
            f"{', '.join(str(lt.base) for lt in lts)} is measured"
        )
    for lt in lts:
        if lt.original > (getattr(text, "max_position_embeddings", 0) or 0) and isinstance(
            getattr(text, "max_position_embeddings", None), int
        ):
            out["flags"].append(
                f"{lt.name}: trained length {lt.original} exceeds max_position_embeddings "
                f"{text.max_position_embeddings}"
            )
        factor = lt.params.get("factor")
        if factor is not None and factor < 1 and lt.rope_type not in ("default",):
            out["flags"].append(
                f"{lt.name}: {lt.rope_type} factor {factor} is below 1: the scaling shrinks "
                "the context it claims to extend"
            )
    return out
