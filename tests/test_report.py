"""The report renderer on fake sections built in a temporary folder (tests/fake_report.py):
escaping, numbering, the merged ledger, downloads, the stylesheet split, provenance, and a
clear error naming the file for every malformed result."""

import json
import os
import re
import shutil
import time
from datetime import datetime
from pathlib import Path

import pytest
from fake_report import (
    corrupt,
    failing,
    make_section,
    make_templates,
    passing,
    two_sections,
    undecided,
)

from posenc.report import FILES, build_context, copy_downloads, render, screen_digest
from posenc.report.provenance import installed_packages
from posenc.report.render import stylesheet_for
from posenc.report.runlog import invocation_start, job_summary, read_benchmarks, read_jobs

ROOT = Path(__file__).resolve().parents[1]
CSS = (ROOT / "report_templates" / "style.css").read_text()


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return two_sections(tmp_path)


def context_of(fake):
    return build_context(**fake)


def html_of(context, fake, medium="screen"):
    return render(context, fake["template_dir"], medium, CSS)


# ----------------------------------------------------------------------------- escaping


@pytest.mark.parametrize("medium", ["screen", "print"])
def test_text_from_config_and_results_is_escaped(tmp_path, monkeypatch, medium):
    monkeypatch.chdir(tmp_path)
    hostile = '<script>alert("x")</script>'
    fake = two_sections(tmp_path, config_name=hostile)
    fake["sections"] = [
        make_section(
            tmp_path,
            "gamma",
            ["curve"],
            ["cases"],
            [passing("gamma.one", "gamma", statement="<img src=x onerror=alert(1)>")],
            caption="a < b & <b>bold</b>",
            cell="<td>cell</td>",
        )
    ]
    fake["template_dir"] = make_templates(
        tmp_path / "g", {"gamma": {"figures": ["curve"], "tables": ["cases"]}}
    )
    fake["config"]["encodings"] = ["<i>rope</i>"]
    html = html_of(context_of(fake), fake, medium)
    # The page has no script of its own: any <script> would have come from the data.
    assert "<script" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "a &lt; b &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert "&lt;td&gt;cell&lt;/td&gt;" in html
    assert "<i>rope</i>" not in html and "&lt;i&gt;rope&lt;/i&gt;" in html


# ----------------------------------------------------------------------------- numbering


def test_figures_and_tables_are_numbered_in_report_order(fake):
    context = context_of(fake)
    alpha, beta = context["sections"]
    assert [f["number"] for f in alpha["figures"].values()] == [1, 2]
    assert [f["number"] for f in beta["figures"].values()] == [3]
    assert [t["number"] for t in alpha["tables"].values()] == [1]
    assert [t["number"] for t in beta["tables"].values()] == [2, 3]
    assert [s["number"] for s in context["sections"]] == [1, 2]

    html = html_of(context, fake)
    for n in (1, 2, 3):
        assert f"<strong>Figure {n}.</strong>" in html
        assert f"<strong>Table {n}.</strong>" in html
    # Cross-references land on the figure they name.
    assert '<a class="xref" href="#fig-beta-decay">Figure 3</a>' in html
    assert '<figure id="fig-beta-decay">' in html
    assert html.index("Figure 2.") < html.index("Figure 3.")


def test_screen_embeds_pngs_and_print_uses_the_svgs(fake):
    context = context_of(fake)
    screen = html_of(context, fake, "screen")
    assert len(re.findall(r'<img src="data:image/png;base64,', screen)) == 3
    printed = html_of(context, fake, "print")
    assert re.findall(r'<img src="([^"]+)"', printed) == [
        f"{FILES}/alpha/curve.svg",
        f"{FILES}/alpha/heat.svg",
        f"{FILES}/beta/decay.svg",
    ]


# ----------------------------------------------------------------------------- claims


def test_counts_by_kind_list_only_the_kinds_present_in_order():
    from posenc.report.findings import counts_by_kind

    ledger = [
        {"kind": "empirical", "verdict": "n/a"},
        {"kind": "identity", "verdict": "pass"},
        {"kind": "empirical", "verdict": "pass"},
        {"kind": "empirical", "verdict": "inconclusive"},
    ]
    assert counts_by_kind(ledger) == [
        {
            "kind": "identity",
            "label": "Identities",
            "total": 1,
            "pass": 1,
            "fail": 0,
            "inconclusive": 0,
            "n/a": 0,
        },
        {
            "kind": "empirical",
            "label": "Empirical claims",
            "total": 3,
            "pass": 1,
            "fail": 0,
            "inconclusive": 1,
            "n/a": 1,
        },
    ]


def test_an_inconclusive_claim_is_counted_apart_and_says_why(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake = two_sections(tmp_path)
    shutil.rmtree(tmp_path / "results/beta")  # made again, with an inconclusive claim
    fake["sections"][1] = make_section(
        tmp_path,
        "beta",
        ["decay"],
        ["t1", "t2"],
        [passing("beta.one", "beta", kind="software"), undecided("beta.two", "beta")],
        title="Beta analysis",
    )
    context = context_of(fake)
    assert context["counts"] == {"pass": 2, "fail": 1, "inconclusive": 1, "n/a": 0}
    html = " ".join(html_of(context, fake).split())
    assert "2 of 4 claims hold" in html
    assert "1 do not" in html and "1 inconclusive (the evidence cannot decide them)" in html
    assert '<tr id="claim-beta-two" class="verdict-inconclusive">' in html
    assert (
        "Inconclusive in this run: the interval of slope straddles the threshold "
        "(slope &lt; 0.1 (the whole interval)): [0.05, 0.15]." in html
    )
    # In the findings with what the evidence could not decide, not with what does not hold.
    findings = context["findings"]
    assert context["intervals"]["inconclusive"]["evidence"] == 1  # its interval straddles
    # Ranked among the findings the report opens with: the failure, then the undecided claim.
    assert [f["id"] for f in findings["top"]] == ["alpha.two", "beta.two"]
    ranked = html.split('<ol class="findings">')[1].split("</ol>")[0]
    assert ranked.index("#claim-alpha-two") < ranked.index("#claim-beta-two")


def test_claims_are_merged_in_section_order_and_link_to_their_section(fake):
    context = context_of(fake)
    assert [c["id"] for c in context["ledger"]] == ["alpha.one", "alpha.two", "beta.one"]
    assert context["counts"] == {"pass": 2, "fail": 1, "inconclusive": 0, "n/a": 0}
    assert {c["section_anchor"] for c in context["claims"]} == {"sec-alpha", "sec-beta"}
    # The merged ledger keeps the contract's fields only (outcomes: each entry's verdict;
    # not_judged, family and scope: the entries set aside, the family-wise level, the scale).
    assert set(context["ledger"][0]) == {
        "outcomes",
        "not_judged",
        "family",
        "scope",
        "id",
        "kind",
        "statement",
        "measured",
        "expected",
        "verdict",
        "references",
        "section",
        "reason",
    }
    html = html_of(context, fake)
    assert "2 of 3 claims hold" in html
    # Per kind too: a verdict on an identity is not one on an empirical claim.
    assert [(k["kind"], k["total"], k["pass"], k["fail"]) for k in context["counts_by_kind"]] == [
        ("identity", 1, 1, 0),
        ("software", 1, 1, 0),
        ("empirical", 1, 0, 1),
    ]
    assert (
        '<p class="kinds">Identities: 1 of 1 hold · Software checks: 1 of 1 hold · '
        "Empirical claims: 0 of 1 hold; 1 do not."
    ) in html
    assert '<span class="kind">empirical</span>' in html  # each row says its kind
    assert (
        '<a class="evidence" href="#sec-beta">§2'
        '<span class="section-title"> Beta analysis</span></a>' in html
    )
    # A failing claim stands out and says why, and the summary links to it.
    assert 'class="verdict-fail"' in html
    assert (
        'Does not hold in this run<span class="why-detail">: measured max: 0.2, '
        "where error &lt; 0.1 was expected</span>."
    ) in html
    # Claims cite numbered references; the list names the source documents by their titles.
    assert '<a class="cite" href="#ref-1">[1]</a> Su et al. 2021' in html
    assert "“Transformers · Positional encoding”, one of the two source documents" in html
    assert 'id="ref-3"' in html and "arXiv:1706.03762" in html  # a section's own citation
    assert 'href="#claim-alpha-two"' in html and 'id="claim-alpha-two"' in html


def test_a_claim_id_in_two_sections_is_an_error_naming_both_files(fake):
    beta = fake["sections"][1]
    corrupt(beta["claims"], json.dumps([passing("alpha.one", "beta")]))
    with pytest.raises(ValueError) as err:
        build_context(**fake)
    assert beta["claims"] in str(err.value)
    assert fake["sections"][0]["claims"] in str(err.value)


def test_a_claim_naming_a_section_not_in_the_report_is_an_error(fake):
    beta = fake["sections"][1]
    corrupt(beta["claims"], json.dumps([passing("beta.one", "gamma")]))
    with pytest.raises(ValueError, match=rf"{re.escape(beta['claims'])}: .*'gamma'"):
        build_context(**fake)


# ----------------------------------------------------------------------------- malformed files

BAD_CLAIMS = {
    "not JSON": "[{",
    "not a list": '{"id": "x"}',
    "missing key": json.dumps([{"id": "alpha.one", "statement": "s"}]),
    "unknown verdict": json.dumps([{**passing("alpha.one", "alpha"), "verdict": "maybe"}]),
    "entry not an object": json.dumps(["alpha.one"]),
}


@pytest.mark.parametrize("text", BAD_CLAIMS.values(), ids=BAD_CLAIMS.keys())
def test_malformed_claims_file_is_an_error_naming_it(fake, text):
    path = fake["sections"][0]["claims"]
    corrupt(path, text)
    with pytest.raises(ValueError, match=re.escape(path)):
        build_context(**fake)


def _metrics_with(path, change):
    metrics = json.loads(Path(path).read_text())
    change(metrics)
    return json.dumps(metrics)


BAD_METRICS = {
    "not JSON": lambda p: "{",
    "not an object": lambda p: "[]",
    "figures not a list": lambda p: _metrics_with(p, lambda m: m.update(figures={})),
    "figure without png": lambda p: _metrics_with(p, lambda m: m["figures"][0].pop("png")),
    "figure file missing": lambda p: _metrics_with(
        p, lambda m: m["figures"][0].update(png="results/alpha/nowhere.png")
    ),
    "duplicate figure id": lambda p: _metrics_with(
        p, lambda m: m["figures"].append(dict(m["figures"][0]))
    ),
    "table row too short": lambda p: _metrics_with(p, lambda m: m["tables"][0]["rows"].append([1])),
    "table without columns": lambda p: _metrics_with(p, lambda m: m["tables"][0].pop("columns")),
}


@pytest.mark.parametrize("make_text", BAD_METRICS.values(), ids=BAD_METRICS.keys())
def test_malformed_metrics_file_is_an_error_naming_it(fake, make_text):
    path = fake["sections"][0]["metrics"]
    corrupt(path, make_text(path))
    with pytest.raises(ValueError, match=re.escape(path)):
        build_context(**fake)


def test_missing_metrics_file_is_an_error_naming_it(fake):
    path = fake["sections"][1]["metrics"]
    os.remove(path)
    with pytest.raises(ValueError, match=re.escape(path) + ".*missing"):
        build_context(**fake)


# ----------------------------------------------------------------------------- downloads


def test_every_figure_table_and_the_ledger_are_offered_for_download(fake, tmp_path):
    context = context_of(fake)
    report_dir = tmp_path / "results" / "report"
    claims = tmp_path / "results" / "claims.json"
    claims.write_text(json.dumps(context["ledger"]))
    copy_downloads(context, report_dir, claims)
    html = html_of(context, fake)
    hrefs = set(re.findall(r'href="(files/[^"]+)"', html))
    expected = {f"{FILES}/claims.json"} | {
        f"{FILES}/{sid}/{name}"
        for sid, names in {
            "alpha": ["curve.png", "curve.svg", "heat.png", "heat.svg", "cases.csv"],
            "beta": ["decay.png", "decay.svg", "t1.csv", "t2.csv"],
        }.items()
        for name in names
    }
    assert hrefs == expected
    for href in hrefs:
        assert (report_dir / href).is_file(), href
    assert (report_dir / FILES / "alpha" / "curve.svg").read_bytes() == (
        tmp_path / "results" / "alpha" / "curve.svg"
    ).read_bytes()


def test_two_files_offered_under_one_name_is_an_error(fake, tmp_path):
    path = fake["sections"][0]["metrics"]
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "curve.png").write_bytes((tmp_path / "results/alpha/curve.png").read_bytes())
    corrupt(
        path, _metrics_with(path, lambda m: m["figures"][1].update(png=str(other / "curve.png")))
    )
    with pytest.raises(ValueError, match="curve.png"):
        build_context(**fake)


# ----------------------------------------------------------------------------- stylesheet

SAMPLE_CSS = """
a { color: red; }
@page { size: A4; @bottom-center { content: counter(page); } }
@media print { a::after { content: "}"; } }
@media screen and (max-width: 600px) { body { padding: 0; } }
"""


def test_each_medium_gets_its_part_of_the_one_stylesheet():
    screen = stylesheet_for(SAMPLE_CSS, "screen")
    assert "a { color: red; }" in screen and "max-width" in screen
    assert "@page" not in screen and "@media print" not in screen
    printed = stylesheet_for(SAMPLE_CSS, "print")
    assert "@page" in printed and "@media print" in printed and "a { color: red; }" in printed
    assert "max-width" not in printed
    with pytest.raises(ValueError, match="medium"):
        stylesheet_for(SAMPLE_CSS, "tv")


def test_screen_digest_ignores_print_rules_only(tmp_path):
    css = tmp_path / "style.css"
    css.write_text(SAMPLE_CSS)
    before = screen_digest(css)
    css.write_text(SAMPLE_CSS.replace("size: A4", "size: letter").replace('"}"', '"]"'))
    assert screen_digest(css) == before
    css.write_text(SAMPLE_CSS.replace("color: red", "color: blue"))
    assert screen_digest(css) != before


def test_the_real_stylesheet_keeps_paged_media_out_of_the_page():
    screen, printed = stylesheet_for(CSS, "screen"), stylesheet_for(CSS, "print")
    assert "target-counter" not in screen and "@page" not in screen
    for feature in ("@page", "counter(page)", "target-counter", "bookmark-level", "string-set"):
        assert feature in printed, feature


# ----------------------------------------------------------------------------- provenance


def _touch(path: Path, when: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("s\th:m:s\tmax_rss\n1.5\t0:00:01\t120.5\n2.5\t0:00:02\tNA\n")
    os.utime(path, (when, when))


def test_benchmarks_name_their_rule_and_whether_the_job_ran_now(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.time() - 100
    log_dir = Path(".snakemake/log")
    log_dir.mkdir(parents=True)
    (log_dir / "2020-01-01T000000.000001.snakemake.log").touch()  # an older invocation
    stamp = datetime.fromtimestamp(start).isoformat().replace(":", "")
    (log_dir / f"{stamp}.snakemake.log").touch()
    _touch(Path("results/benchmarks/train_rope_0.tsv"), start + 50)  # ran in this invocation
    _touch(Path("results/benchmarks/train_alibi_1.tsv"), start - 500)  # reused
    _touch(Path("results/benchmarks/similarity.tsv"), start - 500)
    _touch(Path("results/benchmarks/report.tsv"), start - 500)  # the report's own: left out
    _touch(Path("results/benchmarks/renamed_rule.tsv"), start - 500)
    patterns = {
        "train": "results/benchmarks/train_{encoding}_{seed}.tsv",
        "similarity": "results/benchmarks/similarity.tsv",
        "catch_all": "results/benchmarks/{name}.tsv",  # less specific than the two above
    }
    started = invocation_start(log_dir)
    assert abs(started.timestamp() - start) < 1e-3
    rows = read_benchmarks(
        "results/benchmarks", patterns, started, ignore=("results/benchmarks/report.tsv",)
    )
    by_file = {Path(r["file"]).name: r for r in rows}
    assert set(by_file) == {
        "train_rope_0.tsv",
        "train_alibi_1.tsv",
        "similarity.tsv",
        "renamed_rule.tsv",
    }
    assert by_file["train_rope_0.tsv"]["rule"] == "train"
    assert by_file["train_rope_0.tsv"]["wildcards"] == "encoding=rope, seed=0"
    assert by_file["similarity.tsv"]["rule"] == "similarity"
    assert by_file["renamed_rule.tsv"]["rule"] == "catch_all"
    assert by_file["train_rope_0.tsv"]["ran"] is True
    assert by_file["train_alibi_1.tsv"]["ran"] is False
    # Repeats: mean wall time, the largest peak that was sampled.
    assert by_file["similarity.tsv"]["seconds"] == 2.0
    assert by_file["similarity.tsv"]["max_rss_mb"] == 120.5


def test_without_a_snakemake_log_nobody_claims_which_jobs_ran(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _touch(Path("results/benchmarks/x.tsv"), time.time())
    assert invocation_start(".snakemake/log") is None
    [row] = read_benchmarks("results/benchmarks", {}, None)
    assert row["ran"] is None and row["rule"] is None


def test_provenance_is_shown(fake, tmp_path):
    stamp = datetime.now().isoformat().replace(":", "")
    (fake["log_dir"] / f"{stamp}.snakemake.log").touch()
    _touch(fake["benchmarks_dir"] / "alpha.tsv", time.time() + 1)
    fake["benchmark_rules"] = {"alpha": "results/benchmarks/alpha.tsv"}
    context = context_of(fake)
    assert context["job_summary"]["ran"] == 1
    html = html_of(context, fake)
    assert "0123456789abcdef" in html and "(clean)" in html
    assert context["config_hash"] in html
    assert "It ran 1 of these 1 jobs" in " ".join(html.split())
    assert "alpha: <code>3</code>" in html  # the section's own seed
    assert any(line.lower().startswith("jinja2==") for line in context["packages"]["lines"])
    assert "Jinja2==" in html or "jinja2==" in html


def _timing(path: Path, when: float, **record) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"wall_s": 4.0, "peak_memory_mb": 300.0, **record}))
    os.utime(path, (when, when))


TRAIN_TIMING = "results/models/{task}/{encoding}/seed{seed}/timing.json"


def test_jobs_of_a_rule_without_benchmark_are_counted_from_their_timing_files(
    tmp_path, monkeypatch
):
    # A cached rule may not have a benchmark: its jobs time themselves in a `timing` output,
    # and count like every other job: wall time, peak memory, ran or reused.
    monkeypatch.chdir(tmp_path)
    start = time.time() - 100
    started = datetime.fromtimestamp(start).astimezone()
    _touch(Path("results/benchmarks/evaluate.tsv"), start + 10)
    models = Path("results/models")
    _timing(models / "lm/rope/seed0/timing.json", start + 20, peak_memory_kind="cpu_max_rss")
    _timing(models / "lm/alibi/seed1/timing.json", start - 500, resumed_from_step=40)
    _timing(
        models / "passkey/rope/seed0/timing.json",
        start + 30,
        wall_s=6.0,
        peak_memory_mb=900.0,
        peak_memory_kind="cuda_max_allocated",
    )
    (models / "lm/rope/seed0/train_log.json").write_text("{}")  # another output: not a job
    rows = read_jobs(
        "results/benchmarks",
        {"evaluate": "results/benchmarks/evaluate.tsv"},
        started,
        timing_rules={"train": TRAIN_TIMING},
    )
    by_wildcards = {r["wildcards"]: r for r in rows if r["rule"] == "train"}
    assert set(by_wildcards) == {
        "task=lm, encoding=rope, seed=0",
        "task=lm, encoding=alibi, seed=1",
        "task=passkey, encoding=rope, seed=0",
    }
    assert len(rows) == 4
    ran = by_wildcards["task=lm, encoding=rope, seed=0"]
    assert ran["ran"] is True and ran["seconds"] == 4.0 and ran["max_rss_mb"] == 300.0
    reused = by_wildcards["task=lm, encoding=alibi, seed=1"]
    assert reused["ran"] is False
    assert "resumed from step 40" in reused["notes"]
    # A GPU's allocated memory is not a peak RSS: said beside it, not counted as one.
    gpu = by_wildcards["task=passkey, encoding=rope, seed=0"]
    assert gpu["max_rss_mb"] is None and any("900" in n for n in gpu["notes"])
    summary = job_summary(rows, started)
    assert (summary["jobs"], summary["ran"], summary["reused"]) == (4, 3, 1)
    assert summary["total_seconds"] == 2.0 + 4.0 + 4.0 + 6.0
    assert summary["peak_rss_mb"] == 300.0


def test_a_malformed_timing_file_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = Path("results/models/lm/rope/seed0/timing.json")
    bad.parent.mkdir(parents=True)
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match=re.escape(str(bad))):
        read_jobs("results/benchmarks", {}, None, timing_rules={"train": TRAIN_TIMING})


def test_report_counts_timed_jobs_and_shows_the_code_digests(fake, tmp_path):
    stamp = datetime.now().isoformat().replace(":", "")
    (fake["log_dir"] / f"{stamp}.snakemake.log").touch()
    _touch(fake["benchmarks_dir"] / "alpha.tsv", time.time() + 1)
    fake["benchmark_rules"] = {"alpha": "results/benchmarks/alpha.tsv"}
    _timing(tmp_path / "results/models/lm/rope/seed0/timing.json", time.time() + 1)
    _timing(tmp_path / "results/models/lm/alibi/seed0/timing.json", time.time() - 3600)
    fake["timing_rules"] = {"train": TRAIN_TIMING}
    fake["code_digests"] = {
        "train": {"digest": "feedc0ffee12", "modules": ["posenc.train", "posenc.model"]},
        "alpha": {"digest": "abad1dea0042", "modules": ["posenc.claims"]},
    }
    context = context_of(fake)
    html = " ".join(html_of(context, fake).split())
    assert "It ran 2 of these 3 jobs; the other 1 were reused" in html
    assert context["job_summary"]["total_seconds"] == 2.0 + 4.0 + 4.0  # mean of 1.5 and 2.5 s
    assert "3 jobs, 10 s of compute" in html
    assert "<td><code>train</code></td><td><code>feedc0ffee12</code></td><td>2</td>" in html
    assert "<td><code>alpha</code></td><td><code>abad1dea0042</code></td><td>1</td>" in html
    assert "task=lm, encoding=alibi, seed=0" in html


def test_installed_packages_come_from_pip_freeze():
    packages = installed_packages()
    assert packages["source"] == "pip freeze"
    assert any(line.lower().startswith("torch==") for line in packages["lines"])


def test_a_sections_timing_file_joins_its_section_after_its_own_tables(fake, tmp_path):
    # Timings live apart from metrics.json (so that stays byte-identical between runs) and
    # are shown in their section all the same, numbered after the section's own tables.
    beta = fake["sections"][1]
    timing_csv = tmp_path / "results" / "beta" / "speed.csv"
    timing_csv.write_text("job,seconds\nbeta,1.5\n")
    timing = tmp_path / "results" / "beta" / "timing.json"
    timing.write_text(
        json.dumps(
            {
                "tables": [
                    {
                        "id": "speed",
                        "title": "Speed",
                        "csv": str(timing_csv),
                        "columns": ["job", "seconds"],
                        "rows": [["beta", 1.5]],
                    }
                ]
            }
        )
    )
    beta["timing"] = str(timing)
    context = context_of(fake)
    assert [t["number"] for t in context["sections"][1]["tables"].values()] == [2, 3, 4]
    assert context["sections"][1]["tables"]["speed"]["rows"] == [["beta", 1.5]]
    timing.write_text('{"tables": [{"id": "speed"}]}')
    with pytest.raises(ValueError, match="timing.json"):
        context_of(fake)


def test_each_work_is_listed_once_in_order_of_first_citation():
    from posenc.report.context import number_references

    claims = [{"id": "a.x", "references": ["su2021", "press2022"]}, {"id": "a.y", "references": []}]
    listed, numbers = number_references(claims, ["press2022", "vaswani2017", "vaswani2017"])
    assert [r["key"] for r in listed] == ["su2021", "press2022", "vaswani2017"]
    assert numbers == {"su2021": 1, "press2022": 2, "vaswani2017": 3}
    with pytest.raises(KeyError, match="claim a.z: unknown reference 'nobody2099'"):
        number_references([{"id": "a.z", "references": ["nobody2099"]}], [])


def test_each_section_says_which_devices_computed_it():
    from posenc.report.sections import section_devices

    # The aggregate's own device, and the devices its summary lists for the jobs before it.
    metrics = {"device": "cpu (x86_64, 2 threads)", "summary": {"devices": ["cuda (NVIDIA H200)"]}}
    assert section_devices(metrics) == ["cpu (x86_64, 2 threads)", "cuda (NVIDIA H200)"]
    assert section_devices({"device": "cpu", "summary": {}}) == ["cpu"]
    assert section_devices({"summary": {"devices": None}}) == []


def test_the_page_shows_each_sections_devices(fake):
    html = html_of(context_of(fake), fake)
    assert html.count('<p class="computed-on">Computed on cpu (test).</p>') == 2


# ----------------------------------------------------------------------------- findings


def _judged(claim, evidence, thresholds, section, **cfg):
    from posenc.claims import evaluate

    return evaluate([claim], evidence, {"thresholds": thresholds, **cfg}, section)[0]


# A precondition as the extrapolation section words it: the model learned the task.
LEARNED = "rope bits/char below the interpolated trigram at L_train"


def _mixed_ledger(root):
    """Two sections whose claims cover every verdict and every reason a claim is undecided or
    untested, as posenc.claims words them."""
    from posenc.claims import Check, Claim

    limit = {"limit": 1e-4, "margin": 0.1, "bound": 0.1}
    alpha = [
        _judged(
            Claim("alpha.breaks", "Every encoding breaks it. Each number is the weakest.",
                  (Check("broken", ">", "limit", label="weakest error"),), kind="empirical"),
            {"broken": {"rope": 0.03, "alibi": 0.005}}, limit, "alpha",
        ),
        failing("alpha.two", "alpha"),
        passing("alpha.one", "alpha"),  # an identity
    ]  # fmt: skip
    beta = [
        undecided("beta.slope", "beta"),
        _judged(
            Claim("beta.learn", "RoPE degrades beyond L_train.",
                  (Check("rise", ">", "bound"),), kind="empirical",
                  requires=(Check("margin.rope", ">", "margin", label=LEARNED),)),
            {"rise": 0.5, "margin": {"rope": -3.0}}, limit, "beta",
        ),
        _judged(
            Claim("beta.smoke", "It holds at scale.", (Check("rise", ">", "bound"),),
                  kind="empirical", unless="smoke_test"),
            {"rise": 0.5}, limit, "beta", smoke_test=True,
        ),
        _judged(
            Claim("beta.absent", "Kerple stays flat.", (Check("kerple", "<", "bound"),),
                  kind="empirical"),
            {}, limit, "beta",
        ),
    ]  # fmt: skip
    fake = two_sections(root)
    shutil.rmtree(root / "results/alpha")
    shutil.rmtree(root / "results/beta")
    fake["sections"] = [
        make_section(root, "alpha", ["curve", "heat"], ["cases"], alpha, title="Alpha analysis"),
        make_section(root, "beta", ["decay"], ["t1", "t2"], beta, title="Beta analysis"),
    ]
    return fake


def test_the_report_opens_with_findings_computed_from_the_ledger(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake = _mixed_ledger(tmp_path)
    context = context_of(fake)
    found = context["findings"]
    # Untested: a smoke test of a section, named by its title; missing evidence, with its reason.
    smoke, absent = found["untested"]
    assert [f["id"] for f in smoke["claims"]] == ["beta.smoke"] and not smoke["show_reason"]
    assert "“Beta analysis” ran as a smoke test" in smoke["heading"]
    assert [f["id"] for f in absent["claims"]] == ["beta.absent"] and absent["show_reason"]
    assert absent["claims"][0]["why"] == "No kerple in this run (its encodings are not configured)."
    # Each finding: the statement's first sentence, its deciding number, where to read on; an
    # undecided one says why.
    top = {f["id"]: f for f in found["top"]}
    breaks = top["alpha.breaks"]
    assert breaks["statement"] == "Every encoding breaks it."
    assert breaks["headline"] == {
        "label": "weakest error",
        "text": "0.005 for alibi, the lowest of 2",
        "threshold": "> 0.0001",
    }
    assert (breaks["anchor"], breaks["section_anchor"]) == ("claim-alpha-breaks", "sec-alpha")
    assert top["beta.learn"]["why"].startswith(
        "Not met: rope bits/char below the interpolated trigram"
    )
    # The findings the report opens with, ranked: what fails of the empirical claims, what
    # could not be decided, other failures, then what holds; the rest are counted.
    assert [f["id"] for f in found["top"]] == [
        "alpha.two",
        "beta.slope",
        "beta.learn",
        "alpha.breaks",
    ]
    assert found["rest"] == {"pass": 1, "fail": 0, "inconclusive": 0, "n/a": 2}

    html = " ".join(html_of(context, fake).split())
    # Findings first, the claims ledger an appendix after the sections and the references.
    assert html.index('<section id="findings">') < html.index('<section id="sec-alpha"')
    assert html.index('<section id="references">') < html.index('<section id="claims"')
    assert html.index('<a href="#findings">') < html.index('<a href="#claims">')
    findings_html = html.split('<section id="findings">')[1].split("</section>")[0]
    ranked = findings_html.split('<ol class="findings">')[1].split("</ol>")[0]
    order = [
        ranked.index(f'href="#claim-{cid}"') for cid in ("alpha-two", "beta-slope", "alpha-breaks")
    ]
    assert order == sorted(order)
    assert (
        "Measured weakest error: 0.005 for alibi, the lowest of 2 (threshold &gt; 0.0001)."
        in ranked
    )
    assert "Not met: rope bits/char below the interpolated trigram" in ranked
    # What was not testable: counted with why, each claim in the ledger.
    assert "(1 holds, 2 not testable here) are in" in findings_html
    assert "1 claim was not testable: the section “Beta analysis” ran as a smoke test" in (
        findings_html
    )
    for cid in ("alpha-two", "alpha-breaks", "alpha-one", "beta-slope", "beta-learn", "beta-smoke"):
        assert f'id="claim-{cid}"' in html
    # The ledger: a group per section, collapsed on screen, its verdicts counted.
    assert (
        '<details class="ledger-group"><summary><span class="secno">§1</span> Alpha analysis: '
        "3 claims, 2 hold, 1 does not hold</summary>"
    ) in html
    # The header keeps its counts, from the context, and lists no claim ids.
    header = html.split("</header>")[0]
    assert "2 of 7 claims hold" in header and "alpha.two" not in header


def test_a_headline_is_the_entry_nearest_to_failing_with_its_threshold():
    from posenc.report.findings import first_sentence, headline

    def entry(measured, expected):
        return {"measured": measured, "expected": expected}

    # A bound from above: the largest entry; scaled thresholds keep their "=".
    assert headline(
        entry({"rope": 4e-16, "alibi": 7e-16}, "spread for each ≤ 64 × eps = 4.5e-13")
    ) == {"label": "spread", "text": "7.000e-16 for alibi, the highest of 2",
          "threshold": "≤ 64 × eps = 4.5e-13"}  # fmt: skip
    # Intervals: the bound on the failing side decides which entry is nearest.
    near = headline(
        entry(
            {"a": {"estimate": 0.5, "low": 0.2, "high": 0.8},
             "b": {"estimate": 0.4, "low": 0.3, "high": 0.5}},
            "gain for each > 0.1 (the whole interval)",
        )
    )  # fmt: skip
    assert near["text"] == "0.5 [0.2, 0.8] for a, the lowest of 2"
    assert headline(entry({"a": 0, "b": 0}, "differ for each ≤ 0"))["text"] == "0 for all 2"
    # Several checks: the first one's value, named by its label.
    assert headline(entry({"x max": 0.1, "y": 3}, "x max ≤ 1; y > 2"))["text"] == "0.1"
    # Facts; a list against printed values (the entries are not the differences bounded).
    assert headline(entry({"a": True, "b": True}, "agrees: yes for each"))["text"] == (
        "yes for all 2"
    )
    assert headline(entry({"a": True, "b": False}, "agrees: yes for each"))["text"] == (
        "yes for 1 of 2 (no: b)"
    )
    printed = headline(entry([0.966, 0.658], "sims for each within ±0.0005 of the printed 0.97"))
    assert printed["text"] == "[0.966, 0.658]" and printed["threshold"].startswith("within ±")
    # A quantity named at length is left to the claims table.
    assert headline(entry(0.5, "x" * 90 + " ≤ 1"))["label"] is None
    assert first_sentence("Press et al. 2022 find it. Then more (Fig. 2). E.g. this.") == (
        "Press et al. 2022 find it."
    )


def test_the_template_counts_nothing_the_context_has():
    source = (ROOT / "report_templates" / "index.html.j2").read_text()
    for computation in ("| sum", "selectattr", "claims | length", "sections | length"):
        assert computation not in source, computation


def test_the_printed_report_names_no_project_file(fake):
    # A reader gets titles and findings, not file names; downloads are offered on screen only.
    printed = html_of(context_of(fake), fake, "print")
    text = re.sub(r"<pre.*?</pre>|<style>.*?</style>|<[^>]+>", " ", printed, flags=re.DOTALL)
    assert re.findall(r"[\w./-]+\.(?:py|ya?ml|smk|json|j2|md|log)\b", text) == []
    screen = html_of(context_of(fake), fake, "screen")
    assert ">claims.json</a>" in screen


def test_a_failed_claim_is_quoted_by_the_check_that_fails():
    """With several checks, a fail (or an inconclusive) quotes the first check that has that
    outcome, not the first check, which may hold; a pass quotes the first."""
    from posenc.report.findings import headline

    claim = {
        "id": "complexity.pe_linear",
        "verdict": "fail",
        "expected": "log-log slope for each within ±0.2 of the pe slope 1; "
        "time / attention for each ≤ 0.05",
        "measured": {
            "log-log slope": {"d=64": 1.05, "d=128": 1.01},
            "time / attention": {"d=64": 0.166, "d=128": 0.02},
            "context": 3.0,
        },
        "outcomes": {
            "slope": {"d=64": "pass", "d=128": "pass"},
            "fraction": {"d=64": "fail", "d=128": "pass"},
        },
    }
    quoted = headline(claim)
    assert quoted["label"] == "time / attention"
    assert quoted["text"].startswith("0.166 for d=64") and quoted["threshold"] == "≤ 0.05"
    holds = headline({**claim, "verdict": "pass", "outcomes": {"slope": {}, "fraction": {}}})
    assert holds["label"] == "log-log slope"
    # Outcomes that do not line up with the expected text: the first check, as before.
    odd = headline({**claim, "outcomes": {"fraction": {"d=64": "fail"}}})
    assert odd["label"] == "log-log slope"


# ----------------------------------------------------------------------------- placement


def test_appendix_items_leave_a_pointer_and_every_item_is_numbered_in_reading_order(
    tmp_path, monkeypatch
):
    from posenc.report import number_in_reading_order

    monkeypatch.chdir(tmp_path)
    fake = two_sections(tmp_path)
    # alpha's template shows heat before curve, though its metrics list curve first; its
    # table "cases" goes to the appendix of further figures and tables.
    template = tmp_path / "analyses" / "alpha" / "section.html.j2"
    text = template.read_text()
    text = text.replace(
        "{{ figure(s.figures.curve) }}\n{{ figure(s.figures.heat) }}",
        "{{ figure(s.figures.heat) }}\n{{ figure(s.figures.curve) }}",
    )
    template.write_text(text)
    fake["sections"][0]["appendix"] = {"figures": [], "tables": ["cases"]}
    context = context_of(fake)
    number_in_reading_order(context, fake["template_dir"], CSS)
    alpha, beta = context["sections"]
    assert (alpha["figures"]["heat"]["number"], alpha["figures"]["curve"]["number"]) == (1, 2)
    assert beta["figures"]["decay"]["number"] == 3
    # Tables: beta's two in its body come first; alpha's, placed in the appendix, after them.
    assert [beta["tables"]["t1"]["number"], beta["tables"]["t2"]["number"]] == [1, 2]
    assert alpha["tables"]["cases"]["number"] == 3
    assert context["appendices"]["further"]["letter"] == "B"
    for medium in ("screen", "print"):
        html = html_of(context, fake, medium)
        body = html.split('<section id="sec-alpha"')[1].split("</section>")[0]
        assert 'id="tab-alpha-cases"' not in body
        assert '<a class="xref" href="#tab-alpha-cases">Table 3</a>, in the appendix:' in body
        further = html.split('<section id="further"')[1].split("</section>")[0]
        assert 'id="tab-alpha-cases"' in further and "<strong>Table 3.</strong>" in further
        # The numbers in the page follow the order figures appear in it.
        shown = [int(n) for n in re.findall(r"<strong>Figure (\d+)\.</strong>", html)]
        assert shown == sorted(shown) == [1, 2, 3]


def test_a_placement_is_body_or_appendix():
    from posenc.analysis import Figure, Table

    assert Table("t", placement="appendix").placement == "appendix"
    with pytest.raises(ValueError, match="placement 'sidebar' is not one of body, appendix"):
        Figure("A curve.", placement="sidebar")


def test_a_shipped_property_is_listed_in_full_with_angles_wrapped():
    from posenc.report.findings import angle_text, property_finding

    # 317 rad is 50 turns and 2.85 rad: the rotation a cached key is off by.
    assert angle_text(317.00716526484115) == "2.85 rad (317 rad unwrapped)"
    assert angle_text(2.866) == "2.87 rad" and angle_text(-3.5) == "2.78 rad (-3.5 rad unwrapped)"
    claim = {
        "id": "shipped.switch_small",
        "kind": "analytic",
        "verdict": "fail",
        "statement": "Cached keys stay close. More words.",
        "expected": "largest cached-key angle error at L − 1 (rad) ≤ 0.1",
        "measured": {"phi-3": 317.00716526484115, "llama": 0.05},
        "section_anchor": "sec-shipped",
        "section_number": 9,
        "section_title": "Shipped",
    }
    found = property_finding(claim)
    assert found["quantity"] == "Largest cached-key angle error at L − 1 (rad)"
    assert found["entries"] == [
        {"entry": "phi-3", "text": "2.85 rad (317 rad unwrapped)"},
        {"entry": "llama", "text": "0.05 rad"},
    ]
    assert found["threshold"] == "≤ 0.1 rad" and found["statement"] == "Cached keys stay close."
