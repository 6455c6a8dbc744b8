# posenc: one command regenerates the report. The rules live in rules/*.smk, one per stage;
# every path is declared there. Scripts never read the global config.
from pathlib import Path

from snakemake.utils import min_version, validate

from posenc.config import validate_config

min_version("9.0")


configfile: "config/config.yaml"


# A wrong key or value stops here, before any job, with a message naming the key. Our own
# pass gives one readable line per problem; Snakemake's then fills the schema's defaults.
validate_config(config, Path(workflow.basedir) / "config/schema.yaml")
validate(config, "config/schema.yaml")

# `device: cuda` without a GPU fails now, not after hours of CPU jobs. Only where jobs run on
# this machine: a SLURM submit host may have no GPU while its compute nodes do (each job
# checks again when it resolves its device).
if config["device"] == "cuda" and workflow.local_exec and workflow.is_main_process:
    from posenc.device import resolve_device

    resolve_device("cuda")


include: "rules/common.smk"
include: "rules/equivariance.smk"
include: "rules/similarity.smk"
# The report's sections follow this order: the exact claims first, trained models last.
include: "rules/rotation.smk"
include: "rules/aliasing.smk"
include: "rules/complexity.smk"
include: "rules/extrapolation.smk"
include: "rules/report.smk"


rule all:
    input:
        "results/report/index.html",
        "results/report/report.pdf",
        "results/claims.json",
    default_target: True
