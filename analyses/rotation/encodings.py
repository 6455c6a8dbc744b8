"""Which encodings the rotation analysis measures, and the parameters it builds them with."""

import dataclasses

from posenc.encodings import REGISTRY, EncodingParams, build

PARAM_FIELDS = {f.name for f in dataclasses.fields(EncodingParams)}


def params(encoding_cfg: dict, **fields) -> EncodingParams:
    """Encoding parameters: the shared ``encoding`` config, with ``fields`` on top."""
    shared = {k: v for k, v in encoding_cfg.items() if k in PARAM_FIELDS}
    return EncodingParams(**{**shared, **fields})


def select(
    encodings: list[str], probe: EncodingParams, kind: type, learned: bool | None = None
) -> list[str]:
    """The configured encodings whose module is a ``kind`` (and, unless None, whose registry
    entry is ``learned`` or not), in config order. Modules are built to be asked."""
    return [
        e
        for e in encodings
        if (learned is None or REGISTRY[e].learned == learned) and isinstance(build(e, probe), kind)
    ]
