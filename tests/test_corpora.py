"""The ``python-stdlib`` corpus: which files, in which order, split by whole files, pinned by
its SHA-256, and accepted by the config. The real library is read once per module (a fraction
of a second); the exclusion and split rules are also checked on a small library of our own."""

import hashlib

import numpy as np
import pytest
import torch
from configs import encoding_meta, load, merged
from workflow_utils import ROOT

from posenc import corpora, data
from posenc.analysis import discover
from posenc.config import ConfigError, validate_config, workflow_schema


@pytest.fixture(scope="module")
def stdlib():
    return corpora.read_stdlib()


@pytest.fixture(scope="module")
def corpus():
    return data.load_corpus(corpora.STDLIB, 0.1, 4096)


def decode(corpus, ids: torch.Tensor) -> str:
    points = np.array([ord(c) for c in corpus.vocab], dtype="<u4")[ids.numpy()]
    return points.tobytes().decode("utf-32-le")


def test_the_library_is_read_in_sorted_order_and_the_same_every_time(stdlib):
    assert list(stdlib.paths) == sorted(stdlib.paths) and len(set(stdlib.paths)) == len(
        stdlib.paths
    )
    assert len(stdlib.paths) > 500 and len(stdlib.text) > 5_000_000  # 732 files, 12.1M in 3.11
    again = corpora.read_stdlib.__wrapped__()  # not the cached one: read from disk anew
    assert again == stdlib
    for i in (0, len(stdlib.paths) // 2, len(stdlib.paths) - 1):  # file i is its own text
        text = (corpora.stdlib_root() / stdlib.paths[i]).read_text(encoding="utf-8")
        assert stdlib.text[stdlib.starts[i] : stdlib.starts[i + 1]].rstrip("\n") == text.rstrip(
            "\n"
        )
    assert stdlib.starts[-1] == len(stdlib.text)


def test_the_library_holds_no_tests_no_third_party_code_and_no_build_settings(stdlib):
    for path in stdlib.paths:
        *folders, name = path.split("/")
        assert name.endswith(".py") and not name.startswith(("test_", "_sysconfigdata_")), path
        assert not {"test", "tests", "idle_test", "site-packages", "dist-packages"} & set(
            folders
        ), path
        assert not any(f.startswith("config-") for f in folders), path
    # Library code named like a test stays.
    assert {"os.py", "doctest.py", "unittest/case.py", "asyncio/base_events.py"} <= set(
        stdlib.paths
    )


def test_the_exclusion_rules_on_a_library_of_our_own(tmp_path):
    files = {
        "a.py": "A = 1\n",
        "pkg/__init__.py": "",
        "pkg/b.py": "B = 2",  # no final newline: one is added
        "pkg/test_b.py": "x",
        "test/regrtest.py": "x",
        "ctypes/test/test_x.py": "x",
        "lib2to3/tests/data/latin1.py": "x",
        "idlelib/idle_test/htest.py": "x",
        "unittest/test/testmock/support.py": "x",
        "site-packages/pip/__init__.py": "x",
        "dist-packages/numpy/__init__.py": "x",
        "config-3.11-x86_64-linux-gnu/python-config.py": "x",
        "_sysconfigdata__linux_x86_64-linux-gnu.py": "x",
        "README.txt": "x",
        "Z.py": "Z = 3\n",  # code-point order: upper case before lower
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    (tmp_path / "bad.py").write_bytes(b"x = '\xe9'\n")  # latin-1, not UTF-8: left out
    sources = corpora.read_stdlib(str(tmp_path))
    assert sources.paths == ("Z.py", "a.py", "pkg/__init__.py", "pkg/b.py")
    assert sources.text == "Z = 3\nA = 1\nB = 2\n"
    assert sources.starts == (0, 6, 12, 12, 18)


def test_the_split_takes_whole_files_evenly_interleaved(tmp_path, monkeypatch):
    for i in range(10):
        (tmp_path / f"m{i}.py").write_text(chr(ord("a") + i) * (i + 1) + "\n")
    monkeypatch.setattr(data, "read_stdlib", lambda: corpora.read_stdlib(str(tmp_path)))
    corpus = data.load_corpus(corpora.STDLIB, val_fraction=0.2, block=3)  # block: not used
    # Files 4 and 9 (one in every five, never the first) validate, whole; the rest train.
    assert decode(corpus, corpus.val) == "eeeee\n" + "j" * 10 + "\n"
    assert decode(corpus, corpus.train) == "".join(
        chr(ord("a") + i) * (i + 1) + "\n" for i in (0, 1, 2, 3, 5, 6, 7, 8)
    )
    assert (corpus.files, corpus.val_files, corpus.val_blocks) == (10, 2, 0)
    with pytest.raises(ValueError, match="raise extrapolation.val_fraction"):
        data.load_corpus(corpora.STDLIB, val_fraction=0.05)  # 10 files: none validates


def test_no_file_of_the_library_is_cut_between_training_and_validation(stdlib, corpus):
    held = set(data.validation_blocks(len(stdlib.paths), 0.1))
    whole = [stdlib.text[stdlib.starts[i] : stdlib.starts[i + 1]] for i in range(len(stdlib.paths))]
    held_text = "".join(t for i, t in enumerate(whole) if i in held)
    train = decode(corpus, corpus.train)
    assert train == "".join(t for i, t in enumerate(whole) if i not in held)
    # Validation is the held-out files less every stretch that repeats training text (licence
    # headers, idioms): no 64 characters of it occur in training, checked by substring search
    # on evenly spaced windows, independently of the hashes that cut them.
    val = decode(corpus, corpus.val)
    assert len(val) + corpus.val_verbatim_removed == len(held_text)
    assert 0 < corpus.val_verbatim_removed < 0.3 * len(held_text)
    w = data.VERBATIM
    for i in range(0, len(val) - w, (len(val) - w) // 200):
        assert val[i : i + w] not in train, i
    assert corpus.val_files == len(held) and corpus.files == len(stdlib.paths)
    assert 0.05 < len(held_text) / len(stdlib.text) < 0.2  # 10.8 % of the characters in 3.11
    # The vocabulary: every character of the whole text, in code-point order; small enough to
    # model in full (222 in 3.11, 126 of them outside ASCII).
    assert corpus.vocab == tuple(sorted(set(stdlib.text))) and corpus.vocab_size < 2000
    assert corpus.python == stdlib.python


def test_char_ids_match_the_plain_python_loop():
    text = "héllo wörld ✓ \U0001f600 \n\t" * 3
    vocab, ids = data.char_ids(text)
    assert vocab == tuple(sorted(set(text)))
    index = {c: i for i, c in enumerate(vocab)}
    torch.testing.assert_close(ids, torch.tensor([index[c] for c in text], dtype=torch.long))
    empty_vocab, empty = data.char_ids("")
    assert empty_vocab == () and empty.shape == (0,) and empty.dtype == torch.long


def test_evaluation_refuses_another_library(stdlib, corpus):
    described = {"corpus": corpora.STDLIB, "val_fraction": 0.1, "split_block": 4096}
    assert corpus.sha256 == hashlib.sha256(stdlib.text.encode("utf-8")).hexdigest()
    found = data.trained_corpus(described | {"sha256": corpus.sha256})
    torch.testing.assert_close(found.val, corpus.val)
    with pytest.raises(ValueError, match=r"SHA-256 mismatch\) \(trained under CPython 2\.7"):
        data.trained_corpus(described | {"sha256": "0" * 64, "python": "2.7.18"})


def validate(config):
    analyses = sorted(p.parent.name for p in ROOT.glob("analyses/*/schema.yaml"))
    checks = [check for spec in discover(ROOT).values() for check in spec.checks]
    validate_config(config, workflow_schema(ROOT, analyses, encoding_meta()), checks)


def test_the_config_accepts_the_library_and_a_file_but_no_missing_file(tmp_path):
    from posenc.analyses.extrapolation.spec import inputs

    config = merged({"extrapolation": {"corpus": corpora.STDLIB}})
    validate(config)
    assert "corpus" not in inputs(config)  # a built-in text is no file input of the rule
    validate(merged(load("gpu.yaml")))
    tiny = merged(load("test.yaml"))  # benchmarks/gpu.sh --tiny: gpu-tiny.yaml over test.yaml
    for key, value in load("gpu-tiny.yaml").items():
        tiny[key] = tiny[key] | value if isinstance(value, dict) else value
    validate(tiny)
    assert tiny["extrapolation"]["corpus"] == corpora.STDLIB and tiny["device"] == "cpu"
    text = tmp_path / "text.txt"
    text.write_text("abc")
    assert inputs(merged({"extrapolation": {"corpus": str(text)}}))["corpus"] == [str(text)]
    with pytest.raises(ConfigError, match="extrapolation.corpus = .*no such file"):
        validate(merged({"extrapolation": {"corpus": str(tmp_path / "absent.txt")}}))
    assert corpora.corpus_file(None) is None and corpora.corpus_file(corpora.STDLIB) is None


def test_the_summary_says_how_the_library_was_split_and_how_often_it_was_read():
    from posenc.analyses.extrapolation.compute import file_split

    corpus = {"files": 732, "val_files": 73, "val_characters": 1_302_815, "python": "3.11.7"}
    corpus |= {"characters": 12_078_331, "train_characters": 10_775_516, "seq_len": 512}
    lm_log = {"log": {"steps": 3000, "config": {"batch_size": 16}}}
    split = file_split(corpus, lm_log)
    assert split["training_passes"] == pytest.approx(3000 * 16 * 512 / 10_775_516)  # 2.28
    assert split["val_characters_percent"] == 10.8 and split["val_files"] == 73
