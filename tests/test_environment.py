"""The pip path (requirements.txt) and the conda path (environment.yml) pin the same packages."""

import re

import yaml
from workflow_utils import ROOT


def requirement_lines():
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return sorted(line.split("#")[0].strip() for line in lines if line.split("#")[0].strip())


def test_environment_yml_matches_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(pip_section) == requirement_lines()


def test_every_requirement_is_pinned_and_torch_is_2_13():
    reqs = requirement_lines()
    assert all(re.fullmatch(r"[A-Za-z0-9_.\[\]-]+==[\w.]+", r) for r in reqs), reqs
    assert "torch==2.13.0" in reqs  # a loose range pulls a multi-GB CUDA build
