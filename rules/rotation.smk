# The rotation identity of sinusoidal encodings, the article's hand trace, RoPE's relative-only
# scores and the linear offset map, in every dtype: analyses/rotation.py.


rule rotation:
    output:
        metrics="results/rotation/metrics.json",
        claims="results/rotation/claims.json",
        identity_csv="results/rotation/identity.csv",
        rope_csv="results/rotation/rope_shift.csv",
        linear_csv="results/rotation/linear_map.csv",
        identity_png=report(
            "results/rotation/identity.png",
            caption="../report_templates/snakemake/rotation_identity.rst",
            category="Rotation",
        ),
        identity_svg="results/rotation/identity.svg",
        rope_png=report(
            "results/rotation/rope_shift.png",
            caption="../report_templates/snakemake/rotation_rope_shift.rst",
            category="Rotation",
        ),
        rope_svg="results/rotation/rope_shift.svg",
    params:
        cfg=config["rotation"],
        seed=config["seed"],
        device=config["device"],
        encoding=config["encoding"],
    log:
        log_path("rotation"),
    benchmark:
        bench_path("rotation")
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../analyses/rotation.py"


SECTIONS["rotation"] = rules.rotation
