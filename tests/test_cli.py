"""The ``posenc`` command line as a new user meets it: plain-text help, a version, the forms
of ``posenc card``'s arguments (a plugin never taken for a baseline), the test config as a
card's default, and a line for each encoding a card adds beyond the baselines asked for."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from posenc import cli
from posenc.encodings import REGISTRY

KNOWN = {name: {"plugin": None} for name in REGISTRY} | {"mine": {"plugin": "p.py"}}


def posenc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "posenc.cli", *args], capture_output=True, text=True
    )


@pytest.mark.parametrize("args", [["--help"], ["card", "--help"], ["model", "--help"]])
def test_help_is_plain_text(args):
    shown = posenc(*args)
    assert shown.returncode == 0, shown.stderr
    # No reST: no double backticks, no roles such as :func: or :mod:.
    assert "``" not in shown.stdout and not re.search(r":[a-z]+:`", shown.stdout)


def test_the_card_help_says_what_each_config_costs():
    shown = posenc("card", "--help").stdout
    flat = " ".join(shown.split())
    assert "(default: test)" in flat
    assert "test: the small study, minutes" in flat
    assert "about 105 min on 2 cores (83.4 min measured, plus the tasks)" in flat
    assert "gpu: the full study at full scale, for one large GPU" in flat


def test_the_version_is_the_packages():
    from importlib.metadata import version

    shown = posenc("--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"posenc {version('posenc')}"


def test_without_an_installed_package_the_version_is_the_checkouts(monkeypatch):
    def not_installed(name):
        raise cli.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(cli.metadata, "version", not_installed)
    assert cli.version() == f"0.1.0 (not installed: the checkout at {cli.ROOT})"


@pytest.mark.parametrize(
    "argv",
    [
        ["card", "my.py", "--against", "rope", "alibi"],  # as the README writes it
        ["card", "--against", "rope", "alibi", "my.py"],  # the plugin last
        ["card", "my.py", "--against", "rope,alibi"],
        ["card", "--against", "rope", "--against", "alibi", "my.py"],
        ["card", "--against", "rope", "--config", "test", "my.py", "--against", "alibi"],
    ],
    ids=["documented", "plugin last", "commas", "repeated", "intermixed"],
)
def test_every_form_of_against_keeps_the_plugin_a_plugin(argv):
    args = cli.parse(argv)
    assert args.plugins == ["my.py"]
    assert args.against == ["rope", "alibi"]
    assert args.config == "test"  # a card's default: minutes, not the hour of the full study


def test_plugins_may_stand_anywhere_and_snakemake_gets_what_follows_the_dashes():
    args = cli.parse(["card", "a.py", "--config", "default", "dir/b.py", "--", "-n", "html"])
    assert args.plugins == ["a.py", "dir/b.py"]
    assert args.against is None and args.config == "default"
    assert args.snakemake_args == ["-n", "html"]
    assert args.again == "posenc card a.py --config default dir/b.py -- -n html"


def test_a_card_with_no_plugin_is_one_line(tmp_path):
    shown = subprocess.run(
        [sys.executable, "-m", "posenc.cli", "card", "--against", "rope", "alibi"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert shown.returncode == 2
    assert shown.stderr.splitlines() == [
        "posenc card: no plugin file given: posenc card PLUGIN.py [more.py ...] "
        "[--against ENCODING ...]"
    ]
    assert not (tmp_path / "cards").exists()


def test_a_card_names_each_encoding_it_adds_and_why():
    # The test config's randomized positions train the learned table: a card against rope
    # alone trains learned too, and says so.
    overrides, mine, added = cli.card_config([Path("/p.py")], ["rope"], "test", KNOWN)
    assert mine == ["mine"] and overrides["encodings"][:2] == ["mine", "rope"]
    assert "learned" in added and "rope" not in added
    assert set(overrides["encodings"]) == {"mine", "rope", *added}
    lines = cli.added_lines(added, "test")
    assert len(lines) == len(added)
    assert (
        "posenc card: adds learned: the test config's "
        "extrapolation.randomized_positions.encodings.passkey measures it"
    ) in lines
    # Asked for, nothing is added.
    _, _, none_added = cli.card_config([Path("/p.py")], ["rope", *added], "test", KNOWN)
    assert none_added == {}
