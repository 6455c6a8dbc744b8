"""What a step in time per byte is: the output's bytes against the machine's caches, and the
bytes each call faulted in (memory mapped afresh)."""

import os
from pathlib import Path
from typing import Any

from .workloads import ATTENTION

MIB = 2**20
CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def mib(n: float | None) -> float | None:
    return None if n is None else n / MIB


def steps(rows: list[dict]) -> list[dict]:
    """Per encoding and width, the largest step up in time per output byte between two
    consecutive lengths timed, and what changed there: the output's bytes (a cache it may
    outgrow) and the bytes each call faulted in (memory mapped afresh). Time per byte only
    falls with L while the per-call overhead is being amortised, so a rise is a real step."""
    out = []
    pairs = dict.fromkeys((r["workload"], r["d_model"]) for r in rows if r["workload"] != ATTENTION)
    for name, d in pairs:
        mine = sorted(
            (r for r in rows if (r["workload"], r["d_model"]) == (name, d) and r["length"] > 1),
            key=lambda r: r["length"],
        )
        best = None
        for a, b in zip(mine, mine[1:]):
            if not (a["out_bytes"] and b["out_bytes"]):
                continue
            time_x, bytes_x = b["median_s"] / a["median_s"], b["out_bytes"] / a["out_bytes"]
            if best is None or time_x / bytes_x > best["per_byte_x"]:
                best = {
                    "workload": name,
                    "acts_on": a["acts_on"],
                    "d_model": d,
                    "heads": a["heads"],
                    "from_len": a["length"],
                    "to_len": b["length"],
                    "time_x": time_x,
                    "bytes_x": bytes_x,
                    "per_byte_x": time_x / bytes_x,
                    "out_bytes_to": b["out_bytes"],
                    "out_mib_from": a["out_bytes"] / MIB,
                    "out_mib_to": b["out_bytes"] / MIB,
                    "fresh_mib_from": mib(a["fresh_bytes"]),
                    "fresh_mib_to": mib(b["fresh_bytes"]),
                }
        if best is not None:
            out.append(best)
    return out


def window_fresh(rows: list[dict], fit_min_len: int, quadratic: list[str]) -> list[float] | None:
    """The least and the most bytes faulted in per byte written, over every call of an
    encoding fitted in L from ``fit_min_len`` (the quadratic ones are fitted over every
    length): both near 0, the memory is reused throughout the window; both at least 1, it is
    mapped afresh at every call. None where the faults cannot be counted."""
    ratios = [
        r["fresh_bytes"] / r["out_bytes"]
        for r in rows
        if r["workload"] != ATTENTION
        and r["workload"] not in quadratic
        and r["length"] >= fit_min_len
        and r["out_bytes"]
        and r["fresh_bytes"] is not None
    ]
    return [min(ratios), max(ratios)] if ratios else None


def cache_sizes(root: Path = CACHES) -> dict[str, Any]:
    """This machine's CPU caches as the OS describes them: each level's type, bytes and the
    CPUs that share it (Linux sysfs), else the last-level size ``os.sysconf`` gives, else
    "unknown". Machine-specific: kept in timing.json, never in metrics.json."""
    levels = []
    for index in sorted(root.glob("index*")):
        try:
            size = (index / "size").read_text().strip()
            bytes_ = int(size[:-1]) * {"K": 2**10, "M": 2**20, "G": 2**30}[size[-1]]
            levels.append(
                {
                    "level": int((index / "level").read_text()),
                    "type": (index / "type").read_text().strip(),
                    "bytes": bytes_,
                    "shared_cpus": (index / "shared_cpu_list").read_text().strip(),
                }
            )
        except (OSError, ValueError, KeyError, IndexError):
            continue
    levels = [c for c in levels if c["type"] != "Instruction"]
    if levels:
        return {"source": str(root), "levels": levels}
    for level in (3, 2):
        try:
            size = os.sysconf(f"SC_LEVEL{level}_CACHE_SIZE")
        except (ValueError, OSError, AttributeError):
            continue
        if size > 0:
            return {
                "source": "os.sysconf",
                "levels": [{"level": level, "type": "Unified", "bytes": size, "shared_cpus": ""}],
            }
    return {"source": "unknown", "levels": []}


def last_levels(caches: dict) -> tuple[int | None, int | None]:
    """Bytes of the second-level and of the last-level cache (None where unknown)."""
    levels = caches["levels"]
    l2 = next((c["bytes"] for c in levels if c["level"] == 2), None)
    llc = max(levels, key=lambda c: c["level"])["bytes"] if levels else None
    return l2, llc
