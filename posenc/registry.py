"""The registry as the workflow sees it at parse time: names and metadata, without torch.

The Snakefile needs the encoding names (for the schema and the wildcards) and their metadata,
but importing :mod:`posenc.encodings` imports torch, which would be most of a no-op rerun's
time. So the metadata is read once by a subprocess that imports the registry (and the
config's plugins), and kept in a file keyed by a digest of the registry's source, the plugins'
sources and the Python running it. A change to any of them reads it afresh.

``python -m posenc.registry [PLUGIN ...]`` prints the metadata as JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from posenc import plugins

REGISTRY_SOURCE = Path(__file__).with_name("encodings.py")


def digest(plugin_entries: list[str], root: str | Path) -> str:
    h = hashlib.sha256(sys.version.encode())
    for path in [REGISTRY_SOURCE, *plugins.sources(plugin_entries, root)]:
        h.update(str(path).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def metadata(
    plugin_entries: list[str] | None = None, root: str | Path = ".", cache: str | Path | None = None
) -> dict[str, dict]:
    """``{name: metadata}`` for every registered encoding, built-ins first, then plugins'."""
    entries = [plugins.resolve(e, root) for e in plugin_entries or []]
    cache_dir = Path(cache or Path(root, ".snakemake", "posenc"))
    path = cache_dir / f"registry-{digest(entries, root)}.json"
    if path.is_file():
        return json.loads(path.read_text())
    proc = subprocess.run(
        [sys.executable, "-m", "posenc.registry", *entries],
        capture_output=True,
        text=True,
        cwd=root,
    )
    if proc.returncode:
        # The subprocess's last line is the plugin's own error, which names it.
        lines = proc.stderr.strip().splitlines() or ["(no message)"]
        raise plugins.PluginError(lines[-1])
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".json")
    with os.fdopen(fd, "w") as f:
        f.write(proc.stdout)
    os.replace(tmp, path)
    return json.loads(proc.stdout)


def _main(entries: list[str]) -> None:
    from posenc.encodings import REGISTRY

    try:
        plugins.load(entries)
    except plugins.PluginError as error:
        sys.exit(f"{error}")
    print(json.dumps({name: spec.metadata() for name, spec in REGISTRY.items()}, indent=1))


if __name__ == "__main__":
    _main(sys.argv[1:])
