# Time of each encoding's own work and of one attention layer versus L, with fitted log-log
# slopes: analyses/complexity.py.


rule complexity:
    output:
        metrics="results/complexity/metrics.json",
        claims="results/complexity/claims.json",
        timings_csv="results/complexity/timings.csv",
        scaling_png=report(
            "results/complexity/scaling.png",
            caption="../report_templates/snakemake/complexity_scaling.rst",
            category="Complexity",
        ),
        scaling_svg="results/complexity/scaling.svg",
    params:
        cfg=config["complexity"],
        seed=config["seed"],
        device=config["device"],
        encodings=config["encodings"],
        encoding=config["encoding"],
    log:
        log_path("complexity"),
    benchmark:
        bench_path("complexity")
    # One thread: a multi-threaded kernel waits at every barrier for its slowest thread, so on
    # a busy machine its timings jump by whole scheduler slices; one thread times the work.
    threads: 1
    resources:
        mem_mb=3000,  # RoPE on (1, 4, 2^20, 16) queries and keys, with temporaries
        runtime=10,
    script:
        "../analyses/complexity.py"


SECTIONS["complexity"] = rules.complexity
