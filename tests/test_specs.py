"""Every analysis folder keeps the contract of posenc.analysis, and the parse-time registry
(posenc.encoding_metadata) is the registry.

The spec tests run over whatever ``analyses/*/spec.py`` exist: a new analysis is covered the
moment its spec is written."""

import importlib
import re
import subprocess
import sys

import pytest
import yaml
from configs import PLUGIN, load, merged
from workflow_utils import ROOT

from posenc import encoding_metadata
from posenc.analysis import (
    AnalysisSpec,
    InstallError,
    Table,
    check_installed,
    discover,
    load_spec,
)
from posenc.claims import Check, Claim, section_thresholds
from posenc.encodings import REGISTRY
from posenc.plugins import PluginError

try:
    SPECS = discover(ROOT)
    DISCOVER_ERROR = None
except Exception as error:  # reported by test_every_spec_loads, not as a collection error
    SPECS, DISCOVER_ERROR = {}, error


CONFIGS = {"config.yaml": load("config.yaml"), "test.yaml (merged)": merged(load("test.yaml"))}
REFERENCES = set(yaml.safe_load((ROOT / "posenc" / "references.yaml").read_text()))

each_spec = pytest.mark.parametrize("spec", list(SPECS.values()), ids=list(SPECS))


def test_every_spec_loads():
    assert DISCOVER_ERROR is None, f"discover() failed: {DISCOVER_ERROR!r}"
    assert SPECS, "no analyses/*/spec.py found"


def test_reading_the_specs_imports_no_torch():
    # The Snakefile reads every spec at parse time: torch there would be most of a no-op
    # rerun's time.
    code = (
        "import sys; from posenc.analysis import discover; discover('.'); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@each_spec
def test_folder_has_its_files(spec):
    folder = ROOT / "analyses" / spec.id
    for name in ("spec.py", "compute.py", "present.py", "section.html.j2", "schema.yaml"):
        assert (folder / name).is_file(), f"analyses/{spec.id}/{name} is missing"


@each_spec
def test_present_has_a_function_per_figure_and_table(spec):
    present = importlib.import_module(f"posenc.analyses.{spec.id}.present")
    compute = importlib.import_module(f"posenc.analyses.{spec.id}.compute")
    assert callable(getattr(compute, "compute", None)), f"analyses/{spec.id}/compute.py: compute"
    wanted = [f"figure_{f}" for f in spec.figures] + [f"table_{t}" for t in spec.tables]
    missing = [name for name in wanted if not callable(getattr(present, name, None))]
    assert not missing, f"analyses/{spec.id}/present.py lacks {', '.join(missing)}"
    # ...and nothing there that no figure or table declares (it would never be shown).
    extra = [
        name
        for name in dir(present)
        if re.match(r"(figure|table)_", name)
        and callable(getattr(present, name))
        and name not in wanted
    ]
    assert not extra, f"analyses/{spec.id}/present.py: {', '.join(extra)} not in the spec"
    assert set(spec.timing_figures) <= set(spec.figures)
    assert set(spec.timing_tables) <= set(spec.tables)


@each_spec
@pytest.mark.parametrize("config", list(CONFIGS))
def test_claims_thresholds_and_flags_are_in_the_config(spec, config):
    cfg = CONFIGS[config].get(spec.id)
    assert cfg is not None, f"{config} has no {spec.id} section"
    thresholds = section_thresholds(CONFIGS[config], spec.id)
    for claim in spec.claims:
        for check in (*claim.checks, *claim.requires):
            if check.threshold is not None:
                assert check.threshold in thresholds, (
                    f"{claim.id}: {config} has no {spec.id}.thresholds.{check.threshold}"
                )
        if claim.unless:  # a flag that is not there would silently never apply
            assert claim.unless in cfg, f"{claim.id}: {config} has no {spec.id}.{claim.unless}"


@each_spec
def test_references_are_bibliography_keys(spec):
    cited = {key for claim in spec.claims for key in claim.references} | set(spec.references)
    unknown = sorted(cited - REFERENCES)
    assert not unknown, f"{spec.id} cites {unknown}, not keys of posenc/references.yaml"


@each_spec
def test_section_template_shows_declared_figures_and_tables(spec):
    text = (ROOT / "analyses" / spec.id / "section.html.j2").read_text()
    assert re.search(r"{%-?\s*macro body\(s\)", text), "the section is a body(s) macro"
    assert not re.search(r"macro title\(", text), "the title comes from the spec, not a macro"
    for kind, declared in (("figures", spec.figures), ("tables", spec.tables)):
        named = set(re.findall(rf"\bs\.{kind}\.(\w+)", text))
        assert named <= set(declared), f"{spec.id}'s section shows undeclared {kind} {named}"


def test_spec_rejects_inconsistent_declarations():
    check = (Check("x", value=True),)
    with pytest.raises(ValueError, match="must start with 'a.'"):
        AnalysisSpec(id="a", title="A", claims=(Claim("b.c", "S.", checks=check, kind="software"),))
    with pytest.raises(ValueError, match="appears twice"):
        AnalysisSpec(id="a", title="A", claims=(Claim("a.c", "S.", check, kind="software"),) * 2)
    with pytest.raises(ValueError, match="names csv rows, not in csvs"):
        AnalysisSpec(id="a", title="A", tables={"t": Table("T", csv="rows")})
    AnalysisSpec(id="a", title="A", tables={"t": Table("T", csv="rows")}, csvs=("rows",))


def test_a_spec_is_checked_against_its_folder(tmp_path):
    folder = tmp_path / "analyses" / "mine"
    folder.mkdir(parents=True)
    (folder / "spec.py").write_text(
        "from posenc.analysis import AnalysisSpec\nSPEC = AnalysisSpec(id='yours', title='T')\n"
    )
    with pytest.raises(ValueError, match="SPEC.id is 'yours', its folder 'mine'"):
        load_spec(folder / "spec.py")


def test_discover_refuses_a_checkout_that_is_not_the_one_installed(tmp_path):
    # Its specs and jobs would import posenc.analyses from the installed checkout, not its own.
    (tmp_path / "analyses" / "mine").mkdir(parents=True)
    with pytest.raises(InstallError, match=r"not from .*analyses: install this checkout"):
        discover(tmp_path)
    check_installed(ROOT)  # the checkout the tests run from is the one installed


# ----------------------------------------------------------------------------- registry metadata


def test_metadata_is_the_registry(tmp_path):
    meta = encoding_metadata.metadata(root=tmp_path, cache=tmp_path / "cache")
    assert list(meta) == list(REGISTRY)
    for name, spec in REGISTRY.items():
        assert meta[name] == {**spec.metadata(), "plugin": None}  # a built-in: no plugin file
        assert meta[name]["acts_on"] == spec.acts_on


def test_metadata_is_cached_and_plugins_are_in_its_key(tmp_path, monkeypatch):
    plugin, cache = tmp_path / "plugin.py", tmp_path / "cache"
    plugin.write_text(PLUGIN.format(summary="first"))
    meta = encoding_metadata.metadata(["plugin.py"], root=tmp_path, cache=cache)
    assert list(meta) == [*REGISTRY, "plugin_sin500"]
    assert meta["plugin_sin500"]["acts_on"] == "input"
    assert meta["plugin_sin500"]["summary"] == "first"
    assert len(list(cache.glob("metadata-*.json"))) == 1

    # Cached: the same sources are read back without starting a subprocess (no torch).
    real_run = subprocess.run

    def no_subprocess(*args, **kwargs):
        raise AssertionError("metadata() ran a subprocess for unchanged sources")

    monkeypatch.setattr(encoding_metadata.subprocess, "run", no_subprocess)
    assert encoding_metadata.metadata(["plugin.py"], root=tmp_path, cache=cache) == meta

    # An edit to the plugin is a new key: read afresh, and the old entry stays as it was.
    monkeypatch.setattr(encoding_metadata.subprocess, "run", real_run)
    plugin.write_text(PLUGIN.format(summary="second"))
    meta2 = encoding_metadata.metadata(["plugin.py"], root=tmp_path, cache=cache)
    assert meta2["plugin_sin500"]["summary"] == "second"
    assert len(list(cache.glob("metadata-*.json"))) == 2
    assert "plugin_sin500" not in encoding_metadata.metadata(root=tmp_path, cache=cache)


def test_a_broken_plugin_is_named(tmp_path):
    (tmp_path / "bad.py").write_text("raise RuntimeError('no luck')\n")
    with pytest.raises(PluginError, match=r"bad\.py: RuntimeError: no luck"):
        encoding_metadata.metadata(["bad.py"], root=tmp_path, cache=tmp_path / "cache")
    assert not list((tmp_path).glob("cache/metadata-*.json"))  # a failure is not cached
