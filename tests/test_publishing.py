"""How the results leave the machine: Snakemake's own report (``snakemake --report``) and the
GitHub Actions workflow that rebuilds our report and publishes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_utils import snakemake

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "report.yml"


def test_the_publishing_workflow_passes_actionlint():
    actionlint = Path(sys.executable).with_name("actionlint")
    proc = subprocess.run(
        [str(actionlint), "-no-color", str(WORKFLOW.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_publishing_workflow_rebuilds_caches_and_publishes():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    # PyYAML reads the key `on` as True (YAML 1.1).
    triggers = workflow[True]
    assert triggers["push"]["branches"] == ["main"] and "pull_request" in triggers
    steps = workflow["jobs"]["build"]["steps"]
    runs = [s.get("run", "") for s in steps]
    uses = {s["uses"].split("@")[0]: s for s in steps if "uses" in s}
    # The README's commands, on the CPU (default) config.
    assert "make setup" in runs and "make report" in runs
    # results/ and Snakemake's metadata survive between runs.
    for step in ("actions/cache/restore", "actions/cache/save"):
        assert uses[step]["with"]["path"].split() == ["results", ".snakemake"]
    assert uses["actions/upload-pages-artifact"]["with"]["path"] == "results/report"
    assert uses["actions/upload-artifact"]["if"] == "github.event_name == 'pull_request'"
    deploy = workflow["jobs"]["deploy"]
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@")
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}


@pytest.mark.slow
def test_snakemake_builds_its_own_report_with_every_figure(test_run):
    if os.environ.get("POSENC_TEST_RUN"):
        pytest.skip("asks Snakemake about the test config: only on a run this session made")
    out = "results/snakemake-report.html"
    snakemake(test_run, "--report", out, "--configfile", "config/test.yaml")
    html = (test_run / out).read_text()
    figures = [
        f["png"]
        for metrics in sorted(test_run.glob("results/*/metrics.json"))
        for f in json.loads(metrics.read_text()).get("figures", [])
    ]
    assert figures

    # Every figure of our report is also a result in Snakemake's (marked with report(...)),
    # and so are the PDF and the ledger. Results are keyed by path in the page's data.
    def is_result(path):
        return f'"{path}": {{"name"' in html

    assert [path for path in figures if not is_result(path)] == []
    assert is_result("results/report/report.pdf") and is_result("results/claims.json")
