# One rule per analysis, built from its spec (analyses/<id>/spec.py): every output declared
# here, from the figures, tables and row sets the spec names, and one generic script
# (workflow/scripts/analysis.py) runs the analysis' compute and present parts. An analysis
# with stages before it (training, say) keeps them in analyses/<id>/rules.smk. The helpers that
# build the outputs live in common.smk (a rule file holds rules, not functions).

for name, spec in ANALYSES.items():
    if Path(workflow.basedir, "analyses", name, "rules.smk").is_file():

        include: f"../analyses/{name}/rules.smk"

    rule:
        name:
            name
        input:
            **(spec.inputs(config) if spec.inputs else {}),
        output:
            **analysis_outputs(name, spec),
        log:
            log_path(name),
        benchmark:
            bench_path(name)
        threads: spec.resources.threads
        resources:
            mem_mb=spec.resources.mem_mb,
            runtime=spec.resources.runtime,
        params:
            analysis=name,
            root=workflow.basedir,
            cfg=config[name],
            config={key: config[key] for key in spec.uses},
            plugins=config["plugins"],
            code=analysis_code(name),
        script:
            "../workflow/scripts/analysis.py"

    SECTIONS[name] = getattr(rules, name)
