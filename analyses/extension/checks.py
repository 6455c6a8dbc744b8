"""The extension section's config checks: the cross-field rules the schema cannot state
(``check_config``) and the one that needs the registry (``check_registry``). Torch-free: the
spec runs them at parse time."""

from posenc.analyses.extension.longrope import published_profile
from posenc.rope_scaling import METHODS


def check_config(config: dict) -> list[str]:
    """Cross-field rules of the extension section (the schema checks each field alone)."""
    ext = config.get("extension")
    if not ext:
        return []
    if "extrapolation" not in config:
        return ["config key extension: needs the extrapolation section, whose models it stretches"]
    problems = []
    unknown = [m for m in ext["methods"] if m not in METHODS]
    if unknown:
        problems.append(
            f"config key extension.methods = {ext['methods']}: unknown {', '.join(unknown)} "
            f"(known: {', '.join(METHODS)})"
        )
    for method in ext["params"]:
        if method not in METHODS:
            problems.append(
                f"config key extension.params.{method}: not a method (known: {', '.join(METHODS)})"
            )
    untrained = [e for e in ext["encodings"] if e not in config["encodings"]]
    if untrained:
        problems.append(
            f"config key extension.encodings = {ext['encodings']}: {', '.join(untrained)} not in "
            "encodings, so the extrapolation section trains no such model to stretch"
        )
    for key, multipliers in (
        ("zero_shot.multipliers", ext["zero_shot"]["multipliers"]),
        ("finetune.eval_multipliers", ext["finetune"]["eval_multipliers"]),
    ):
        if 1 not in multipliers and key.startswith("zero_shot"):
            problems.append(
                f"config key extension.{key} = {multipliers}: must include 1 (at s = 1 every "
                "method must be plain RoPE)"
            )
    problems += _check_stretch(config, ext)
    finetune = ext["finetune"]
    for scale in finetune["scales"]:
        if scale not in finetune["eval_multipliers"]:
            problems.append(
                f"config key extension.finetune.scales = {finetune['scales']}: {scale} is not in "
                f"extension.finetune.eval_multipliers = {finetune['eval_multipliers']} (a model "
                "fine-tuned at s x L_train is evaluated there)"
            )
    steps = finetune["train"]["steps"]
    if max(finetune["snapshots"]) != steps:
        problems.append(
            f"config key extension.finetune.snapshots = {finetune['snapshots']}: the last must be "
            f"extension.finetune.train.steps = {steps} (the fine-tune's end)"
        )
    return problems


def _check_stretch(config: dict, ext: dict) -> list[str]:
    problems = []
    stretch = ext["stretch"]
    if stretch["encodings"] != "all":
        untrained = [e for e in stretch["encodings"] if e not in config["encodings"]]
        if untrained:
            problems.append(
                f"config key extension.stretch.encodings = {stretch['encodings']}: "
                f"{', '.join(untrained)} not in encodings (no trained LM to stretch)"
            )
    # A contrast needs its own temperature on the whole logit to be measured against.
    alone = [t for t in stretch["query_only_temperatures"] if t not in stretch["temperatures"]]
    if alone:
        problems.append(
            f"config key extension.stretch.query_only_temperatures = "
            f"{stretch['query_only_temperatures']}: {', '.join(alone)} not in "
            "extension.stretch.temperatures (a query-only contrast needs its temperature on "
            "the whole logit beside it)"
        )
    try:
        published_profile(stretch["longrope_profile"])
    except (ValueError, KeyError) as err:
        problems.append(f"config key extension.stretch.longrope_profile: {err}")
    return problems


def check_registry(config: dict, encodings: dict[str, dict]) -> list[str]:
    """The methods rescale RoPE's frequencies: each stretched encoding must declare its
    frequencies rescalable (``EncodingSpec.rescalable``)."""
    ext = config.get("extension")
    if not ext:
        return []
    other = [e for e in ext["encodings"] if e in encodings and not encodings[e]["rescalable"]]
    if not other:
        return []
    rescalable = [e for e, meta in encodings.items() if meta["rescalable"]]
    return [
        f"config key extension.encodings = {ext['encodings']}: {', '.join(other)} declares no "
        f"rescalable frequencies ({', '.join(rescalable)} do), so "
        f"{', '.join(ext['methods'])} have nothing to rescale"
    ]
