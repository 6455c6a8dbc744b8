"""What the report shows beside a claim's verdict, from the ledger and the bibliography: the
scale it was measured at beside its papers', the entries it set aside and why, the
family-wise level of its judgements, the claims section's paragraph on intervals, and the
findings on models the shared recipe did not train (tests/fake_report.py builds the report)."""

import json
import re
from pathlib import Path

import pytest
from fake_report import make_section, make_templates, passing
from markupsafe import escape

from posenc import card, references
from posenc.analysis import CardColumn
from posenc.claims import Check, Claim, evaluate, interval
from posenc.io import save_figure, write_json
from posenc.report import build_context, render
from posenc.report.annotations import length_text, level_text, parameters_text

ROOT = Path(__file__).resolve().parents[1]
CSS = (ROOT / "report_templates" / "style.css").read_text()

SCOPE = {"task": "lm", "parameters": 106688, "layers": 2, "heads": 4, "head_width": 16,
         "train_len": 128, "seeds": 3}  # fmt: skip
THRESHOLDS = {"bound": 0.1, "margin": 0.0}
# The extrapolation section's precondition, as it words it.
BEATS = "{} beats the interpolated trigram at L_train (bits/char below it)"


def _t(estimate, low, high):
    return interval(estimate, low, high, se=(high - low) / 8, df=2, level=0.95)


def _beats(*encodings):
    return tuple(Check(f"margin.{e}", ">", "margin", label=BEATS.format(e)) for e in encodings)


def ledger(scope=SCOPE, nope_margin=-0.2):
    """Four claims: one decided on two encodings with a third set aside (family-wise), one
    whose single interval straddles (inconclusive for want of evidence), one whose only
    entry's models did not beat a trigram (for want of learning), and an identity."""
    claims = (
        Claim("extrapolation.flat", "ALiBi and KERPLE stay flat beyond L_train.",
              (Check("change", "<", "bound"),), ("press2022", "chi2022"), kind="empirical",
              requires=_beats("alibi", "kerple", "none")),
        Claim("extrapolation.degrades", "Sinusoidal degrades.", (Check("rise", ">", "bound"),),
              ("press2022",), kind="empirical"),
        Claim("extrapolation.nope_flat", "NoPE stays flat.", (Check("nope", "<", "bound"),),
              ("haviv2022", "kazemnejad2023"), kind="empirical", requires=_beats("none")),
    )  # fmt: skip
    evidence = {
        "change": {e: _t(0.01, -0.01, 0.03) for e in ("alibi", "kerple", "none")},
        "rise": _t(0.12, 0.05, 0.2),
        "nope": {"none": _t(0.0, -0.02, 0.02)},
        "margin": {"alibi": 0.5, "kerple": 0.4, "none": nope_margin},
        "scope": scope,
    }
    judged = evaluate(claims, evidence, {"thresholds": THRESHOLDS}, "extrapolation")
    return [*judged, passing("extrapolation.identity", "extrapolation")]


def lm_status(learned_none=False):
    rows = []
    for enc, bits in (("alibi", 2.1), ("none", 2.95)):
        for seed in range(3):
            ok = enc != "none" or learned_none
            rows.append({"encoding": enc, "seed": seed, "bits": bits + 0.01 * seed,
                         "reference": 2.72, "learned": ok})  # fmt: skip
    return rows


def report(root, claims=None, status=None, learners=None, config=None):
    """A one-section report (the section named like the extrapolation, with a table of each
    model's status) on ``claims``; its summary carries ``status`` (lm_status) and the passkey
    ``learners`` per encoding."""
    claims = ledger() if claims is None else claims
    sec = make_section(root, "extrapolation", ["curve"], ["learned"], claims, title="Extrap")
    metrics = json.loads(Path(sec["metrics"]).read_text())
    metrics["summary"] = {
        "training_steps": {"lm": 2500, "passkey": 2000},
        "seeds": {"lm": [0, 1, 2], "passkey": [0, 1, 2, 3, 4]},
        "lm_status": lm_status() if status is None else status,
        "passkey_learned_seeds": learners or {"alibi": [0, 1, 2, 3, 4]},
        "passkey_min_learners": 3,
        "passkey_learned_at": 0.9,
    }
    write_json(sec["metrics"], metrics)
    (root / "results" / "benchmarks").mkdir(parents=True, exist_ok=True)
    (root / ".snakemake" / "log").mkdir(parents=True, exist_ok=True)
    recipe = {"batch_size": 16, "lr": 0.003, "steps": 2500}
    return {
        "template_dir": make_templates(root, {"extrapolation": {"figures": ["curve"],
                                                               "tables": ["learned"]}}),
        "sections": [sec],
        "config": config or {"name": "test", "seed": 0, "encodings": ["alibi", "none"],
                             "extrapolation": {"lm": {"train": recipe},
                                               "passkey": {"train": {**recipe, "steps": 2000}},
                                               "thresholds": THRESHOLDS}},
        "git": {"commit": "0123456789abcdef", "dirty": False},
        "benchmarks_dir": root / "results" / "benchmarks",
        "benchmark_rules": {},
        "log_dir": root / ".snakemake" / "log",
    }  # fmt: skip


def page(fake, medium="screen"):
    context = build_context(**fake)
    html = render(context, fake["template_dir"], medium, CSS)
    return context, " ".join(html.split())


def _section(html, anchor):
    return html.split(f'<section id="{anchor}"')[1].split("</section>")[0]


def _row(html, claim_id):
    return html.split(f'<tr id="claim-{claim_id}"')[1].split("</tr>")[0]


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ----------------------------------------------------------------------------- scale


def test_numbers_are_written_as_papers_write_them():
    assert parameters_text(247_000_000) == "247M"
    assert parameters_text(1_300_000_000) == "1.3B"
    assert parameters_text(106688) == "106,688"
    assert parameters_text([125_000_000, 1_300_000_000]) == "125M–1.3B"
    assert [length_text(n) for n in (40, 512, 4096, 32768, 262144, 2097152, 10**7)] == [
        "40", "512", "4096", "32K", "256K", "2048K", "10M"
    ]  # fmt: skip
    assert [level_text(x) for x in (0.95, 0.975, 0.99583, 0.99, 0.9995)] == [
        "95 %", "97.5 %", "99.6 %", "99 %", "99.95 %"
    ]  # fmt: skip


def test_scope_and_paper_scales_are_rendered_from_the_data(root, monkeypatch):
    context, html = page(report(root))
    numbers = {r["key"]: r["number"] for r in context["references"]}
    row = _row(html, "extrapolation-flat")
    measured = "Measured at: 106,688 parameters, 2 layers, 4 heads × 16, L_train 128, 3 seeds"
    assert measured in row
    press = f"[{numbers['press2022']}]</a> Press et al. 2022: 16 layers, 8 heads × 128, L_train 512"
    chi = f"[{numbers['chi2022']}]</a> Chi et al. 2022: 12 layers, 12 heads × 64, L_train 512"
    assert press in row and chi in row and "5 seeds" in row
    # The references list says where each paper's numbers come from.
    listed = html.split(f'<li id="ref-{numbers["press2022"]}">')[1].split("</li>")[0]
    source = escape(references.scale("press2022")["source"])
    assert f"Scale: 16 layers, 8 heads × 128, L_train 512; from {source}" in listed
    # The claim's row in the ledger says the same; a claim without a scope (an identity) says
    # nothing. The section's claim box is short: it links to that row.
    assert measured in _row(html, "extrapolation-degrades")
    assert press in _row(html, "extrapolation-degrades")
    assert 'href="#claim-extrapolation-degrades"' in _section(html, "sec-extrapolation")
    assert "Measured at" not in _row(html, "extrapolation-identity")

    # Another scope in the ledger, another page: nothing is typed.
    scope = {**SCOPE, "parameters": 2_500_000, "layers": 6, "train_len": 256, "seeds": 5}
    _, changed = page(report(root / "other", claims=ledger(scope=scope)))
    assert "Measured at: 2.5M parameters, 6 layers, 4 heads × 16, L_train 256, 5 seeds" in changed
    assert measured not in changed
    # Another scale in the bibliography, likewise.
    bib = {**references.bibliography()}
    bib["press2022"] = {**bib["press2022"], "scale": {"layers": 24, "source": "a test"}}
    monkeypatch.setattr(references, "bibliography", lambda: bib)
    _, rescaled = page(report(root / "third"))
    assert (
        "Press et al. 2022: 24 layers" in rescaled and "Scale: 24 layers; from a test." in rescaled
    )


def test_a_paper_whose_scale_the_sources_do_not_state_says_so(root, monkeypatch):
    _, html = page(report(root))
    row = _row(html, "extrapolation-nope_flat")
    assert "Kazemnejad et al. 2023: 107M parameters, 12 layers, 12 heads × 64" in row
    assert "Haviv et al. 2022: 125M–1.3B parameters" in row
    # What a paper leaves out, its references entry says (Kazemnejad et al.: no one L_train).
    note = escape(references.scale("kazemnejad2023")["note"])
    assert f"; {note}.</span>" in html and str(note) not in row
    # A paper whose sources state none of the numbers says so in the row, with why.
    bib = {**references.bibliography()}
    bib["haviv2022"] = {**bib["haviv2022"], "scale": {"source": "s", "note": "nothing stated"}}
    monkeypatch.setattr(references, "bibliography", lambda: bib)
    _, html = page(report(root / "unstated"))
    row = _row(html, "extrapolation-nope_flat")
    assert 'Haviv et al. 2022: scale not stated <span class="scale-note">(nothing stated)' in row
    assert "Scale: not stated; from s; nothing stated." in html


@pytest.mark.parametrize(
    "scale, fault",
    [
        ({"layer": 16, "source": "s"}, "unknown key 'layer'"),
        ({"layers": "16", "source": "s"}, "press2022.scale.layers must be a positive whole"),
        ({"layers": 0, "source": "s"}, "press2022.scale.layers"),
        ({"layers": True, "source": "s"}, "press2022.scale.layers"),
        ({"parameters": [5, 1], "source": "s"}, "press2022.scale.parameters"),
        ({"layers": 16}, "press2022.scale.source"),
        ({"layers": 16, "source": "s", "note": 3}, "press2022.scale.note"),
        ([16], "press2022.scale must be a mapping"),
    ],
)
def test_a_malformed_scale_block_is_an_error_naming_the_key(scale, fault):
    with pytest.raises(references.BibliographyError, match=re.escape(fault)):
        references.check_scale(scale, "references.yaml: press2022.scale")


def test_a_malformed_scale_in_the_bibliography_file_stops_its_loading(tmp_path, monkeypatch):
    bad = tmp_path / "references.yaml"
    bad.write_text("p:\n  short: P\n  scale: {layers: 2, heads: many, source: s}\n")
    monkeypatch.setattr(references, "PATH", bad)
    references.bibliography.cache_clear()
    try:
        with pytest.raises(references.BibliographyError, match=r"p\.scale\.heads"):
            references.bibliography()
    finally:
        monkeypatch.undo()
        references.bibliography.cache_clear()
    assert references.scale("press2022")  # the real one loads again


def test_every_paper_an_empirical_claim_cites_has_a_scale():
    from posenc.analysis import discover

    cited = {
        key
        for spec in discover(ROOT).values()
        for claim in spec.claims
        if claim.kind == "empirical" and claim.id.split(".")[0] in ("extrapolation", "extension")
        for key in claim.references
        if references.bibliography()[key].get("kind") != "source"
    }
    assert {"press2022", "chi2022", "peng2023", "meta2025llama4"} <= cited
    assert sorted(k for k in cited if references.scale(k) is None) == []


# ----------------------------------------------------------------------------- not judged


def test_entries_set_aside_are_named_with_why_in_the_table_and_the_findings(root):
    context, html = page(report(root))
    line = (
        "Set aside, not judged: none (not met: none beats the interpolated trigram at L_train "
        "(bits/char below it) &gt; 0; measured -0.2)."
    )
    assert line in _row(html, "extrapolation-flat")
    findings = _section(html, "findings")
    flat = findings.split('href="#claim-extrapolation-flat"')[0].rsplit("<li", 1)[1]
    assert line in flat
    # Inconclusive for that alone, its reason already says why: the entries are named once.
    nope = _row(html, "extrapolation-nope_flat")
    assert "Set aside, not judged: none.</p>" in nope and nope.count("not met:") == 1
    # A claim that set nothing aside says nothing of it.
    assert "Set aside" not in _row(html, "extrapolation-degrades")
    # When NoPE's models beat the trigram too, nothing is set aside anywhere.
    _, all_judged = page(report(root / "all", claims=ledger(nope_margin=0.3)))
    assert "Set aside" not in all_judged


def test_the_card_colours_an_entry_set_aside_as_not_judged(root):
    claims = ledger()
    columns = [CardColumn("flat", ("change",), claim="extrapolation.flat")]
    section = {"id": "extrapolation", "title": "Extrap", "columns": columns,
               "evidence": {"change": {"alibi": 0.01, "none": 0.01}}, "ledger": claims}  # fmt: skip
    data = card.build([section], ["alibi", "none"], {})
    assert [r["cells"][0]["outcome"] for r in data["rows"]] == ["holds", "unjudged"]
    save_figure(card.figure(data), "card.png", "card.svg")
    write_json("card.json", {**data, "png": "card.png", "svg": "card.svg"})
    fake = report(root, claims=claims)
    context = build_context(**fake, card="card.json")
    html = " ".join(render(context, fake["template_dir"], "screen", CSS).split())
    table = html.split('<table class="card">')[1].split("</table>")[0]
    assert '<td class="card-unjudged">' in table and '<td class="card-holds">' in table
    legend = _section(html, "card").split("</p>")[0]
    words = escape(card.OUTCOME_WORDS["unjudged"])
    assert f'<span class="card-unjudged">{words}</span>' in legend


# ----------------------------------------------------------------------------- family-wise


def test_a_claim_judged_family_wise_says_at_what_level(root):
    context, html = page(report(root))
    flat = next(c for c in context["claims"] if c["id"] == "extrapolation.flat")
    assert flat["family"]["entries"] == 2  # alibi and kerple; none is not judged
    assert "(a fail needs one of 2 wholly past it at 97.5 %)" in _row(html, "extrapolation-flat")
    # One interval, one judgement at its own level: nothing to say.
    assert "judged at" not in _row(html, "extrapolation-degrades")


def test_the_intervals_paragraph_counts_from_the_ledger(root):
    context, html = page(report(root))
    counts = context["intervals"]
    assert counts["inconclusive"] == {"evidence": 1, "learning": 1, "precondition": 0, "other": 0}
    paragraph = html.split('<p class="intervals">')[1].split("</p>")[0]
    assert "Student-t interval" in paragraph and "Bonferroni" in paragraph
    assert "at 95 %" in paragraph and "With 3 seeds of each language model" in paragraph
    assert "1 claim here judged several entries so" in paragraph
    assert "Inconclusive claims: 2; for want of evidence" in paragraph
    assert re.search(r"straddles its threshold\), 1; for want of learning .*\), 1\.", paragraph)
    assert "2 claims set some entries aside" in paragraph  # flat and nope_flat
    # NoPE's models beat the trigram: the claim on them is decided, the counts follow.
    context, html = page(report(root / "learned", claims=ledger(nope_margin=0.3)))
    assert context["intervals"]["inconclusive"]["learning"] == 0
    assert "Inconclusive claims: 1;" in html and "for want of learning" in html


def test_without_measured_claims_there_is_no_intervals_paragraph(root):
    _, html = page(report(root, claims=[passing("extrapolation.identity", "extrapolation")]))
    assert 'class="intervals"' not in html


# ----------------------------------------------------------------------------- shortfalls


def test_models_that_did_not_beat_a_trigram_are_a_finding(root):
    context, html = page(report(root, learners={"alibi": [0, 1, 2, 3], "learned": [1]}))
    lm, passkey = context["findings"]["shortfalls"]
    assert (lm["task"], lm["encoding"]) == ("lm", "none")
    assert lm["text"] == (
        "its language models did not beat a trigram under the shared recipe in 3 of 3 seeds: "
        "bits/char at L_train 2.95 (seed 0), 2.96 (seed 1) and 2.97 (seed 2), against the "
        "interpolated trigram's 2.72"
    )
    assert lm["recipe"] == "2500 steps, batch 16, learning rate 0.003"
    assert (passkey["task"], passkey["encoding"]) == ("passkey", "learned")
    assert passkey["text"] == (
        "its passkey models learned the task at N (exact match at least 0.9) in 1 of 5 seeds, "
        "fewer than the 3 its claims need"
    )
    assert passkey["recipe"].startswith("2000 steps")
    findings = _section(html, "findings")
    assert "What the shared recipe did not train" in findings
    # A table: a row per encoding and task, the seeds short, what they measured, the bar.
    rows = findings.split('<table class="shortfalls">')[1].split("</table>")[0]
    assert "<td><code>none</code></td><td>language model</td><td>3 of 3</td>" in rows
    assert "<td>2500 steps, batch 16, learning rate 0.003</td>" in rows
    assert 'href="#tab-extrapolation-learned">each model</a>' in rows
    # The learned precondition is worded as what it is.
    assert "language models did not learn" not in findings


def test_one_seed_short_is_counted_as_one(root):
    status = [{**r, "learned": not (r["encoding"] == "none" and r["seed"] == 2)}
              for r in lm_status()]  # fmt: skip
    context, _ = page(report(root, status=status))
    [lm] = context["findings"]["shortfalls"]
    assert "in 1 of 3 seeds: bits/char at L_train 2.97 (seed 2)," in lm["text"]


def test_no_shortfall_finding_when_every_model_learned(root):
    context, html = page(report(root, status=lm_status(learned_none=True)))
    assert context["findings"]["shortfalls"] == []
    assert "What the shared recipe did not train" not in html
