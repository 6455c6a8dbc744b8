# One rule per analysis, built from its spec (analyses/<id>/spec.py): every output declared
# here, from the figures, tables and row sets the spec names, and one generic script
# (workflow/scripts/analysis.py) runs the analysis' compute and present parts. An analysis
# with stages before it (training, say) keeps them in analyses/<id>/rules.smk. The helpers that
# build the outputs live in common.smk (a rule file holds rules, not functions).

ANALYSIS_SCRIPT = "../workflow/scripts/analysis.py"

for name, spec in ANALYSES.items():
    if Path(workflow.basedir, "analyses", name, "rules.smk").is_file():

        include: f"../analyses/{name}/rules.smk"

    # An exclusive job (timings) holds every core of a local run, so the scheduler starts
    # nothing beside it (its compute still runs on the spec's threads); under SLURM, where
    # --cores is unset, it asks for a node of its own.
    held_threads = spec.resources.threads
    held_node = {}
    if spec.resources.exclusive:
        held_threads = workflow.resource_settings.cores or spec.resources.threads
        held_node = {"slurm_extra": "--exclusive"}

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
        threads: held_threads
        resources:
            **held_node,
            mem_mb=spec.resources.mem_mb,
            runtime=spec.resources.runtime,
        params:
            analysis=name,
            # Relative, so that a finished run moved elsewhere reruns nothing.
            root=os.path.relpath(workflow.basedir),
            cfg=config[name],
            config={key: config[key] for key in spec.uses},
            plugins=config["plugins"],
            code=analysis_code(name),
            data=spec.data(config) if spec.data else {},
        script:
            ANALYSIS_SCRIPT

    SECTIONS[name] = getattr(rules, name)
