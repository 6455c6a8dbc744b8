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
import functools
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
    "default": "the full study, about 105 min on 2 cores (83.4 min measured, plus the tasks)",
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
    # A card's tasks train all of its encodings (card_config), whatever the config lists.
    return {
        name: kept
        for name, keys in found.items()
        if (kept := [k for k in keys if k not in CARD_ALL])
    }


# Section keys a card sets to all of its encodings: its plugin's encodings are what it is for.
CARD_ALL = ("tasks.encodings",)


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
    overrides: dict = {"plugins": [str(p) for p in plugin_paths], "encodings": encodings}
    for key in CARD_ALL:
        section, name = key.split(".")
        if section in base:
            overrides[section] = {name: "all"}
    return overrides, mine, needed


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


def parse_contexts(values: list[str] | None) -> list[int]:
    """--context's values as positions: whole numbers from 2 to 2^53 (past it, float64, the
    truth every error is measured from, no longer holds whole positions)."""
    from posenc.shipped.reading import MAX_CONTEXT

    out = []
    for value in values or []:
        try:
            n = int(value.replace("_", ""))
        except ValueError:
            n = None
        if n is None or not 2 <= n <= MAX_CONTEXT:
            raise CardError(
                f"--context {value}: must be a whole number of positions from 2 to 2^53"
            )
        out.append(n)
    return out


def output_folders(names: list[str], out: Path) -> tuple[list[Path], list[str]]:
    """A folder under ``out`` per input, distinct even where two inputs share a name (the
    second ``name-2``, and so on), with a line saying so for each renamed one."""
    taken: dict[str, int] = {}
    folders, lines = [], []
    for name in names:
        taken[name] = taken.get(name, 0) + 1
        folder = name if taken[name] == 1 else f"{name}-{taken[name]}"
        while folder in taken and folder != name:
            taken[name] += 1
            folder = f"{name}-{taken[name]}"
        taken.setdefault(folder, 1)
        folders.append(out / folder)
        if folder != name:
            lines.append(
                f"posenc model: two inputs are named {name}: this one goes to {out / folder}"
            )
    return folders, lines


def model(args: argparse.Namespace) -> int:
    """``posenc model PATH ...``: each Hugging Face config.json (or a folder holding one) read with
    transformers' own config class, offline, and measured as the shipped section measures the
    zoo (frequencies, precision per path, distinguishability, layout; ``posenc.shipped``) at
    each ``--context`` (default: the file's ``advertised_context``, else its
    ``max_position_embeddings``). Writes ``<out>/<name>/model.json`` and
    ``<out>/<name>/index.html`` and prints each page's path.

    Every file is read and checked before transformers is imported, and measured before
    anything is written: nonsense is one line naming the file, the key and what is valid, and
    nothing is written. Exit 0, 2 on a refusal, 1 under ``--strict`` when a precision path fails
    at a requested context."""
    from posenc.shipped.reading import ModelError, model_name, read_config_file, validate

    contexts = parse_contexts(args.context)
    engines = asked_engines(args.engines)
    out = Path(args.out)
    blocking = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise CardError(f"--out {args.out}: {blocking} is a file, not a folder")
    entries, warnings = [], []
    try:
        for given in args.configs:
            entry = read_config_file(Path(given))
            warnings.append(validate(entry, given, bool(contexts)))
            entries.append((given, entry))
    except ModelError as error:
        raise CardError(str(error)) from None
    names = [model_name(Path(given)) for given, _ in entries]
    folders, renamed = output_folders(names, out)
    for lines in warnings:
        for line in lines:
            print(f"posenc model: warning: {line}", file=sys.stderr)

    from transformers.utils import logging as transformers_logging

    from posenc.shipped.model import measure, measure_settings

    # transformers' warnings speak to a model's authors (set `factor`, not the original length):
    # the page and posenc's own warning lines say what matters to the practitioner.
    transformers_logging.set_verbosity_error()

    settings = measure_settings(shipped_config(), seed=0)
    measured = []
    for (given, entry), name in zip(entries, names):
        try:
            measured.append(measure(entry, name, settings, where=given, contexts=contexts))
        except ModelError as error:
            raise CardError(str(error)) from None
        except Exception as error:  # noqa: BLE001 - a config posenc's checks let through
            first = (str(error).splitlines() or [""])[0]
            raise CardError(
                f"{given}: transformers or posenc could not measure it "
                f"({type(error).__name__}: {first}); please report this config"
            ) from None
    if engines:
        from posenc.engines.check import engine_checks

        checks = engine_checks(
            [(entry, m["model"], m["context"]) for (_, entry), m in zip(entries, measured)],
            engines,
            settings,
            shipped_config()["thresholds"],
        )
        for m in measured:
            m["engines"] = checks.get(m["model"], {})
    try:
        pages = write_pages(measured, folders, warnings, settings)
    except OSError as error:
        raise CardError(f"--out {args.out}: cannot write ({error.strerror or error})") from None
    for line in renamed:
        print(line, file=sys.stderr)
    for page in pages:
        print(page)
    if args.strict:
        failing = [
            f"{m['model']} {lt['layer_type']} at {b['context']}: {path}"
            for m in measured
            for lt in m["layer_types"]
            for b in lt["by_context"]
            for path, v in b["verdict"].items()
            if v["fails"]
        ]
        if failing:
            print(
                f"posenc model: --strict: {len(failing)} precision paths fail "
                f"({'; '.join(failing[:4])}{'; …' if len(failing) > 4 else ''})",
                file=sys.stderr,
            )
            return 1
    return 0


def asked_engines(asked: list[str] | None) -> list[str]:
    """--engines' names, checked before anything is read (``all``: every engine, those not
    installed shown as such; a name not installed is refused, naming ``make engines``)."""
    if not asked:
        return []
    from posenc.engines import EngineError, resolve

    try:
        return resolve("all" if "all" in asked else asked)
    except EngineError as error:
        raise CardError(f"--engines: {error}") from None


@functools.cache
def shipped_config() -> dict:
    """The shipped section's block of the default config (read once per process)."""
    return merged(config_files("default"))["shipped"]


@functools.cache
def model_page():
    """(the page's template, the report's screen stylesheet), compiled once per process."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from posenc.report.render import stylesheet_for

    env = Environment(
        loader=FileSystemLoader(str(Path(__file__).parent / "shipped")),
        autoescape=select_autoescape(("html", "j2")),
    )
    css = stylesheet_for((ROOT / "report_templates" / "style.css").read_text(), "screen")
    return env.get_template("model.html.j2"), css


def write_pages(
    measured: list[dict], folders: list[Path], warnings: list[list[str]], settings: dict
) -> list[Path]:
    """Each model's model.json and index.html in its folder; the pages' paths."""
    import transformers

    from posenc.io import write_json
    from posenc.shipped.page import PATH_LOOK, advice, figure, verdict_lines
    from posenc.shipped.precision import PATHS

    page, css = model_page()
    pages = []
    for m, folder, lines in zip(measured, folders, warnings):
        m["warnings"] = lines
        m["verdicts"] = verdict_lines(m)
        m["advice"] = advice(m)
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / "model.json", m)
        (folder / "index.html").write_text(
            page.render(
                m=m,
                css=css,
                paths=PATHS,
                looks=PATH_LOOK,
                threshold=settings["angle_rad"],
                per_octave=settings["per_octave"],
                versions={"transformers": transformers.__version__},
                warnings=m["warnings"],
                verdicts=m["verdicts"],
                advice=m["advice"],
                svg=figure(m, settings["angle_rad"]),
            )
        )
        pages.append(folder / "index.html")
    return pages


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
        "transformers' own config classes, offline (a file on disk: hub ids are not "
        "downloaded); measure its rotary frequencies, precision per path and "
        "distinguishability at each context; write <out>/<name>/model.json and index.html and "
        "print the page's path. No weights. Nonsense in a config (a string or NaN where a "
        "number belongs, theta or a factor <= 0, a rotated share outside (0, 1], a LongRoPE "
        "list of the wrong length) is refused in one line naming the key, and nothing is "
        "written. Exit 0; 2 on a refusal; 1 with --strict when a path fails.",
    )
    mo.add_argument("configs", nargs="+", metavar="PATH", help="config.json files or folders")
    mo.add_argument("--out", default="models", help="output folder (default: models/)")
    mo.add_argument(
        "--context",
        action="append",
        metavar="N",
        help="measure at N positions, the context you serve; repeat for several (default: the "
        "file's advertised_context key where it has one, else its max_position_embeddings)",
    )
    mo.add_argument(
        "--engines",
        nargs="+",
        metavar="NAME",
        help="also run these training and serving engines' own rotary code on each config and "
        "compare it with transformers' (vllm, sglang, torchtitan, torchtune, litgpt, "
        "olmo-core, megatron-core, keras-hub, or all); those not in .venv are built by "
        "`make engines`",
    )
    mo.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any precision path fails at a requested context (for CI)",
    )
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
