#!/usr/bin/env bash
# The wheels the GPU machine lacks, built here for its Python, to travel with the working tree
# (the machine has no network; carried files are limited to 64 MiB in all):
#
#   benchmarks/wheelhouse.sh [DIR]        download into DIR (default .wheelhouse, git-ignored)
#   benchmarks/wheelhouse.sh --install DIR   on the GPU machine: install from DIR, offline
#
# The machine has Python 3.12 with torch 2.11 (CUDA), transformers 5.17, matplotlib, seaborn,
# jinja2, pandas and scipy. It lacks snakemake and its SLURM plugin, weasyprint, x-transformers
# and rotary-embedding-torch, and the project's exact transformers pin (5.24.0). Those come as
# wheels for CPython 3.12 on x86-64 Linux, with their dependencies but never torch (the
# machine's CUDA build stays; the project runs on torch 2.11 as on 2.13) and none of the
# packages the machine has (benchmarks/gpu-machine-packages.txt). WeasyPrint installs,
# but renders no PDF without Pango, which the machine does not have: benchmarks/gpu.sh skips
# the PDF there and says so in its summary.
#
# Environment: WHEELHOUSE_PYTHON (default python3.12, which must run here to resolve the
# dependencies for 3.12), PYTHON for --install (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

# What the machine needs, at the project's pins (requirements.txt is the one source of them).
WANTED=(snakemake snakemake-executor-plugin-slurm weasyprint tinycss2 jsonschema
        transformers x-transformers rotary-embedding-torch)

pins() {
    local name
    for name in "${WANTED[@]}"; do
        grep -iE "^${name}==" requirements.txt || { echo "no pin for $name in requirements.txt" >&2; exit 1; }
    done
}

if [[ "${1:-}" == "--install" ]]; then
    DIR="${2:?--install DIR}"
    PY="${PYTHON:-python3}"
    # Offline, from the wheels alone; the machine's torch satisfies what depends on torch.
    "$PY" -m pip install --no-index --find-links "$DIR" $(pins)
    "$PY" -m pip install --no-index --no-deps --no-build-isolation -e .
    exit 0
fi

DIR="${1:-.wheelhouse}"
PY="${WHEELHOUSE_PYTHON:-python3.12}"
mkdir -p "$DIR"
# A resolver that runs under 3.12 picks the dependencies 3.12 needs. pip cannot leave one
# dependency out, so the two packages that depend on torch come without dependencies, and
# theirs other than torch here, at the versions the pip path resolves to (einops and sympy are
# on the machine; an offline install of that machine's image found each of these missing).
TORCH_FREE_DEPS=(einx==0.4.3 loguru==0.7.3 frozendict==2.5.1 torch-einops-utils==0.2.0)
# `pip wheel` rather than `pip download`: a dependency published only as source
# (connection_pool, say) is built into a wheel here, so that the machine installs wheels alone.
"$PY" -m pip wheel --wheel-dir "$DIR" \
    $(pins | grep -viE "^(x-transformers|rotary-embedding-torch)==")
"$PY" -m pip wheel --no-deps --wheel-dir "$DIR" \
    $(pins | grep -iE "^(x-transformers|rotary-embedding-torch)==") "${TORCH_FREE_DEPS[@]}"
# The machine's large packages (over 1 MiB: numpy, pandas, pillow, ...) stay as they are:
# their wheels would only take up the carry. Small ones travel anyway, in case the machine's
# version is older than a dependency asks (pip installs them only then). A package the project
# pins (transformers 5.24.0 where the machine has 5.17) is carried.
"$PY" - "$DIR" benchmarks/gpu-machine-packages.txt "${WANTED[@]}" <<'PRUNE'
import re, sys
from pathlib import Path

folder, listing, wanted = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731 -- PEP 503 names
present = {norm(l) for l in listing.read_text().split("\n") if l and not l.startswith("#")}
present -= {norm(w) for w in wanted}
pruned = []
for wheel in folder.glob("*.whl"):
    if norm(wheel.name.split("-")[0]) in present and wheel.stat().st_size > 2**20:
        pruned.append(norm(wheel.name.split("-")[0]))
        wheel.unlink()
# What the install relies on the machine for (a rehearsal elsewhere installs these first).
(folder / "from-the-machine.txt").write_text("".join(f"{p}\n" for p in sorted(pruned)))
PRUNE
size=$(du -sm "$DIR" | cut -f1)
echo "wheelhouse: $(ls "$DIR" | wc -l) wheels, ${size} MiB in $DIR" >&2
if (( size > 60 )); then
    echo "wheelhouse: over 60 MiB: too much to carry with the working tree" >&2
    exit 1
fi
