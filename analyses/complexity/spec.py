"""What positional encodings cost next to attention, measured against L and d. Torch-free:
read by the workflow at parse time."""

from posenc.analysis import AnalysisSpec, CardColumn, Figure, Resources, Table
from posenc.claims import Check, Claim


def check_lengths(config: dict) -> list[str]:
    """Cross-field rules of the complexity section (the schema checks each field alone): the
    lengths increase, every width splits into heads of RoPE's even width, and each fit has two
    lengths at every width."""
    cx = config.get("complexity")
    if not cx:
        return []
    problems = []
    lengths = cx["lengths"]
    if lengths != sorted(lengths):
        problems.append(f"config key complexity.lengths = {lengths}: must be increasing")
    h = cx["head_dim"]
    if h % 2:
        problems.append(f"config key complexity.head_dim = {h}: must be even (RoPE rotates pairs)")
    uneven = [d for d in cx["d_models"] if d % h]
    if uneven:
        problems.append(
            f"config key complexity.d_models = {cx['d_models']}: {uneven} not a whole number "
            f"of heads of complexity.head_dim = {h}"
        )
    for d in cx["d_models"]:
        start = cx["attention_fit_min_len_per_d"] * d
        if sum(start <= n <= cx["attention_max_len"] for n in lengths) < 2:
            problems.append(
                f"config key complexity.attention_fit_min_len_per_d = "
                f"{cx['attention_fit_min_len_per_d']}: at d = {d}, fewer than two "
                f"complexity.lengths between L = {start} and complexity.attention_max_len "
                f"= {cx['attention_max_len']} to fit a slope"
            )
    if sum(n >= cx["encoding_fit_min_len"] for n in lengths) < 2:
        problems.append(
            f"config key complexity.encoding_fit_min_len = {cx['encoding_fit_min_len']}: "
            "fewer than two complexity.lengths at or above it to fit a slope"
        )
    return problems


def encoding_shapes(config: dict) -> dict[str, tuple[int, int]]:
    """Each configured width, in heads of ``head_dim``."""
    cfg = config["complexity"]
    h = cfg["head_dim"]
    return {
        f"complexity.d_models.{i} = {d}, complexity.head_dim = {h}": (d, d // h)
        for i, d in enumerate(cfg["d_models"])
    }


SPEC = AnalysisSpec(
    id="complexity",
    title="Cost against length and width",
    csvs=("timings", "ratios"),
    figures={
        "scaling": Figure(
            "Median time per call against L at each width d (every point timed in {rounds} "
            "rounds interleaved with all the others, each preceded by warm-up calls, "
            "{warmup} per round; "
            "the median of at least {min_blocks} timed blocks of about a millisecond and "
            "{min_run_time:g} s in all): one attention layer (black) and each "
            "encoding's own work; dotted: the log-log fits of t − t₀ "
            "(attention over L ≥ {attention_fit_min_len_per_d}·d, encodings over L ≥ "
            "{encoding_fit_min_len}), slopes in the legend."
        ),
        "fractions": Figure(
            "Each encoding's median time over one attention layer's at the same width d, "
            "against L, at every length where both are timed (one panel per width; bars: the "
            "{interval_percent:g} % bootstrap interval). Dashed: the bound the claim holds the "
            "positional tables to at every such length, {pe_max_fraction:g} of a layer.",
            placement="appendix",
        ),
        "memory": Figure(
            "Each encoding's time per byte of output (top) and the bytes each call faulted in "
            "from fresh pages, over its output's bytes (bottom), against the output's bytes, "
            "one line per encoding and width d (line style). Vertical lines: this machine's "
            "cache sizes as the operating system reports them at run time.",
            placement="appendix",
        ),
    },
    tables={
        "slopes": Table(
            "Per workload and width d: the fixed per-call cost t₀ (time at L = 1), the log-log "
            "slope of t − t₀ against L over the fit range with its {interval_percent:g} % "
            "bootstrap interval (over each point's timed blocks; the claims judge the whole "
            "interval), the slope of the raw times over the "
            "fit range and over every length, the median time at the end of the fit range, "
            "and the largest ratio to one attention layer of the same width over every L where "
            "both are timed, with its bootstrap interval and the L where it is.",
            csv="timings",
        ),
        "d_slopes": Table(
            "Per workload: the log-log slope of t − t₀ against d over every width timed "
            "(d = {widths}, heads of {head_dim}), at the largest L it is timed at, with its "
            "bootstrap interval; for "
            "attention, the slope its flop count 8·L·d² + 4·L²·d has over the same widths; "
            "and the median times.",
            csv="timings",
            placement="appendix",
        ),
        "ratios": Table(
            "Each encoding's median time over one attention layer's median time at the same "
            "width d and the same L, at every length timed, with its {interval_percent:g} % "
            "bootstrap interval, and the L where it is largest. —: not timed at that L, because "
            "attention is timed only up to L = {attention_max_len} and an encoding whose work "
            "is quadratic in L (a score bias, an (H, L, L) tensor) only up to "
            "L = {bias_max_len}. An encoding that does no work is not timed and has no row.",
            csv="ratios",
            placement="appendix",
        ),
        "memory": Table(
            "Per encoding and width d, the largest step up in time per byte of output between "
            "two consecutive lengths timed: how much the time and the output's bytes grew "
            "there, the bytes each call faulted in from fresh pages before and after, and the "
            "output's bytes after the step over this machine's second-level and last-level "
            "cache (read at run time).",
            placement="appendix",
        ),
        "caches": Table(
            "This machine's data caches as the operating system reports them at run time.",
            placement="appendix",
        ),
    },
    timing_figures=("memory",),
    timing_tables=("memory", "caches"),
    claims=(
        Claim(
            "complexity.pe_linear",
            "Computing the positional table (sinusoidal formula, learned lookup) costs O(L·d) "
            "and is essentially free next to attention: at every width d its time grows "
            "linearly in L, and at every length where it and one attention layer of the same "
            "width are both timed (L = {fraction_lengths}) it is a small fraction of that "
            "layer's time, the worst length deciding.",
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
                    label="table time / attention time at every L",
                ),
            ),
            references=("seed_article",),
            shows=("worst_fraction_length",),
            # The test config's widths of a few KiB time two calls' fixed overheads against
            # each other at short L, not the work the fraction is about.
            unless="smoke_test",
        ),
        Claim(
            "complexity.attention_quadratic",
            "One attention layer costs O(L²·d): at every width d, its time grows quadratically "
            "in L once L is large enough for the scores to dominate the projections.",
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
        Claim(
            "complexity.pe_linear_in_d",
            "Computing the positional table costs O(L·d): at a fixed L, its time grows "
            "linearly in the width d.",
            kind="empirical",
            checks=(
                Check(
                    "table_d_slope",
                    "within",
                    "d_slope_tol",
                    of="d_slope",
                    label="log-log slope in d",
                ),
            ),
            references=("seed_article",),
            unless="smoke_test",
        ),
        Claim(
            "complexity.attention_linear_in_d",
            "One attention layer costs O(L²·d): at a fixed L well past 2d, its time grows "
            "linearly in the width d.",
            kind="empirical",
            checks=(
                Check(
                    "attention_d_slope",
                    "within",
                    "d_slope_tol",
                    of="d_slope",
                    label="attention log-log slope in d",
                ),
            ),
            references=("vaswani2017", "seed_article"),
            shows=("attention_d_length", "flop_model_d_slope"),
            unless="smoke_test",
        ),
    ),
    references=("seed_article", "vaswani2017"),
    # One thread: a multi-threaded kernel waits at every barrier for its slowest thread, so on
    # a busy machine its timings jump by whole scheduler slices; one thread times the work.
    # Exclusive: the rule holds every core, so that no other job shares the caches, the memory
    # bandwidth or the page allocator with the timings. Memory: RoPE's (1, 16, 2^20, 16)
    # queries and keys, their rotations and temporaries at d = 256 (2.8 GB peak measured).
    resources=Resources(threads=1, mem_mb=4000, runtime=10, exclusive=True),
    checks=(check_lengths,),
    encoding_shapes=encoding_shapes,
    card=(
        CardColumn(
            "cost slope in L",
            "cost_slope",
            claim="complexity.pe_linear",
            judged="table_slope",
            judged_key="{encoding} d={widest_d}",
            note="the log-log slope of the encoding's own time against L at d = {widest_d} "
            "(1: linear; 2: a materialised L × L bias)",
        ),
    ),
)
