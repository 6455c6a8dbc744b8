"""A wheel built from this checkout installs a working tool: it holds the workflow (Snakefile,
rules, scripts, configs, templates, profiles, analyses, zoo), and, installed in a fresh virtual
environment, ``posenc`` runs from any folder with the installed package, not the checkout's.
Also that the dependencies pyproject.toml declares are the ones requirements.txt locks.

The wheel is built from a copy of the files git would commit (tracked and new, never ignored
ones), so that the build's ``build/`` and ``*.egg-info`` never land in the checkout. The
environment is made without pip (pip installs the wheel into it from here, ``--python``), and
sees the test environment's packages (torch, transformers, snakemake) through a ``.pth`` file
written after the install: pip never sees the editable posenc there, and the ``.pth`` files of
that folder (the editable install's finder among them) are not run, since only a site folder's
own ``.pth`` files are."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# The workflow's own folders and files outside the package, as the build copies them into the
# wheel's posenc/ (setup.py's WORKFLOW).
WORKFLOW = ("Snakefile", "rules", "workflow", "config", "report_templates", "profiles")


def git_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    # A file deleted but not yet staged is still listed: it is not in the tree.
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def expected_in_wheel(files: list[str]) -> set[str]:
    """Where each file the code reads at run time lands in the wheel: the workflow's files
    under posenc/, the analyses' under posenc/analyses/, the package's own; every file but
    documentation (``*.md``)."""
    wanted = set()
    for name in files:
        top = name.split("/")[0]
        if "__pycache__" in name or name.endswith(".md"):
            continue
        if top in WORKFLOW:
            wanted.add(f"posenc/{name}")
        elif top == "analyses":
            wanted.add(f"posenc/{name}")
        elif top == "posenc":
            wanted.add(name)
    return wanted


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The wheel built from a copy of the checkout, and a virtual environment it is installed
    in: ``{"wheel", "venv", "site"}``."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    for name in git_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp / "dist", source],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp / "dist").glob("posenc-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [*pip, "--python", python, "install", "--no-deps", "--no-index", wheel],
        check=True,
        capture_output=True,
    )
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # After the install (see the module's docstring): the dependencies, from this environment.
    ours = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    (site / "test_environment.pth").write_text("".join(f"{p}\n" for p in ours))
    return {"wheel": wheel, "venv": venv, "site": site}


def run_installed(installed: dict, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """A command of the installed environment, in ``cwd``, with no path of this process's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    command = [str(installed["venv"] / "bin" / args[0]), *args[1:]]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)


def test_the_wheel_holds_the_workflow(installed):
    with zipfile.ZipFile(installed["wheel"]) as wheel:
        held = set(wheel.namelist())
    missing = expected_in_wheel(git_files()) - held
    assert not missing, f"the wheel lacks {sorted(missing)}"
    for name in (
        "posenc/Snakefile",
        "posenc/rules/common.smk",
        "posenc/workflow/scripts/analysis.py",
        "posenc/config/test.yaml",
        "posenc/report_templates/index.html.j2",
        "posenc/report_templates/snakemake/workflow.rst",
        "posenc/profiles/default/config.yaml",
        "posenc/analyses/extension/rules.smk",
        "posenc/zoo/llama-3.2-1b.json",
        "posenc/references.yaml",
    ):
        assert name in held
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in held)


def test_the_installed_tool_runs_from_any_folder(installed, tmp_path):
    version = run_installed(installed, ["posenc", "--version"], tmp_path)
    assert version.returncode == 0, version.stderr
    assert PROJECT["version"] in version.stdout
    # The installed package, its workflow root inside it, and its analyses the ones the
    # Snakefile requires (posenc.analysis.check_installed): not the checkout's.
    where = run_installed(
        installed,
        [
            "python",
            "-c",
            "import posenc.cli; from posenc.analysis import check_installed;"
            "from posenc.workflow_root import ROOT; check_installed(ROOT);"
            "print(posenc.cli.__file__); print(ROOT)",
        ],
        tmp_path,
    )
    assert where.returncode == 0, where.stderr
    module, root = map(Path, where.stdout.split())
    assert module == installed["site"] / "posenc" / "cli.py"
    assert root == installed["site"] / "posenc"
    zoo_file = root / "zoo" / "llama-3.2-1b.json"
    done = run_installed(installed, ["posenc", "model", str(zoo_file), "--out", "m"], tmp_path)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "m" / "llama-3.2-1b" / "index.html"
    assert done.stdout.strip() == str(Path("m", "llama-3.2-1b", "index.html"))
    assert "llama-3.2-1b" in page.read_text()
    assert json.loads((page.parent / "model.json").read_text())["inv_freq"]


def requirement(text: str) -> tuple[str, str, str]:
    """``(normalised name, operator, version)`` of ``name==1.0`` or ``name>=1.0``."""
    found = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(==|>=)\s*([\w.]+)", text.strip())
    assert found, f"not name==version or name>=version: {text!r}"
    name, op, version = found.groups()
    return re.sub(r"[-_.]+", "-", name).lower(), op, version


def test_requirements_txt_locks_what_pyproject_declares():
    """Every package pyproject.toml declares, runtime, engines or dev, is pinned in
    requirements.txt at its lower bound, and nothing else is: the lock and the declaration
    cannot drift apart."""
    declared = [requirement(r) for r in PROJECT["dependencies"]]
    for extra in ("engines", "dev"):
        declared += [requirement(r) for r in PROJECT["optional-dependencies"][extra]]
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    locked = [requirement(ln.split("#")[0]) for ln in lines if ln.split("#")[0].strip()]
    assert {(n, v) for n, _, v in declared} == {(n, v) for n, _, v in locked}
    assert ("torch", "==", "2.13.0") in declared  # a loose range pulls a multi-GB CUDA build


def test_a_checkout_is_its_own_workflow_root():
    from posenc.workflow_root import ROOT as WORKFLOW_ROOT

    assert WORKFLOW_ROOT == ROOT


def test_an_installed_workflow_keeps_its_caches_in_the_working_folder(tmp_path, monkeypatch):
    # A wheel's package folder may be read-only and is shared by every folder that runs it;
    # a checkout keeps its caches beside its workflow, as it always has.
    from posenc.workflow_root import cache_dir

    package = tmp_path / "site-packages" / "posenc"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert cache_dir(package) == tmp_path / ".snakemake" / "posenc"
    assert cache_dir(ROOT) == ROOT / ".snakemake" / "posenc"
