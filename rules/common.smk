# Shared helpers for the rule files. Every analysis rule follows one convention so the report
# can find it: named outputs `metrics` (metrics.json, with its figures and tables listed) and
# `claims` (the ledger); `log:` and `benchmark:` under results/logs and results/benchmarks.
import hashlib
import importlib.util
import subprocess
from pathlib import Path

from posenc.encodings import ENCODINGS

# Report sections in order: each analysis' rule file registers the rule that writes its
# metrics.json and claims.json, e.g. SECTIONS["equivariance"] = rules.equivariance.
SECTIONS = {}

wildcard_constraints:
    encoding="|".join(ENCODINGS),
    seed=r"\d+",


def log_path(name):
    return f"results/logs/{name}.log"


def bench_path(name):
    return f"results/benchmarks/{name}.tsv"


def git_state():
    """Commit and dirty flag, so a new commit re-renders the report (a params change)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
            cwd=workflow.basedir,
        ).stdout.strip()
        dirty = bool(subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
            text=True, check=True, cwd=workflow.basedir,
        ).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", True
    return {"commit": commit, "dirty": dirty}


def code_digest(*modules):
    """A digest of the source of the modules a script imports (found, not imported: no torch
    at parse time), for params: a change there reruns the rule and re-keys the cache."""
    digest = hashlib.sha256()
    for name in modules:
        digest.update(Path(importlib.util.find_spec(name).origin).read_bytes())
    return digest.hexdigest()[:16]
