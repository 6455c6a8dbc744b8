"""What every engine runner shares: the request it reads and the answer it writes.

A runner is a script run by an engine's own interpreter (``.venv/bin/python`` for the engines
installed beside posenc, ``.engines/<name>/bin/python`` for the others), so it imports nothing
from posenc and nothing beyond the standard library, torch and its engine. posenc starts it
with ``python run_<engine>.py ANSWER.json`` (the script's folder comes first on ``sys.path``, so
this module is found; a runner is never named after its engine's package, which it would
shadow), writes one request to its stdin and reads one answer from ANSWER.json (not stdout:
engines log there when imported).

Request::

    {"engine": "vllm",
     "models": [{"name": "llama-3.1-8b",
                 "config": {... the config.json as a user has it ...},
                 "context": 131072,                 # the length a run is measured at
                 "positions": [0, 1, 2, ...],       # the precision analysis's sampled positions
                 "layer_types": [{"name": "all layers", "kind": "full"}]}]}
                 # kind: "full" or "sliding", as transformers' layer types are named

Answer::

    {"engine": "vllm", "version": "0.33.0", "torch": "2.13.0+cpu", "python": "3.11.2",
     "models": {"llama-3.1-8b": {
         "status": "ok" | "cannot_express" | "error",
         "reason": "…",                    # why not ok, in one line ("" when ok)
         "layers": {"all layers": {
             "inv_freq": [...] | null,     # the engine's float32 frequencies, as float64 values
             "attention_factor": 1.0 | null,   # the factor the engine puts on cos/sin (or q·k)
             "angles": [[...], ...] | null,    # (positions × pairs) radians a run of length
                                               # `context` applies, read from the engine's own
                                               # tables (atan2 of its sin and cos where it
                                               # stores those)
             "forward_angles": [[...]] | null, # the same angles again, read back from the
                                               # engine's rotary forward applied to unit
                                               # vectors (the independent second computation)
             "source": "vllm/model_executor/layers/rotary_embedding/llama3_rope.py:31",
             "how": "get_rope(...) from the config's rope_parameters, as vLLM's Llama builds it",
             "notes": ["…"]}}}}}

``cannot_express``: the engine has no code for the config's scaling type (or layer layout):
a finding, not a failure. ``not_covered`` (NotImplementedError): the runner does not yet map
this architecture to the engine's model code: the runner's gap, not the engine's. ``error``:
the engine's code raised; ``reason`` is its last line.
"""

from __future__ import annotations

import inspect
import json
import platform
import sys
import traceback
from collections.abc import Callable


class CannotExpress(Exception):
    """The engine has no code for this config: the message says what it lacks."""


def read_request() -> dict:
    return json.load(sys.stdin)


def source_of(obj) -> str:
    """``package/path.py:line`` of a function or class, relative to site-packages."""
    obj = inspect.unwrap(obj)
    path = inspect.getsourcefile(obj) or "?"
    marker = "site-packages/"
    path = path.split(marker, 1)[1] if marker in path else path
    try:
        line = inspect.getsourcelines(obj)[1]
    except (OSError, TypeError):
        return path
    return f"{path}:{line}"


def angles_from_cos_sin(cos, sin) -> tuple[list, float]:
    """(angles, scale): the angle of each (cos, sin) pair by atan2 and the largest and
    smallest magnitude's mean, the factor the engine folded into its table (1 when none)."""
    import torch

    cos, sin = torch.as_tensor(cos).double(), torch.as_tensor(sin).double()
    scale = torch.hypot(cos, sin)
    return torch.atan2(sin, cos).tolist(), float(scale.mean())


def forward_probe(rotate: Callable, positions, pairs: int, layout: str) -> list:
    """The angles the engine's forward turns each pair by: ``rotate(x, positions)`` is called
    on a (n, 2·pairs) batch whose every pair is the unit vector (1, 0), laid out as the engine
    lays pairs out (``"half"``: dims i and i + pairs, as rotate_half does; ``"interleaved"``:
    dims 2i and 2i + 1), and each output pair's atan2 is its angle. Returns (n, pairs)."""
    import torch

    n = len(positions)
    x = torch.zeros(n, 2 * pairs, dtype=torch.float32)
    if layout == "half":
        x[:, :pairs] = 1.0
    else:
        x[:, 0::2] = 1.0
    y = rotate(x, torch.as_tensor(positions, dtype=torch.long)).double()
    if layout == "half":
        a, b = y[:, :pairs], y[:, pairs:]
    else:
        a, b = y[:, 0::2], y[:, 1::2]
    return torch.atan2(b, a).tolist()


def call_text(kwargs: dict) -> str:
    """An engine call's keyword arguments for ``how``, long factor lists elided."""

    def short(value):
        if isinstance(value, dict):
            return {k: "[…]" if isinstance(v, (list, tuple)) else v for k, v in value.items()}
        return value

    return ", ".join(f"{k}={short(v)!r}" for k, v in kwargs.items())


def run(engine: str, version: str, measure: Callable[[dict], dict]) -> None:
    """Answer the request on stdin: ``measure(model)`` returns a model's ``layers`` dict, or
    raises :class:`CannotExpress`; any other exception is that model's ``error``."""
    import torch

    request = read_request()
    models = {}
    for model in request["models"]:
        try:
            models[model["name"]] = {"status": "ok", "reason": "", "layers": measure(model)}
        except CannotExpress as why:
            models[model["name"]] = {"status": "cannot_express", "reason": str(why), "layers": {}}
        except NotImplementedError as why:  # the runner's gap, not the engine's
            models[model["name"]] = {"status": "not_covered", "reason": str(why), "layers": {}}
        except Exception as error:  # the engine's own failure, reported as its finding
            last = traceback.format_exception_only(type(error), error)[-1].strip()
            models[model["name"]] = {"status": "error", "reason": last, "layers": {}}
    answer = {
        "engine": engine,
        "version": version,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "models": models,
    }
    with open(sys.argv[1], "w") as out:
        json.dump(answer, out, allow_nan=True)
