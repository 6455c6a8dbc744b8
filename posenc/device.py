"""Device selection: ``auto`` picks CUDA when present; everything also runs on the CPU."""

from __future__ import annotations

import torch


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "config key 'device' is 'cuda' but torch sees no CUDA device on this machine "
            f"(torch {torch.__version__}); use 'auto' or 'cpu'"
        )
    if name not in ("cpu", "cuda"):
        raise ValueError(f"config key 'device': unknown device {name!r} (auto, cpu, cuda)")
    return torch.device(name)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    threads = torch.get_num_threads()
    plural = "thread" if threads == 1 else "threads"
    return f"cpu ({platform.processor() or platform.machine()}, {threads} {plural})"


def set_threads(threads: int) -> None:
    """Follow the rule's ``threads:`` so N parallel jobs do not oversubscribe the cores."""
    torch.set_num_threads(max(1, int(threads)))


def dtype_from_name(name: str) -> torch.dtype:
    dtypes = {
        "float64": torch.float64,
        "float32": torch.float32,
        "bfloat16": torch.bfloat16,
        "float16": torch.float16,
    }
    try:
        return dtypes[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(dtypes)}") from None
