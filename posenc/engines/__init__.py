"""Training and serving engines: the rotary code of vLLM, SGLang, torchtitan, torchtune, litgpt,
OLMo-core, Megatron-Core and KerasHub, run on a config with no weights, each in its own
interpreter (``runners/``), and held against transformers and the float64 formula
(:mod:`posenc.engines.compare`).

The names are a contract (``posenc model --engines``, ``model.json``'s ``engines`` object, the
config's ``shipped.engines``). An engine is *installed* where its interpreter can import it:
``.venv`` itself for the engines the project's lock carries (its ``engines`` extra), or
``.engines/<name>/`` as ``make engines`` builds it from ``engines/<name>.txt``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Engine:
    name: str  # the contract's name
    distribution: str  # its package on PyPI
    title: str  # as its own documentation names it

    @property
    def runner(self) -> Path:
        return Path(__file__).parent / "runners" / f"run_{self.name.replace('-', '_')}.py"


ENGINES = {
    e.name: e
    for e in (
        Engine("vllm", "vllm", "vLLM"),
        Engine("sglang", "sglang", "SGLang"),
        Engine("torchtitan", "torchtitan", "torchtitan"),
        Engine("torchtune", "torchtune", "torchtune"),
        Engine("litgpt", "litgpt", "LitGPT"),
        Engine("olmo-core", "ai2-olmo-core", "OLMo-core"),
        Engine("megatron-core", "megatron-core", "Megatron-Core"),
        Engine("keras-hub", "keras-hub", "KerasHub"),
    )
}


class EngineError(ValueError):
    """An engine asked for that is unknown or not installed: the message is the one line."""


def engines_dir() -> Path:
    """Where ``make engines`` builds the engines' own interpreters: ``.engines`` in the project
    (the working directory a run starts in), or ``$POSENC_ENGINES``."""
    return Path(os.environ.get("POSENC_ENGINES") or Path.cwd() / ".engines").resolve()


def in_venv(name: str) -> bool:
    """Whether posenc's own interpreter has the engine (the lock's ``engines`` extra)."""
    try:
        importlib.metadata.version(ENGINES[name].distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def interpreter(name: str) -> Path | None:
    """The Python that runs the engine's code, or None where it is not installed."""
    if in_venv(name):
        return Path(sys.executable)
    own = engines_dir() / name / "bin" / "python"
    return own if own.is_file() else None


def version_of(name: str) -> str | None:
    """The engine's installed version (posenc's interpreter's, or its own folder's), read from
    its package metadata without importing it; None where it is not installed."""
    dist = ENGINES[name].distribution
    if in_venv(name):
        return importlib.metadata.version(dist)
    for site in sorted((engines_dir() / name).glob("lib/python*/site-packages")):
        for found in importlib.metadata.distributions(name=dist, path=[str(site)]):
            return found.version
    return None


def installed() -> list[str]:
    """The engines this interpreter carries, in the contract's order: the default set."""
    return [name for name in ENGINES if in_venv(name)]


def resolve(asked: list[str] | str) -> list[str]:
    """The engines ``asked`` names (``all``: every one), checked: an unknown name, or one not
    installed, raises :class:`EngineError` naming the ``make`` target that installs it."""
    names = list(ENGINES) if asked == "all" or asked == ["all"] else list(asked)
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        raise EngineError(
            f"unknown engine {', '.join(map(repr, unknown))}: the engines are {', '.join(ENGINES)}"
        )
    if asked == "all" or asked == ["all"]:
        return names
    missing = [n for n in names if interpreter(n) is None]
    if missing:
        raise EngineError(
            f"engine {', '.join(missing)} not installed: run `make engines` (it builds "
            f"{', '.join(f'.engines/{n}' for n in missing)} from engines/<name>.txt)"
        )
    return names


def run(name: str, models: list[dict], timeout: float = 900) -> dict:
    """The engine's answer to a request for ``models`` (see ``runners/_protocol.py``), run in
    its own interpreter, all models in one process. Where that process dies (a model whose
    tables do not fit in memory, say), each model is asked again in a process of its own, so
    one model's failure is that model's alone. An engine that is not installed answers every
    model with status ``unavailable``."""
    python = interpreter(name)
    if python is None:
        return _unavailable(name, models, "not installed here (make engines builds it)")
    answer = _run_once(name, python, models, timeout)
    if answer.get("version") is not None or len(models) == 1:
        return answer
    answers = [_run_once(name, python, [m], timeout) for m in models]
    return {
        **next((a for a in answers if a.get("version")), answers[0]),
        "models": {k: v for a in answers for k, v in a["models"].items()},
    }


def _run_once(name: str, python: Path, models: list[dict], timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        answer = Path(tmp) / "answer.json"
        env = dict(os.environ, KERAS_BACKEND="torch", PYTHONNOUSERSITE="1")
        env.pop("PYTHONPATH", None)  # the engine's own interpreter, never posenc's copy
        try:
            proc = subprocess.run(
                [str(python), str(ENGINES[name].runner), str(answer)],
                preexec_fn=_memory_cap,
                input=json.dumps({"engine": name, "models": models}),
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=tmp,
            )
        except subprocess.TimeoutExpired:
            return _unavailable(name, models, f"its runner took more than {timeout:.0f} s")
        if proc.returncode != 0 or not answer.is_file():
            # Killed (out of memory: -9) or failed outright: its status says which.
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            why = f"exit status {proc.returncode}" + (
                " (killed: out of memory?)" if proc.returncode in (-9, 137) else f": {last}"
            )
            return _unavailable(name, models, f"its runner failed, {why}")
        return json.loads(answer.read_text())


# An engine's tables for a context of millions of positions can take tens of GB (OLMo-core's
# for Llama 4 Scout's 10.5M peaked at 22.8 GB): a runner past this address space fails with a
# MemoryError, that model's error, instead of the whole machine's jobs meeting the OOM killer.
MEMORY_CAP_BYTES = 8 * 2**30


def _memory_cap() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


def _unavailable(name: str, models: list[dict], why: str) -> dict:
    return {
        "engine": name,
        "version": None,
        "models": {
            m["name"]: {"status": "unavailable", "reason": why, "layers": {}} for m in models
        },
    }
