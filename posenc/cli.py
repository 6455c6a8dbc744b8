"""``posenc``, the command line: ``posenc card PLUGIN ...`` writes a report card for a user's
own encodings, next to the encodings they already know; ``posenc model CONFIG ...`` measures a
shipped model's positional code from its config.json alone (see :func:`model`).

    posenc card examples/alibi_learned_slopes.py --config test --against rope alibi

It loads and probes the plugins first (:mod:`posenc.probe`, through the registry's metadata),
so a broken plugin stops here with one line and nothing is written; then it runs the whole
study (``snakemake``, this checkout's Snakefile) on the plugins' encodings plus the baselines,
in a folder of its own (``cards/<plugin>/`` by default), and prints the path of the report.
Every result is cached there as in any run: a second call reruns only what changed. With
``SNAKEMAKE_OUTPUT_CACHE`` set, trained models are shared through Snakemake's cache.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import yaml

from posenc.paths import REPORT_PAGE
from posenc.workflow_root import ROOT

CONFIGS = {"default": None, "test": "test.yaml", "gpu": "gpu.yaml"}


class CardError(ValueError):
    """Bad input to ``posenc card``: the message is the one line shown."""


def merged(files: list[Path]) -> dict:
    """The config ``files`` make, merged in order as Snakemake merges --configfile's."""
    from snakemake.utils import update_config

    config: dict = {}
    for path in files:
        update_config(config, yaml.safe_load(path.read_text()) or {})
    return config


def config_files(name: str) -> list[Path]:
    """The config files of ``--config name``, in merge order."""
    files = [ROOT / "config" / "config.yaml"]
    if CONFIGS[name]:
        files.append(ROOT / "config" / CONFIGS[name])
    return files


def named_encodings(config: dict) -> list[str]:
    """The encodings the analyses' own sections name (lists under an ``encodings`` key, such
    as the context extension's or the randomized positions'): a card's study must train them
    too, or those sections would have nothing to measure."""
    found: list[str] = []

    def walk(node, listed=False):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, listed or k == "encodings")
        elif listed and isinstance(node, list):
            found.extend(str(n) for n in node)

    for section, value in config.items():
        if section != "encodings":
            walk(value)
    return list(dict.fromkeys(found))


def card_config(
    plugin_paths: list[Path], against: list[str] | None, config: str, known: dict[str, dict]
) -> tuple[dict, list[str]]:
    """The config a card runs on (merged over ``--config``'s files) and the plugins'
    encodings. ``known``: the registry's metadata with the plugins loaded."""
    base = merged(config_files(config))
    mine = [name for name, meta in known.items() if meta.get("plugin")]
    baselines = list(base["encodings"]) if against is None else list(against)
    unknown = [name for name in baselines if name not in known]
    if unknown:
        raise CardError(
            f"--against {' '.join(unknown)}: not a registered encoding; known: {', '.join(known)}"
        )
    needed = [n for n in named_encodings(base) if n not in baselines and n in known]
    encodings = list(dict.fromkeys([*mine, *baselines, *needed]))
    return {
        "plugins": [str(p) for p in plugin_paths],
        "encodings": encodings,
    }, mine


def card(args: argparse.Namespace) -> int:
    from posenc import encoding_metadata
    from posenc.plugins import PluginError

    if not (ROOT / "Snakefile").is_file():
        raise CardError(f"posenc card runs the workflow of a posenc checkout; none at {ROOT}")
    paths = []
    for given in args.plugins:
        path = Path(given).resolve()
        if not path.is_file():
            raise CardError(f"plugin {given}: no such file")
        paths.append(path)
    try:  # loads and probes every plugin: a broken one stops here, before anything is written
        known = encoding_metadata.metadata([str(p) for p in paths], ROOT)
    except PluginError as error:
        raise CardError(str(error)) from None
    overrides, mine = card_config(paths, args.against, args.config, known)
    out = Path(args.out or Path("cards") / paths[0].stem).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "card.yaml").write_text(
        "# Written by posenc card: the plugins and the encodings of this card's study, merged\n"
        f"# over {', '.join(str(p.relative_to(ROOT)) for p in config_files(args.config))}.\n"
        + yaml.safe_dump(overrides, sort_keys=False)
    )
    others = [n for n in overrides["encodings"] if n not in mine]
    print(
        f"posenc card: {', '.join(mine)} against {', '.join(others)} "
        f"({args.config} config) in {out}",
        file=sys.stderr,
    )
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(out),
        "--configfile",
        *map(str, config_files(args.config)),
        str(out / "card.yaml"),
        "--cores",
        str(args.cores),
        # Before an option: --cache takes rule names, and would swallow a target after it.
        *(["--cache"] if os.environ.get("SNAKEMAKE_OUTPUT_CACHE") else []),
        "--rerun-incomplete",
        *args.snakemake_args,
    ]
    done = subprocess.run(command, cwd=out)
    if done.returncode:
        print(f"posenc card: the study failed (snakemake exit {done.returncode})", file=sys.stderr)
        return done.returncode
    report = out / REPORT_PAGE
    if report.is_file():
        print(report)
    else:  # snakemake was given targets short of the report (after --)
        print(f"posenc card: done; no report in {out} yet", file=sys.stderr)
    return 0


def model(args: argparse.Namespace) -> int:
    """``posenc model PATH ...``: each Hugging Face config.json (or a folder holding one) read with
    transformers' own config class, offline, and measured as the shipped section measures the
    zoo (frequencies, precision per path, distinguishability, layout; ``posenc.shipped``).
    Writes ``<out>/<name>/model.json`` and ``<out>/<name>/index.html`` and prints each page's
    path. Every file is read and measured before anything is written: bad input is one line
    naming the file and the key, and nothing is written."""
    import json

    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from posenc.io import write_json
    from posenc.shipped.model import measure, measure_settings
    from posenc.shipped.precision import PATHS
    from posenc.shipped.reading import ModelError, model_name, read_config_file

    cfg = merged(config_files("default"))["shipped"]
    settings = measure_settings(cfg, seed=0)
    measured = []
    try:
        for given in args.configs:
            entry = read_config_file(Path(given))
            name = model_name(Path(given))
            measured.append((name, measure(entry, name, settings, where=given)))
    except ModelError as error:
        raise CardError(str(error)) from None
    import transformers

    env = Environment(
        loader=FileSystemLoader(str(Path(__file__).parent / "shipped")),
        autoescape=select_autoescape(("html", "j2")),
    )
    page = env.get_template("model.html.j2")
    out = Path(args.out)
    for name, m in measured:
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / "model.json", m)
        (folder / "index.html").write_text(
            page.render(
                m=m,
                paths=PATHS,
                threshold=settings["angle_rad"],
                versions={"transformers": transformers.__version__},
                layout=json.dumps(m["layout"], indent=1),
            )
        )
        print(folder / "index.html")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="posenc", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    c = commands.add_parser(
        "card",
        help="a report card for your own encodings",
        description="Run the whole study on the encodings the plugin files register, next to "
        "baseline encodings, and print the path of the report (its card at the top).",
    )
    c.add_argument("plugins", nargs="+", metavar="PATH", help="plugin files (Python)")
    c.add_argument(
        "--against",
        nargs="+",
        metavar="ENCODING",
        help="baseline encodings (default: the config's own list)",
    )
    c.add_argument("--config", choices=list(CONFIGS), default="default", help="which config")
    c.add_argument("--cores", default="all", help="cores for snakemake (default: all)")
    c.add_argument("--out", help="the card's folder (default: cards/<first plugin's name>)")
    c.set_defaults(run=card)
    mo = commands.add_parser(
        "model",
        help="a shipped model's positional code, from its config.json alone",
        description="Read each Hugging Face config.json (or folder holding one) with "
        "transformers' own config classes, offline; measure its rotary frequencies, precision "
        "per path at its own context and distinguishability; write <out>/<name>/model.json and "
        "index.html and print the page's path. No weights.",
    )
    mo.add_argument("configs", nargs="+", metavar="PATH", help="config.json files or folders")
    mo.add_argument("--out", default="models", help="output folder (default: models/)")
    mo.set_defaults(run=model)
    top.epilog = "Arguments after -- go to snakemake as they are (posenc card x.py -- --dry-run)."
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser().parse_args(
        argv[: len(argv) - len(extra) - 1] if extra or "--" in argv else argv
    )
    args.snakemake_args = extra
    try:
        return args.run(args)
    except CardError as error:
        print(f"posenc {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
