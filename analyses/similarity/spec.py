"""How alike two positions look: similarity versus offset, Wang et al.'s properties of each
encoding's positional kernel, and the long-term decay of rotary encodings. Torch-free: read by
the workflow at parse time."""

from pathlib import Path

from posenc import encoding_metadata, paths
from posenc.analysis import AnalysisSpec, CardColumn, Figure, Resources, Table
from posenc.claims import Check, Claim

ROOT = Path(__file__).resolve().parents[2]


def inputs(config: dict) -> dict[str, list[str]]:
    """The character LMs the extrapolation study trains (rules in its ``rules.smk``) for every
    configured encoding with learned parameters, one per seed: their kernels are the trained
    tables Wang et al. analysed. None without an extrapolation section. The registry's metadata
    is read as the Snakefile reads it (cached, without torch)."""
    xp = config.get("extrapolation")
    if not xp:
        return {}
    meta = encoding_metadata.metadata(config.get("plugins", []), ROOT)
    learned = [e for e in config["encodings"] if meta[e]["learned"]]
    return {
        "trained_models": [
            paths.XP_MODEL.format(task="lm", encoding=e, seed=s)
            for e in learned
            for s in xp["lm"]["seeds"]
        ]
    }


def check_config(config: dict) -> list[str]:
    """The seed's positions fit its table, one expected value per position, kernels fit RoPE,
    the window fits the kernels, the trained ones included."""
    cfg = config.get("similarity", {})
    problems = []
    seed = cfg.get("seed", {})
    n, others = seed.get("n_positions"), seed.get("others", [])
    for key, values in (("position", [seed.get("position")]), ("others", others)):
        if n and any(v is not None and v >= n for v in values):
            problems.append(
                f"config key similarity.seed.{key} = {seed.get(key)}: positions must be < "
                f"similarity.seed.n_positions = {n}"
            )
    if len(seed.get("expected", [])) != len(others):
        problems.append(
            f"config key similarity.seed.expected = {seed.get('expected')}: needs one value per "
            f"entry of similarity.seed.others = {others}"
        )
    kernels = cfg.get("kernels", {})
    d, h = kernels.get("d_model"), kernels.get("n_heads")
    if d and h and (d % h or (d // h) % 2):
        problems.append(
            f"config key similarity.kernels.d_model = {d}: must split into n_heads = {h} heads "
            "of even width (RoPE rotates pairs)"
        )
    window, n_kernel = cfg.get("window"), kernels.get("n_positions")
    if window and n_kernel and window >= n_kernel:
        problems.append(
            f"config key similarity.window = {window}: must be < similarity.kernels.n_positions "
            f"= {n_kernel}"
        )
    seq_len = config.get("extrapolation", {}).get("lm", {}).get("seq_len")
    if window and seq_len and window >= seq_len:
        problems.append(
            f"config key similarity.window = {window}: must be < extrapolation.lm.seq_len = "
            f"{seq_len} (a trained table has that many positions)"
        )
    max_offset = cfg.get("max_offset")
    seed_offsets = [abs(j - seed["position"]) for j in others if seed.get("position") is not None]
    if max_offset and seed_offsets and max(seed_offsets) > max_offset:
        problems.append(
            f"config key similarity.max_offset = {max_offset}: must reach the seed's largest "
            f"offset |others - position| = {max(seed_offsets)}"
        )
    if window and cfg.get("max_offset") and window > cfg["max_offset"]:
        problems.append(
            f"config key similarity.window = {window}: must be <= similarity.max_offset = "
            f"{cfg['max_offset']}"
        )
    return problems


def encoding_shapes(config: dict) -> dict[str, tuple[int, int]]:
    """The kernels' width, and one head of each width of Su et al.'s decay bound (trained
    models are the extrapolation section's: its spec names their width)."""
    kernels, decay = config["similarity"]["kernels"], config["similarity"]["rope_decay"]
    d, h = kernels["d_model"], kernels["n_heads"]
    shapes = {f"similarity.kernels.d_model = {d}, similarity.kernels.n_heads = {h}": (d, h)}
    for i, width in enumerate(decay["dims"]):
        shapes[f"similarity.rope_decay.dims.{i} = {width}"] = (width, 1)
        # Where an encoding's heads differ, the bound reads each group of the kernels' heads.
        shapes[f"similarity.rope_decay.dims.{i} = {width}, similarity.kernels.n_heads = {h}"] = (
            width * h,
            h,
        )
    return shapes


SPEC = AnalysisSpec(
    id="similarity",
    title="Similarity of positions",
    csvs=(
        "offset_profiles",
        "kernel_properties",
        "kernel_properties_by_head",
        "rotary_upper_bound",
    ),
    inputs=inputs,
    figures={
        "seed_heatmap": Figure(
            "The sinusoidal encoding of {seed[n_positions]} positions in d={seed[d_model]} "
            "dimensions (base {seed[base]:g}), as “Transformers · Positional encoding” draws it: "
            "fast waves in the low dimensions, slow ones in the high.",
            placement="appendix",
        ),
        "offset_curves": Figure(
            "Cosine similarity (top) and scaled distance (bottom) between the sinusoidal "
            "encodings of positions k apart, for d in {dims} and each base."
        ),
        "kernels": Figure(
            "Positional kernel K(p, q) of each encoding. Fixed encodings: over "
            "{kernels[n_positions]} positions (d={kernels[d_model]}, {kernels[n_heads]} heads). "
            "Panels marked “trained”: the learned encodings as trained in the character LMs of "
            "the extrapolation section (seed {trained[seed]}, d={trained[d_model]}, "
            "{trained[n_heads]} heads, {trained[n_positions]} positions), on the pairs q ≤ p "
            "that a causal model scores (blank: never scored). Panels marked “random init”: "
            "the same encodings with their parameters drawn from "
            "N(0, {kernels[learned_init_std]}²), the untrained contrast."
        ),
        "long_term_decay": Figure(
            "Relative upper bound of each rotary encoding versus relative distance (Su et al. "
            "2021, Fig. 2), one panel per encoding, one line per head width d.",
            placement="appendix",
        ),
    },
    tables={
        "seed_values": Table(
            "Cosine similarity of sinusoidal PE (d={seed[d_model]}) between position pairs: "
            "this run and the value “Transformers · Positional encoding” prints."
        ),
        "sweep": Table(
            "Sinusoidal encoding per dimension d and base: the largest offset up to which "
            "similarity falls strictly, the concordance within {window} offsets (1 = strictly "
            "monotone), and the similarity at the offsets of the printed pairs.",
            csv="offset_profiles",
            placement="appendix",
        ),
        "properties": Table(
            "Wang et al.'s properties of each encoding's positional kernel: fixed encodings "
            "over {kernels[n_positions]} positions; learned ones as trained (mean ± half range "
            "over the seeds named, pairs q ≤ p, {trained[n_positions]} positions) and, as a "
            "contrast, drawn at random. Symmetry is undefined (—) where a causal model scores "
            "no pair both ways.",
            csv="kernel_properties",
        ),
        "properties_by_head": Table(
            "The same properties head by head, for each encoding whose heads differ (a score "
            "bias has a slope, a table or an output per head; an encoding may declare groups "
            "of heads): its kernel averaged over every head, as in the table above, then each "
            "group's own.",
            csv="kernel_properties_by_head",
            placement="appendix",
        ),
        "long_term_decay": Table(
            "Relative upper bound of each rotary encoding: its value at distance 0, its rank "
            "correlation with distance, and its largest far-half value relative to 0.",
            csv="rotary_upper_bound",
            placement="appendix",
        ),
    },
    claims=(
        Claim(
            "similarity.seed_values",
            "The cosine similarities of the sinusoidal encoding at the position pairs "
            "“Transformers · Positional encoding” prints agree with its printed values to the "
            "digits it prints.",
            kind="software",
            checks=(
                Check(
                    "seed_similarity",
                    "within",
                    "seed_abs_tol",
                    of="printed_values",
                    label="this run's similarities",
                ),
            ),
            references=("seed_snippet",),
        ),
        Claim(
            "similarity.monotone_near",
            "Near offset 0 the kernel falls strictly at every offset of the near window (half "
            "periods π/ω_max of the fastest wave), for the sinusoidal encoding at every d and "
            "base swept and for the kernels of the fixed encodings ({fixed}). An identity "
            "check, not a finding: ω_max = 1 for every d and base, and every term cos(ω·k) with "
            "0 < ω ≤ ω_max falls over the first half period of the fastest wave, so a sum of "
            "them must fall there. Whether similarity keeps falling at larger offsets is what "
            "the concordance columns of the sweep and properties tables measure; no verdict "
            "rests on them. Each number is the first offset at which the kernel does not fall "
            "(one past the end if it never rises), in half periods π/ω_max.",
            kind="identity",
            checks=(
                Check(
                    "monotone_reach",
                    ">",
                    "monotone_half_periods",
                    label="first offset not falling, in half periods,",
                ),
            ),
            references=("seed_article", "wang2021"),
        ),
        Claim(
            "similarity.translation_invariance",
            "The kernel depends on the offset p − q only (not on p) for every encoding but a "
            "learned absolute table ({invariant}), a learned one as trained in the character "
            "LMs (every seed, on the pairs q ≤ p a causal model scores); each number is the "
            "spread of K(p, p+k) over p, largest over offsets k, for N positions.",
            kind="identity",
            checks=(
                Check(
                    "translation_spread",
                    "<=",
                    "translation_ulps",
                    scale="eps_float64_times_N",
                    label="spread of K(p, p+k) over p",
                ),
            ),
            references=("seed_article", "wang2021"),
        ),
        Claim(
            "similarity.rope_long_term_decay",
            "The relative upper bound (1/(d/2)) Σ_j |S_j| of each rotary encoding ({rotary}) "
            "decays with the relative distance at every head width d: it is anti-correlated "
            "with the distance, and over the far half of the range it stays well below its "
            "value at distance 0.",
            kind="analytic",
            checks=(
                Check(
                    "decay_spearman",
                    "<=",
                    "decay_max_spearman",
                    label="Spearman correlation with distance",
                ),
                Check(
                    "decay_far_ratio",
                    "<=",
                    "decay_max_far_ratio",
                    label="largest far-half value / value at 0",
                ),
            ),
            references=("su2021",),
        ),
    ),
    references=("vaswani2017", "wang2021", "su2021", "press2022", "raffel2020"),
    resources=Resources(threads=1, mem_mb=2000, runtime=10),
    checks=(check_config,),
    encoding_shapes=encoding_shapes,
    card=(
        CardColumn(
            "near above far",
            "monotone_reach",
            key="{encoding} kernel",
            claim="similarity.monotone_near",
            # The number is its claim's measurement, so it is defined as the claim defines it.
            note="how far the positional similarity keeps falling with the offset before it "
            "first rises: the first offset at which it does not fall, in half periods π/ω_max of "
            "the fastest wave (ω_max = {omega_max}), as its claim counts it",
            caption="“Near above far” is counted in half periods π/ω_max of the fastest wave "
            "(ω_max = {omega_max}), as its claim counts it ({expected}).",
        ),
    ),
)
