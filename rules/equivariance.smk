# Permutation equivariance of attention, what breaks it, and shift invariance of relative
# encodings: analyses/equivariance.py.


rule equivariance:
    output:
        metrics="results/equivariance/metrics.json",
        claims="results/equivariance/claims.json",
        permutation_csv="results/equivariance/permutation_errors.csv",
        shift_csv="results/equivariance/shift_errors.csv",
        permutation_png=report(
            "results/equivariance/permutation_error.png",
            caption="../report_templates/snakemake/equivariance_permutation_error.rst",
            category="Equivariance",
        ),
        permutation_svg="results/equivariance/permutation_error.svg",
        shift_png=report(
            "results/equivariance/shift_error.png",
            caption="../report_templates/snakemake/equivariance_shift_error.rst",
            category="Equivariance",
        ),
        shift_svg="results/equivariance/shift_error.svg",
    params:
        cfg=config["equivariance"],
        seed=config["seed"],
        device=config["device"],
        encodings=config["encodings"],
        encoding=config["encoding"],
    log:
        log_path("equivariance"),
    benchmark:
        bench_path("equivariance")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    script:
        "../analyses/equivariance.py"


SECTIONS["equivariance"] = rules.equivariance
