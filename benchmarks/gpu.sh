#!/usr/bin/env bash
# The GPU study, end to end, and the throughput benchmark, on a CUDA machine, in parts that each
# fit one command of at most 10 minutes and skip what is already done:
#
#   benchmarks/gpu.sh install [DIR] the packages the machine lacks, offline, from the wheels
#                                  benchmarks/wheelhouse.sh built (DIR, default .wheelhouse)
#   benchmarks/gpu.sh env          the machine (GPU, torch, CUDA) -> env.json
#   benchmarks/gpu.sh throughput   tokens/s of the config's model per encoding, bf16 autocast,
#                                  against the SDPA reference of the same size -> throughput.json
#   benchmarks/gpu.sh study [ARGS] snakemake on the GPU config, stopped (SIGINT, as Ctrl-C) after
#                                  GPU_BENCH_LIMIT_S seconds; run it again until it says done
#                                  (exit 75 means "stopped at the limit, run me again"). ARGS go
#                                  to snakemake, e.g. --until extrapolation_train to run only up
#                                  to the trainings; a study with ARGS is never marked done
#   benchmarks/gpu.sh summary      per-rule wall times, tokens/s and peak GPU memory per
#                                  encoding, the targets -> summary.json and summary.md
#   benchmarks/gpu.sh all          env, throughput, study, summary (stops after study at 75)
#
# No Pango (the GPU machine has none): WeasyPrint cannot load, so the study renders the page
# and the claims but not the PDF, and pdf.json says why; the summary says so.
#
# Resuming: Snakemake skips finished jobs; a training stopped mid-way resumes from its last
# checkpoint (extrapolation.training.checkpoint_every steps) with --rerun-incomplete; every
# study command's wall time is appended to study_runs.jsonl, and the study's time is their sum.
# The limit (540 s, then 30 s for Snakemake to stop its jobs) keeps each command under 10
# minutes however the study is split. To split it by stage instead, in this order:
#   benchmarks/gpu.sh study --until extrapolation_train        the trainings (~4-6 min)
#   benchmarks/gpu.sh study --until extrapolation_evaluate extension_evaluate
#   benchmarks/gpu.sh study                                     the analyses and the report
#
# Options: --tiny (first argument) runs the same parts at the test config's scale on the CPU
# (config/test.yaml + config/gpu-tiny.yaml, device cpu, out results/gpu-benchmark-tiny): what
# tests/test_gpu_benchmark.py and a machine without a GPU can run. Environment:
#   GPU_BENCH_CONFIGS   config files merged over config/config.yaml (default config/gpu.yaml)
#   GPU_BENCH_DEVICE    overrides the config's device (default: the config's, auto on gpu.yaml)
#   GPU_BENCH_OUT       where the benchmark's files go (default results/gpu-benchmark)
#   GPU_BENCH_LIMIT_S   seconds one study command may run (default 540: 10 minutes with room)
#   GPU_BENCH_CORES     snakemake --cores (default: every CPU)
#   GPU_BENCH_STEPS, GPU_BENCH_REPEATS   the throughput benchmark's (default 20 and 5)
#   GPU_BENCH_RESULTS   the workflow's results folder the summary reads (default results)
#   PYTHON, SNAKEMAKE   the interpreter and snakemake (default: .venv's if present)
set -euo pipefail

cd "$(dirname "$0")/.."

tiny=0
if [[ "${1:-}" == "--tiny" ]]; then
    tiny=1
    shift
fi
part="${1:-all}"
[[ $# -gt 0 ]] && shift

if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
if [[ -z "${SNAKEMAKE:-}" ]]; then
    SNAKEMAKE="$(dirname "$PYTHON")/snakemake"
    [[ -x "$SNAKEMAKE" ]] || SNAKEMAKE=snakemake
fi
RESULTS="${GPU_BENCH_RESULTS:-results}"

if [[ $tiny == 1 ]]; then
    CONFIGS="${GPU_BENCH_CONFIGS:-config/test.yaml config/gpu-tiny.yaml}"
    DEVICE="${GPU_BENCH_DEVICE:-cpu}"
    OUT="${GPU_BENCH_OUT:-results/gpu-benchmark-tiny}"
    STEPS="${GPU_BENCH_STEPS:-2}"
    REPEATS="${GPU_BENCH_REPEATS:-1}"
else
    CONFIGS="${GPU_BENCH_CONFIGS:-config/gpu.yaml}"
    DEVICE="${GPU_BENCH_DEVICE:-}"
    OUT="${GPU_BENCH_OUT:-results/gpu-benchmark}"
    STEPS="${GPU_BENCH_STEPS:-20}"
    REPEATS="${GPU_BENCH_REPEATS:-5}"
fi
LIMIT_S="${GPU_BENCH_LIMIT_S:-540}"
CORES="${GPU_BENCH_CORES:-$(nproc)}"
read -r -a config_files <<<"$CONFIGS"
mkdir -p "$OUT"

say() { echo "gpu.sh $part: $*" >&2; }

part_env() {
    if [[ -f "$OUT/env.json" ]]; then
        say "done before ($OUT/env.json)"
        return 0
    fi
    "$PYTHON" benchmarks/gpu_bench.py env --out "$OUT"
    if [[ $tiny == 0 ]] && ! grep -q '"cuda_available": true' "$OUT/env.json"; then
        rm -f "$OUT/env.json"
        say "torch sees no CUDA device here; this is the GPU benchmark (--tiny runs it on the CPU)"
        return 1
    fi
}

part_throughput() {
    if [[ -f "$OUT/throughput.json" ]]; then
        say "done before ($OUT/throughput.json)"
        return 0
    fi
    local device="${DEVICE:-auto}"
    "$PYTHON" benchmarks/gpu_bench.py throughput --configfile "${config_files[@]}" \
        --device "$device" --steps "$STEPS" --repeats "$REPEATS" --out "$OUT"
}

part_install() {
    local dir="${1:-.wheelhouse}"
    if "$PYTHON" -c "import snakemake, x_transformers, rotary_embedding_torch" 2>/dev/null; then
        say "done before (snakemake and the conformance libraries import)"
        return 0
    fi
    PYTHON="$PYTHON" benchmarks/wheelhouse.sh --install "$dir"
}

# Whether WeasyPrint can render here (it loads Pango when imported); pdf.json records it.
pdf_check() {
    local why
    if why="$("$PYTHON" -c "import weasyprint" 2>&1)"; then
        echo '{"rendered": true}' >"$OUT/pdf.json"
        return 0
    fi
    why="$(printf '%s' "$why" | tail -n 1)"
    "$PYTHON" -c 'import json, sys; print(json.dumps({"rendered": False, "reason": sys.argv[1]}))' \
        "WeasyPrint cannot load here: $why" >"$OUT/pdf.json"
    say "no PDF: WeasyPrint cannot load ($why); rendering the page and the claims only"
    return 1
}

part_study() {
    if [[ -f "$OUT/study.done" && $# -eq 0 ]]; then
        say "done before ($OUT/study.done)"
        return 0
    fi
    local overrides=()
    [[ -n "$DEVICE" ]] && overrides=(--config "device=$DEVICE")
    local targets=()
    if [[ $# -eq 0 ]] && ! pdf_check; then
        targets=(results/report/index.html results/claims.json)
    fi
    local args=(--cores "$CORES" --rerun-incomplete --configfile "${config_files[@]}" "${overrides[@]}" "$@")
    [[ ${#targets[@]} -gt 0 ]] && args=("${targets[@]}" "${args[@]}")
    # A command stopped at the limit leaves Snakemake's lock behind; nothing else may run here.
    "$SNAKEMAKE" --unlock --configfile "${config_files[@]}" >/dev/null 2>&1 || true
    local started rc=0 began ended
    started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    began="$(date +%s.%N)"
    timeout --signal=INT --kill-after=30 "$LIMIT_S" "$SNAKEMAKE" "${args[@]}" || rc=$?
    ended="$(date +%s.%N)"
    "$PYTHON" - "$OUT/study_runs.jsonl" "$started" "$began" "$ended" "$rc" "$@" <<'EOF'
import json, sys
path, started, began, ended, rc, *args = sys.argv[1:]
record = {"started": started, "seconds": float(ended) - float(began), "rc": int(rc), "args": args}
with open(path, "a") as f:
    f.write(json.dumps(record) + "\n")
EOF
    if [[ $rc -eq 0 ]]; then
        if [[ $# -eq 0 ]]; then
            touch "$OUT/study.done"
            say "done"
        else
            say "done with $*; run 'gpu.sh study' for the rest"
        fi
        return 0
    fi
    if [[ $rc -eq 124 ]]; then
        say "stopped at the ${LIMIT_S} s limit; run it again to resume"
        return 75
    fi
    say "snakemake failed (exit $rc)"
    return "$rc"
}

part_summary() {
    "$PYTHON" benchmarks/gpu_bench.py summary --out "$OUT" --results "$RESULTS"
}

case "$part" in
    install) part_install "$@" ;;
    env) part_env ;;
    throughput) part_throughput ;;
    study) part_study "$@" ;;
    summary) part_summary ;;
    all)
        part_env
        part_throughput
        part_study "$@"
        part_summary
        ;;
    *)
        echo "usage: benchmarks/gpu.sh [--tiny] install [DIR]|env|throughput|study [SNAKEMAKE ARGS]|summary|all" >&2
        exit 2
        ;;
esac
