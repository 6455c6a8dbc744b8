"""What positional encodings cost next to attention, measured against L. Torch-free: read by
the workflow at parse time."""

from posenc.analysis import AnalysisSpec, Figure, Resources, Table
from posenc.claims import Check, Claim


def check_lengths(config: dict) -> list[str]:
    """Cross-field rules of the complexity section (the schema checks each field alone): the
    lengths increase, the heads split into RoPE's pairs, and each fit has two lengths."""
    cx = config.get("complexity")
    if not cx:
        return []
    problems = []
    lengths = cx["lengths"]
    if lengths != sorted(lengths):
        problems.append(f"config key complexity.lengths = {lengths}: must be increasing")
    d, h = cx["d_model"], cx["n_heads"]
    if d % h or (d // h) % 2:
        problems.append(
            f"config key complexity.d_model = {d}: must split into n_heads = {h} heads of "
            "even width (RoPE rotates pairs)"
        )
    fitted = [n for n in lengths if cx["attention_fit_min_len"] <= n <= cx["attention_max_len"]]
    if len(fitted) < 2:
        problems.append(
            f"config key complexity.attention_fit_min_len = {cx['attention_fit_min_len']}: "
            "fewer than two complexity.lengths between it and complexity.attention_max_len "
            f"= {cx['attention_max_len']} to fit a slope"
        )
    if sum(n >= cx["encoding_fit_min_len"] for n in lengths) < 2:
        problems.append(
            f"config key complexity.encoding_fit_min_len = {cx['encoding_fit_min_len']}: "
            "fewer than two complexity.lengths at or above it to fit a slope"
        )
    return problems


SPEC = AnalysisSpec(
    id="complexity",
    title="Cost against length",
    csvs=("timings", "ratios"),
    figures={
        "scaling": Figure(
            "Median time per call against L (torch.utils.benchmark, {warmup} warm-up calls, "
            "blocks of at least {min_run_time:g} s): one attention layer (black) and each "
            "encoding's own work; dotted: the log-log fits (attention over L ≥ "
            "{attention_fit_min_len}, encodings over L ≥ {encoding_fit_min_len}), slopes in "
            "the legend."
        ),
    },
    tables={
        "slopes": Table(
            "Per workload: the fixed per-call cost t₀ (time at L = 1), the log-log slope of "
            "t − t₀ against L over the fit range, the slope of the raw times over the fit range "
            "and over every length, the median time at the end of the fit range, and the ratio "
            "to one attention layer at L = {ratio_len}.",
            csv="timings",
        ),
        "ratios": Table(
            "Each encoding's median time over one attention layer's median time at the same L, "
            "at every length timed. —: not timed at that L, because attention is timed only "
            "up to L = {attention_max_len} and an encoding whose work is quadratic in L (a "
            "score bias, an (H, L, L) tensor) only up to L = {bias_max_len}. An encoding that "
            "does no work is not timed and has no row.",
            csv="ratios",
        ),
    },
    claims=(
        Claim(
            "complexity.pe_linear",
            "Computing the positional table (sinusoidal formula, learned lookup) costs O(L·d): "
            "time grows linearly in L, and is negligible next to one attention layer.",
            kind="empirical",
            checks=(
                Check(
                    "table_slope",
                    "within",
                    "pe_slope_tol",
                    of="pe_slope",
                    label="log-log slope",
                ),
                Check(
                    "table_to_attention",
                    "<=",
                    "pe_max_fraction",
                    label="table time / attention time",
                ),
            ),
            references=("seed_article",),
        ),
        Claim(
            "complexity.attention_quadratic",
            "One attention layer costs O(L²·d): its time grows quadratically in L once L is "
            "large enough for the scores to dominate the projections.",
            kind="empirical",
            checks=(
                Check(
                    "attention_fit_slope",
                    "within",
                    "attention_slope_tol",
                    of="attention_slope",
                    label="attention log-log slope",
                ),
            ),
            references=("vaswani2017", "seed_article"),
            shows=("attention_fit_range", "flop_model_slope"),
        ),
    ),
    references=("seed_article", "vaswani2017"),
    # One thread: a multi-threaded kernel waits at every barrier for its slowest thread, so on
    # a busy machine its timings jump by whole scheduler slices; one thread times the work.
    # Memory: RoPE on (1, 4, 2^20, 16) queries and keys, with temporaries.
    resources=Resources(threads=1, mem_mb=3000, runtime=10),
    checks=(check_lengths,),
)
