"""What the rule files compute from the parsed workflow: the report's view of every other rule.

Kept out of the rule files so that a rule is a list of declarations and this logic can be
tested. The functions take Snakemake's rule objects (``name``, ``output``, ``benchmark``,
``params``) and the analyses' specs. Torch-free: runs while the workflow is parsed and the
DAG built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from posenc import references, variants
from posenc.analysis import appendix_items


def section_files(sections: Mapping[str, Any]) -> list[str]:
    """Every file the analyses' rules write (``sections``: analysis id -> its rule)."""
    return [str(f) for rule in sections.values() for f in rule.output]


def report_sections(
    sections: Mapping[str, Any], specs: Mapping[str, Any], config: dict, encodings: dict
) -> list[dict[str, Any]]:
    """Each section as the report reads it, in report order: its title; the works it cites,
    its spec's and then the configured encodings' own (``encodings``: the registry's
    metadata); the constants its prose quotes; the figures and tables it places in the
    appendix (:func:`posenc.analysis.appendix_items`); and its rule's metrics, claims and, where the
    rule keeps them apart, timings (``timing``, or None)."""
    cited = [
        key
        for e in config["encodings"]
        for key in references.keys(encodings[e]["citation"])
        if key in references.bibliography()
    ]
    return [
        {
            "id": name,
            "title": specs[name].title,
            "references": list(specs[name].references) + cited,
            "constants": dict(specs[name].constants),
            "appendix": appendix_items(specs[name]),
            "properties_of": specs[name].properties_of,
            "metrics": str(rule.output.metrics),
            "claims": str(rule.output.claims),
            "timing": str(rule.output.timing) if "timing" in rule.output.keys() else None,
        }
        for name, rule in sections.items()
    ]


def report_plan(
    rules: Iterable[Any],
    sections: Mapping[str, Any],
    specs: Mapping[str, Any],
    config: dict,
    encodings: dict,
    covered: Mapping[str, dict],
    own: Iterable[str],
) -> dict[str, Any]:
    """What the report reads of the workflow's ``rules``, as the keyword arguments of
    :func:`posenc.report.build_context` that name them:

    * ``sections``: :func:`report_sections`;
    * ``benchmark_rules``: each rule's ``benchmark:`` pattern, so that the job table names the
      rule and wildcards behind each file (read at render time: every job's file is written
      before the report runs, as it depends on every section);
    * ``timing_rules``: for a rule that may not have a benchmark (a cached one), the pattern
      of the ``timing`` output its jobs write instead, so that each of them is counted too;
    * ``ignore_benchmarks``: the benchmark files of the report's ``own`` rules, written after
      it renders;
    * ``code_digests``: the digest of the code each rule runs (its ``code`` param) and the
      modules it covers (``covered``: :attr:`posenc.codegraph.CodeGraph.covered`), for the
      provenance.
    """
    rules, own = list(rules), set(own)
    others = [r for r in rules if r.name not in own]
    return {
        "sections": report_sections(sections, specs, config, encodings),
        "benchmark_rules": {r.name: str(r.benchmark) for r in others if r.benchmark is not None},
        "timing_rules": {
            r.name: str(r.output.timing)
            for r in others
            if r.benchmark is None and "timing" in r.output.keys()
        },
        "ignore_benchmarks": [str(r.benchmark) for r in rules if r.name in own and r.benchmark],
        "code_digests": {
            r.name: {"digest": r.params.code, **covered[r.params.code]}
            for r in rules
            if "code" in r.params.keys() and isinstance(r.params.code, str)
        },
    }


def train_settings(config: dict, data: Mapping[str, Any], task: str, model: str) -> dict:
    """All a training run of the extrapolation study depends on: its task's data (``data``:
    by task), the model, the optimiser and its encoding's settings. A model with randomized
    positions (<encoding>+randomized) also trains on L_rand; a plain model's settings do not
    name it, so changing L_rand retrains only those."""
    xp = config["extrapolation"]
    encoding = variants.split_model(model)[0]
    settings = {
        "data": data[task],
        "model": xp["model"],
        "train": xp[task]["train"] | xp["training"],
        # Its encoding's own block of the encoding: settings, all it is built with: a change
        # to another encoding's retrains nothing of this one.
        "encoding": {encoding: config["encoding"].get(encoding, {})},
    }
    max_position = variants.randomized_max_position(config, model)
    return settings | ({"randomized_positions": max_position} if max_position else {})


def finetune_settings(config: dict, method: str, scale: int) -> dict:
    """What a fine-tune of the extension study reads: the method's parameters, the optimiser
    and the data; the base model is the rule's input file, so retraining it fine-tunes
    again."""
    ext = config["extension"]
    return {
        "method": method,
        "scale": scale,
        "params": ext["params"].get(method, {}),
        "train": ext["finetune"]["train"] | config["extrapolation"]["training"],
        "snapshots": ext["finetune"]["snapshots"],
    }
