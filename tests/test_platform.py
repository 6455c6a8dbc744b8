"""The platform is real, through the command a researcher runs: ``posenc card`` on the
example plugin a newcomer copies (ALiBi with learned slopes, a bias) and on three toy encodings
registered from outside the registry file (an input table, a qk one, and a qk one whose heads
differ), next to baselines,
on the test config. Each plugin encoding turns up in every analysis' metrics, in the figures'
legends, in the report and on its report card, with no edit anywhere else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import background
import pytest

from posenc import cli
from posenc.analysis import discover
from posenc.claims import VERDICTS

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
ROOT = HERE.parent
TOYS = ("toy_sinusoidal", "toy_rotary", "toy_head_base")
PLUGGED = (*TOYS, "alibi_learned")
# Each plugin encoding's built-in of the same place of action: wherever an analysis measures
# that one, it must measure the plugin's too (the aliasing analysis has nothing to say about a
# score bias, built-in or not).
COUNTERPART = {
    "toy_sinusoidal": "learned",
    "toy_rotary": "rope",
    "toy_head_base": "rope",
    "alibi_learned": "alibi",
}
BASELINES = background.BASELINES


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> Path:
    """The card's folder: ``posenc card`` run as documented, in a folder of its own, started in
    the background when the session was collected (:mod:`background`)."""
    run = background.RUNS["toy_run"]
    if run.thread is None:
        run.start(tmp_path_factory.mktemp("toy_run"))
    return run.result()


def card(toys: Path, out: Path, *snakemake_args: str):
    return background.card(toys, out, *snakemake_args)


def card_config(run: Path) -> dict:
    return cli.merged([*cli.config_files("test"), run / "card.yaml"])


def _text(paths) -> str:
    return "\n".join(Path(p).read_text() for p in paths)


@pytest.mark.parametrize("name", PLUGGED)
def test_a_plugin_encoding_reaches_every_analysis_and_the_report(toy_run, name):
    specs = discover(ROOT)
    assert specs, "no analyses found"
    config = card_config(toy_run)
    for aid, spec in specs.items():
        if spec.encodings_of is not None and name not in spec.encodings_of(config):
            continue  # an analysis of some encodings only, not configured for this one
        folder = toy_run / "results" / aid
        # An analysis that cannot measure an encoding says so, with the reason (n/a), as it
        # says of the plugin's counterpart.
        not_measured = json.loads((folder / "metrics.json").read_text())["summary"].get(
            "not_measured", {}
        )
        if name in not_measured:
            assert COUNTERPART[name] in not_measured, f"{aid}: {name} n/a, unlike its counterpart"
            continue
        data = _text([folder / "metrics.json", *(folder / f"{c}.csv" for c in spec.csvs)])
        if COUNTERPART[name] not in data:
            continue  # an analysis of other kinds of encoding
        assert name in data, f"{name} is not in {aid}'s metrics or tables"
        svgs = [folder / f"{fid}.svg" for fid in spec.figures]
        assert any(name in svg.read_text() for svg in svgs), f"{name} in no {aid} figure"
    html = (toy_run / "results/report/index.html").read_text()
    assert name in html
    claims = json.loads((toy_run / "results/claims.json").read_text())
    assert claims and all(c["verdict"] in VERDICTS for c in claims)


def test_the_card_shows_the_plugins_next_to_the_baselines(toy_run):
    data = json.loads((toy_run / "results/card/card.json").read_text())
    rows = {r["encoding"]: r for r in data["rows"]}
    assert list(rows)[: len(PLUGGED)] == list(PLUGGED)
    assert set(BASELINES) <= set(rows)
    assert all(rows[n]["plugin"] for n in PLUGGED)
    assert not any(rows[n]["plugin"] for n in BASELINES)
    # Every analysis with columns contributes; every plugin encoding has measured cells.
    specs = discover(ROOT)
    assert {c["section"] for c in data["columns"]} == {a for a, s in specs.items() if s.card}
    for name in PLUGGED:
        assert any(c["verdict"] != "missing" for c in rows[name]["cells"]), name
    html = (toy_run / "results/report/index.html").read_text()
    assert html.index('id="card"') < html.index('id="claims"')
    assert "alibi_learned (plugin)" in html


def test_editing_a_plugin_retrains_its_models_and_no_others(toy_run):
    # A plugin's source is its encodings' training code: after an edit, the next run plans to
    # retrain them, and only them.
    toys = toy_run.parent / "toy_encodings.py"
    source = toys.read_text()

    def planned_training() -> int:
        proc = card(toys, toy_run, "--dry-run")
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, log[-3000:]
        # The dry run's job table: "extrapolation_train   N".
        found = re.search(r"^extrapolation_train\s+(\d+)$", log, re.MULTILINE)
        return int(found.group(1)) if found else 0

    assert planned_training() == 0  # up to date
    try:
        toys.write_text(source + "\n# a comment changes no meaning\n")
        assert planned_training() == 0
        toys.write_text(source + "\n_EDITED = True  # a change of meaning\n")
        retrained = planned_training()
    finally:
        toys.write_text(source)
    # Only the edited plugin's models: the baselines' and the example's stay as they are.
    models = toy_run / "results/extrapolation/models"
    mine = [m for m in models.rglob("model.pt") if m.parts[-3].split("+")[0] in TOYS]
    assert retrained == len(mine) > 0
    assert len(mine) < len(list(models.rglob("model.pt")))


def test_an_encoding_whose_heads_differ_is_measured_head_by_head(toy_run):
    """toy_head_base is RoPE whose head h has base 10000·16^h, head 0 RoPE's: read at one head
    it would equal RoPE everywhere. The similarity, rotation and aliasing sections measure each
    group of its heads, and differ from RoPE's where its heads do."""
    results = toy_run / "results"

    def metrics(aid: str) -> dict:
        return json.loads((results / aid / "metrics.json").read_text())

    similarity = metrics("similarity")
    decay = similarity["evidence"]["decay_far_ratio"]
    toy = {k: v for k, v in decay.items() if k.startswith("toy_head_base+heads ")}
    rope = [v for k, v in decay.items() if k.startswith("rope d=")]
    assert len(toy) >= 2 and rope
    assert min(toy.values()) == min(rope) < max(toy.values())
    by_head = (results / "similarity" / "kernel_properties_by_head.csv").read_text()
    assert by_head.count("toy_head_base,") >= 2

    bases = metrics("rotation")["summary"]["qk_bases"]
    assert bases["rope"] == 10000
    assert len(set(bases["toy_head_base"].values())) == len(bases["toy_head_base"]) >= 2
    assert min(bases["toy_head_base"].values()) == 10000

    tables = {t["encoding"]: t["base"] for t in metrics("aliasing")["summary"]["tables"]}
    toy_tables = {e: b for e, b in tables.items() if e.startswith("toy_head_base+heads ")}
    assert len(set(toy_tables.values())) == len(toy_tables) >= 2
    assert min(toy_tables.values()) == 10000  # its own base: aliasing.bases names RoPE's family
