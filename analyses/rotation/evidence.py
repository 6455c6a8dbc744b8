"""The rotation analysis' evidence (what the claims read) and summary (what the section shows),
from its rows."""

from typing import Any

import torch

from posenc.analyses.rotation.hand_trace import printed_rounding
from posenc.analysis import Context
from posenc.device import dtype_from_name
from posenc.encodings import REGISTRY
from posenc.rounding import angle_dtype, eps


def _worst(rows: list[dict], key: str, group: tuple[str, ...], pick=max) -> dict:
    """``pick`` (max, or min) of ``key`` per value of the ``group`` columns, nested in that
    order."""
    out: dict = {}
    for r in rows:
        node = out
        for g in group[:-1]:
            node = node.setdefault(r[g], {})
        last = r[group[-1]]
        node[last] = pick(node.get(last, r[key]), r[key])
    return out


def evidence(result: dict, cfg: dict, groups: dict) -> dict[str, Any]:
    """The named values the claims read, and the context their ledger entries show beside
    them; encodings grouped by what they are."""
    fixed, relative_qk = groups["fixed_tables"], groups["relative_qk"]
    h = result["hand_trace"]
    u = printed_rounding(cfg["hand_trace"]["decimals"])
    # A group of heads of an encoding whose heads differ is named encoding+heads …
    shifts = [r for r in result["score_shift"] if r["encoding"].split("+")[0] in relative_qk]
    rope = [r for r in shifts if not r["naive"]]
    naive = [r for r in shifts if r["naive"]]
    last = max((r["shift"] for r in naive), default=None)
    full = [r for r in result["linear_map"] if r["encoding"] in fixed and r["training"] == "full"]
    learned = [r for r in result["linear_map"] if r["encoding"] in groups["learned_tables"]]
    naive_deviation: dict = {}
    for r in naive:
        if r["shift"] == last:
            label = f"{r['dtype']} with {r['angles']} angles, position {r['max_position']}"
            naive_deviation.setdefault(r["encoding"], {})[label] = r["max_deviation"]
    # Where the naive dtype no longer holds every integer: there its positions round.
    broken = [r for r in naive if r["past_exact_integers"]]
    return {
        "identity_over_bound": _worst(
            result["identity"], "error_over_tolerance", ("encoding", "dtype")
        ),
        "identity_max_error": _worst(result["identity"], "max_abs_error", ("encoding", "dtype")),
        # The hand trace: the table's row PE(p + k), the article's printed values and the two
        # rotations, with the rounding each may carry.
        "table_row": h["target"],
        "rotated_exact": h["rotated_exact"],
        "rotated_by_hand": h["rotated_by_hand"],
        "printed_cos_sin_rounded": [
            round(v, cfg["hand_trace"]["decimals"]) for v in h["cos_sin_first_pair"]
        ]
        == list(h["article_cos_sin"]),
        "printed_rounding": u,
        "by_hand_rounding": 4 * u,
        "two_eps_float64": 2 * eps(torch.float64),
        "shift_over_bound": _worst(rope, "deviation_over_tolerance", ("encoding", "dtype")),
        "shift_max_deviation": _worst(rope, "max_deviation", ("encoding", "dtype")),
        # The naive case against the same bound, at every shift past its exact integers: the
        # smallest ratio is checked, the largest and the deviation at the largest shift shown.
        "naive_over_bound": _worst(broken, "deviation_over_tolerance", ("encoding", "dtype"), min),
        "naive_largest_over_bound": _worst(
            broken, "deviation_over_tolerance", ("encoding", "dtype")
        ),
        "naive_angle_deviation": naive_deviation,
        "naive_dtypes": cfg["qk"]["naive_dtypes"],
        "naive_exact_integers": [
            f"{dt}: {2 / eps(dtype_from_name(dt)):g}" for dt in cfg["qk"]["naive_dtypes"]
        ],
        "offset_map_over_bound": _worst(full, "error_over_tolerance", ("encoding",)),
        "offset_map_max_error": _worst(full, "held_out_rel_error", ("encoding",)),
        "offset_map_max_w_error": _worst(full, "map_error", ("encoding",)),
        "learned_min_error": {
            e: min(r["held_out_rel_error"] for r in learned if r["encoding"] == e)
            for e in groups["learned_tables"]
            if any(r["encoding"] == e for r in learned)
        },
        # Named in the statements.
        "fixed_tables": fixed,
        "relative_qk": relative_qk,
        "trace_d": h["d"],
        "trace_omega": h["omega"],
        "trace_from": h["from_position"],
        "trace_offset": h["offset"],
        "trace_to": h["from_position"] + h["offset"],
        "printed_target": h["article_target"],
    }


def summarise(result: dict, cfg: dict, ctx: Context, groups: dict) -> dict[str, Any]:
    """What the section and the tables show besides the evidence."""
    identity = result["identity"]
    naive = [r for r in result["score_shift"] if r["naive"]]
    last = max((r["shift"] for r in naive), default=None)
    last_shift = max((r["shift"] for r in result["score_shift"]), default=None)
    th = cfg["thresholds"]
    return {
        **groups,
        # What the score-shift rows measure: each transform, or each group of its heads.
        "qk_measured": list(dict.fromkeys(r["encoding"] for r in result["score_shift"])),
        "hand_trace": result["hand_trace"],
        "naive_deviation": [
            {
                k: r[k]
                for k in (
                    "encoding",
                    "dtype",
                    "angles",
                    "max_position",
                    "max_deviation",
                    "tolerance",
                    "deviation_over_tolerance",
                )
            }
            for r in naive
            if r["shift"] == last
        ],
        "d_values": cfg["d_values"],
        "identity_figure_d": max(cfg["d_values"]),  # the width the identity figure shows
        "bases": cfg["bases"],
        "offsets": cfg["offsets"],
        "dtypes": cfg["dtypes"],
        "max_position": 2 ** cfg["max_log2_position"],
        "n_identity_checks": len(identity),
        "qk_head_dim": cfg["qk"]["head_dim"],
        "qk_n_vectors": cfg["qk"]["n_vectors"],
        "qk_n_pairs": cfg["qk"]["n_pairs"],
        # The base of each transform that declares one, as the config sets it; of each group
        # of heads where they differ, read off the heads' own frequencies.
        "qk_bases": {
            e: result["head_bases"].get(e, settings["base"])
            for e in groups["qk"]
            if "base" in (settings := REGISTRY[e].settings(ctx.encoding.get(e)))
        },
        "naive_exact_integers": {
            dt: 2 / eps(dtype_from_name(dt)) for dt in cfg["qk"]["naive_dtypes"]
        },
        # The careful cases at the largest shift, and the parts of the bound the prose names.
        "shift_largest": [
            {
                k: r[k]
                for k in (
                    "encoding",
                    "dtype",
                    "max_position",
                    "max_deviation",
                    "deviation_over_tolerance",
                )
            }
            for r in result["score_shift"]
            if not r["naive"] and r["shift"] == last_shift
        ],
        "bound_storage_term": {
            dt: th["rope_ulps"] * (eps(x) + eps(angle_dtype(x)))
            for dt, x in ((dt, dtype_from_name(dt)) for dt in cfg["dtypes"])
        },
        "naive_below_over_bound": _worst(
            [r for r in naive if not r["past_exact_integers"] and r["shift"]],
            "deviation_over_tolerance",
            ("encoding", "dtype"),
        ),
        "naive_angle_eps_ratio": {
            dt: eps(x) / eps(angle_dtype(x))
            for dt, x in ((dt, dtype_from_name(dt)) for dt in cfg["qk"]["naive_dtypes"])
        },
        "thresholds": cfg["thresholds"],
    }
