"""What an analysis is: one folder ``analyses/<id>/`` holding

* ``spec.py``    torch-free, read at parse time: ``SPEC = AnalysisSpec(...)`` with the title,
  figures (id -> caption), tables, claims, resources;
* ``compute.py`` ``compute(ctx) -> Measurements``: tidy rows and named evidence, no verdicts,
  no prose;
* ``present.py`` one ``figure_<id>(m, ctx)`` per figure and one ``table_<id>(m, ctx)`` per
  table;
* ``section.html.j2`` its prose and layout (a ``body(s)`` macro); shows numbers, computes none;
* ``schema.yaml`` its config schema (``additionalProperties: false``);
* optionally ``rules.smk``, for stages that run before it (training, say).

The workflow builds one rule per spec (``rules/analyses.smk``) and one generic script runs it
(``workflow/scripts/analysis.py``). A figure or a table is declared once, here.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from posenc.claims import Claim

# Where a figure or table is placed: in its section's body, or in the appendix of further
# figures and tables, where the body points to it in one line. The body is what a reader
# reads through (and prints: the PDF's body has a page budget); the appendix, what a reader
# who checks a number looks up.
PLACEMENTS = ("body", "appendix")


@dataclass(frozen=True)
class Figure:
    """A figure: its caption may name values of the analysis' evidence or summary in braces;
    Snakemake's own report shows the caption with each such value named instead.
    ``placement``: one of :data:`PLACEMENTS`."""

    caption: str
    placement: str = "body"

    def __post_init__(self):
        _check_placement(self.placement, self.caption)


@dataclass(frozen=True)
class Table:
    """A table: its title (braces as for a figure's caption) and the CSV of rows behind it (a
    name in ``Measurements.rows``), offered for download beside it; None for none.
    ``placement``: one of :data:`PLACEMENTS`."""

    title: str
    csv: str | None = None
    placement: str = "body"

    def __post_init__(self):
        _check_placement(self.placement, self.title)


def _check_placement(placement: str, what: str) -> None:
    if placement not in PLACEMENTS:
        raise ValueError(
            f"{what[:60]!r}: placement {placement!r} is not one of {', '.join(PLACEMENTS)}"
        )


def appendix_items(spec: AnalysisSpec) -> dict[str, list[str]]:
    """The ids of the figures and tables ``spec`` places in the appendix."""
    return {
        "figures": [k for k, f in spec.figures.items() if f.placement == "appendix"],
        "tables": [k for k, t in spec.tables.items() if t.placement == "appendix"],
    }


@dataclass(frozen=True)
class Resources:
    """What an analysis' job asks of the scheduler. ``threads``: the threads it computes on.
    ``exclusive``: the job must run with nothing beside it (timings: another job would share
    its caches, memory bandwidth and allocator): the rule then holds every core the workflow
    has (``--cores``), and under SLURM asks for a node of its own; it still computes on
    ``threads``."""

    threads: int = 1
    mem_mb: int = 2000
    runtime: int = 15  # minutes
    exclusive: bool = False


@dataclass(frozen=True)
class CardColumn:
    """One column of the report card: a measured property, one number per encoding, read from
    this analysis' evidence (metrics.json) and coloured by a claim's verdict on that
    encoding's entry (the ledger's ``outcomes``); the card computes nothing itself.

    ``evidence``: paths to mappings with an entry per encoding, tried in order (a claim may
    split its encodings, relative and absolute say, over two). ``key``: that entry's key, a
    dotted path inside the mapping, with ``{encoding}`` and any scalar evidence in braces
    (``"{encoding}.{passkey_at}N"``). ``claim``: the claim whose verdict on the entry colours
    the cell, read from its outcome for the same path and key, or for ``judged`` and
    ``judged_key`` when the verdict rests on other evidence than the number shown; None: shown
    uncoloured. ``label`` and ``note`` (what the number is) take braces as ``key`` does.

    ``routes``, for an analysis that measures named formulas rather than the configured
    encodings (conformance): ``(encoding, evidence, key, claim)`` per encoding it has a number
    for, each read and judged as above; the other fields' evidence is then unused.

    ``asserts_absence``: the judged evidence paths (``judged``, else the path read; a route's
    path) on which the claim's pass says the encoding *lacks* the column's property ("most
    positions collide" under "distinct to L, bfloat16"): such a cell is coloured as a weakness
    confirmed, never as the property holding. Empty: a pass means the property holds.

    ``units``: ``(evidence path, unit, factor)`` for each path read (a route's too) whose numbers
    share the column with numbers in another unit: each such cell names its unit and shows its
    value multiplied by ``factor`` (a fraction in per cent: ``("...", "%", 100)``). The card's
    caption explains each unit it shows (``posenc.card.UNIT_WORDS`` must know it).

    ``caption``: a sentence the card's caption adds for this column (a definition the reader
    needs beside the figure); braces as in ``note``, and ``{expected}``, the claim's expected
    text."""

    label: str
    evidence: tuple[str, ...]
    key: str = "{encoding}"
    claim: str | None = None
    judged: str | None = None
    judged_key: str | None = None
    note: str = ""
    routes: tuple[tuple[str, str, str, str | None], ...] = ()
    asserts_absence: tuple[str, ...] = ()
    units: tuple[tuple[str, str, float], ...] = ()
    caption: str = ""

    def __post_init__(self):
        # A single path, or a list (as the columns travel to the card's job, as JSON).
        def paths(value) -> tuple[str, ...]:
            return (value,) if isinstance(value, str) else tuple(value)

        object.__setattr__(self, "evidence", paths(self.evidence))
        object.__setattr__(self, "routes", tuple(tuple(r) for r in self.routes))
        object.__setattr__(self, "asserts_absence", paths(self.asserts_absence))
        object.__setattr__(self, "units", tuple(tuple(u) for u in self.units))
        read = set(self.read())
        for path in self.asserts_absence:
            if path not in self.judged_paths():
                raise ValueError(
                    f"card column {self.label!r}: asserts_absence names {path!r}, not evidence "
                    f"it is judged on ({', '.join(self.judged_paths()) or 'none'})"
                )
        for unit in self.units:
            if len(unit) != 3 or unit[0] not in read:
                raise ValueError(
                    f"card column {self.label!r}: units entry {unit!r} must be (evidence path, "
                    f"unit, factor) for a path the column reads ({', '.join(sorted(read))})"
                )

    def claims(self) -> list[str]:
        """Every claim the column's cells are judged by."""
        return [c for c in (self.claim, *(r[3] for r in self.routes)) if c is not None]

    def read(self) -> tuple[str, ...]:
        """Every evidence path the column's numbers are read from."""
        return tuple(r[1] for r in self.routes) if self.routes else self.evidence

    def judged_paths(self) -> tuple[str, ...]:
        """Every evidence path a verdict on the column's cells is read from."""
        if self.routes:
            return self.read()
        return (self.judged,) if self.judged else self.evidence

    def unit(self, path: str) -> tuple[str, float]:
        """The unit the numbers read from ``path`` are named in, and the factor they are shown
        multiplied by; ``("", 1)`` where the column's numbers share one unit."""
        return next(((u, f) for p, u, f in self.units if p == path), ("", 1))


@dataclass(frozen=True)
class AnalysisSpec:
    id: str
    title: str
    figures: dict[str, Figure] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    claims: tuple[Claim, ...] = ()
    references: tuple[str, ...] = ()  # works the section's prose cites (bibliography keys)
    csvs: tuple[str, ...] = ()  # names of the tidy row sets written as <name>.csv
    resources: Resources = Resources()
    # Named inputs beyond the config, from the config: e.g. the evaluations of trained models.
    inputs: Callable[[dict], dict[str, Any]] | None = None
    # Digests of data the analysis reads from the package itself (not rule inputs, whose paths
    # would depend on where the run is): a rule param, so that editing the data reruns it.
    data: Callable[[dict], dict[str, str]] | None = None
    # Timings are written to timing.json, apart from metrics.json (which stays byte-identical
    # between runs); its figures and tables join the section all the same.
    timing_figures: tuple[str, ...] = ()
    timing_tables: tuple[str, ...] = ()
    # Config keys outside the analysis' own section that its compute reads.
    uses: tuple[str, ...] = ("seed", "device", "encodings", "encoding")
    # What a schema cannot say, each a function of the whole config -> problems naming keys.
    checks: tuple[Callable[[dict], list[str]], ...] = ()
    # The same, for what needs the registry too: (config, {encoding: metadata}) -> problems
    # (metadata: ``EncodingSpec.metadata``, plugins' encodings included).
    registry_checks: tuple[Callable[[dict, dict], list[str]], ...] = ()
    # The widths its jobs build encodings at, from the whole config: {where: (d_model,
    # n_heads)}, ``where`` naming the config keys that set it ("complexity.head_dim = 16"). The
    # encodings' own checks (``EncodingSpec.checks``) run at each before any job.
    encoding_shapes: Callable[[dict], dict[str, tuple[int, int]]] | None = None
    # The encodings it measures, from the whole config; None: every configured one. (The
    # extension analysis stretches only the RoPE-family encodings it is configured for.)
    encodings_of: Callable[[dict], list[str]] | None = None
    # Its columns of the report card, in order (see CardColumn).
    card: tuple[CardColumn, ...] = ()
    # What its claims are properties of, where that is not the encodings the study compares:
    # "the configurations open models ship", say. The report counts such claims on a line of
    # their own beneath the study's headline and lists them in full, apart from the findings
    # about the encodings. None: the study's own claims.
    properties_of: str | None = None
    # Values fixed in code, not in the config, that the section's prose quotes (the sizes of a
    # snippet it reruns, a ratio its checks enforce): the report hands them to its template as
    # ``s.constants``, so that each is written once, here or where the code imports it from.
    constants: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        ids = [c.id for c in self.claims]
        for cid in ids:
            if not cid.startswith(f"{self.id}."):
                raise ValueError(f"analysis {self.id}: claim {cid} must start with '{self.id}.'")
        if len(set(ids)) != len(ids):
            raise ValueError(f"analysis {self.id}: a claim id appears twice")
        for column in self.card:
            for claim in column.claims():
                if claim not in ids:
                    raise ValueError(
                        f"analysis {self.id}: card column {column.label!r} names claim "
                        f"{claim}, not one of its own"
                    )
        for name, t in self.tables.items():
            if t.csv is not None and t.csv not in self.csvs:
                raise ValueError(f"analysis {self.id}: table {name} names csv {t.csv}, not in csvs")


@dataclass
class Measurements:
    """What a compute returns. ``rows``: tidy tables by name (each written as a CSV);
    ``evidence``: the named values claims read; ``summary``: other measured values the section
    and the captions show; ``timing``: wall times, kept out of the deterministic files;
    ``exports``: see below."""

    rows: dict[str, list[dict]] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)
    # Data others may check against their own code, each written at metrics.json's top level
    # under its name (a contract: e.g. the extension analysis' "frequencies").
    exports: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    """What a compute and its present functions are given; nothing else is global."""

    cfg: dict  # the analysis' own config section
    seed: int
    encodings: list[str]
    encoding: dict  # the encoding: block, each encoding's own hyper-parameters (for build())
    device: Any  # a torch.device
    inputs: dict[str, Any] = field(default_factory=dict)  # named input paths, as declared
    log: Any = None
    config: dict = field(default_factory=dict)  # the keys named in the spec's ``uses``


FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)[^}]*\}")


def fill(template: str, values: dict[str, Any]) -> str:
    """``template`` with ``{name}`` (or ``{name:fmt}``) taken from ``values``."""
    return template.format_map(values)


def placeholders_named(template: str) -> str:
    """For Snakemake's report, where no run's values exist yet: each ``{name}`` becomes
    *name*."""
    return FIELD.sub(lambda m: f"*{m.group(1)}*", template)


# The parts of an analysis' folder that the generic runner (workflow/scripts/analysis.py) loads
# by a computed name: the rules' code digests start from them, as no import statement names them.
PARTS = ("spec", "compute", "present")


class InstallError(RuntimeError):
    """The ``posenc.analyses`` Python imports is not the checkout's ``analyses/`` folder."""


def check_installed(root: str | Path) -> None:
    """That ``posenc.analyses`` (the package the analyses' modules import each other through,
    mapped from the top-level ``analyses/`` folder by ``pyproject.toml``) is ``root``'s own
    ``analyses/``, as an editable install of that checkout makes it; else one
    :class:`InstallError` saying how to install it. Without it a workflow would run another
    copy's analysis code against this checkout's specs and digests."""
    wanted = Path(root, "analyses").resolve()
    try:
        found = importlib.util.find_spec("posenc.analyses")
    except ImportError:
        found = None
    folders = [Path(p).resolve() for p in (found and found.submodule_search_locations) or []]
    if wanted not in folders:
        where = ", ".join(map(str, folders)) or "nowhere"
        raise InstallError(
            f"posenc.analyses is imported from {where}, not from {wanted}: install this "
            f"checkout with `pip install -e {Path(root).resolve()}` (or `make setup` there)"
        )


def load_spec(path: str | Path) -> AnalysisSpec:
    """The ``SPEC`` of one ``analyses/<id>/spec.py``, imported by file path: no package
    import, nothing heavy. A spec that imports its own folder's other torch-free modules (the
    extrapolation section's claims.py) does so as ``posenc.analyses.<id>.<module>``."""
    path = Path(path)
    module_spec = importlib.util.spec_from_file_location(f"posenc_spec_{path.parent.name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    spec = module.SPEC
    if spec.id != path.parent.name:
        raise ValueError(f"{path}: SPEC.id is {spec.id!r}, its folder {path.parent.name!r}")
    return spec


# The order every report reads the analyses in, whatever order a config lists them in: exact
# claims first, then costs, then trained models, then other libraries' and the shipped models'
# code. So a section has the same number in the study's report and in a report card's, whose
# config is merged in another order. A new analysis is listed here (tests/test_layering.py).
READING_ORDER = (
    "equivariance",
    "similarity",
    "rotation",
    "aliasing",
    "complexity",
    "extrapolation",
    "tasks",
    "extension",
    "conformance",
    "shipped",
)


def discover(root: str | Path) -> dict[str, AnalysisSpec]:
    """Every ``analyses/<id>/spec.py`` under ``root``, by id, in the reports' reading order
    (:data:`READING_ORDER`, then any other by id); ``root`` must be the checkout
    installed (:func:`check_installed`), as the specs import from ``posenc.analyses``."""
    check_installed(root)
    specs = [load_spec(p) for p in sorted(Path(root, "analyses").glob("*/spec.py"))]
    rank = {name: i for i, name in enumerate(READING_ORDER)}
    specs.sort(key=lambda spec: (rank.get(spec.id, len(rank)), spec.id))
    return {spec.id: spec for spec in specs}
