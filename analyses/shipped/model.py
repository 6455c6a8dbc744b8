"""One shipped config's positional code, measured with no weights: the shared core of the
``shipped`` section (every zoo model) and of ``posenc model`` (any config.json).

A config is read with transformers' own config class for its model type (offline), its text
rotary module is built from it, and each layer type's frequencies are held against
``posenc.rope_scaling`` and the float64 formula (``formula.py``). The precision paths start
from the module's own float32 ``inv_freq`` and reproduce its forward's product
``position_ids.float() * inv_freq.float()`` elementwise (the same float32 operation, so the same
bits; a test checks it against the forward's cos), which every rotary module in the zoo shares.

Bad input raises :class:`ModelError` with one line naming the key.
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from analyses.shipped import formula
from posenc.numerics import distinct_rows_many
from posenc.rope_scaling import rope_inv_freq, scaled_rope

# Keys a zoo file adds to a model's config.json.
ZOO_KEYS = ("source", "advertised_context", "confirmed", "notes")
# posenc's name for transformers' rope types ("default" is plain RoPE).
POSENC_METHOD = {
    "linear": "pi",
    "dynamic": "dynamic",
    "yarn": "yarn",
    "llama3": "llama3",
    "longrope": "longrope",
    "proportional": "proportional",
}
KNOWN_ROPE_TYPES = ("default", "mrope", *POSENC_METHOD)
# What each scaling type needs that transformers cannot infer.
REQUIRED = {
    "longrope": ("short_factor", "long_factor"),
    "llama3": ("factor",),
    "linear": ("factor",),
}
# The precision paths: how the angles (or the stored cos/sin) depart from float32.
PATHS = {
    "float32": "float32 angles, as transformers computes them",
    "module_bf16": "module cast to bfloat16 (inv_freq rounded)",
    "positions_bf16": "bfloat16 positions",
    "storage_bf16": "cos and sin stored in bfloat16",
}
FLOAT32_EPS = float(np.finfo(np.float32).eps)


class ModelError(ValueError):
    """Bad input: the message is the one line shown."""


# ----------------------------------------------------------------------------- reading


def read_config_file(path: Path) -> dict:
    """A config.json (or a folder holding one) as a dict; one-line errors naming the file."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ModelError(f"{path}: no such file")
    try:
        entry = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ModelError(f"{path}: not JSON ({error})") from None
    if not isinstance(entry, dict):
        raise ModelError(f"{path}: not a JSON object")
    return entry


def model_name(path: Path) -> str:
    """The config's folder name, or the file's stem when it is not named config.json."""
    path = Path(path)
    if path.is_dir():
        return path.resolve().name
    return path.resolve().parent.name if path.name == "config.json" else path.stem


def _rope_dicts(entry: dict) -> list[tuple[str, dict]]:
    """Every rope dict the file carries, with the key it sits under."""
    found = []
    for key in ("rope_scaling", "rope_parameters"):
        value = entry.get(key)
        if isinstance(value, dict):
            nested = all(isinstance(v, dict) for v in value.values()) and value
            for sub, d in value.items() if nested else [(None, value)]:
                found.append((f"{key}.{sub}" if sub else key, d))
    text = entry.get("text_config")
    if isinstance(text, dict):
        found += [(f"text_config.{k}", d) for k, d in _rope_dicts(text)]
    return found


def check_entry(entry: dict, where: str) -> None:
    """What transformers would accept silently or fail on obscurely: one line naming the key."""
    if "model_type" not in entry:
        raise ModelError(f"{where}: key model_type missing")
    for key, d in _rope_dicts(entry):
        kind = d.get("rope_type", d.get("type", "default"))
        if kind not in KNOWN_ROPE_TYPES:
            raise ModelError(
                f"{where}: key {key}.rope_type = {kind!r} is unknown; known: "
                f"{', '.join(KNOWN_ROPE_TYPES)}"
            )
        for needed in REQUIRED.get(kind, ()):
            if d.get(needed) is None:
                raise ModelError(f"{where}: key {key}.{needed} missing (rope_type {kind!r})")
        for name in ("short_factor", "long_factor"):
            if kind == "longrope" and not isinstance(d[name], list):
                raise ModelError(f"{where}: key {key}.{name} must be a list of numbers")
    for key in ("head_dim", "qk_rope_head_dim"):
        width = entry.get(key)
        if width is not None and (not isinstance(width, int) or width % 2 or width < 2):
            raise ModelError(f"{where}: key {key} = {width!r}: the rotated width must be even")


def build_config(entry: dict, where: str = "config"):
    """transformers' config object for the entry (zoo keys dropped), offline."""
    from transformers import AutoConfig

    check_entry(entry, where)
    fields = {k: v for k, v in entry.items() if k not in (*ZOO_KEYS, "model_type")}
    try:
        return AutoConfig.for_model(entry["model_type"], **fields)
    except ValueError as error:
        if "Unrecognized model identifier" in str(error) or "model_type" in str(error):
            raise ModelError(
                f"{where}: key model_type = {entry['model_type']!r} is not a model type "
                "transformers knows"
            ) from None
        raise ModelError(f"{where}: {str(error).splitlines()[0]}") from None
    except Exception as error:  # transformers' strict dataclass validation names the field
        raise ModelError(f"{where}: {str(error).splitlines()[0]}") from None


def rotary_class(config):
    """The text rotary embedding class of the config's model type (vision ones excluded)."""
    package = type(config).__module__.split(".")[-2]
    module = importlib.import_module(f"transformers.models.{package}.modeling_{package}")
    names = [n for n in dir(module) if n.endswith("RotaryEmbedding") and "Vision" not in n]
    return getattr(module, names[0]) if names else None


# ----------------------------------------------------------------------------- frequencies


@dataclass
class LayerType:
    """One layer type's rotary frequencies, three ways."""

    name: str
    rope_type: str
    base: float
    width: int  # rotated dims (for proportional, the full head)
    params: dict
    original: int  # the trained length L
    transformers: np.ndarray | None = None  # float32 buffer, as float64
    transformers_factor: float | None = None
    posenc: np.ndarray | None = None
    posenc_factor: float | None = None
    formula: np.ndarray | None = None
    formula_factor: float | None = None
    problems: list[str] = field(default_factory=list)


def ulps(a: np.ndarray, b: np.ndarray) -> float:
    """max |a − b| in float32 ulps of b (ulp(x) = 2^(⌊log2 |x|⌋ − 23)); 0 where both are 0."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    nonzero = b != 0
    spacing = np.where(nonzero, np.ldexp(1.0, np.frexp(np.where(nonzero, b, 1.0))[1] - 24), 1.0)
    gap = np.abs(a - b) / spacing
    return float(np.where(~nonzero & (a == 0), 0.0, gap).max())


def _head_width(text) -> int:
    if getattr(text, "qk_rope_head_dim", None):
        return int(text.qk_rope_head_dim)
    return getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads


def layer_types(config, where: str = "config") -> tuple[list[LayerType], Any, str | None]:
    """Each layer type's frequencies: transformers' module, posenc and the formula.
    Returns (layer types, the rotary module or None, why transformers built none). An odd
    rotated width raises a ModelError naming the key that makes it."""
    text = config.get_text_config()
    params = getattr(text, "rope_parameters", None)
    if not params:
        return [], None, None
    nested = all(isinstance(v, dict) for v in params.values())
    groups = dict(params) if nested else {"all layers": params}
    out, module, why = [], None, None
    cls = rotary_class(config)
    try:
        module = cls(text) if cls is not None else None
        if module is None:
            why = f"transformers has no rotary module for {config.model_type}"
    except Exception as error:
        why = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    head = _head_width(text)
    for name, p in groups.items():
        kind = "default" if p.get("rope_type") == "mrope" else p.get("rope_type", "default")
        partial = p.get("partial_rotary_factor", getattr(text, "partial_rotary_factor", 1.0))
        width = head if kind == "proportional" else int(head * (partial or 1.0))
        if width % 2 or width < 2:
            key = "head_dim" if width == head else "partial_rotary_factor (v4: rotary_pct)"
            raise ModelError(
                f"{where}: key {key}: the rotated width int({head} × {partial or 1.0}) = "
                f"{width} must be even (RoPE turns pairs)"
            )
        original = p.get("original_max_position_embeddings") or text.max_position_embeddings
        resolved = dict(p, original_max_position_embeddings=original)
        if kind in ("yarn", "longrope") and resolved.get("factor") is None:
            resolved["factor"] = text.max_position_embeddings / original
        lt = LayerType(name, kind, float(p["rope_theta"]), width, resolved, int(original))
        if module is not None:
            prefix = "" if not nested else f"{name}_"
            buffer = getattr(module, f"{prefix}inv_freq", None)
            lt.transformers = None if buffer is None else buffer.double().numpy()
            lt.transformers_factor = getattr(module, f"{prefix}attention_scaling", None)
        try:
            got = posenc_frequencies(lt)
            lt.posenc, lt.posenc_factor = np.array(got.inv_freq), got.attention_factor
        except ValueError as error:
            lt.problems.append(f"posenc: {error}")
        omega, factor = formula.inv_freq(kind, width, lt.base, resolved)
        lt.formula, lt.formula_factor = np.array(omega), factor
        out.append(lt)
    return out, module, why


def posenc_frequencies(lt: LayerType, length: int | None = None):
    """posenc.rope_scaling's float64 frequencies for the layer type (at ``length`` for the
    length-dependent types)."""
    p = lt.params
    if lt.rope_type == "default":
        from posenc.rope_scaling import ScaledRope

        return ScaledRope(rope_inv_freq(lt.width, lt.base))
    method = POSENC_METHOD[lt.rope_type]
    names = {
        "yarn": ("beta_fast", "beta_slow", "attention_factor", "truncate"),
        "llama3": ("low_freq_factor", "high_freq_factor"),
        "longrope": ("short_factor", "long_factor", "attention_factor"),
        "proportional": ("partial_rotary_factor",),
    }.get(method, ())
    chosen = {k: p[k] for k in names if p.get(k) is not None}
    if method == "yarn" and chosen.get("attention_factor") is None:
        s = float(p["factor"])
        if p.get("mscale") and p.get("mscale_all_dim"):  # DeepSeek's ratio of two mscales
            chosen["attention_factor"] = formula.mscale(s, p["mscale"]) / formula.mscale(
                s, p["mscale_all_dim"]
            )
    scale = float(p.get("factor") or 1.0)
    return scaled_rope(method, lt.width, lt.base, scale, lt.original, chosen, length=length)


# ----------------------------------------------------------------------------- precision


def sample_positions(context: int, per_octave: int, seed: int) -> torch.Tensor:
    """Positions in every octave [2^e, 2^(e+1)) below the context: both ends and
    ``per_octave`` uniform draws (the aliasing section's sampling), plus 0 and context − 1.
    Shape (n,), int64, sorted."""
    from analyses.aliasing.errors import error_positions

    generator = torch.Generator().manual_seed(seed)
    octaves = max(1, math.ceil(math.log2(context)))
    p = error_positions(octaves, per_octave, generator)
    p = torch.cat((torch.tensor([0, context - 1]), p[p < context]))
    return p.unique()


def path_angles(positions: torch.Tensor, inv_freq32: torch.Tensor, path: str) -> torch.Tensor:
    """The angles each path applies, in float64, from the module's float32 ``inv_freq``: the
    forward's own float32 product with the path's rounding. (n, pairs)."""
    if path == "module_bf16":
        inv_freq32 = inv_freq32.to(torch.bfloat16).float()
    p = positions.to(torch.bfloat16) if path == "positions_bf16" else positions
    theta = (p.float()[:, None] * inv_freq32[None, :]).double()
    if path == "storage_bf16":
        cos, sin = theta.float().cos(), theta.float().sin()
        cos, sin = cos.to(torch.bfloat16).double(), sin.to(torch.bfloat16).double()
        # The applied angle, read back; the wrap below takes it to the true angle's turn.
        theta = torch.atan2(sin, cos)
    return theta


def wrapped(delta: torch.Tensor) -> torch.Tensor:
    """delta reduced to (−π, π]: an angle error is one modulo a full turn."""
    return (delta - 2 * math.pi * torch.round(delta / (2 * math.pi))).abs()


def precision_rows(
    positions: torch.Tensor, inv_freq32: np.ndarray, omega64: np.ndarray, seed: int
) -> dict[str, list[dict]]:
    """Per path, per sampled position: the largest angle error against float64 p·ω, and the
    largest error of a relative angle θ(p) − θ(q) with q drawn uniformly in [0, p]. The float32
    path also splits its error into the product's rounding (against p times the module's own
    inv_freq in float64) and the inv_freq's (p times its distance from the formula)."""
    w32 = torch.tensor(inv_freq32, dtype=torch.float32)
    w64 = torch.tensor(omega64, dtype=torch.float64)
    generator = torch.Generator().manual_seed(seed)
    q = torch.rand(positions.shape, generator=generator, dtype=torch.float64) * (positions + 1)
    q = q.floor().long().clamp(max=positions)
    truth_p = positions.double()[:, None] * w64
    truth_q = q.double()[:, None] * w64
    out = {}
    for path in PATHS:
        got_p, got_q = path_angles(positions, w32, path), path_angles(q, w32, path)
        error = wrapped(got_p - truth_p).amax(-1)
        relative = wrapped((got_p - got_q) - (truth_p - truth_q)).amax(-1)
        rows = []
        for i, p in enumerate(positions.tolist()):
            rows.append(
                {
                    "position": p,
                    "max_angle_error": error[i].item(),
                    "relative_error": relative[i].item(),
                    "q": q[i].item(),
                }
            )
        if path == "float32":
            exact_product = positions.double()[:, None] * w32.double()
            product = wrapped(got_p - exact_product).amax(-1)
            inv = (positions.double()[:, None] * (w32.double() - w64).abs()).amax(-1)
            for i, row in enumerate(rows):
                row["product_part"] = product[i].item()
                row["inv_freq_part"] = inv[i].item()
        out[path] = rows
    return out


def first_past(rows: list[dict], threshold: float) -> int | None:
    return next((r["position"] for r in rows if r["max_angle_error"] > threshold), None)


def stored_rows(path: str, inv_freq32: torch.Tensor):
    """The row each path stores for a position: (cos θ, sin θ) in its dtype. (c, 2·pairs)."""

    def rows(index: torch.Tensor) -> torch.Tensor:
        theta = path_angles(index, inv_freq32, "float32" if path == "storage_bf16" else path)
        cs = torch.cat((theta.float().cos(), theta.float().sin()), -1)
        return cs.to(torch.bfloat16) if path == "storage_bf16" else cs

    return rows


def distinguishability(
    inv_freq32: np.ndarray, context: int, exact_max: int, sampled: torch.Tensor, window: int
) -> dict[str, dict]:
    """Per path, the first position whose stored (cos, sin) row equals an earlier one's: exact
    up to min(context, exact_max) (the aliasing section's chunked hash scan, O(L·d) time and
    memory bounded by its chunks); beyond, at the sampled positions, each against the
    ``window`` positions before it, and stated as sampled."""
    w32 = torch.tensor(inv_freq32, dtype=torch.float32)
    n = min(context, exact_max)
    fns = [stored_rows(path, w32) for path in PATHS]
    scans = distinct_rows_many(lambda idx: [f(idx) for f in fns], len(fns), n)
    out = {}
    for path, fn, scan in zip(PATHS, fns, scans):
        entry = {
            "exact_up_to": n,
            "first_repeat": scan.first_repeat if scan.first_repeat >= 0 else None,
            "first_repeat_of": scan.first_repeat_of if scan.first_repeat >= 0 else None,
            "distinct_fraction": scan.n_distinct / n,
            "sampled_beyond": None,
            "sampled_first_repeat": None,
        }
        beyond = sampled[sampled >= n]
        if entry["first_repeat"] is None and beyond.numel():
            entry["sampled_beyond"] = int(beyond.numel())
            index = (beyond[:, None] - torch.arange(window, -1, -1)).clamp(min=0)  # (m, w + 1)
            rows = fn(index.reshape(-1)).reshape(*index.shape, -1)
            hit = (rows[:, :-1] == rows[:, -1:]).all(-1).any(-1)  # (m,)
            if bool(hit.any()):
                entry["sampled_first_repeat"] = int(beyond[hit.nonzero()[0, 0]])
        out[path] = entry
    return out


# ----------------------------------------------------------------------------- spectrum


def spectrum(lt: LayerType, context: int, scaled: np.ndarray) -> dict:
    """Each pair's wavelength 2π/ω against the trained length L and the advertised context.

    Critical pairs (Liu et al. 2023, "Scaling Laws of RoPE-based Extrapolation"): those that
    complete no full turn within L before scaling, λ_i > L; their count is d/2 minus
    ⌈(d/2)·log_base(L/2π)⌉, the paper's critical dimension d_extra = 2⌈(d/2) log_base(L/2π)⌉
    over two. Scaling moved a pair when its ω changed; a critical pair that now turns within
    the context meets angles it never saw in training. ``scaled``: the frequencies in use at
    the context (LongRoPE's long factors)."""
    plain = np.array(formula.plain(lt.width, lt.base))
    with np.errstate(divide="ignore"):
        wavelength = np.where(scaled > 0, 2 * np.pi / np.where(scaled > 0, scaled, 1), np.inf)
    plain_wavelength = 2 * np.pi / plain
    critical = plain_wavelength > lt.original
    moved = np.abs(scaled - plain) > 1e-12 * plain
    d_extra = 2 * math.ceil(lt.width / 2 * math.log(lt.original / (2 * math.pi), lt.base))
    return {
        "pairs": len(plain),
        "wavelength": [float(w) if math.isfinite(w) else None for w in wavelength],
        "original_length": lt.original,
        "context": context,
        "critical_pairs": int(critical.sum()),
        "liu_critical_dimension": d_extra,
        "first_critical_pair": int(np.argmax(critical)) if critical.any() else None,
        "moved_pairs": int(moved.sum()),
        "critical_moved": int((critical & moved).sum()),
        "critical_turning_within_context": int((critical & (wavelength <= context)).sum()),
        "pairs_turning_within_context": int((wavelength <= context).sum()),
        "longest_wavelength": float(wavelength[np.isfinite(wavelength)].max()),
    }


# ----------------------------------------------------------------------------- layouts


def layout(config, entry: dict, lts: list[LayerType], context: int, t5_max: int) -> dict:
    """What is not one RoPE: NoPE layers, per-type bases, M-RoPE sections, Llama 4's query
    temperature, ALiBi slopes, T5 buckets."""
    text = config.get_text_config()
    n_layers = getattr(text, "num_hidden_layers", None)
    out: dict[str, Any] = {"layers": n_layers}
    no_rope = getattr(text, "no_rope_layers", None)
    if no_rope:  # transformers: 1 = this layer rotates, 0 = NoPE
        out["nope_layers"] = [i for i, r in enumerate(no_rope) if not r]
    kinds = getattr(text, "layer_types", None)
    if kinds:
        out["layer_types"] = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    out["bases"] = {lt.name: {"base": lt.base, "rope_type": lt.rope_type} for lt in lts}
    rope = getattr(text, "rope_parameters", None) or {}
    section = rope.get("mrope_section") if isinstance(rope, dict) else None
    if section and lts:
        # Qwen2-VL: one spectrum over the head; pair chunks take t, h, w positions in turn.
        bounds = np.cumsum([0, *section])
        w = lts[0].formula
        out["mrope"] = [
            {
                "stream": stream,
                "pairs": f"{bounds[i]}–{bounds[i + 1] - 1}",
                "fastest": float(w[bounds[i]]),
                "slowest": float(w[bounds[i + 1] - 1]),
            }
            for i, stream in enumerate(("t", "h", "w"))
        ]
    if getattr(text, "attn_temperature_tuning", False):
        floor, a = float(text.floor_scale), float(text.attn_scale)

        def temperature(p):  # Llama 4, NoPE layers: q·(1 + a·ln(⌊(p + 1)/floor⌋ + 1))
            return 1 + a * math.log(math.floor((p + 1) / floor) + 1)

        out["temperature"] = {
            "floor_scale": floor,
            "attn_scale": a,
            "first_step": int(floor) - 1,
            "at_context": temperature(context - 1),
            "steps_within_context": math.floor(context / floor),
        }
    if entry["model_type"] == "bloom":
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor

        from posenc.encodings import alibi_slopes

        heads = text.n_head
        ours = alibi_slopes(heads).numpy()
        theirs = (
            build_alibi_tensor(torch.ones(1, 2), heads, torch.float32)[:, 0, 1].double().numpy()
        )
        out["alibi"] = {
            "heads": heads,
            "slopes": ours.tolist(),
            "transformers_ulps": ulps(theirs, ours),
        }
    if entry["model_type"] == "t5":
        from transformers.models.t5.modeling_t5 import T5Attention

        from posenc.encodings import t5_relative_bucket

        nb, md = text.relative_attention_num_buckets, text.relative_attention_max_distance
        rel = torch.arange(-t5_max, t5_max + 1)
        ours = t5_relative_bucket(rel, True, nb, md)
        theirs = T5Attention._relative_position_bucket(rel, True, nb, md)
        firsts = {}
        for r, b in zip(rel.tolist(), ours.tolist()):
            if r >= 0:
                firsts.setdefault(b, r)
        out["t5"] = {
            "num_buckets": nb,
            "max_distance": md,
            "bucket_starts": list(firsts.values()),
            "transformers_mismatches": int((ours != theirs).sum()),
            "checked_within": t5_max,
        }
    return out


# ----------------------------------------------------------------------------- discontinuities


def discontinuities(config, lts: list[LayerType], context: int) -> list[dict]:
    """The jumps a shipped config carries: LongRoPE's factor switch at L (each frequency's jump,
    and the angle error of keys cached before it), llama3's empty band, and YaRN's truncate."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    out = []
    for lt in lts:
        if lt.rope_type == "longrope":
            long_omega, _ = formula.inv_freq(
                "longrope", lt.width, lt.base, lt.params, lt.original + 1
            )
            long_omega = np.array(long_omega)
            jump = long_omega / lt.formula
            cached = float(((lt.original - 1) * np.abs(long_omega - lt.formula)).max())
            text = config.get_text_config()
            tf_long = ROPE_INIT_FUNCTIONS["longrope"](text, None, seq_len=lt.original + 1)[0]
            out.append(
                {
                    "layer_type": lt.name,
                    "kind": "longrope switch at L",
                    "at": lt.original,
                    "largest_jump": float(jump.min()),
                    "smallest_jump": float(jump.max()),
                    "cached_key_error": cached,
                    "transformers_long_ulps": ulps(tf_long.double().numpy(), long_omega),
                    "note": "keys cached up to L with the short factors, read at L + 1 with the "
                    "long ones; transformers recomputes the cache, llama.cpp picks by n_ctx",
                }
            )
        if lt.rope_type == "llama3" and lt.params.get("low_freq_factor") == lt.params.get(
            "high_freq_factor"
        ):
            finite = lt.transformers is not None and bool(np.isfinite(lt.transformers).all())
            out.append(
                {
                    "layer_type": lt.name,
                    "kind": "llama3 with low_freq_factor = high_freq_factor",
                    "at": lt.original,
                    "transformers_finite": finite,
                    "transformers_vs_step_ulps": None
                    if lt.transformers is None
                    else ulps(lt.transformers, lt.formula),
                    "note": "empty band: a step at wavelength L; Meta's code asserts low != high, "
                    "transformers discards the 0/0 with torch.where",
                }
            )
        if lt.rope_type == "yarn":
            flip = dict(lt.params, truncate=not (lt.params.get("truncate", True) is not False))
            other, _ = formula.inv_freq("yarn", lt.width, lt.base, flip)
            other = np.array(other)
            args = (
                lt.width,
                lt.base,
                lt.original,
                lt.params.get("beta_fast") or 32.0,
                lt.params.get("beta_slow") or 1.0,
            )
            out.append(
                {
                    "layer_type": lt.name,
                    "kind": "yarn truncate true vs false",
                    "shipped_truncate": lt.params.get("truncate", True) is not False,
                    "bounds_truncated": list(formula.yarn_bounds(*args, True)),
                    "bounds_untruncated": [round(b, 4) for b in formula.yarn_bounds(*args, False)],
                    "max_relative_difference": float(
                        (np.abs(other - lt.formula) / lt.formula).max()
                    ),
                    "angle_difference_at_context": float(
                        ((context - 1) * np.abs(other - lt.formula)).max()
                    ),
                }
            )
        if lt.rope_type == "dynamic":
            out.append(
                {
                    "layer_type": lt.name,
                    "kind": "dynamic NTK ratchet",
                    "note": "transformers keeps the longest length's base until a call below L",
                }
            )
    return out


# ----------------------------------------------------------------------------- one model


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
