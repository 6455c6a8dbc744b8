"""benchmarks/compare_claims.py: two ledgers compared; an id that posenc/retired_claims.yaml
retires is reported as retired, not as a difference, and any other missing id still is one."""

import json
import subprocess
import sys

from workflow_utils import ROOT

from posenc.analysis import discover

sys.path.insert(0, str(ROOT / "benchmarks"))
import compare_claims  # noqa: E402 -- benchmarks/ is no package

SCRIPT = ROOT / "benchmarks" / "compare_claims.py"
RETIRED = {"s.old": {"replaced_by": "s.new", "since": "this change", "reason": "cannot fail"}}


def claim(cid, verdict="pass", measured=0.5):
    return {"id": cid, "section": "s", "verdict": verdict, "measured": measured}


def test_a_retired_id_is_no_difference_and_is_reported_with_its_successor():
    before = [claim("s.old"), claim("s.kept")]
    after = [claim("s.new"), claim("s.kept")]
    assert compare_claims.compare(before, after, retired=RETIRED) == []
    assert compare_claims.retirements(before, after, RETIRED) == [
        "retired: s.old -> s.new, in after (cannot fail)"
    ]
    # Its successor missing from AFTER is said, and is no difference of the old id either.
    assert compare_claims.retirements(before, [claim("s.kept")], RETIRED) == [
        "retired: s.old -> s.new, not in after (cannot fail)"
    ]
    # Without the map, the same ledgers differ: the check above can fail.
    assert compare_claims.compare(before, after) == ["only before: s.old", "only after: s.new"]


def test_an_id_missing_that_no_map_retires_is_still_a_difference():
    before = [claim("s.old"), claim("s.gone")]
    assert compare_claims.compare(before, [claim("s.new")], retired=RETIRED) == [
        "only before: s.gone"
    ]
    # A new id whose predecessor is not in BEFORE is a difference too.
    assert compare_claims.compare([], [claim("s.new")], retired=RETIRED) == ["only after: s.new"]
    # A retired id still in AFTER is compared as any other.
    changed = compare_claims.compare([claim("s.old")], [claim("s.old", "fail")], retired=RETIRED)
    assert changed == ["s.old: verdict pass -> fail"]


def test_the_script_reads_the_repositorys_map(tmp_path):
    retired = compare_claims.load_retired()
    old, entry = next(iter(retired.items()))
    before, after = tmp_path / "before.json", tmp_path / "after.json"

    def run(before_ids, after_ids):
        section = old.split(".")[0]
        for path, ids in ((before, before_ids), (after, after_ids)):
            path.write_text(json.dumps([claim(i) | {"section": section} for i in ids]))
        return subprocess.run(
            [sys.executable, str(SCRIPT), str(before), str(after)], capture_output=True, text=True
        )

    done = run([old], [entry["replaced_by"]])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"retired: {old} -> {entry['replaced_by']}, in after" in done.stdout
    done = run([old, "x.unlisted"], [entry["replaced_by"]])
    assert done.returncode == 1
    assert "only before: x.unlisted" in done.stdout


def test_the_map_retires_ids_no_spec_declares_for_ones_a_spec_does():
    declared = {c.id for spec in discover(ROOT).values() for c in spec.claims}
    retired = compare_claims.load_retired()
    for old, entry in retired.items():
        assert set(entry) == {"replaced_by", "since", "reason"}, old
        assert old not in declared, f"{old} is retired but a spec still declares it"
        new = entry["replaced_by"]
        assert new is None or new in declared, f"{old} is replaced by {new}, which no spec has"
