"""Shipped configs: open models' positional code as transformers builds it from their
config.json, with no weights: frequencies against posenc and the float64 formula, spectrum
against context, precision per path at the model's own context, distinguishability, layouts,
discontinuities. Torch-free: read by the workflow at parse time."""

import hashlib
from pathlib import Path

import posenc
from posenc.analysis import AnalysisSpec, Figure, Resources, Table
from posenc.claims import Check, Claim

# The zoo ships with the package: the workflow may run elsewhere (a card's folder, a test's
# copy, a moved run), so its files are read from here and keyed by their digests (``data``).
ZOO = Path(posenc.__file__).resolve().parent / "zoo"

PATH_WORDS = {
    "float32": "float32 angles, as transformers computes them",
    "module_bf16": "the rotary module cast to bfloat16",
    "positions_bf16": "bfloat16 positions",
    "storage_bf16": "cos and sin stored in bfloat16",
}


def _path_claim(path: str, kind: str = "analytic") -> Claim:
    return Claim(
        f"shipped.{path}_holds",
        f"With {PATH_WORDS[path]}, every zoo model's applied angles stay within "
        "the angle threshold of the float64 angle at its advertised context.",
        kind=kind,
        checks=(
            Check(
                f"{path}_error_at_context",
                "<=",
                "angle_rad",
                label=f"largest angle error at the context with {PATH_WORDS[path]} (rad)",
            ),
        ),
        references=("su2021", "wolf2020"),
    )


# The engine claims: a difference counts only where the engine's forward applies what its
# tables hold, and they cite the engines' papers (torchtune, LitGPT and KerasHub have none).
FORWARD_CONFIRMS = Check(
    "engine_forward_confirms",
    value=True,
    label="the engine's forward turns unit vectors by its tables' angles",
)
ENGINE_REFERENCES = (
    "su2021",
    "wolf2020",
    "kwon2023",
    "zheng2024",
    "liang2024",
    "groeneveld2024",
    "shoeybi2019",
)


def zoo_files(models: list[str] | str) -> list[Path]:
    """The zoo files the config names, in its order ("all": every one, in name order)."""
    files = sorted(ZOO.glob("*.json"))
    if models == "all":
        return files
    by_stem = {f.stem: f for f in files}
    return [by_stem[m] for m in models if m in by_stem]


def engine_names(cfg: dict) -> list[str]:
    """The engines the section runs: ``installed`` (those in posenc's own environment), or
    the config's list, each checked installed (:func:`posenc.engines.resolve`)."""
    from posenc.engines import installed, resolve

    asked = cfg.get("engines", "installed")
    return installed() if asked == "installed" else resolve(asked)


def data(config: dict) -> dict[str, str]:
    """A digest of each zoo file the section reads, by name, and each engine's version:
    editing a file or installing another engine reruns the section, wherever the run is (the
    zoo ships with the package, so it is not a rule input; the engines are installed)."""
    from posenc.engines import version_of

    digests = {
        f.name: hashlib.sha256(f.read_bytes()).hexdigest()
        for f in zoo_files(config["shipped"]["models"])
    }
    from posenc.engines import ENGINES

    names = engine_names(config["shipped"])
    protocol = ENGINES[names[0]].runner.with_name("_protocol.py") if names else None
    # A runner is run by path in the engine's own interpreter, so no import reaches it and the
    # rule's code digest cannot see it: its meaning (and the protocol's) is digested here, as
    # the code digests do it (a comment or docstring changes nothing).
    from posenc.codegraph import analyse

    def meaning(path) -> str:
        return analyse(path.read_bytes(), str(path))["digest"]

    runners = {
        f"runner {name}": meaning(ENGINES[name].runner) + meaning(protocol) for name in names
    }
    return digests | {f"engine {name}": version_of(name) for name in names} | runners


def check_config(config: dict) -> list[str]:
    cfg = config.get("shipped")
    if not cfg:
        return []
    problems = []
    if cfg["window"] >= cfg["exact_max_positions"]:
        problems.append(
            f"config key shipped.window = {cfg['window']} must be < shipped.exact_max_positions"
        )
    from posenc.engines import EngineError

    try:
        engine_names(cfg)
    except EngineError as error:
        problems.append(f"config key shipped.engines: {error}")
    known = sorted(f.stem for f in ZOO.glob("*.json"))
    unknown = [m for m in cfg["models"] if m not in known] if cfg["models"] != "all" else []
    if unknown:
        problems.append(
            f"config key shipped.models: {', '.join(map(repr, unknown))} not in the zoo "
            f"({', '.join(known)})"
        )
    return problems


SPEC = AnalysisSpec(
    id="shipped",
    title="Positional code as open models ship it",
    properties_of="the configurations open models ship",
    csvs=("frequencies", "precision", "curve", "spectrum", "distinct", "jumps", "engines"),
    figures={
        "spectrum": Figure(
            "Wavelength 2π/ω of each rotated pair over the model's advertised context (log "
            "scale), against the pair's place in the head, one line per model and layer type; "
            "above 1 (grey line) a pair completes no full turn within the context."
        ),
        "angle_error": Figure(
            "Largest applied-angle error against the float64 angle, per sampled position "
            "({per_octave} draws per octave up to each model's context), one panel per path "
            "and one line per model; the grey line is {thresholds[angle_rad]} rad."
        ),
    },
    tables={
        "frequencies": Table(
            "Each model and layer type: transformers' float32 inverse frequencies against "
            "posenc's and the float64 formula, the largest difference in float32 ulps, and "
            "the attention factor each gives.",
            csv="frequencies",
            placement="appendix",
        ),
        "precision": Table(
            "Per model, layer type and path: the largest angle error at the advertised "
            "context, the largest over all sampled positions, the first sampled position past "
            "{thresholds[angle_rad]} rad, the largest relative-angle error θ(p) − θ(q), and for "
            "float32 the product's and the inverse frequency's parts at the context (rad).",
            csv="precision",
        ),
        "spectrum": Table(
            "Spectrum against context: pairs, critical pairs (no full turn within the trained "
            "length L), Liu et al.'s d_extra, pairs scaling moved, and critical pairs that turn "
            "within the advertised context.",
            csv="spectrum",
            placement="appendix",
        ),
        "distinct": Table(
            "Distinguishability of the stored (cos, sin) rows: the first position equal to an "
            "earlier one, exact up to {exact_max_positions} positions (or the context), then "
            "sampled: each sampled position against the {window} before it.",
            csv="distinct",
            placement="appendix",
        ),
        "jumps": Table("Discontinuities the configs carry.", csv="jumps", placement="appendix"),
        "engines": Table(
            "Model × engine: each training or serving engine's own rotary code, built from the "
            "model's config as that engine builds it (CPU, no weights), against transformers at "
            "the model's context: the largest inverse-frequency and attention-factor "
            "difference (float32 ulps), the largest angle difference at the sampled positions "
            "(rad, modulo a turn), whether the engine's forward turns unit vectors by the "
            "angles its tables hold, and each difference with the engine's source.",
            csv="engines",
            placement="appendix",
        ),
    },
    claims=(
        Claim(
            "shipped.frequencies_agree",
            "posenc agrees with transformers on every model's inverse frequencies and attention "
            "factor, to float32 rounding.",
            kind="software",
            checks=(
                Check(
                    "frequency_ulps",
                    "<=",
                    "agree_ulps",
                    label="largest inv_freq difference, float32 ulps",
                ),
                Check(
                    "factor_ulps",
                    "<=",
                    "agree_ulps",
                    label="attention factor difference, float32 ulps",
                ),
            ),
            references=("su2021", "chen2023", "peng2023", "dubey2024", "ding2024", "wolf2020"),
        ),
        _path_claim("float32"),
        _path_claim("module_bf16"),
        _path_claim("positions_bf16"),
        _path_claim("storage_bf16"),
        Claim(
            "shipped.float32_distinct",
            "Every zoo model's float32 (cos, sin) rows keep every position distinct up to its "
            "context (exact up to the scan's limit, sampled beyond).",
            kind="analytic",
            checks=(
                Check(
                    "float32_repeats",
                    "<=",
                    "max_repeats",
                    label="layer types with a repeated row",
                ),
            ),
            references=("su2021",),
        ),
        Claim(
            "shipped.critical_pairs_unturned",
            "No pair that completes no full turn within a model's trained length turns within "
            "its advertised context once the config's scaling is applied (Liu et al.'s "
            "critical dimension stays out of distribution).",
            kind="analytic",
            checks=(
                Check(
                    "critical_turning",
                    "<=",
                    "max_critical_turning",
                    label="critical pairs turning within the context",
                ),
            ),
            references=("liu2023", "peng2023", "dubey2024"),
        ),
        Claim(
            "shipped.longrope_switch_small",
            "Keys cached with LongRoPE's short factors up to the trained length are within "
            "the angle threshold of the angles the long factors give there.",
            kind="analytic",
            checks=(
                Check(
                    "longrope_cached_key_error",
                    "<=",
                    "angle_rad",
                    label="largest cached-key angle error at L − 1 (rad)",
                ),
            ),
            references=("ding2024",),
        ),
        Claim(
            "shipped.engines_agree_frequencies",
            "Every training or serving engine, on every zoo config its runner maps and its "
            "code can express, computes inverse frequencies and an attention factor within "
            "the agreement threshold of transformers' (float32 ulps).",
            kind="software",
            requires=(FORWARD_CONFIRMS,),
            checks=(
                Check(
                    "engine_frequency_ulps",
                    "<=",
                    "agree_ulps",
                    label="largest inv_freq or attention-factor difference from transformers, "
                    "float32 ulps",
                ),
            ),
            references=ENGINE_REFERENCES,
        ),
        Claim(
            "shipped.engines_agree_angles",
            "Every training or serving engine, on every zoo config its runner maps and its "
            "code can express, applies angles within the angle threshold of transformers' at "
            "the model's advertised context.",
            kind="software",
            requires=(FORWARD_CONFIRMS,),
            checks=(
                Check(
                    "engine_angle_rad",
                    "<=",
                    "angle_rad",
                    label="largest angle difference from transformers at the context (rad)",
                ),
            ),
            references=ENGINE_REFERENCES,
        ),
        Claim(
            "shipped.yarn_truncate_negligible",
            "Rounding YaRN's ramp bounds or not (truncate) moves no applied angle by more than "
            "the angle threshold at the advertised context.",
            kind="analytic",
            checks=(
                Check(
                    "yarn_truncate_angle",
                    "<=",
                    "angle_rad",
                    label="largest angle difference at the context (rad, unwrapped)",
                ),
            ),
            references=("peng2023",),
        ),
    ),
    references=(
        "su2021",
        "chen2023",
        "peng2023",
        "dubey2024",
        "ding2024",
        "liu2023",
        "barbero2024",
        "press2022",
        "raffel2020",
        "wolf2020",
    ),
    resources=Resources(threads=1, mem_mb=3000, runtime=10),
    uses=("seed",),
    data=data,
    checks=(check_config,),
    encodings_of=lambda config: ["rope", "alibi", "t5_bias"],
)
