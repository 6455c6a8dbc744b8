"""Where the workflow lives: the folder holding the Snakefile, ``rules/``, ``workflow/scripts/``,
``config/``, ``report_templates/``, ``profiles/`` and ``analyses/``. Every module that runs or
reads the workflow asks here.

From a checkout (the editable install, or ``PYTHONPATH``) it is the checkout, this package's
parent. From a wheel it is this package's own folder: the build (``setup.py``) copies the
workflow's files into it. Nowhere else would do, because the Snakefile requires its
``analyses/`` to be the folder Python imports as ``posenc.analyses``
(:func:`posenc.analysis.check_installed`), and a wheel installs that at ``posenc/analyses/``:
so the Snakefile, whose rules reach ``../analyses`` and ``../workflow``, sits beside it."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# Only a built wheel's package holds a Snakefile: the build copies it into the build folder,
# never into the checkout's posenc/, so a checkout is never taken for an installed copy.
ROOT = PACKAGE if (PACKAGE / "Snakefile").is_file() else PACKAGE.parent


def cache_dir(root: str | Path = ROOT) -> Path:
    """Where the workflow keeps its parse caches (the import graph, the registry's metadata,
    the captions Snakemake's report reads): beside the workflow in a checkout, as always; for
    an installed wheel, whose package folder may be read-only and is shared by every folder
    that runs it, the working folder's ``.snakemake/posenc`` (Snakemake's own state is there
    too). A wheel's root is a package (it holds ``__init__.py``); a checkout's is not."""
    root = Path(root)
    base = Path.cwd() if (root / "__init__.py").is_file() else root
    return base / ".snakemake" / "posenc"
