"""Probing a plugin's encodings on a tiny input, before any job runs.

A user's encoding that returns the wrong shape, NaN or raises would otherwise fail minutes
into a run, in a training job's log, or worse, train quietly on garbage. The registry's
metadata step (:mod:`posenc.encoding_metadata`, at parse time) calls :func:`probe` on every
encoding a plugin registers and stops the run with one line naming the plugin's file, the
encoding and the hook (``input_encoding``, ``rotate`` or ``score_bias``) that failed, and why.

What is probed, at d_model 16 with 2 heads, 7 positions:

* the hook's output: a tensor of the shape the model needs, floating point, on the input's
  device, finite (for a causal score bias, where a query may attend);
* causal and bidirectional attention: the score bias for both, and a two-layer stack run with
  the encoding both ways;
* integer positions, and float ones where the encoding claims to take them (a context
  extension such as Position Interpolation in its ``extensions``, which feeds p / s);
* ``relative=True``: a shift of every position leaves the scores unchanged (within a
  tolerance far above float32 rounding and far below any real dependence on position).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor

from posenc.encodings import EncodingParams, EncodingSpec, head_layout

HOOKS = {"input": "input_encoding", "qk": "rotate", "bias": "score_bias"}
D_MODEL, N_HEADS, LENGTH, SHIFT = 16, 2, 7, 5
RTOL = ATOL = 1e-4  # the shift test: float32 rounding of these sizes is ~1e-6
FLOAT_POSITIONS = ("pi",)  # extensions that feed non-integer positions


class ProbeFailure(ValueError):
    """One hook's problem; :func:`probe` words it with the plugin and encoding."""

    def __init__(self, hook: str, problem: str):
        super().__init__(problem)
        self.hook, self.problem = hook, problem


def _where(error: BaseException, origin: str | None) -> str:
    """The file and line an error was raised at: the deepest frame in the plugin's own file
    when it has one there, else the deepest frame."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "?"
    own = [f for f in frames if origin and Path(f.filename).resolve() == Path(origin).resolve()]
    frame = (own or frames)[-1]
    return f"{frame.filename}:{frame.lineno}"


def _call(hook: str, origin: str | None, fn: Callable, *args):
    try:
        return fn(*args)
    except Exception as error:  # a plugin's own error: its message, file and line
        raise ProbeFailure(
            hook, f"raised {type(error).__name__}: {error} (at {_where(error, origin)})"
        ) from error


def _tensor(hook: str, out, shape: tuple[int, ...], like: Tensor, what: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise ProbeFailure(hook, f"returned {type(out).__name__} for {what}, not a tensor")
    if tuple(out.shape) != shape:
        raise ProbeFailure(hook, f"returned shape {tuple(out.shape)} for {what}; expected {shape}")
    if not out.is_floating_point():
        raise ProbeFailure(hook, f"returned dtype {out.dtype} for {what}; expected floating point")
    if out.device != like.device:
        raise ProbeFailure(hook, f"returned a tensor on {out.device} for inputs on {like.device}")
    return out


def _finite(hook: str, out: Tensor, what: str, where: Tensor | None = None) -> None:
    values = out if where is None else out[where.expand_as(out)]
    bad = ~torch.isfinite(values)
    if bad.any():
        kind = "NaN" if torch.isnan(values).any() else "inf"
        raise ProbeFailure(hook, f"returned {kind} in {int(bad.sum())} entries for {what}")


def _unchanged(hook: str, what: str, quantity: str, before: Tensor, after: Tensor) -> None:
    """``relative=True``: ``quantity`` is the same once every position moves by SHIFT, where
    both are finite (a causal bias may mask with -inf alike)."""
    keep = torch.isfinite(before) & torch.isfinite(after)
    before, after = before[keep].double(), after[keep].double()
    if not torch.allclose(before, after, rtol=RTOL, atol=ATOL):
        raise ProbeFailure(
            hook,
            f"relative=True, but shifting the {what} by {SHIFT} changes the {quantity} by up to "
            f"{(before - after).abs().max():.3g}",
        )


def _position_sets(spec: EncodingSpec) -> list[tuple[str, Tensor]]:
    sets = [("integer positions", torch.arange(LENGTH))]
    if any(e in FLOAT_POSITIONS for e in spec.extensions):
        sets.append(("float positions", torch.arange(LENGTH, dtype=torch.float32) * 0.5))
    return sets


def _probe_input(module, spec, origin) -> None:
    hook = HOOKS["input"]
    for what, pos in _position_sets(spec):
        out = _call(hook, origin, module.input_encoding, pos)
        _tensor(hook, out, (LENGTH, D_MODEL), pos, what)
        _finite(hook, out, what)
        if spec.relative:
            shifted = _call(hook, origin, module.input_encoding, pos + SHIFT).double()
            gram = out.double() @ out.double().T
            _unchanged(hook, what, "products of its vectors", gram, shifted @ shifted.T)


def _probe_qk(module, spec, origin) -> None:
    hook = HOOKS["qk"]
    g = torch.Generator().manual_seed(0)
    head = D_MODEL // N_HEADS
    q = torch.randn(2, N_HEADS, LENGTH, head, generator=g)
    k = torch.randn(2, N_HEADS, LENGTH, head, generator=g)
    for what, pos in _position_sets(spec):
        out = _call(hook, origin, module.rotate, q, k, pos, pos)
        if not isinstance(out, tuple) or len(out) != 2:
            raise ProbeFailure(hook, f"returned {type(out).__name__} for {what}, not (q, k)")
        for name, t in zip("qk", out):
            _tensor(hook, t, tuple(q.shape), q, f"{name} with {what}")
            _finite(hook, t, f"{name} with {what}")
        if spec.relative:
            moved = _call(hook, origin, module.rotate, q, k, pos + SHIFT, pos + SHIFT)
            scores = out[0].double() @ out[1].double().transpose(-1, -2)
            again = moved[0].double() @ moved[1].double().transpose(-1, -2)
            _unchanged(hook, what, "scores q·k", scores, again)


def _probe_bias(module, spec, origin) -> None:
    hook = HOOKS["bias"]
    for what, pos in _position_sets(spec):
        queries = pos[-3:]  # fewer queries than keys: the model's cached decoding shape
        for causal in (False, True):
            case = f"{what}, {'causal' if causal else 'bidirectional'}"
            out = _call(hook, origin, module.score_bias, queries, pos, causal)
            _tensor(hook, out, (N_HEADS, len(queries), LENGTH), pos, case)
            allowed = (queries[:, None] >= pos[None, :])[None] if causal else None
            _finite(hook, out, case, allowed)
            if spec.relative:
                moved = _call(hook, origin, module.score_bias, queries + SHIFT, pos + SHIFT, causal)
                _unchanged(hook, case, "bias", out, moved)


def _probe_groups(module, spec, origin) -> None:
    """Its head groups (:meth:`PositionalEncoding.heads`), and where its heads differ, what the
    analyses ask of each group: ``kernel(positions, group)``, and ``frequencies(group)`` and
    ``angle_table(positions, dtype, group)`` of an encoding with waves (a module written before
    groups, whose hooks take none, fails here with the hook named, not in an analysis)."""
    groups = _call("heads", origin, head_layout, module, N_HEADS)
    if len(set(groups)) < 2:
        return
    positions = torch.arange(LENGTH)
    for group in dict.fromkeys(groups):
        what = f"group {group} of its heads {list(groups)}"
        out = _call("kernel", origin, module.kernel, positions, group)
        _tensor("kernel", out, (LENGTH, LENGTH), positions, what)
        if spec.waves:
            omega = _call("frequencies", origin, module.frequencies, group)
            _tensor("frequencies", omega, (omega.shape[0],), positions, what)
            table = _call(
                "angle_table", origin, module.angle_table, positions, torch.float32, group
            )
            _tensor("angle_table", table, (LENGTH, 2 * omega.shape[0]), positions, what)


def _probe_model(module, spec, origin) -> None:
    """The encoding inside a two-layer stack, causal and bidirectional: the model's own use of
    the hook (broadcasting, dtype casts) must work too."""
    from posenc.model import ModelConfig, TransformerStack, layout

    hook = HOOKS.get(spec.acts_on, "module")
    _call("layers", origin, layout, module, 2)  # its per-layer layout, if it declares one
    _probe_groups(module, spec, origin)
    x = torch.randn(2, LENGTH, D_MODEL, generator=torch.Generator().manual_seed(1))
    for causal in (False, True):
        cfg = ModelConfig(d_model=D_MODEL, n_heads=N_HEADS, n_layers=2, causal=causal)
        stack = TransformerStack(cfg, module)
        out = _call(hook, origin, stack, x, torch.arange(LENGTH))
        what = f"a two-layer {'causal' if causal else 'bidirectional'} stack's output"
        _tensor(hook, out, tuple(x.shape), x, what)
        _finite(hook, out, what)


PROBES = {"input": _probe_input, "qk": _probe_qk, "bias": _probe_bias}


def probe(spec: EncodingSpec, origin: str | None = None) -> str | None:
    """The one-line problem of ``spec`` (registered by the plugin ``origin``), or None when
    every probe passes."""
    label = f"plugin {origin}: encoding {spec.name}"
    torch.manual_seed(0)
    # Its declared defaults: a plugin is probed as the config would build it by default.
    params = EncodingParams(D_MODEL, N_HEADS, max_len=64, hyper=spec.hyper())
    try:
        module = _call("module", origin, spec.module, params)
        if spec.acts_on in PROBES:
            PROBES[spec.acts_on](module, spec, origin)
        _probe_model(module, spec, origin)
    except ProbeFailure as failure:
        if failure.hook == "module":
            built = getattr(spec.module, "__name__", spec.module)
            return f"{label}: building {built}: {failure.problem}"
        return f"{label}: hook {failure.hook}: {failure.problem}"
    return None
