"""Up to which length positions keep distinguishable encodings: exact arithmetic (an O(L·d)
offset scan), naive and careful floating point, decoding, learned tables. Torch-free: read by
the workflow at parse time."""

from posenc.analysis import AnalysisSpec, CardColumn, Figure, Resources, Table
from posenc.claims import Check, Claim


def check_lengths(config: dict) -> list[str]:
    """Cross-field rules of the aliasing section (the schema checks each field alone): a range
    of lengths, and two octaves of positions above the angle-error fit's start."""
    ali = config.get("aliasing")
    if not ali:
        return []
    problems = []
    if ali["min_log2_len"] >= ali["max_log2_len"]:
        problems.append(
            f"config key aliasing.min_log2_len = {ali['min_log2_len']}: must be < "
            f"aliasing.max_log2_len = {ali['max_log2_len']}"
        )
    fit_min = ali["thresholds"]["angle_fit_min_position"]
    if 2 * fit_min >= 2 ** ali["max_log2_len"]:
        problems.append(
            f"config key aliasing.thresholds.angle_fit_min_position = {fit_min}: leaves fewer "
            f"than two octaves below 2^aliasing.max_log2_len to fit a slope"
        )
    return problems


def check_bases(config: dict, encodings: dict) -> list[str]:
    """``aliasing.bases`` names encodings that have a base (registered, plugins included:
    ``encodings`` is the registry's metadata)."""
    ali = config.get("aliasing")
    if not ali or not ali.get("bases"):
        return []
    return [
        f"config key aliasing.bases.{name}: not an encoding with a base (those with one: "
        f"{', '.join(e for e, m in encodings.items() if 'base' in _settings(m))})"
        for name in ali["bases"]
        if name not in encodings or "base" not in _settings(encodings[name])
    ]


def _settings(meta: dict) -> dict:
    return (meta.get("params") or {}).get("properties", {})


def encoding_shapes(config: dict) -> dict[str, tuple[int, int]]:
    """Every encoding is built at the table width; one acting on queries and keys as one head
    of ``rope_head_dim``, and among ``n_heads`` such heads (where its heads differ)."""
    cfg = config["aliasing"]
    d, head, h = cfg["d_model"], cfg["rope_head_dim"], cfg["n_heads"]
    return {
        f"aliasing.d_model = {d}": (d, 1),
        f"aliasing.rope_head_dim = {head}": (head, 1),
        f"aliasing.rope_head_dim = {head}, aliasing.n_heads = {h}": (head * h, h),
    }


SPEC = AnalysisSpec(
    id="aliasing",
    title="Aliasing at large L",
    csvs=("min_distance", "distinct", "distinct_curve", "errors", "decode"),
    figures={
        "min_distance": Figure(
            "Exact minimum distance between the sinusoidal encodings of two positions below L, "
            "from the O(L·d) offset scan, for d in {d_values} and each base. Flat lines: the "
            "closest pair is a pair of neighbours; drops: two distant positions come close "
            "(near-collisions)."
        ),
        "spectra": Figure(
            "The frequencies of every table of angles, side by side: ω_i of each pair of the "
            "vector it encodes (a head of {rope_head_dim}, or d_model), log scale; a cross at "
            "the bottom marks a pair that never turns (outside the rotated width, or kept "
            "still).",
            placement="appendix",
        ),
        "distinct": Figure(
            "Distinct encodings among positions 0..L−1 as a fraction of L (exact count), one "
            "panel per table of angles (width and base in its title). Solid: naive (positions "
            "and angles in the dtype); dashed: float32 angles, cast at the end; dotted: float64 "
            "angles, cast at the end."
        ),
        "errors": Figure(
            "Left: largest angle error against float64 at each sampled position, for angles "
            "computed in each dtype (one line style and marker per table); "
            "{error_samples_per_octave} random positions per octave. Other panels: largest "
            "error of the encoding itself, one panel per table and a line per way of computing "
            "(line styles as in the distinct-count figure). Exact zeros are drawn at the bottom "
            "of the axis; non-finite errors (float16 positions past its largest value) are "
            "left out."
        ),
        "decode": Figure(
            "Fraction of {decode_samples} random positions below L whose encoding, computed "
            "each way, has its own exact (float64) encoding as nearest neighbour among the "
            "first L; one panel per table.",
            placement="appendix",
        ),
    },
    tables={
        "min_distance": Table(
            "Exact minimum distance between the sinusoidal encodings of two positions below "
            "L = {max_len}, the offset where it occurs, the distance of neighbours, and the "
            "brute-force check over all pairs at the check length.",
            csv="min_distance",
            placement="appendix",
        ),
        "far_pairs": Table(
            "d = {d_model}: the closest pair among positions at least 2 apart, against the "
            "distance of neighbours.",
            csv="min_distance",
        ),
        "floating_point": Table(
            "L = {max_len} positions in floating point: distinct rows (exact count), the first "
            "position repeating an earlier one (and which), the first non-finite row, the "
            "largest error against float64 (—: non-finite), and the decoding accuracy at L.",
            csv="distinct",
            placement="appendix",
        ),
        "learned": Table(
            "Each configured learned table asked for one position past its last row.",
            placement="appendix",
        ),
    },
    claims=(
        Claim(
            "aliasing.exact_min_distance",
            "In exact arithmetic, d = {d_model} sinusoidal encodings of L = {length} positions "
            "stay apart: no two positions come closer than neighbours do, for every base; the "
            "O(L·d) offset scan that shows it agrees with brute force over all pairs.",
            kind="identity",
            checks=(
                Check(
                    "far_to_adjacent",
                    ">=",
                    "min_far_to_adjacent",
                    label="closest pair at offset ≥ 2 over the distance of neighbours",
                ),
                Check(
                    "scan_vs_brute_force",
                    "<=",
                    "scan_rtol",
                    label="offset scan against brute force at the check length (largest "
                    "relative difference)",
                ),
            ),
            references=("seed_article",),
            shows=("adjacent_distance",),
        ),
        Claim(
            "aliasing.low_precision_collapse",
            "Computed naively in bfloat16 or float16 (positions and angles in that dtype), "
            "most of L = {length} positions share their encoding with another: a position "
            "stops being representable at 2^t + 1 (t = significand bits), and from there on "
            "positions merge.",
            kind="software",
            checks=(
                Check(
                    "collapse_distinct_fraction",
                    "<=",
                    "collapse_max_distinct_fraction",
                    label="distinct fraction",
                ),
                Check(
                    "collapse_repeats_by_bound",
                    value=True,
                    label="first repeat at or before 2^t + 1",
                ),
            ),
            references=("lucidrains_rotary", "ieee754_2019"),
            shows=("collapse_first_repeat",),
        ),
        Claim(
            "aliasing.fp16_overflow",
            "A position above the largest float16 becomes inf when cast to float16 (from the "
            "first integer that rounds up to 2^16), so its angles are inf and its sin/cos NaN: "
            "every encoding from there on is NaN.",
            kind="software",
            checks=(
                Check(
                    "fp16_first_nonfinite",
                    ">",
                    "fp16_max_position",
                    label="first non-finite position",
                ),
                Check(
                    "fp16_overflow_where_float16_overflows",
                    value=True,
                    label="it is the first integer float16 rounds to infinity",
                ),
                Check(
                    "fp16_nonfinite_onwards",
                    value=True,
                    label="every later position non-finite",
                ),
            ),
            references=("ieee754_2019",),
            shows=("fp16_nonfinite_rows",),
        ),
        Claim(
            "aliasing.fp32_angle_error_growth",
            "Angles p·ω_i computed in float32 err by up to eps·p·ω_i, so the angle error grows "
            "linearly with the position: the log-log slope of the largest error per octave "
            "is 1.",
            kind="empirical",
            checks=(
                Check(
                    "fp32_angle_slope",
                    "within",
                    "angle_error_slope_tol",
                    of="angle_error_slope",
                    label="log-log slope of the largest error per octave (from "
                    "angle_fit_min_position on)",
                ),
                Check(
                    "fp32_angle_within_bound",
                    value=True,
                    label="every error within the rounding bound eps·θ",
                ),
            ),
            references=("higham2002",),
            shows=("fp32_angle_max_error", "fp32_angle_error_over_bound"),
        ),
        Claim(
            "aliasing.careful_computation_fix",
            "Computing positions and angles in float32 or float64 and casting only the final "
            "sin/cos to the low dtype keeps all L = {length} encodings of every such careful "
            "variant distinct, finite and decodable; and for the variants with float64 angles "
            "the largest absolute error of a stored value is at most careful_error_ulps "
            "machine epsilons of the stored dtype (a bound on the error, not a test that each "
            "value is the correctly rounded one).",
            kind="software",
            checks=(
                Check(
                    "careful_distinct_fraction",
                    ">=",
                    "careful_min_distinct_fraction",
                    label="smallest distinct fraction of a careful variant",
                ),
                Check("careful_all_finite", value=True, label="every careful row finite"),
                Check(
                    "careful_decode_accuracy",
                    ">=",
                    "careful_min_decode_accuracy",
                    label="lowest decode accuracy",
                ),
                Check(
                    "careful_float64_error_eps",
                    "<=",
                    "careful_error_ulps",
                    label="float64 angles: largest error in eps(stored dtype)",
                ),
            ),
            references=("higham2002",),
            shows=("careful_variants", "careful_nonfinite_rows"),
        ),
        Claim(
            "aliasing.learned_out_of_range",
            "A learned table of L_max = {learned_max_len} rows has no encoding for position "
            "L_max: the registry raises a clear error instead of wrapping around.",
            kind="software",
            checks=(
                Check(
                    "learned_raises",
                    value=True,
                    label="position L_max raises PositionOutOfRange",
                ),
                Check("learned_rows_returned", value=True, label="rows 0..L_max−1 returned"),
            ),
            references=("seed_article", "devlin2019"),
            shows=("learned_error", "learned_in_range_shape"),
        ),
    ),
    references=(
        "seed_article",
        "vaswani2017",
        "su2021",
        "carter1979",
        "higham2002",
        "black2022",
        "barbero2024",
    ),
    # One thread: the chunks are too small for a second thread to pay, and a multi-threaded
    # kernel on a busy machine waits at every barrier for a descheduled thread (measured: 26 s
    # with one thread against 180 s with two while other jobs held both cores).
    resources=Resources(threads=1, mem_mb=2000, runtime=15),
    checks=(check_lengths,),
    registry_checks=(check_bases,),
    encoding_shapes=encoding_shapes,
    card=(
        CardColumn(
            "distinct to L, float32",
            "distinct_at_length",
            key="{encoding}, naive float32",
            note="the fraction of the L = {length} positions whose encoding, computed in "
            "float32, no other position shares",
        ),
        CardColumn(
            "distinct to L, bfloat16",
            "distinct_at_length",
            key="{encoding}, naive bfloat16",
            claim="aliasing.low_precision_collapse",
            judged="collapse_distinct_fraction",
            judged_key="{encoding}, bfloat16",
            note="the same with positions and angles in bfloat16 (the claim: most positions "
            "collide)",
            # Its claim holds where positions collide: the encoding lacks the property.
            asserts_absence=("collapse_distinct_fraction",),
        ),
    ),
)
