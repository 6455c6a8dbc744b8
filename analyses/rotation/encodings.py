"""Which encodings the rotation analysis measures, read off what each declares in the registry,
and why the others are not measured."""

from posenc.encodings import REGISTRY


def groups(encodings: list[str]) -> dict:
    """The configured encodings by what they are, in config order: fixed tables (input
    encodings with waves that do not learn: R(k) is read off their row PE(k)), learned tables
    (fitted as a contrast), query/key transforms made of planar rotations (the score-shift
    bound is derived for those) and the relative ones among them; ``not_measured`` maps every
    other encoding to the reason."""
    specs = {e: REGISTRY[e] for e in encodings}
    fixed = [e for e, s in specs.items() if s.acts_on == "input" and s.waves and not s.learned]
    learned = [e for e, s in specs.items() if s.acts_on == "input" and s.learned]
    qk = [e for e, s in specs.items() if s.acts_on == "qk" and s.planar_rotation]
    measured = {*fixed, *learned, *qk}
    return {
        "fixed_tables": fixed,
        "learned_tables": learned,
        "qk": qk,
        "relative_qk": [e for e in qk if specs[e].relative],
        "not_measured": {e: why(e) for e in encodings if e not in measured},
    }


def why(encoding: str) -> str:
    """Why ``encoding`` has no rotation to check here."""
    spec = REGISTRY[encoding]
    if spec.acts_on == "input":
        return "a fixed input table without waves: no rotation R(k) to read off its rows"
    if spec.acts_on == "qk":
        return (
            "its query/key transform is not made of planar rotations, for which the "
            "score-shift bound is derived"
        )
    if spec.acts_on == "bias":
        return "a score bias: no table to rotate and no query/key transform"
    return "it gives no position"
