"""The one build step pyproject.toml cannot say: a wheel's ``posenc`` package gets a copy of
the workflow (the Snakefile and what it reads), so that ``posenc card`` runs from an installed
wheel as from a checkout. Everything else (metadata, packages, package data) is in
pyproject.toml.

Why a copy into ``posenc/`` and not a package of its own: the Snakefile requires its
``analyses/`` folder to be the one Python imports as ``posenc.analyses``, which a wheel installs
at ``posenc/analyses/``, and the rules reach ``../analyses`` and ``../workflow`` from
``rules/``; so the workflow's root in a wheel is the package's folder
(``posenc.workflow_root``). Package data cannot name files outside a package's folder, hence
this command rather than a ``package-data`` entry.

An editable install copies nothing: the checkout itself is the workflow's root there."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# What the workflow reads from its root at parse and run time (tests/test_wheel.py checks a
# wheel holds them): rules/ and workflow/scripts/ are the rules' code, config/ the configs
# `posenc card --config` names and the schema, report_templates/ the report's templates and
# Snakemake's captions, profiles/default the workflow profile Snakemake reads beside the
# Snakefile (its rerun triggers decide what reruns).
WORKFLOW = (
    "Snakefile",
    "rules/*.smk",
    "workflow/scripts/*.py",
    "config/*.yaml",
    "report_templates/**/*",
    "profiles/*/config.yaml",
)


def workflow_files() -> list[str]:
    """The files of ``WORKFLOW``, relative to the checkout (as sdist lists them)."""
    found = {p for pattern in WORKFLOW for p in HERE.glob(pattern) if p.is_file()}
    return sorted(p.relative_to(HERE).as_posix() for p in found if "__pycache__" not in p.parts)


class BuildWithWorkflow(build_py):
    """build_py, then the workflow's files copied into the built ``posenc/``."""

    def run(self):
        super().run()
        if self.editable_mode:
            return
        for name in workflow_files():
            target = Path(self.build_lib, "posenc", name)
            self.mkpath(str(target.parent))
            self.copy_file(str(HERE / name), str(target), preserve_mode=False)

    def get_source_files(self):
        # sdist lists these, so that a wheel built from the sdist (python -m build) has them.
        return [*super().get_source_files(), *workflow_files()]


setup(cmdclass={"build_py": BuildWithWorkflow})
