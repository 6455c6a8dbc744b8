"""The platform is real: two encodings registered from outside the registry file (a 7th, an
input table, and an 8th of another kind, qk) run through the whole workflow on the test config
as plugins, and each turns up in every analysis' metrics, in the figures' legends and in the
report, with no edit anywhere else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from workflow_utils import copy_workflow, snakemake

from posenc.analysis import discover

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
TOYS = ("toy_sinusoidal", "toy_rotary")


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> Path:
    work = copy_workflow(tmp_path_factory.mktemp("platform"))
    shutil.copy(HERE / "toy_encodings.py", work / "toy_encodings.py")
    test_cfg = yaml.safe_load((work / "config/test.yaml").read_text())
    base = yaml.safe_load((work / "config/config.yaml").read_text())
    extra = {"plugins": ["toy_encodings.py"], "encodings": [*base["encodings"], *TOYS]}
    # The rotary toy is also stretched: the extension analysis measures the encodings it lists.
    extension = {**test_cfg["extension"], "encodings": ["rope", "toy_rotary"]}
    toys = {**test_cfg, **extra, "extension": extension}
    (work / "config/toys.yaml").write_text(yaml.safe_dump(toys))
    snakemake(work, "--cores", "2", "--configfile", "config/toys.yaml")
    return work


def _text(paths) -> str:
    return "\n".join(Path(p).read_text() for p in paths)


@pytest.mark.parametrize("name", TOYS)
def test_a_plugin_encoding_reaches_every_analysis_and_the_report(toy_run, name):
    specs = discover(toy_run)
    assert specs, "no analyses found"
    config = yaml.safe_load((toy_run / "config/toys.yaml").read_text())
    for aid, spec in specs.items():
        if spec.encodings_of is not None and name not in spec.encodings_of(config):
            continue  # an analysis of some encodings only, not configured for this one
        folder = toy_run / "results" / aid
        data = _text([folder / "metrics.json", *(folder / f"{c}.csv" for c in spec.csvs)])
        assert name in data, f"{name} is not in {aid}'s metrics or tables"
        svgs = [folder / f"{fid}.svg" for fid in spec.figures]
        assert any(name in svg.read_text() for svg in svgs), f"{name} in no {aid} figure"
    html = (toy_run / "results/report/index.html").read_text()
    assert name in html
    claims = json.loads((toy_run / "results/claims.json").read_text())
    assert claims and all(c["verdict"] in ("pass", "fail", "n/a") for c in claims)
