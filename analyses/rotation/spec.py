"""Shifts are rotations: the rotation identity of sinusoidal tables, the article's hand trace,
the relative-only scores of rotary encodings and least-squares offset maps, in every dtype.
Torch-free: read by the workflow at parse time."""

from posenc.analysis import AnalysisSpec, CardColumn, Figure, Resources, Table
from posenc.claims import Check, Claim


def check_hand_trace(config: dict) -> list[str]:
    """The rotated position is a row of the table shown, and the article prints all of it."""
    rot = config.get("rotation")
    if not rot:
        return []
    problems = []
    hand = rot["hand_trace"]
    if hand["from_position"] + hand["offset"] >= hand["n_positions"]:
        problems.append(
            f"config key rotation.hand_trace.from_position = {hand['from_position']}: plus "
            f"offset = {hand['offset']} must be < rotation.hand_trace.n_positions = "
            f"{hand['n_positions']} (the rotated position is a row of the table shown)"
        )
    if len(hand["article_target"]) != hand["d"]:
        problems.append(
            f"config key rotation.hand_trace.article_target = {hand['article_target']}: needs "
            f"rotation.hand_trace.d = {hand['d']} values"
        )
    return problems


def check_linear_map(config: dict) -> list[str]:
    """Enough training positions to determine a d × d map."""
    rot = config.get("rotation")
    if not rot:
        return []
    widest = max(rot["d_values"])
    if rot["linear_map"]["n_train"] < widest:
        return [
            f"config key rotation.linear_map.n_train = {rot['linear_map']['n_train']}: must be "
            f">= the widest rotation.d_values = {widest}, or the least-squares map of "
            "PE(p) -> PE(p+k) is not determined"
        ]
    return []


def encoding_shapes(config: dict) -> dict[str, tuple[int, int]]:
    """Tables are built at the table widths, the widest of which stands for them, and query/key
    transforms as one head of the score-shift test's width, and among ``qk.n_heads`` such heads
    (where their heads differ)."""
    cfg = config["rotation"]
    widest, head, h = max(cfg["d_values"]), cfg["qk"]["head_dim"], cfg["qk"]["n_heads"]
    return {
        f"rotation.d_values (largest) = {widest}": (widest, 1),
        f"rotation.qk.head_dim = {head}": (head, 1),
        f"rotation.qk.head_dim = {head}, rotation.qk.n_heads = {h}": (head * h, h),
    }


SPEC = AnalysisSpec(
    id="rotation",
    title="Shifts are rotations",
    csvs=("identity", "score_shift", "linear_map"),
    figures={
        "identity": Figure(
            "Largest error of R(k) PE(p) = PE(p + k) over the offsets {offsets} at each sampled "
            "position (d = {identity_figure_d}), per fixed table (solid) and dtype "
            "(columns), with the rounding bound (dashed). Angles are computed in float32 or "
            "wider, so the float32 and bfloat16 errors grow with p once the angle rounding "
            "dominates; exact zeros sit at the bottom."
        ),
        "score_shift": Figure(
            "Encodings that transform queries and keys: (a) largest change of "
            "⟨T(p)q, T(p')k⟩ / ‖q‖‖k‖ when both positions move by the same shift, over "
            "{qk_n_vectors} random (q, k) and {qk_n_pairs} position pairs, against the "
            "largest absolute position; (b) the largest ratio of that change to its rounding "
            "bound, the one the registry's angles (float32 or wider) guarantee in that storage "
            "dtype, with the claims' limit (grey). Dotted: positions and angles computed in "
            "the storage dtype too, held to the same bound; it is crossed once the positions "
            "pass the dtype's exact integers (vertical line)."
        ),
    },
    tables={
        "hand_trace": Table(
            "The article's hand trace: PE(p) for d = {cfg[hand_trace][d]}, base "
            "{cfg[hand_trace][base]:g}, and PE({cfg[hand_trace][from_position]}) rotated by "
            "k = {cfg[hand_trace][offset]}, exactly and with every input rounded to "
            "{cfg[hand_trace][decimals]} decimals as the article does."
        ),
        "identity": Table(
            "R(k) PE(p) = PE(p + k): largest error over every position and offset, and the "
            "largest ratio to the rounding bound, per fixed table.",
            csv="identity",
            placement="appendix",
        ),
        "score_shift": Table(
            "Score change under a common shift of both positions, per encoding that "
            "transforms queries and keys: at the smallest and the largest shift, and its "
            "ratio to the rounding bound of the registry's angles for that storage dtype "
            "(the same bound for the naive angles): the largest over every shift, and the "
            "smallest over the shifts that pass the dtype's exact integers.",
            csv="score_shift",
            placement="appendix",
        ),
        "linear_map": Table(
            "Least-squares maps PE(p) → PE(p + k): condition number of the training rows, "
            "held-out relative error, its bound, and the distance to the exact M(k)ᵀ. Training "
            "spans 2π/Δω positions (every frequency resolved); 'short' sees a fraction of that "
            "span; learned tables have no frequencies and no bound.",
            csv="linear_map",
            placement="appendix",
        ),
    },
    claims=(
        Claim(
            "rotation.sinusoidal_identity",
            "Shifting a fixed sinusoidal table ({fixed_tables}) by k rotates each frequency "
            "pair by a 2×2 matrix R_i(k) that depends on k only: R(k) PE(p) = PE(p + k) for "
            "every p, k, d and base tried, up to rounding.",
            kind="identity",
            checks=(
                Check(
                    "identity_over_bound",
                    "<=",
                    "max_over_bound",
                    label="largest error / rounding bound ulps·(eps + eps_angles) + "
                    "2(p + k)·eps_angles, per dtype,",
                ),
            ),
            references=("vaswani2017", "seed_article"),
            shows=("identity_max_error",),
        ),
        Claim(
            "rotation.hand_trace",
            "The article's hand trace (d = {trace_d}, ω = {trace_omega}): rotating "
            "PE({trace_from}) by k = {trace_offset} gives PE({trace_to}) = ({printed_target}) "
            "up to rounding.",
            # Printed values are off by up to half a unit of their last decimal (the printed
            # rounding); the by-hand rotation multiplies four such inputs.
            kind="identity",
            checks=(
                Check(
                    "table_row",
                    "within",
                    "max_over_bound",
                    label="PE(p + k) from the formula",
                    of="printed_target",
                    scale="printed_rounding",
                ),
                Check(
                    "printed_cos_sin_rounded",
                    value=True,
                    label="printed cos kω_0, sin kω_0 are the exact ones rounded to the printed "
                    "decimals",
                ),
                Check(
                    "rotated_exact",
                    "within",
                    "identity_ulps",
                    label="exact rotation R(k) PE(p)",
                    of="table_row",
                    scale="two_eps_float64",
                ),
                Check(
                    "rotated_by_hand",
                    "within",
                    "max_over_bound",
                    label="rotation with every input rounded to the printed decimals",
                    of="table_row",
                    scale="by_hand_rounding",
                ),
            ),
            references=("seed_article",),
        ),
        Claim(
            "rotation.rope_relative_only",
            "Attention scores of the relative encodings that rotate queries and keys "
            "({relative_qk}) depend on the offset only: ⟨R(p)q, R(p')k⟩ equals the score at "
            "(p + s, p' + s) for every shift s, up to rounding that grows with the absolute "
            "position.",
            kind="identity",
            checks=(
                Check(
                    "shift_over_bound",
                    "<=",
                    "max_over_bound",
                    label="largest deviation / rounding bound Σ_c w_c (ulps·(eps + "
                    "eps_angles) + angle_ulps·eps_angles·Θ_c) + d·eps64 (w_c: pair c's share "
                    "of ‖q‖‖k‖ times the transform's gains on it, Θ_c: its four angles but "
                    "those computed exactly), per dtype with the registry's angles (float32 or "
                    "wider),",
                ),
            ),
            references=("su2021",),
            shows=("shift_max_deviation",),
        ),
        Claim(
            "rotation.rope_naive_bf16_breaks_relative",
            "Positions and angles computed in the storage dtype itself ({naive_dtypes}), as "
            "code that builds positions in the input's dtype does, break the relative-only "
            "scores: at every shift s from the dtype's last exact integer on "
            "({naive_exact_integers}), the score change exceeds the same rounding bound that "
            "the registry's float32 angles meet in that storage dtype.",
            kind="software",
            checks=(
                Check(
                    "naive_over_bound",
                    ">",
                    "max_over_bound",
                    label="smallest over those shifts of the largest deviation / the same "
                    "rounding bound, per dtype,",
                ),
            ),
            references=("su2021",),
            shows=("naive_largest_over_bound", "naive_angle_deviation"),
        ),
        Claim(
            "rotation.linear_offset_map",
            "For each offset k a linear map PE(p) → PE(p + k) exists for the fixed sinusoidal "
            "tables ({fixed_tables}): fitted by least squares over positions that resolve "
            "every frequency, it is exact on held-out positions. That such a map exists is "
            "what is tested; whether a projection learns it in training is not.",
            kind="identity",
            checks=(
                Check(
                    "offset_map_over_bound",
                    "<=",
                    "max_over_bound",
                    label="largest held-out relative error / bound ulps·eps·(1 + P + k) when "
                    "training spans 2π/Δω, enough to resolve every frequency,",
                ),
            ),
            references=("seed_article", "vaswani2017"),
            shows=("offset_map_max_error", "offset_map_max_w_error", "learned_min_error"),
        ),
    ),
    references=("vaswani2017", "su2021", "seed_article"),
    resources=Resources(threads=1, mem_mb=1000, runtime=10),
    checks=(check_hand_trace, check_linear_map),
    encoding_shapes=encoding_shapes,
    card=(
        CardColumn(
            "linear offset map",
            ("offset_map_over_bound", "learned_min_error"),
            claim="rotation.linear_offset_map",
            note="a least-squares map PE(p) → PE(p + k) on held-out positions: for fixed "
            "tables, the largest error over its rounding bound (≤ 1: the map exists); for a "
            "learned table, the smallest relative error (no map)",
            units=(("offset_map_over_bound", "× bound", 1), ("learned_min_error", "%", 100)),
        ),
    ),
)
