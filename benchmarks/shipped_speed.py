"""How long the shipped section takes on the whole zoo, and ``posenc model`` on a 10M-position
config (Llama 4 Scout's), against the issue's targets: the section within 2 minutes on 2
cores, ``posenc model`` within 30 s. Both run with the default config's ``shipped`` block, in
fresh processes (imports of torch and transformers included), on ``--threads`` threads, and
the peak resident memory of each is reported (chunked scans keep it bounded).

    python benchmarks/shipped_speed.py [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION_TARGET_S, MODEL_TARGET_S = 120.0, 30.0
SCOUT = ROOT / "posenc" / "zoo" / "llama-4-scout-17b-16e-instruct.json"

SECTION = """
import json, resource, time
start = time.perf_counter()
from posenc.analyses.shipped.compute import compute
from posenc.analysis import Context
from posenc.cli import config_files, merged
config = merged(config_files("default"))
m = compute(Context(cfg=config["shipped"], seed=0, encodings=[], encoding={{}}, device="cpu"))
print(json.dumps({{"seconds": time.perf_counter() - start, "models": m.summary["n_models"],
                   "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def run(command: list[str], threads: int, cwd: Path) -> tuple[float, str]:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    prefix = ["taskset", "-c", ",".join(map(str, range(args.threads)))]
    with tempfile.TemporaryDirectory() as tmp:
        wall, out = run([*prefix, sys.executable, "-c", SECTION.format()], args.threads, ROOT)
        section = json.loads(out.strip().splitlines()[-1])
        print(
            f"shipped section, whole zoo ({section['models']} models): {wall:.1f} s wall "
            f"(compute {section['seconds']:.1f} s), peak {section['peak_mb']:.0f} MB; "
            f"target <= {SECTION_TARGET_S:.0f} s: {'met' if wall <= SECTION_TARGET_S else 'MISSED'}"
        )
        wall, out = run(
            [*prefix, sys.executable, "-m", "posenc.cli", "model", str(SCOUT), "--out", tmp],
            args.threads,
            Path(tmp),
        )
        print(
            f"posenc model on {SCOUT.name} (10485760 positions): {wall:.1f} s wall; target <= "
            f"{MODEL_TARGET_S:.0f} s: {'met' if wall <= MODEL_TARGET_S else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
