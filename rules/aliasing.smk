# Up to which length positions keep distinguishable encodings: exact arithmetic (an O(L·d)
# offset scan), naive and careful floating point, decoding, learned tables: analyses/aliasing.py.


rule aliasing:
    output:
        metrics="results/aliasing/metrics.json",
        claims="results/aliasing/claims.json",
        min_distance_csv="results/aliasing/min_distance.csv",
        distinct_csv="results/aliasing/distinct.csv",
        errors_csv="results/aliasing/errors.csv",
        decode_csv="results/aliasing/decode.csv",
        min_distance_png=report(
            "results/aliasing/min_distance.png",
            caption="../report_templates/snakemake/aliasing_min_distance.rst",
            category="Aliasing",
        ),
        min_distance_svg="results/aliasing/min_distance.svg",
        distinct_png=report(
            "results/aliasing/distinct.png",
            caption="../report_templates/snakemake/aliasing_distinct.rst",
            category="Aliasing",
        ),
        distinct_svg="results/aliasing/distinct.svg",
        errors_png=report(
            "results/aliasing/errors.png",
            caption="../report_templates/snakemake/aliasing_errors.rst",
            category="Aliasing",
        ),
        errors_svg="results/aliasing/errors.svg",
        decode_png=report(
            "results/aliasing/decode.png",
            caption="../report_templates/snakemake/aliasing_decode.rst",
            category="Aliasing",
        ),
        decode_svg="results/aliasing/decode.svg",
    params:
        cfg=config["aliasing"],
        seed=config["seed"],
        device=config["device"],
        encoding=config["encoding"],
    log:
        log_path("aliasing"),
    benchmark:
        bench_path("aliasing")
    # One thread: the chunks are too small for a second thread to pay, and a multi-threaded
    # kernel on a busy machine waits at every barrier for a descheduled thread (measured: 26 s
    # with one thread against 180 s with two while other jobs held both cores).
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    script:
        "../analyses/aliasing.py"


SECTIONS["aliasing"] = rules.aliasing
