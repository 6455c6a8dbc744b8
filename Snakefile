# posenc: one command regenerates the report. Each analysis is a folder, analyses/<id>/, whose
# torch-free spec the rules read here; rules/analyses.smk builds one rule per spec, and the
# report's sections follow posenc.analysis.READING_ORDER, whatever order the config lists them
# in. Nothing here imports torch.
from functools import partial
from pathlib import Path

from snakemake.utils import min_version

from posenc import analysis, codegraph, config as posenc_config, encoding_metadata
from posenc.workflow_root import cache_dir

min_version("9.0")


configfile: "config/config.yaml"


ROOT = Path(workflow.basedir)
SPECS = analysis.discover(ROOT)
# The project's import graph (posenc.codegraph), parsed once: every rule's `code` param
# (rules/common.smk) and the key of the registry's metadata are digests of it.
CODE = codegraph.project_graph(ROOT, cache_dir(ROOT) / "codegraph.json")
# Plugins register encodings before validation, so the schema accepts their names and their
# hyper-parameters (the encoding: block); the registry's metadata is cached by a digest of the
# code that reads it (posenc.encoding_metadata): a no-op run imports no torch.
ENCODING_META = encoding_metadata.metadata(config.get("plugins", []), ROOT, graph=CODE)
# A wrong key or value stops here, before any job, with one line per problem naming the key:
# the schema, each analysis' checks, then each configured encoding's own checks at every width
# the analyses build it at (run by the registry, so only an encoding with checks costs torch).
posenc_config.validate_config(
    config,
    posenc_config.workflow_schema(
        ROOT,
        sorted(p.parent.name for p in ROOT.glob("analyses/*/schema.yaml")),
        ENCODING_META,
    ),
    [
        *(check for spec in SPECS.values() for check in spec.checks),
        *(
            partial(check, encodings=ENCODING_META)
            for spec in SPECS.values()
            for check in spec.registry_checks
        ),
        encoding_metadata.encoding_check(SPECS, ROOT, graph=CODE),
    ],
)
# The analyses this config runs, in the reading order of every report (SPECS's).
ANALYSES = {name: spec for name, spec in SPECS.items() if name in config}

# `device: cuda` without a GPU fails now, not after hours of CPU jobs. Only where jobs run on
# this machine: a SLURM submit host may have no GPU while its compute nodes do (each job
# checks again when it resolves its device).
if config["device"] == "cuda" and workflow.local_exec and workflow.is_main_process:
    from posenc.device import resolve_device

    resolve_device("cuda")


include: "rules/common.smk"
include: "rules/analyses.smk"
include: "rules/report.smk"


# The code digests are known now: keep what was parsed for the next parse (posenc.codegraph).
CODE.save()


rule all:
    default_target: True
    input:
        rules.report.output.html,
        rules.report_pdf.output.pdf,
        rules.report.output.claims,


# Everything but the PDF (its layout is the longest job of a small run): `snakemake html`.
rule html:
    input:
        rules.report.output.html,
        rules.report.output.claims,
