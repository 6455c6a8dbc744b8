"""``posenc``, the command line: ``posenc card PLUGIN ...`` writes a report card for a user's
own encodings, next to the encodings they already know; ``posenc model CONFIG ...`` measures a
shipped model's positional code from its config.json alone (see :func:`model`).

    posenc card examples/alibi_learned_slopes.py --against rope alibi

It loads and probes the plugins first (:mod:`posenc.probe`, through the registry's metadata),
so a broken plugin stops here with one line and nothing is written; then it runs the whole
study (``snakemake``, this checkout's Snakefile) on the plugins' encodings plus the baselines,
in a folder of its own (``cards/<plugin>/`` by default), and prints the path of the report.
Every result is cached there as in any run: a second call reruns only what changed, so after
a Ctrl-C the same command resumes (:mod:`posenc.interrupt`). With ``SNAKEMAKE_OUTPUT_CACHE``
set, trained models are shared through Snakemake's cache.

The help is plain text (a terminal shows it as it is), so the parser's texts are written here
as plain strings, not taken from these docstrings.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from importlib import metadata
from pathlib import Path

import yaml

from posenc.paths import REPORT_PAGE
from posenc.workflow_root import ROOT

CONFIGS = {"default": None, "test": "test.yaml", "gpu": "gpu.yaml"}
# What each --config costs, for the help: the test config's cold run (README, Benchmarks: 123 s
# on 2 cores, before a card's own encodings) and the default study's (66.7 min on 2 cores).
# The test config is a card's default: a first card should take minutes, not an hour.
CONFIG_COSTS = {
    "test": "the small study, minutes (about 2 min on 2 cores, more for each plugin encoding)",
    "default": "the full study, about an hour on 2 cores (66.7 min measured)",
    "gpu": "the full study at full scale, for one large GPU",
}


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


def named_encodings(config: dict) -> dict[str, list[str]]:
    """The encodings the analyses' own sections name (lists under an ``encodings`` key, such
    as the context extension's or the randomized positions'), each with the config keys that
    name it: a card's study must train them too, or those sections would have nothing to
    measure."""
    found: dict[str, list[str]] = {}

    def walk(node, key, listed=False):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{key}.{k}", listed or k == "encodings")
        elif listed and isinstance(node, list):
            for name in node:
                found.setdefault(str(name), []).append(key)

    for section, value in config.items():
        if section != "encodings":
            walk(value, section)
    return found


def card_config(
    plugin_paths: list[Path], against: list[str] | None, config: str, known: dict[str, dict]
) -> tuple[dict, list[str], dict[str, list[str]]]:
    """The config a card runs on (merged over ``--config``'s files), the plugins' encodings,
    and the encodings added beyond the baselines asked for, each with the config keys whose
    sections need it (:func:`named_encodings`). ``known``: the registry's metadata with the
    plugins loaded."""
    base = merged(config_files(config))
    mine = [name for name, meta in known.items() if meta.get("plugin")]
    baselines = list(base["encodings"]) if against is None else list(against)
    unknown = [name for name in baselines if name not in known]
    if unknown:
        raise CardError(
            f"--against {' '.join(unknown)}: not a registered encoding; known: {', '.join(known)}"
        )
    needed = {
        name: keys
        for name, keys in named_encodings(base).items()
        if name not in baselines and name not in mine and name in known
    }
    encodings = list(dict.fromkeys([*mine, *baselines, *needed]))
    return {"plugins": [str(p) for p in plugin_paths], "encodings": encodings}, mine, needed


def added_lines(added: dict[str, list[str]], config: str) -> list[str]:
    """A line for each encoding a card trains beyond the baselines asked for, saying why."""
    return [
        f"posenc card: adds {name}: the {config} config's {' and '.join(keys)} "
        f"{'measure' if len(keys) > 1 else 'measures'} it"
        for name, keys in added.items()
    ]


def card(args: argparse.Namespace) -> int:
    from posenc import encoding_metadata, interrupt
    from posenc.plugins import PluginError

    if not (ROOT / "Snakefile").is_file():
        raise CardError(f"posenc card runs the workflow of a posenc checkout; none at {ROOT}")
    if not args.plugins:
        raise CardError(
            "no plugin file given: posenc card PLUGIN.py [more.py ...] [--against ENCODING ...]"
        )
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
    overrides, mine, added = card_config(paths, args.against, args.config, known)
    out = Path(args.out or Path("cards") / paths[0].stem).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "card.yaml").write_text(
        "# Written by posenc card: the plugins and the encodings of this card's study, merged\n"
        f"# over {', '.join(str(p.relative_to(ROOT)) for p in config_files(args.config))}.\n"
        + yaml.safe_dump(overrides, sort_keys=False)
    )
    asked = [n for n in overrides["encodings"] if n not in mine and n not in added]
    for line in (
        f"posenc card: {', '.join(mine)} against {', '.join(asked)} in {out}",
        *added_lines(added, args.config),
        f"posenc card: --config {args.config}: {CONFIG_COSTS[args.config]}",
    ):
        print(line, file=sys.stderr)
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
    status = interrupt.run(command, again=args.again, cwd=out)
    if status == interrupt.INTERRUPTED:
        return status
    if status:
        print(f"posenc card: the study failed (snakemake exit {status})", file=sys.stderr)
        return status
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


def version() -> str:
    """This package's version: the installed distribution's, else (a checkout run without
    installing it, through ``PYTHONPATH``) its pyproject.toml's, said as such."""
    try:
        return metadata.version("posenc")
    except metadata.PackageNotFoundError:
        import tomllib

        try:
            found = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown (not installed, and no pyproject.toml beside it)"
        return f"{found} (not installed: the checkout at {ROOT})"


def is_plugin_path(value: str) -> bool:
    """Whether a value given to --against is a plugin file rather than an encoding's name:
    names are identifiers (``rope``, ``t5_bias``), never a path or a .py file."""
    return value.endswith(".py") or "/" in value or os.sep in value or Path(value).is_file()


def baselines(values: list[str] | None) -> list[str] | None:
    """--against's encodings: given as ``--against rope alibi``, ``--against rope,alibi`` or
    ``--against rope --against alibi``."""
    if values is None:
        return None
    return [name for value in values for name in value.split(",") if name]


# Written as printed (RawDescriptionHelpFormatter keeps the examples' lines).
CARD_HELP = """\
Run the whole study on the encodings that the plugin files register, next to
baseline encodings, in a folder of its own, and print the path of the report
(its card at the top). Plugins are probed first: a broken one stops here with
one line, before anything is written. Every result is cached in the folder:
after a Ctrl-C or an edit, the same command resumes."""

CARD_EXAMPLES = """examples:
  posenc card my_encoding.py --against rope alibi
  posenc card my_encoding.py --against rope,alibi --config default
  posenc card my_encoding.py -- --dry-run     (arguments after -- go to snakemake)"""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="posenc",
        description="posenc, the study of positional encodings: a report card for your own "
        "encodings (posenc card), and the positional code of a shipped model from its "
        "config.json (posenc model).",
        epilog="posenc COMMAND --help says more. Arguments after -- go to snakemake as they "
        "are (posenc card x.py -- --dry-run).",
    )
    top.add_argument("--version", action="version", version=f"posenc {version()}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = commands.add_parser(
        "card",
        help="a report card for your own encodings",
        description=CARD_HELP,
        epilog=CARD_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("plugins", nargs="*", metavar="PLUGIN.py", help="plugin files (Python)")
    c.add_argument(
        "--against",
        action="extend",
        nargs="+",
        metavar="ENCODING",
        help="baseline encodings: --against rope alibi, --against rope,alibi or --against "
        "rope --against alibi (default: the config's own list). Encodings that the config's "
        "sections name (the context extension's, the randomized positions') are added, and "
        "the card says which and why. A .py file given here is taken as a plugin.",
    )
    costs = "; ".join(f"{name}: {cost}" for name, cost in CONFIG_COSTS.items())
    c.add_argument(
        "--config",
        choices=["test", "default", "gpu"],
        default="test",
        help=f"which study (default: test). {costs}",
    )
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
    return top


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line as :func:`main` reads it: arguments after ``--`` are Snakemake's,
    plugins may stand anywhere, --against's values are split on commas and any plugin file
    among them is a plugin."""
    split = argv.index("--") if "--" in argv else len(argv)
    ours, extra = argv[:split], argv[split + 1 :]
    top = parser()
    args, rest = top.parse_known_args(ours)
    # argparse takes a command's positional arguments in one run only: ``card a.py --config
    # test b.py`` leaves b.py over. Plugins anywhere on the line are plugins all the same.
    if args.command == "card" and not any(r.startswith("-") for r in rest):
        args.plugins += rest
    elif rest:
        top.error(f"unrecognized arguments: {' '.join(rest)}")
    args.snakemake_args = extra
    args.again = shlex.join(["posenc", *argv])
    if args.command == "card":
        against = baselines(args.against)
        if against is not None:
            # ``--against rope alibi my.py`` takes in the plugin too: it is one, not a baseline.
            args.plugins += [value for value in against if is_plugin_path(value)]
            against = [value for value in against if not is_plugin_path(value)] or None
        args.against = against
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    try:
        return args.run(args)
    except CardError as error:
        print(f"posenc {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before Snakemake started (probing the plugins, say)
        print(f"posenc {args.command}: interrupted; rerun the same command", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
