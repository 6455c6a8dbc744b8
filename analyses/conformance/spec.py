"""Conformance with other libraries: transformers, x-transformers and rotary-embedding-torch
against the papers' formulas in float64 and against ours, for RoPE, its scaling methods,
sinusoidal tables, ALiBi slopes and T5 buckets, and what each RoPE does to its angles in
bfloat16. Torch-free: read by the workflow at parse time."""

from posenc.analysis import AnalysisSpec, CardColumn, Figure, Resources, Table
from posenc.claims import Check, Claim

# The precision traps, as the config's expectations and the evidence name them.
TRAPS = {
    "bf16_inputs": "bfloat16 queries and keys into a float32 module",
    "module_cast": "a module cast with .to(torch.bfloat16), float32 queries and keys",
    "autocast": "float32 queries, keys and module under CPU bfloat16 autocast",
    "cached_angles": "a float32 call after a bfloat16 call on the same module",
}


def check_config(config: dict) -> list[str]:
    """Shifted positions stay within the positions measured."""
    cfg = config.get("conformance")
    if not cfg:
        return []
    widest = max(cfg["shifts"])
    if widest >= cfg["max_position"]:
        return [
            f"config key conformance.shifts = {cfg['shifts']}: the largest must be < "
            f"conformance.max_position = {cfg['max_position']} (scores are compared at p and "
            "p + shift, both among the positions measured)"
        ]
    return []


def _trap_claim(trap: str, what: str) -> Claim:
    return Claim(
        f"conformance.trap_{trap}",
        f"With {what}, each RoPE implementation keeps or loses its angles as its pinned source "
        "says, read before measuring ({trap_expectation_" + trap + "}): lossy means an applied "
        "angle off by more than {trap_threshold} rad at some position up to {max_position}.",
        kind="software",
        checks=(
            Check(
                f"trap_as_expected_{trap}",
                value=True,
                label="measured behaviour (lossy or exact) = the one read from the source",
            ),
        ),
        references=("su2021", "wolf2020", "lucidrains_x_transformers", "lucidrains_rotary"),
        shows=(f"trap_max_error_{trap}", f"trap_first_over_{trap}"),
    )


SPEC = AnalysisSpec(
    id="conformance",
    title="Conformance with other libraries",
    csvs=("rope", "sinusoidal", "scaling", "dynamic", "alibi", "t5", "traps", "trap_curve"),
    figures={
        "traps": Figure(
            "Largest error of the angle each RoPE implementation applies (recovered from its "
            "output, against p·ω in float64), per log-spaced position bin up to {max_position}, "
            "d = {head_dim}: one panel per path (float32, then each bfloat16 trap), one line "
            "per implementation; the grey line is the {trap_threshold} rad threshold past "
            "which a path counts as lossy."
        ),
    },
    tables={
        "rope": Table(
            "RoPE in float32, positions 0 to {max_position}, d = {head_dim}: the largest error "
            "of rotated queries and keys against the float64 rotation, and each error over its "
            "rounding bound: rotated vectors, scores q·k, scores under each shift, and the gap "
            "to ours (over twice the bound).",
            csv="rope",
        ),
        "sinusoidal": Table(
            "Sinusoidal tables (d = {sinusoidal_d}), permuted to interleaved (sin, cos) "
            "pairs: the largest error against the float64 formula, over its bound, and the gap "
            "to ours over twice the bound.",
            csv="sinusoidal",
            placement="appendix",
        ),
        "scaling": Table(
            "RoPE scaling: transformers' initialisation functions against ours, the largest "
            "relative difference of the inverse frequencies and of the attention factor in "
            "float32 ulps, per method and factor.",
            csv="scaling",
        ),
        "dynamic": Table(
            "What each library's NTK option does with a factor s, as the effective NTK-aware "
            "scale of the frequencies it uses (measured), at each sequence length of a fresh "
            "module and of one module called at the lengths in this order, beside ours "
            "(s·l/L − (s − 1) for dynamic, s for the fixed rescaling).",
            csv="dynamic",
            placement="appendix",
        ),
        "alibi": Table(
            "ALiBi slopes for H = 1 to {alibi_max_heads} against the paper's get_slopes: the "
            "largest relative difference in ulps of the dtype each holds them in.",
            csv="alibi",
            placement="appendix",
        ),
        "t5": Table(
            "T5 buckets of key − query over ±{cfg[t5][max_relative]}: mismatches against the "
            "float64 formula and against ours.",
            csv="t5",
            placement="appendix",
        ),
        "traps": Table(
            "Every (implementation, path): the largest applied-angle error, the first "
            "position past {trap_threshold} rad, the behaviour measured and the one read from "
            "the pinned source.",
            csv="traps",
            placement="appendix",
        ),
    },
    claims=(
        Claim(
            "conformance.rope_agrees",
            "Every RoPE implementation ({rope_libraries}), in either layout, rotates float32 "
            "queries and keys at positions up to {max_position} as Su et al.'s formula does in "
            "float64, within its rounding bound, and so do the scores q·k; ours agrees with "
            "each within twice that bound.",
            kind="software",
            checks=(
                Check(
                    "rope_over_bound",
                    "<=",
                    "max_over_bound",
                    label="largest error of rotated q, k / bound ‖x_c‖(angle_ulps·eps·p·ω_c + "
                    "ulps·2eps)",
                ),
                Check(
                    "rope_score_over_bound",
                    "<=",
                    "max_over_bound",
                    label="largest score error / its bound",
                ),
                Check(
                    "rope_ours_over_bound",
                    "<=",
                    "max_over_bound",
                    label="largest gap to ours / twice the bound",
                ),
            ),
            references=("su2021", "wolf2020", "lucidrains_x_transformers", "lucidrains_rotary"),
            shows=("rope_max_abs_error",),
        ),
        Claim(
            "conformance.rope_relative_only",
            "In every RoPE implementation the scores depend on the offset only: moving both "
            "positions by each shift ({shifts}) changes q·k by no more than the rounding bound.",
            kind="software",
            checks=(
                Check(
                    "rope_shift_over_bound",
                    "<=",
                    "max_over_bound",
                    label="largest score change / its bound, over the implementations,",
                ),
            ),
            references=("su2021",),
        ),
        Claim(
            "conformance.sinusoidal_agrees",
            "x-transformers' sinusoidal table, once its [sin | cos] halves are interleaved and "
            "its gain divided out, is Vaswani et al.'s table within the float32 rounding bound, "
            "as ours is, and the two agree within twice it.",
            kind="software",
            checks=(
                Check("sinusoidal_over_bound", "<=", "max_over_bound", label="error / bound"),
                Check(
                    "sinusoidal_ours_over_bound",
                    "<=",
                    "max_over_bound",
                    label="gap to ours / twice the bound",
                ),
            ),
            references=("vaswani2017", "lucidrains_x_transformers"),
        ),
        Claim(
            "conformance.scaling_agrees",
            "transformers' linear, dynamic, YaRN and Llama 3 initialisations give our "
            "frequencies and attention factors (ours 'pi' is their 'linear') to float32 "
            "rounding, and x-transformers' and rotary-embedding-torch's base rescaling is our "
            "fixed NTK-aware scaling.",
            kind="software",
            checks=(
                Check(
                    "scaling_inv_freq_ulps",
                    "<=",
                    "scaling_ulps",
                    label="largest relative difference of the inverse frequencies, float32 ulps,",
                ),
                Check(
                    "scaling_attention_ulps",
                    "<=",
                    "scaling_ulps",
                    label="relative difference of the attention factor, float32 ulps,",
                ),
                Check(
                    "fixed_ntk_ulps",
                    "<=",
                    "scaling_ulps",
                    label="fixed NTK rescaling against ours 'ntk', float32 ulps,",
                ),
            ),
            references=(
                "chen2023",
                "bloc97_2023",
                "peng2023",
                "dubey2024",
                "wolf2020",
                "lucidrains_x_transformers",
                "lucidrains_rotary",
            ),
        ),
        Claim(
            "conformance.dynamic_is_shifted_ntk",
            "transformers' dynamic NTK, called at a length l on a fresh module, uses the fixed "
            "NTK-aware frequencies of the effective scale s·l/L − (s − 1) (plain RoPE at l ≤ L), "
            "as ours computes them.",
            kind="software",
            checks=(
                Check(
                    "dynamic_ntk_ulps",
                    "<=",
                    "scaling_ulps",
                    label="largest relative difference from ours 'ntk' at that scale, float32 "
                    "ulps,",
                ),
            ),
            references=("bloc97_2023", "peng2023", "wolf2020"),
        ),
        Claim(
            "conformance.alibi_agrees",
            "Our ALiBi slopes and x-transformers' are Press et al.'s get_slopes for every head "
            "count from 1 to {alibi_max_heads}, powers of two or not, to the rounding of the "
            "dtype each holds them in.",
            kind="software",
            checks=(
                Check(
                    "alibi_max_ulps",
                    "<=",
                    "slope_ulps",
                    label="largest relative difference, in ulps of its dtype,",
                ),
            ),
            references=("press2022", "lucidrains_x_transformers"),
        ),
        Claim(
            "conformance.t5_agrees",
            "Our T5 buckets, transformers' and x-transformers' equal Raffel et al.'s formula "
            "in float64 at every relative position within ±{t5_max_relative}, both "
            "directions, for (num_buckets, max_distance) in {t5_cases}.",
            kind="software",
            checks=(
                Check(
                    "t5_mismatches",
                    "<=",
                    "t5_max_mismatches",
                    label="buckets that differ from the formula",
                ),
                Check(
                    "t5_ours_mismatches",
                    "<=",
                    "t5_max_mismatches",
                    label="buckets that differ from ours",
                ),
            ),
            references=("raffel2020", "wolf2020", "lucidrains_x_transformers"),
        ),
        *(_trap_claim(trap, what) for trap, what in TRAPS.items()),
        Claim(
            "conformance.ours_exact",
            "Ours computes its angles in float32 or wider whatever the input dtype: along the "
            "float32 path and in every bfloat16 trap, in both layouts, no applied angle is off "
            "by more than {trap_threshold} rad.",
            kind="software",
            checks=(
                Check(
                    "ours_trap_max_error",
                    "<=",
                    "trap_angle_rad",
                    label="largest applied-angle error (rad)",
                ),
            ),
            references=("su2021",),
        ),
    ),
    references=(
        "su2021",
        "vaswani2017",
        "press2022",
        "raffel2020",
        "chen2023",
        "bloc97_2023",
        "peng2023",
        "dubey2024",
        "wolf2020",
        "lucidrains_x_transformers",
        "lucidrains_rotary",
    ),
    resources=Resources(threads=1, mem_mb=2000, runtime=10),
    uses=("seed", "device"),
    checks=(check_config,),
    encodings_of=lambda config: ["sinusoidal", "rope", "alibi", "t5_bias"],
    card=(
        CardColumn(
            "conformance",
            (),
            routes=(
                ("rope", "rope_over_bound", "posenc", "conformance.rope_agrees"),
                ("sinusoidal", "sinusoidal_over_bound", "posenc", "conformance.sinusoidal_agrees"),
                ("alibi", "alibi_max_ulps", "posenc", "conformance.alibi_agrees"),
                ("t5_bias", "t5_mismatches", "posenc", "conformance.t5_agrees"),
            ),
            note="our implementation against the paper's formula in float64, where another "
            "library implements it too (their agreement with it and with ours is in the "
            "section): RoPE and sinusoidal, the largest error over its rounding bound; ALiBi, "
            "the largest slope difference in ulps; T5, the buckets that differ",
            units=(
                ("rope_over_bound", "× bound", 1),
                ("sinusoidal_over_bound", "× bound", 1),
                ("alibi_max_ulps", "ulp", 1),
                ("t5_mismatches", "buckets", 1),
            ),
        ),
    ),
)
