# Similarity of positional encodings versus offset, Wang et al.'s properties, and RoPE's
# long-term decay: analyses/similarity.py.


rule similarity:
    output:
        metrics="results/similarity/metrics.json",
        claims="results/similarity/claims.json",
        profiles_csv="results/similarity/offset_profiles.csv",
        properties_csv="results/similarity/kernel_properties.csv",
        rope_csv="results/similarity/rope_upper_bound.csv",
        seed_heatmap_png=report(
            "results/similarity/seed_heatmap.png",
            caption="../report_templates/snakemake/similarity_seed_heatmap.rst",
            category="Similarity",
        ),
        seed_heatmap_svg="results/similarity/seed_heatmap.svg",
        offset_curves_png=report(
            "results/similarity/offset_curves.png",
            caption="../report_templates/snakemake/similarity_offset_curves.rst",
            category="Similarity",
        ),
        offset_curves_svg="results/similarity/offset_curves.svg",
        kernels_png=report(
            "results/similarity/kernels.png",
            caption="../report_templates/snakemake/similarity_kernels.rst",
            category="Similarity",
        ),
        kernels_svg="results/similarity/kernels.svg",
        rope_decay_png=report(
            "results/similarity/rope_decay.png",
            caption="../report_templates/snakemake/similarity_rope_decay.rst",
            category="Similarity",
        ),
        rope_decay_svg="results/similarity/rope_decay.svg",
    params:
        cfg=config["similarity"],
        seed=config["seed"],
        device=config["device"],
        encodings=config["encodings"],
        encoding=config["encoding"],
    log:
        log_path("similarity"),
    benchmark:
        bench_path("similarity")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../analyses/similarity.py"


SECTIONS["similarity"] = rules.similarity
