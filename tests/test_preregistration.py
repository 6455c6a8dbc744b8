"""The pre-registration record (config/preregistration.yaml): a row for every threshold and for
every training, task and evaluation setting of the extrapolation LMs and passkey models, each
value the config's (or the code's) now, each commit one of this repository's, a malformed row
rejected naming it, and the report's appendix rendered from the file."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from fake_report import two_sections

from posenc import preregistration
from posenc.analysis import READING_ORDER
from posenc.preregistration import PreregistrationError, parse
from posenc.report import build_context, render

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "config" / "preregistration.yaml"
CONFIG = ROOT / "config" / "config.yaml"
# Every section whose claims are judged against thresholds (every analysis, in the reports'
# order); each must keep its block.
SECTIONS = READING_ORDER
# Settings in code that decide claims as thresholds do.
CODE_SETTINGS = (
    "analyses.extrapolation.preconditions.FIRE_JUDGED_AT",
    "analyses.extrapolation.preconditions.T5_TRAIN_RATIO",
    "analyses.extrapolation.learned.LEARNED_REFERENCE",
)


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load(CONFIG.read_text())


@pytest.fixture(scope="module")
def rows() -> list:
    return preregistration.load(RECORD)


def leaves(block: dict, prefix: str) -> list[str]:
    """Every dotted path under ``block`` that holds a value, not a mapping."""
    out = []
    for name, value in block.items():
        path = f"{prefix}.{name}"
        out += leaves(value, path) if isinstance(value, dict) else [path]
    return out


def required_keys(config: dict) -> list[str]:
    keys = []
    for section in SECTIONS:
        keys += leaves(config[section]["thresholds"], f"{section}.thresholds")
    for task in ("lm", "passkey"):
        keys += leaves(config["extrapolation"][task], f"extrapolation.{task}")
    # The fine-tune's recipe: a recipe setting like the models' own.
    keys += leaves(config["extension"]["finetune"]["train"], "extension.finetune.train")
    # The tasks study's recipe: what it trains and tests (not the scheduler's resources, nor
    # the test config's smoke-test switch).
    skipped = ("thresholds", "resources", "smoke_test")
    tasks = {k: v for k, v in config["tasks"].items() if k not in skipped}
    keys += leaves(tasks, "tasks")
    return [*keys, *CODE_SETTINGS, "encoding.t5_bias.max_distance"]


# ----------------------------------------------------------------------------- coverage


def test_every_threshold_and_recipe_setting_has_a_row(rows, config):
    assert preregistration.missing(rows, required_keys(config)) == []


def test_every_value_is_what_the_config_or_the_code_holds_now(rows, config):
    assert preregistration.mismatches(rows, config) == []


def test_a_missing_key_is_reported(rows, config):
    key = "extrapolation.thresholds.passkey_min_learners"
    fewer = [r for r in rows if r.key != key]
    assert preregistration.missing(fewer, required_keys(config)) == [key]


def test_a_value_that_differs_is_reported_naming_the_key(rows, config):
    changed = {**config, "shipped": {**config["shipped"], "thresholds": {"agree_ulps": 17}}}
    problems = preregistration.mismatches(rows, changed)
    assert "shipped.thresholds.agree_ulps: recorded 16, now 17" in problems
    assert any(p.startswith("shipped.thresholds.angle_rad: recorded 0.1, but") for p in problems)


# ----------------------------------------------------------------------------- history


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.fixture(scope="module")
def history():
    """Skips where the history is not here to check against."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("no git checkout (an installed copy): the commits cannot be checked")
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone: the commits the record names may be missing")


def is_ancestor(older: str, newer: str = "HEAD") -> bool:
    return git("merge-base", "--is-ancestor", older, newer).returncode == 0


def test_every_commit_is_one_of_this_history(rows, history):
    named = {r.fixed_at for r in rows if r.fixed_at}
    named |= {r.changed_after.commit for r in rows if r.changed_after}
    assert sorted(c for c in named if not is_ancestor(c)) == []


def test_results_seen_come_no_later_than_the_change(rows, history):
    late = [
        r.key
        for r in rows
        if r.changed_after and r.fixed_at and not is_ancestor(r.changed_after.commit, r.fixed_at)
    ]
    assert late == []


def test_a_row_without_a_commit_is_for_a_key_new_since_head(rows, history):
    committed = yaml.safe_load(git("show", "HEAD:config/config.yaml").stdout)
    old = []
    for row in rows:
        if row.fixed_at is None:
            try:
                preregistration.current_value(row.key, committed)
            except KeyError:
                continue
            old.append(row.key)
    assert old == []


# ----------------------------------------------------------------------------- malformed rows


GOOD = {"key": "a.thresholds.b", "value": 1, "fixed_at": "abc1234", "changed_after": None}


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({**GOOD, "fixed_at": "abc12"}, "(a.thresholds.b): field 'fixed_at'"),
        ({**GOOD, "fixed_at": None}, "(a.thresholds.b): field 'fixed_at' may be null only"),
        ({k: v for k, v in GOOD.items() if k != "value"}, "(a.thresholds.b): field 'value'"),
        ({k: v for k, v in GOOD.items() if k != "changed_after"}, "field 'changed_after' is"),
        ({**GOOD, "changed_after": {"commit": "abc1234"}}, "field 'changed_after.result'"),
        ({**GOOD, "changed_after": {"commit": "HEAD", "result": "x."}}, "'changed_after.commit'"),
        ({**GOOD, "changed_after": "ed5578a"}, "(a.thresholds.b): field 'changed_after'"),
        ({**GOOD, "seen": True}, "(a.thresholds.b): field 'seen' is not one of"),
        ({**GOOD, "note": ""}, "(a.thresholds.b): field 'note'"),
        ({**GOOD, "key": "thresholds"}, "row 1: field 'key' must be a dotted path"),
        ("a.thresholds.b", "row 1: must be a mapping"),
    ],
)
def test_a_malformed_row_is_rejected_naming_the_row_and_the_field(row, words):
    with pytest.raises(PreregistrationError) as err:
        parse([row], "record")
    message = str(err.value)
    assert message.startswith("record: row 1") and words in message
    assert "\n" not in message


def test_a_key_listed_twice_is_rejected():
    with pytest.raises(PreregistrationError, match=r"row 2 \(a.thresholds.b\): key listed twice"):
        parse([GOOD, GOOD], "record")


def test_a_new_key_may_wait_for_its_commit_with_the_note():
    new = {**GOOD, "fixed_at": None, "note": f"{preregistration.NEW_KEY_NOTE}."}
    [row] = parse([new])
    assert row.fixed_at is None


def test_the_real_record_names_its_file_when_malformed(tmp_path):
    broken = tmp_path / "preregistration.yaml"
    broken.write_text(RECORD.read_text().replace("fixed_at: e13e12f", "fixed_at: soon", 1))
    with pytest.raises(PreregistrationError, match=r"preregistration.yaml: row 1 \(equivar"):
        preregistration.load(broken)


# ----------------------------------------------------------------------------- the report


def test_the_report_prints_the_record_in_an_appendix(tmp_path, monkeypatch, config):
    monkeypatch.chdir(tmp_path)
    fake = two_sections(tmp_path)
    # A run whose config sets one recorded value otherwise shows both.
    fake["config"]["extrapolation"] = {"thresholds": {"passkey_min_learners": 2}}
    context = build_context(**fake, preregistration_file=RECORD)
    html = render(context, fake["template_dir"], "screen", "")
    assert 'id="preregistration"' in html and "Pre-registration record</a>" in html
    record = context["preregistration"]
    assert record["total"] == len(preregistration.load(RECORD))
    assert record["changed_after"] == sum(r["changed_after"] is not None for r in record["rows"])
    [row] = [r for r in record["rows"] if r["key"].endswith("passkey_min_learners")]
    assert row["value"] == "3" and row["run_value"] == "2"
    assert "this run: <code>2</code>" in html
    assert f"<code>{row['changed_after']['commit']}</code>" in html
    assert row["changed_after"]["result"].replace("'", "&#39;") in html
    # A reader of the printed record gets commits and settings, not the project's file names.
    printed = render(context, fake["template_dir"], "print", "")
    appendix = printed.split('id="preregistration"')[1]
    assert re.findall(r"[\w./-]+\.(?:py|ya?ml|smk|json|j2|md|log)\b", appendix) == []
    # Without the file the page has no appendix (and no link to one).
    bare = render(build_context(**fake), fake["template_dir"], "screen", "")
    assert "preregistration" not in bare


def test_the_report_rule_declares_the_record_as_an_input():
    rule = (ROOT / "rules" / "report.smk").read_text().split("rule report:")[1]
    inputs = rule.split("output:")[0]
    assert "preregistration=PREREGISTRATION" in inputs
    assert (
        'PREREGISTRATION = str(BASE / "config" / "preregistration.yaml")'
        in (ROOT / "rules" / "report.smk").read_text()
    )
