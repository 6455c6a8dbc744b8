"""What ``posenc model``'s page says beyond the numbers: a verdict per precision path in words,
advice each tied to a measured number, and the angle error against position as an inline SVG
figure (the report's series palette; no matplotlib, so a page costs milliseconds). Every number
the page shows is in model.json: the verdicts and advice are written there with their values."""

from __future__ import annotations

import math

from posenc.plotting import REFERENCE_COLORS, SERIES_PALETTE
from posenc.shipped.precision import PATHS

# Each path's look in the figure and its legend (colour, SVG dash pattern).
PATH_LOOK = {
    path: (SERIES_PALETTE[i], dash)
    for i, (path, dash) in enumerate(zip(PATHS, ("", "6 3", "2 2", "8 3 2 3")))
}
# What to do when a path fails, in the practitioner's terms.
REMEDY = {
    "float32": "nothing cheaper holds: compute the angles in float64, or position × inv_freq "
    "with the position split into high and low parts",
    "module_bf16": "keep the rotary module's inv_freq in float32 when casting the model "
    "to bfloat16",
    "positions_bf16": "keep position ids in float32 (or int64) up to the product",
    "storage_bf16": "keep the cos/sin cache in float32",
}


# A white outline under a label, so that it reads over the curves.
HALO = 'paint-order="stroke" stroke="#fff" stroke-width="3"'


def grey(level: str) -> str:
    """A matplotlib grey ("0.25": the share of white) as an SVG colour."""
    v = round(float(level) * 255)
    return f"#{v:02x}{v:02x}{v:02x}"


def rad(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g} rad"


def verdict_lines(m: dict) -> list[dict]:
    """One line per layer type, context and path: holds or fails, in words, with its numbers."""
    out = []
    for lt in m["layer_types"]:
        for block in lt["by_context"]:
            c = block["context"]
            for path, v in block["verdict"].items():
                if not v["fails"]:
                    words = (
                        f"holds to {c}: largest angle error {rad(v['max_angle_error'])} "
                        f"(threshold {rad(v['threshold'])}), no stored row repeats"
                    )
                else:
                    why = []
                    if "angle" in v["reasons"]:
                        why.append(
                            f"the angle error passes {rad(v['threshold'])} from position "
                            f"{v['first_past']} on (largest {rad(v['max_angle_error'])})"
                        )
                    if "repeat" in v["reasons"]:
                        why.append(f"stored rows repeat from position {v['first_repeat']} on")
                    words = f"fails at {c}: " + " and ".join(why) + f"; {REMEDY[path]}"
                out.append(
                    {
                        "layer_type": lt["layer_type"],
                        "context": c,
                        "path": path,
                        "fails": v["fails"],
                        "text": words,
                        # The page puts the verb in a badge: the rest of the sentence.
                        "detail": words.split(" ", 1)[1],
                    }
                )
    return out


def advice(m: dict) -> list[dict]:
    """What to do, each item tied to a measured number (``value``, with its unit)."""
    out = []

    def add(text, value, unit, layer_type=None):
        out.append({"text": text, "value": value, "unit": unit, "layer_type": layer_type})

    for lt in m["layer_types"]:
        name = lt["layer_type"] if len(m["layer_types"]) > 1 else None
        longest = max(lt["by_context"], key=lambda b: b["context"])
        c = longest["context"]
        d = longest["distinguishability"]
        v = longest["verdict"]
        rep = v["positions_bf16"]["first_repeat"]
        if rep is not None:
            add(
                f"keep positions in float32: in bfloat16, positions repeat from {rep} on",
                rep,
                "position",
                name,
            )
        if v["module_bf16"]["fails"]:
            add(
                "keep inv_freq in float32 when casting the model to bfloat16: rounded, its "
                f"angle error reaches {rad(v['module_bf16']['max_angle_error'])} by {c}",
                v["module_bf16"]["max_angle_error"],
                "rad",
                name,
            )
        s = v["storage_bf16"]
        add(
            f"a cos/sin cache stored in bfloat16 errs by up to {rad(s['max_angle_error'])} "
            + (
                "(past the threshold: keep it in float32)"
                if s["fails"]
                else "(within the threshold)"
            ),
            s["max_angle_error"],
            "rad",
            name,
        )
        f = v["float32"]
        if f["fails"]:
            add(
                f"even float32 fails by {c}: angle error {rad(f['max_angle_error'])}; "
                f"{REMEDY['float32']}",
                f["max_angle_error"],
                "rad",
                name,
            )
        else:
            add(
                f"float32, as transformers computes it, is enough to {c}: its angle error is at "
                f"most {rad(f['max_angle_error'])}",
                f["max_angle_error"],
                "rad",
                name,
            )
        sp = longest["spectrum"]
        L = sp["original_length"]
        if sp["critical_pairs"]:
            add(
                f"{sp['critical_pairs']} of {sp['pairs']} pairs turn less than once within the "
                f"trained length {L}"
                + (
                    f"; at {c}, {sp['critical_turning_within_context']} of them complete a turn, "
                    "meeting angles training never showed"
                    if sp["critical_turning_within_context"]
                    else f"; none of them completes a turn by {c}"
                ),
                sp["critical_pairs"],
                "pairs",
                name,
            )
        if c > L and lt["rope_type"] == "default":
            add(
                f"the context {c} is {c / L:.3g}× the trained length {L} with plain RoPE: no "
                "scaling covers the positions past it",
                c / L,
                "× trained length",
                name,
            )
        if d["float32"]["first_repeat"] is not None:
            add(
                f"in float32, stored rows repeat from position {d['float32']['first_repeat']}",
                d["float32"]["first_repeat"],
                "position",
                name,
            )
    for disc in m["discontinuities"]:
        if disc["kind"].startswith("longrope"):
            err = disc["cached_key_error"]
            wrapped = abs(err - 2 * math.pi * round(err / (2 * math.pi)))
            add(
                f"LongRoPE switches factors at {disc['at']}: keys cached with the short "
                f"factors are off by up to {err:.4g} rad unwrapped ({wrapped:.3g} rad wrapped "
                "to [0, π]) when read past it: recompute the cache at the switch",
                err,
                "rad",
                disc["layer_type"],
            )
    return out


def figure(m: dict, threshold: float) -> str | None:
    """The largest angle error against position, per path, log–log, each context marked: an
    SVG string (None when nothing rotates)."""
    if not m["layer_types"]:
        return None
    lt = m["layer_types"][0]
    longest = max(lt["by_context"], key=lambda b: b["context"])
    # The first context's curves live in the layer type's own precision (not twice).
    first = longest is lt["by_context"][0]
    curves = (lt["precision"] if first else longest["precision"]).items()
    width, height, left, right, top, bottom = 640, 300, 64, 16, 12, 44
    x_max = max(m["contexts"])
    lo, hi = -8.0, math.log10(math.pi)

    def x(p):
        return left + (width - left - right) * math.log10(max(p, 1)) / math.log10(max(x_max, 2))

    def y(e):
        v = min(max(math.log10(e) if e > 0 else lo, lo), hi)
        return top + (height - top - bottom) * (hi - v) / (hi - lo)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="largest angle error against position, per precision path">',
        f'<rect x="{left}" y="{top}" width="{width - left - right}" '
        f'height="{height - top - bottom}" fill="none" stroke="{grey(REFERENCE_COLORS[1])}"/>',
    ]
    for k in range(-8, 1, 2):
        yy = y(10.0**k)
        parts.append(
            f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11">1e{k}</text>'
        )
    for k in range(0, int(math.log10(max(x_max, 2))) + 1):
        xx = x(10**k)
        parts.append(
            f'<text x="{xx:.1f}" y="{height - bottom + 16}" text-anchor="middle" '
            f'font-size="11">1e{k}</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 6}" text-anchor="middle" '
        'font-size="12">position</text>'
        f'<text transform="translate(14 {(top + height - bottom) / 2}) rotate(-90)" '
        'text-anchor="middle" font-size="12">angle error (rad, wrapped to [0, π])</text>'
    )
    ty = y(threshold)
    parts.append(
        f'<line x1="{left}" x2="{width - right}" y1="{ty:.1f}" y2="{ty:.1f}" '
        f'stroke="{grey(REFERENCE_COLORS[0])}" stroke-width="1.4" stroke-dasharray="2 3"/>'
        f'<text x="{width - right - 4}" y="{ty - 4:.1f}" text-anchor="end" font-size="11" '
        f"{HALO}>threshold {threshold:g} rad</text>"
    )
    for c in m["contexts"]:
        xx = x(c - 1)
        parts.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top}" y2="{height - bottom}" '
            f'stroke="{grey(REFERENCE_COLORS[1])}" stroke-width="1.2" stroke-dasharray="6 3"/>'
            f'<text x="{xx - 3:.1f}" y="{height - bottom - 6}" text-anchor="end" '
            f'font-size="11" {HALO}>context {c}</text>'
        )
    for path, p in curves:
        colour, dash = PATH_LOOK[path]
        points = " ".join(
            f"{x(r['position']):.1f},{y(r['max_angle_error']):.1f}"
            for r in p["curve"]
            if r["position"] >= 1
        )
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.6"'
            + (f' stroke-dasharray="{dash}"' if dash else "")
            + "/>"
        )
    parts.append("</svg>")
    return "".join(parts)
