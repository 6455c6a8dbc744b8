"""What the report's rule reads of the other rules (posenc.ruleset), on stand-ins for
Snakemake's rule objects: the sections in order, each rule's benchmark or timing pattern, the
report's own benchmarks apart, and every rule's code digest."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from posenc import ruleset
from posenc.analysis import Figure, Table

ROOT = Path(__file__).resolve().parents[1]


class Files(SimpleNamespace):
    """Named files, as a rule's ``output`` or ``params``: attributes, ``keys()`` and
    iteration over the values."""

    def keys(self):
        return list(vars(self))

    def __iter__(self):
        return iter(vars(self).values())


def rule(name, output, benchmark=None, code=None):
    params = Files(code=code) if code else Files()
    return SimpleNamespace(name=name, output=Files(**output), benchmark=benchmark, params=params)


SECTIONS = {
    "beta": rule(
        "beta",
        {"metrics": "results/beta/metrics.json", "claims": "results/beta/claims.json"},
        "results/benchmarks/beta.tsv",
        code="b1",
    ),
    "alpha": rule(
        "alpha",
        {
            "metrics": "results/alpha/metrics.json",
            "claims": "results/alpha/claims.json",
            "timing": "results/alpha/timing.json",
        },
        "results/benchmarks/alpha.tsv",
    ),
}
# A cached rule: no benchmark; its jobs time themselves.
TRAIN = rule("train", {"model": "m/{seed}.pt", "timing": "m/{seed}/timing.json"}, code="t1")
REPORT = rule("report", {"html": "index.html"}, "results/benchmarks/report.tsv", code="r1")
SPECS = {
    "alpha": SimpleNamespace(
        title="Alpha",
        references=("su2021",),
        constants={"heads": 2},
        figures={"curve": Figure("A curve.", placement="appendix")},
        tables={"cases": Table("Cases.")},
        properties_of=None,
    ),
    "beta": SimpleNamespace(
        title="Beta",
        references=(),
        constants={},
        figures={},
        tables={},
        properties_of="the configurations open models ship",
    ),
}
CONFIG = {"encodings": ["rope"]}
ENCODINGS = {"rope": {"citation": "su2021"}}
COVERED = {code: {"roots": [code], "modules": ["posenc.x"]} for code in ("b1", "t1", "r1")}


def plan():
    rules = [*SECTIONS.values(), TRAIN, REPORT]
    return ruleset.report_plan(rules, SECTIONS, SPECS, CONFIG, ENCODINGS, COVERED, ("report",))


def test_the_sections_keep_the_report_order_and_name_their_files():
    sections = plan()["sections"]
    assert [s["id"] for s in sections] == ["beta", "alpha"]
    assert sections[1] == {
        "id": "alpha",
        "title": "Alpha",
        "references": ["su2021", "su2021"],  # its spec's, then the encodings' own
        "constants": {"heads": 2},
        # Where its figures and tables go, and what its claims are properties of.
        "appendix": {"figures": ["curve"], "tables": []},
        "properties_of": None,
        "metrics": "results/alpha/metrics.json",
        "claims": "results/alpha/claims.json",
        "timing": "results/alpha/timing.json",
    }
    assert sections[0]["timing"] is None
    assert ruleset.section_files(SECTIONS)[:2] == [
        "results/beta/metrics.json",
        "results/beta/claims.json",
    ]


def test_every_job_is_found_by_its_benchmark_or_its_timing_file():
    found = plan()
    assert found["benchmark_rules"] == {
        "beta": "results/benchmarks/beta.tsv",
        "alpha": "results/benchmarks/alpha.tsv",
    }
    # A rule with a benchmark is timed by it, even if it writes a timing file too.
    assert found["timing_rules"] == {"train": "m/{seed}/timing.json"}
    assert found["ignore_benchmarks"] == ["results/benchmarks/report.tsv"]


def test_every_rule_with_a_code_param_has_its_digest_and_modules():
    digests = plan()["code_digests"]
    assert set(digests) == {"beta", "train", "report"}
    assert digests["train"] == {"digest": "t1", "roots": ["t1"], "modules": ["posenc.x"]}


def test_the_rule_helpers_import_no_torch():
    # The rule files import these at parse time.
    code = (
        "import sys; import posenc.ruleset, posenc.paths, posenc.report; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
