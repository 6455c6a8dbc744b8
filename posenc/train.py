"""The training loop: pure and importable (no paths, no global config), resumable, loud on NaN.

``train(model, batches, cfg, ...)`` runs AdamW with a linear warm-up and a cosine decay (the
GPT-2/nanoGPT recipe) and returns a log of the run. Three properties the workflow relies on:

* **Deterministic.** The data come from a ``torch.Generator`` the loop owns and seeds; with the
  model's initial weights seeded by the caller, the same config on the CPU gives the same losses.
* **Resumable.** Every ``checkpoint_every`` steps the model, the optimizer, every RNG state and
  the step are written atomically to ``resume_path``. A run killed midway continues from there
  and ends with exactly the weights of an uninterrupted run. The checkpoint carries a
  fingerprint of the run's settings, so a stale one (a changed config) is never resumed.
* **Loud.** A non-finite or exploding loss (or gradient norm) raises :class:`TrainingDiverged`
  naming the run and the step; the resume checkpoint is removed, and no model is returned, so
  no checkpoint and no report row can come out of a diverged run.
"""

from __future__ import annotations

import hashlib
import json
import math
import resource
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import torch
import torch.nn.functional as F
from torch import nn

from posenc.data import IGNORE, BatchFn
from posenc.encodings import build
from posenc.io import atomic_path
from posenc.model import LanguageModel, ModelConfig

# Keys of train()'s log that describe how the run went (speed, memory, resumption), not the
# model: they differ between identical runs, so the rule scripts write them to timing.json.
RUN_RECORD = (
    "resumed_from_step",
    "tokens_trained_here",
    "wall_s",
    "tokens_per_s",
    "peak_memory_mb",
    "peak_memory_kind",
    "threads",
)


def fingerprint(*parts: Any) -> str:
    """Identifies a run's settings (``parts``: JSON-able): a resume checkpoint written under
    other settings is never used."""
    blob = json.dumps(list(parts), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class TrainingDiverged(RuntimeError):
    """The loss became NaN/inf or exploded; the message names the run and the step."""


@dataclass(frozen=True)
class TrainConfig:
    steps: int
    batch_size: int
    lr: float
    weight_decay: float = 0.1
    warmup_steps: int = 100
    min_lr_ratio: float = 0.1  # the cosine ends at lr * min_lr_ratio
    grad_clip: float = 1.0
    betas: tuple[float, float] = (0.9, 0.95)
    checkpoint_every: int = 0  # steps between resume checkpoints; 0: none
    max_loss: float = 20.0  # nats; above it the run has exploded
    bf16: bool = False  # autocast to bfloat16 on CUDA (ignored on the CPU)
    progress_interval_s: float = 10.0  # seconds between progress lines (and one at the end)

    def __post_init__(self):
        if self.steps <= 0 or self.batch_size <= 0 or self.lr <= 0:
            raise ValueError(f"steps, batch_size and lr must be positive: {self}")


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to ``lr`` over ``warmup_steps``, then cosine decay to ``lr*min_lr_ratio``:

    lr(t) = lr * (t+1) / W                                         for t < W
    lr(t) = lr * (r + (1 - r) * (1 + cos(pi * (t-W) / (T-W))) / 2) otherwise
    """
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    decay_steps = max(cfg.steps - cfg.warmup_steps, 1)
    progress = min((step - cfg.warmup_steps) / decay_steps, 1.0)
    r = cfg.min_lr_ratio
    return cfg.lr * (r + (1 - r) * 0.5 * (1 + math.cos(math.pi * progress)))


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices (weights, embeddings, tables) only, as in nanoGPT:
    decaying LayerNorm gains and biases only hurts (Loshchilov & Hutter 2019)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas)


def build_model(
    vocab_size: int,
    model_cfg: dict[str, Any],
    encoding: str,
    encoding_cfg: dict[str, Any] | None = None,
    **shape: Any,
) -> LanguageModel:
    """The project's LanguageModel with registry encoding ``encoding``.

    ``model_cfg`` holds ModelConfig fields, ``encoding_cfg`` the config's ``encoding:`` block
    (the encoding reads its own hyper-parameters there), ``shape`` what else the encoding is
    built with (``max_len``); its width and heads are the model's. Plain values, so they go
    into checkpoints as they are.
    """
    cfg = ModelConfig(**model_cfg)
    module = build(encoding, encoding_cfg, d_model=cfg.d_model, n_heads=cfg.n_heads, **shape)
    return LanguageModel(vocab_size, cfg, module)


def loss_fn(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) over the scored targets; logits (B, L, V), targets (B, L)."""
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE)


# Progress lines fit a terminal and a log viewer: one job's line, never a redrawn bar. tqdm's
# bar redraws itself with '\r' on a terminal, which a captured terminal (and several jobs
# sharing one) showed as single lines of thousands of characters.
PROGRESS_WIDTH = 120


def duration(seconds: float) -> str:
    """``seconds`` as a person reads a wait: "40 s", "3 min", "1 h 05 min"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"


def progress_line(
    label: str, step: int, total: int, loss: float, seconds: float, seconds_left: float | None
) -> str:
    """One line of a run's progress, at most :data:`PROGRESS_WIDTH` characters, e.g.
    ``lm/rope/seed0: 30% step 1200/4000, loss 1.93, 3 min left``; the last says how long the
    run took. ``seconds_left`` None: not yet known. A label too long is cut in its middle."""
    if step >= total:
        when = f"took {duration(seconds)}"
    else:
        when = "time left unknown" if seconds_left is None else f"{duration(seconds_left)} left"
    tail = f": {100 * step // total}% step {step}/{total}, loss {loss:.4g}, {when}"
    room = PROGRESS_WIDTH - len(tail)
    if len(label) > room:
        keep = max(room - 3, 0)
        label = label[: keep - keep // 2] + "..." + label[len(label) - keep // 2 :]
    return (label + tail)[:PROGRESS_WIDTH]


def progress_file(stream: TextIO | None = None) -> TextIO:
    """Where progress lines go: ``stream``, else this process's stderr as it is now (a job's
    stderr, which Snakemake shows)."""
    return stream or sys.stderr


class Progress:
    """Progress lines of one run on ``stream``: one every ``interval_s`` and one at the end,
    each with the time left, from the rate of the steps this process ran (a resumed run's
    earlier steps took their time elsewhere)."""

    def __init__(self, label: str, total: int, start: int, interval_s: float, stream: TextIO):
        self.label, self.total, self.start = label, total, start
        self.interval_s, self.stream = interval_s, stream
        self.began = self.last = time.monotonic()

    def update(self, step: int, loss: float) -> None:
        now = time.monotonic()
        if step < self.total and now - self.last < self.interval_s:
            return
        self.last = now
        seconds = now - self.began
        ran = step - self.start
        left = seconds / ran * (self.total - step) if ran > 0 else None
        line = progress_line(self.label, step, self.total, loss, seconds, left)
        self.stream.write(line + "\n")
        self.stream.flush()


def peak_memory_mb(device: torch.device) -> tuple[float, str]:
    """Peak memory of this process: allocated CUDA memory on a GPU, else the peak RSS."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20, "cuda_max_allocated"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (2**20 if sys.platform == "darwin" else 2**10), "cpu_max_rss"


@dataclass
class _State:
    step: int = 0
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    snapshots: dict[int, dict] = field(default_factory=dict)  # step -> weights (CPU)


def _save_resume(path: Path, fingerprint: str, state: _State, model, optimizer, generator):
    payload = {
        "fingerprint": fingerprint,
        "step": state.step,
        "losses": state.losses,
        "lrs": state.lrs,
        "snapshots": state.snapshots,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "data_rng": generator.get_state(),
        "torch_rng": torch.get_rng_state(),  # dropout on the CPU
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def _load_resume(path: Path, fingerprint: str, device: torch.device, log) -> dict | None:
    if not path.exists():
        return None
    payload = torch.load(path, map_location=device, weights_only=True)
    if payload.get("fingerprint") != fingerprint:
        log(f"ignoring resume checkpoint {path}: written by a run with other settings")
        return None
    return payload


def train(
    model: nn.Module,
    batches: BatchFn,
    cfg: TrainConfig,
    *,
    seed: int,
    device: torch.device,
    label: str,
    resume_path: str | Path | None = None,
    fingerprint: str = "",
    progress: TextIO | None = None,
    log=print,
    snapshot_steps: tuple[int, ...] = (),
) -> dict[str, Any]:
    """Train ``model`` in place on ``batches`` and return the run's log.

    ``seed`` seeds the data generator (and dropout); seed the model's initialisation before
    building it. ``label`` names the run in errors (e.g. "lm/rope/seed0"). The log holds the loss
    and learning rate at every step, tokens/s, wall time, device and peak memory.
    ``snapshot_steps``: steps after which the weights are kept (on the CPU, and in the resume
    checkpoint, so a resumed run still has the earlier ones); the log's ``snapshots`` maps each
    to its state dict, for the caller to take out.
    """
    model.to(device)
    model.train()
    optimizer = make_optimizer(model, cfg)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    state = _State()
    resume_path = Path(resume_path) if resume_path else None

    resumed = _load_resume(resume_path, fingerprint, device, log) if resume_path else None
    if resumed is not None:
        model.load_state_dict(resumed["model"])
        optimizer.load_state_dict(resumed["optimizer"])
        generator.set_state(resumed["data_rng"].cpu())
        torch.set_rng_state(resumed["torch_rng"].cpu())
        if resumed["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([s.cpu() for s in resumed["cuda_rng"]])
        state = _State(
            resumed["step"],
            list(resumed["losses"]),
            list(resumed["lrs"]),
            dict(resumed.get("snapshots", {})),
        )
        log(f"{label}: resumed from step {state.step} ({resume_path})")

    use_bf16 = cfg.bf16 and device.type == "cuda"
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if use_bf16 else nullcontext()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start_step, tokens = state.step, 0
    bar = Progress(
        label, cfg.steps, start_step, cfg.progress_interval_s, progress or progress_file()
    )
    began = time.perf_counter()
    for step in range(start_step, cfg.steps):
        lr = lr_at(step, cfg)
        for group in optimizer.param_groups:
            group["lr"] = lr
        # A batch may carry its positions (randomized positions: posenc.data); else 0..L-1.
        inputs, targets, *positions = batches(generator, cfg.batch_size, step)
        inputs, targets = inputs.to(device), targets.to(device)
        with autocast:
            if positions:
                logits = model(inputs, positions[0].to(device))
            else:
                logits = model(inputs)
            loss = loss_fn(logits, targets)
        value = loss.item()
        if not math.isfinite(value) or value > cfg.max_loss:
            _diverged(resume_path, f"{label}: loss {value} at step {step} (limit {cfg.max_loss})")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip))
        if not math.isfinite(grad_norm):
            _diverged(resume_path, f"{label}: gradient norm {grad_norm} at step {step}")
        optimizer.step()
        tokens += inputs.numel()
        state.step = step + 1
        state.losses.append(value)
        state.lrs.append(lr)
        if state.step in snapshot_steps:
            state.snapshots[state.step] = {
                k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()
            }
        bar.update(state.step, value)
        every = cfg.checkpoint_every
        if resume_path and every and state.step % every == 0 and state.step < cfg.steps:
            _save_resume(resume_path, fingerprint, state, model, optimizer, generator)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    wall = time.perf_counter() - began
    peak, peak_kind = peak_memory_mb(device)
    return {
        "label": label,
        "config": asdict(cfg),
        "seed": seed,
        "steps": cfg.steps,
        "losses": state.losses,
        "lrs": state.lrs,
        "resumed_from_step": start_step,
        "tokens_trained_here": tokens,
        "wall_s": wall,
        "tokens_per_s": tokens / wall if wall > 0 else None,
        "peak_memory_mb": peak,
        "peak_memory_kind": peak_kind,
        "threads": torch.get_num_threads(),
        "bf16": use_bf16,
        "snapshots": state.snapshots,
    }


def _diverged(resume_path: Path | None, message: str):
    # A diverged run leaves nothing behind: resuming it would only diverge again.
    if resume_path is not None:
        resume_path.unlink(missing_ok=True)
    raise TrainingDiverged(message)


def finish_resume(resume_path: str | Path | None) -> None:
    """Remove the resume checkpoint once the final model is safely written."""
    if resume_path:
        Path(resume_path).unlink(missing_ok=True)


def save_checkpoint(path: str | Path, model: nn.Module, meta: dict[str, Any]) -> None:
    """The trained model's weights plus everything needed to rebuild it (atomically)."""
    with atomic_path(path) as tmp:
        torch.save({"model": model.state_dict(), **meta}, tmp)


def load_checkpoint(path: str | Path, device: torch.device) -> tuple[LanguageModel, dict]:
    """Rebuild the model saved by :func:`save_checkpoint`; returns (model in eval mode, meta)."""
    payload = torch.load(path, map_location=device, weights_only=True)
    model = build_model(
        payload["vocab_size"],
        payload["model_config"],
        payload["encoding"],
        payload["encoding_config"],
        max_len=payload["max_len"],
    )
    model.load_state_dict(payload.pop("model"))
    return model.to(device).eval(), payload
