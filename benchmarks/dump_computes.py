"""Run analyses' computes in process on a config and write what they measured, for a byte
comparison of two checkouts (a refactor that must change no number):

    python benchmarks/dump_computes.py CHECKOUT OUT [--config default] ANALYSIS ...

Each analysis' rows are written as OUT/<id>/<rows>.csv, its evidence and summary as sorted
JSON; no trained model is read (an analysis' trained inputs are left out). CHECKOUT's own
``posenc`` and analyses are imported (before 2026-12-05 analyses were the bare ``analyses``
package). Compare with ``diff -r OUT_BEFORE OUT_AFTER``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("analyses", nargs="+")
    parser.add_argument("--config", default="default")
    args = parser.parse_args()
    root = args.checkout.resolve()
    sys.path.insert(0, str(root))  # this checkout's posenc before any installed one
    import torch

    from posenc.analysis import Context
    from posenc.cli import config_files, merged
    from posenc.io import write_csv

    cfg = merged(config_files(args.config))
    bare = not (root / "posenc" / "shipped").is_dir()
    if not bare:
        # posenc.analyses is mapped to the checkout's analyses/ by its install: map it to this
        # checkout's, whichever checkout is installed.
        folder = root / "analyses"
        spec = importlib.util.spec_from_file_location(
            "posenc.analyses", folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        sys.modules["posenc.analyses"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    for aid in args.analyses:
        module = importlib.import_module(f"{'' if bare else 'posenc.'}analyses.{aid}.compute")
        if not Path(module.__file__).resolve().is_relative_to(root):
            sys.exit(f"{aid}: imported from {module.__file__}, not from {root}")
        ctx = Context(
            cfg=cfg[aid],
            seed=cfg.get("seed", 0),
            encodings=list(cfg["encodings"]),
            encoding=dict(cfg.get("encoding", {})),
            device=torch.device("cpu"),
        )
        m = module.compute(ctx)
        folder = args.out / aid
        folder.mkdir(parents=True, exist_ok=True)
        for name, rows in m.rows.items():
            write_csv(folder / f"{name}.csv", rows)
        for part in ("evidence", "summary"):
            text = json.dumps(getattr(m, part), sort_keys=True, indent=1, default=str)
            (folder / f"{part}.json").write_text(text)
        print(aid, "written", file=sys.stderr)


if __name__ == "__main__":
    main()
