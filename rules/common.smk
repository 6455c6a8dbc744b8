# Shared helpers for the rule files. Every analysis rule (rules/analyses.smk) has named outputs
# `metrics` (metrics.json, with its figures and tables listed) and `claims` (the ledger), and
# `log:` and `benchmark:` under results/logs and results/benchmarks.
import dataclasses
import os
from pathlib import Path

from posenc import paths, plugins, ruleset, variants
from posenc.analysis import placeholders_named

# Report sections in order: the rule that writes each analysis' metrics.json and claims.json.
SECTIONS = {}


# An encoding wildcard is a registry name, or one with a training option (rope+randomized).
wildcard_constraints:
    encoding=variants.name_pattern(list(ENCODING_META)),
    seed=r"\d+",


def log_path(name):
    return f"{paths.LOGS}/{name}.log"


def bench_path(name):
    return f"{paths.BENCHMARKS}/{name}.tsv"


# Every rule's `code` param is a digest of the meaning of the project modules its script
# imports, found from the source (posenc.codegraph): a change of meaning there reruns the rule
# and re-keys the shared cache; a comment, docstring or formatting change reruns nothing.
# Snakemake's own code trigger (a script newer than its outputs) is off in profiles/default,
# so that this digest alone decides, for the entry scripts too. CODE, the graph, is the
# Snakefile's: the encodings' metadata is keyed by it before this file is read.


def code_digest(script, *modules, with_plugins=True):
    """The digest of the code that a job of the calling rule runs. ``script`` is its script
    (relative to the rule file being parsed, as Snakemake reads it) with all it imports;
    ``modules`` are files (relative to the workflow's folder) that it imports by a computed
    name. With ``with_plugins``, the config's plugins count too (for jobs that build every
    encoding)."""
    here = Path(workflow.current_basedir.get_path_or_uri(secret_free=True))
    roots = [here / script, *(Path(workflow.basedir, m) for m in modules)]
    extra = plugins.sources(config["plugins"], workflow.basedir) if with_plugins else []
    return CODE.digest(roots, extra)["digest"]


def plugin_digest(model):
    """For a job of one model (``rope+randomized`` say): a digest of the plugin that registered
    its encoding and what it imports, or None for a built-in. Editing a plugin then retrains
    its own models and no others, so the baselines of two report cards are the same models
    (shared through --cache)."""
    origin = ENCODING_META[variants.split_model(model)[0]].get("plugin")
    if not origin:
        return None
    return CODE.digest([], plugins.sources([origin], workflow.basedir))["digest"]


# ----- the rules built from each analysis' spec (rules/analyses.smk)

CAPTIONS = cache_dir(workflow.basedir) / "captions"


def caption_file(name, figure_id, caption):
    """Snakemake's report() wants a caption file: written from the spec, only on change."""
    path = CAPTIONS / name / f"{figure_id}.rst"
    text = placeholders_named(caption) + "\n"
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(path)


def analysis_outputs(name, spec):
    folder = paths.ANALYSIS_DIR.format(analysis=name)
    outputs = {
        "metrics": paths.METRICS.format(analysis=name),
        "claims": paths.CLAIMS.format(analysis=name),
    }
    outputs |= {f"csv_{rows}": f"{folder}/{rows}.csv" for rows in spec.csvs}
    for fid, fig in spec.figures.items():
        outputs[f"png_{fid}"] = report(
            f"{folder}/{fid}.png",
            caption=caption_file(name, fid, fig.caption),
            category=spec.title,
        )
        outputs[f"svg_{fid}"] = f"{folder}/{fid}.svg"
    if spec.timing_figures or spec.timing_tables:
        outputs["timing"] = f"{folder}/timing.json"
    return outputs


def analysis_code(name):
    """The code of an analysis' job. The generic script, and the parts of the analysis it
    imports by name (posenc.analysis.PARTS), with all they import."""
    return code_digest(ANALYSIS_SCRIPT, *(f"analyses/{name}/{part}.py" for part in analysis.PARTS))


# ----- the report card and the report (rules/report.smk)


def card_sections(wildcards=None):
    """The sections with columns on the report card, in report order: each one's spec's
    columns (as data) and the files it reads them from."""
    return [
        {
            "id": name,
            "title": ANALYSES[name].title,
            "columns": [dataclasses.asdict(c) for c in ANALYSES[name].card],
            "metrics": str(rule.output.metrics),
            "claims": str(rule.output.claims),
        }
        for name, rule in SECTIONS.items()
        if ANALYSES[name].card
    ]


# The report's own rules: their benchmarks are written after it renders.
REPORT_RULES = ("report", "report_pdf")


def section_files(wildcards=None):
    """Every file the analyses' rules write, all of which the report reads. Lazily, as every
    function here: an analysis' rule file may be included after the report's."""
    return ruleset.section_files(SECTIONS)


def report_plan(wildcards=None):
    """What the report reads of every other rule (posenc.ruleset.report_plan)."""
    return ruleset.report_plan(
        workflow.rules, SECTIONS, ANALYSES, config, ENCODING_META, CODE.covered, REPORT_RULES
    )
