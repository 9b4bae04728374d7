"""Reading and cleaning parallel data: bad lines get clear errors or counted drops."""

import gzip

import pytest

from mtkit.train.data import CleaningReport, DataError, Pair, clean, read_lines, read_parallel, read_tsv, split_holdout


def test_reads_plain_and_gzip(tmp_path):
    (tmp_path / "a.txt").write_text("eins\nzwei\n", encoding="utf-8")
    with gzip.open(tmp_path / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write("eins\nzwei\n")
    assert read_lines(tmp_path / "a.txt") == read_lines(tmp_path / "a.txt.gz") == ["eins", "zwei"]


def test_invalid_utf8_names_file_and_line(tmp_path):
    (tmp_path / "bad.de").write_bytes("gut\n".encode() + b"schlecht \xff\xfe\n")
    with pytest.raises(DataError, match=r"bad\.de, line 2: invalid UTF-8"):
        read_lines(tmp_path / "bad.de")


def test_misaligned_files_are_an_error(tmp_path):
    (tmp_path / "x.de").write_text("a\nb\nc\n")
    (tmp_path / "x.en").write_text("a\nb\n")
    with pytest.raises(DataError, match="misaligned.*3 lines.*2"):
        read_parallel(tmp_path / "x.de", tmp_path / "x.en")


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_lines(tmp_path / "nope.de")


def test_tsv(tmp_path):
    (tmp_path / "p.tsv").write_text("Hallo\tHello\textra\n\nNur eine Spalte\n")
    with pytest.raises(DataError, match=r"p\.tsv:3: expected at least 2"):
        read_tsv(tmp_path / "p.tsv")
    (tmp_path / "q.tsv").write_text("Hallo\tHello\n\n")
    assert read_tsv(tmp_path / "q.tsv") == [("Hallo", "Hello"), ("", "")]


def test_tsv_lines_with_more_than_two_columns_are_counted(tmp_path):
    """Columns after the second are ignored (an attribution column is fine), but a tab inside a sentence
    cuts it: the start's report counts such lines instead of training on them without a word."""
    from mtkit.train.config import RunConfig
    from conftest import tiny_run_dict

    (tmp_path / "p.tsv").write_text("Hallo\tHello\tCC-BY\nEr sagte:\tHallo.\tHe said: hello.\nJa\tYes\n")
    report = CleaningReport()
    assert read_tsv(tmp_path / "p.tsv", report) == [("Hallo", "Hello"), ("Er sagte:", "Hallo."), ("Ja", "Yes")]
    assert report.extra_columns == 2
    raw = tiny_run_dict(tmp_path)
    raw["data"] |= {"holdout": 0, "dev": [], "train": [{"tsv": str(tmp_path / "p.tsv"), "src": "de", "tgt": "en"}]}
    report = CleaningReport()
    RunConfig.from_dict(raw).load_split("train", report)
    assert report.summary() == ("kept 3 pairs; dropped: none; 2 tsv lines had more than 2 columns: "
                                "only the first two are read")


def test_cleaning_counts_every_drop():
    pairs = [Pair(s, t, "de", "en") for s, t in [
        ("Hallo Welt", "Hello world"),
        ("Hallo  Welt ", "Hello world"),      # duplicate after whitespace normalisation
        ("", "Empty source"),
        ("Leer", "   "),
        ("Kurz", "This is a very long target sentence for such a short source"),
        ("x" * 2000, "y" * 2000),
        ("Guten Morgen", "Good morning"),
    ]]
    report = CleaningReport()
    kept = clean(pairs, max_ratio=3.0, max_chars=1000, report=report)
    assert [p.src for p in kept] == ["Hallo Welt", "Guten Morgen"]
    assert report.dropped == {"duplicate": 1, "empty": 2, "length ratio": 1, "too long": 1}
    assert "kept 2 pairs" in report.summary()


def test_holdout_is_deterministic_and_disjoint():
    pairs = [Pair(f"Satz {i}", f"Sentence {i}", "de", "en") for i in range(200)]
    rest, held = split_holdout(pairs, 20)
    rest2, held2 = split_holdout(list(reversed(pairs)), 20)
    assert len(held) == 20 and len(rest) == 180
    assert {p.src for p in held} == {p.src for p in held2}     # independent of file order
    assert not {p.src for p in held} & {p.src for p in rest}


@pytest.mark.parametrize("repeat, both_directions", [(1, False), (2, False), (1, True)])
def test_the_dev_holdout_is_exactly_what_training_lacks(tmp_path, repeat, both_directions):
    """Without a dev corpus, dev is a holdout of train: the two splits are disjoint and together make
    the cleaned training data (with `repeat`, the rest of it repeated; the holdout once), less the
    holdout's reversed pairs, which would teach dev its answers."""
    from collections import Counter

    from mtkit.train.config import RunConfig
    from conftest import tiny_run_dict

    raw = tiny_run_dict(tmp_path)
    del raw["data"]["dev"]
    raw["data"]["holdout"] = 50
    raw["data"]["train"][0] |= {"repeat": repeat, "both_directions": both_directions}
    run = RunConfig.from_dict(raw)
    train, dev = run.load_split("train"), run.load_split("dev")
    cleaned = run.train_pairs_of(run.data.train[0], run.data_dir())
    reversed_dev = [Pair(p.tgt, p.src, p.tgt_lang, p.src_lang) for p in dev]
    assert len(dev) >= 50 and len(set(dev)) == len(dev) and not set(train) & (set(dev) | set(reversed_dev))
    lacked = set(dev) | set(reversed_dev)
    assert Counter(train) + Counter([p for p in cleaned if p in lacked] * repeat) == Counter(cleaned * repeat)
    assert not {p.src for p in train} & {p.src for p in dev}         # no source sentence in both
    assert any(p in cleaned for p in reversed_dev) == both_directions   # the case this guards


def test_empty_splits_are_refused_naming_their_files(tmp_path):
    from mtkit.train.config import RunConfig
    from conftest import tiny_run_dict

    for name in ("e.de", "e.en"):
        (tmp_path / name).write_text("")
    (tmp_path / "blank.de").write_text("  \nx\n")
    (tmp_path / "blank.en").write_text("y\n\t\n")
    raw = tiny_run_dict(tmp_path)
    raw["data"]["dev"][0] |= {"src_file": str(tmp_path / "blank.de"), "tgt_file": str(tmp_path / "blank.en")}
    with pytest.raises(DataError, match=rf"^no dev pairs in {tmp_path}/blank.de, {tmp_path}/blank.en "
                                        rf"\(cleaning kept 0 pairs; dropped: 2 empty\)$"):
        RunConfig.from_dict(raw).load_split("dev")
    raw = tiny_run_dict(tmp_path)
    raw["data"]["train"][0] |= {"src_file": str(tmp_path / "e.de"), "tgt_file": str(tmp_path / "e.en")}
    with pytest.raises(DataError, match=rf"^no training pairs in {tmp_path}/e.de, {tmp_path}/e.en "
                                        rf"\(cleaning kept 0 pairs; dropped: none\)$"):
        RunConfig.from_dict(raw).load_split("train")
    # A holdout that takes every pair, or none, leaves one split empty.
    raw = tiny_run_dict(tmp_path)
    del raw["data"]["dev"]
    raw["data"]["holdout"] = 10**6
    with pytest.raises(DataError, match=r"no training pairs in .*train.de, .*train.en \(all 1600 cleaned pairs are "
                                        r"the dev holdout; add a \[\[data.dev\]\] corpus or lower \[data\] holdout\)"):
        RunConfig.from_dict(raw).load_split("train")
    raw["data"]["holdout"] = 0
    with pytest.raises(DataError, match=r"no dev pairs: \[data\] holdout is 0 and there is no \[\[data.dev\]\] corpus"):
        RunConfig.from_dict(raw).load_split("dev")


def test_repeat_upsamples_a_corpus_after_deduplication(tmp_path):
    from mtkit.train.config import RunConfig
    from conftest import tiny_run_dict

    raw = tiny_run_dict(tmp_path)
    once = RunConfig.from_dict(raw).load_split("train")
    raw["data"]["train"][0]["repeat"] = 3
    thrice = RunConfig.from_dict(raw).load_split("train")
    assert len(thrice) == 3 * len(once) and thrice[: len(once)] == once


def test_max_pairs_keeps_the_same_subset_whatever_the_order(tmp_path):
    from mtkit.train.config import RunConfig
    from mtkit.train.data import Pair, subsample
    from conftest import tiny_run_dict

    pairs = [Pair(f"s{i}", f"t{i}", "de", "en") for i in range(100)]
    kept = subsample(pairs, 30)
    assert len(kept) == 30 and len(set(kept)) == 30
    assert set(subsample(pairs[::-1], 30)) == set(kept)             # chosen by content, not position
    assert [p for p in pairs if p in set(kept)] == kept              # file order kept
    assert subsample(pairs, 0) == pairs and subsample(pairs, 500) == pairs
    raw = tiny_run_dict(tmp_path)
    raw["data"]["train"][0]["max_pairs"] = 50
    assert len(RunConfig.from_dict(raw).load_split("train")) == 50


def test_max_words_keeps_only_short_pairs_in_both_directions(tmp_path):
    from mtkit.train.config import Corpus

    (tmp_path / "c.de").write_text("Tabelle\nDas ist ein langer Satz.\nNeue Datei öffnen\nSpeichern\n")
    (tmp_path / "c.en").write_text("Table\nThis is a long sentence.\nOpen a new file\nSave\n")
    corpus = Corpus(src="de", tgt="en", prefix="c", suffix="", both_directions=True, max_words=3)
    assert [(p.src, p.tgt) for p in corpus.load(tmp_path)] == [
        ("Tabelle", "Table"), ("Speichern", "Save"), ("Table", "Tabelle"), ("Save", "Speichern")]
    corpus.max_words = 0
    assert len(corpus.load(tmp_path)) == 8


def test_strip_final_stop_drops_a_stop_that_ends_both_sides_only(tmp_path):
    from mtkit.train.config import Corpus

    (tmp_path / "c.de").write_text("Montag.\nDanke!\nWirklich?\nWarte...\nJa.\nEr kam!\n")
    (tmp_path / "c.en").write_text("Monday.\nThank you.\nReally?\nWait...\nYes\nHe came !\n")
    corpus = Corpus(src="de", tgt="en", prefix="c", suffix="", both_directions=True, strip_final_stop=True)
    pairs = [(p.src, p.tgt) for p in corpus.load(tmp_path)]
    assert pairs[:6] == [("Montag", "Monday"), ("Danke", "Thank you"), ("Wirklich?", "Really?"),
                         ("Warte...", "Wait..."), ("Ja.", "Yes"), ("Er kam", "He came")]
    assert pairs[6:] == [(t, s) for s, t in pairs[:6]]
    corpus.strip_final_stop = False
    assert [p.src for p in corpus.load(tmp_path)][:2] == ["Montag.", "Danke!"]


def test_training_and_the_runtime_read_a_file_alike(tmp_path):
    """One reader: a BOM and CRLF line ends are dropped for mt-train as for mt-eval and mt-bench."""
    from mtkit.runtime import text_io

    path = tmp_path / "bom.de"
    path.write_bytes("\ufeffeins\r\nzwei\r\n".encode())
    assert read_lines(path) == text_io.read_lines(path) == ["eins", "zwei"]


def test_set_overrides_any_config_value_and_checks_it(tmp_path):
    from mtkit.train.config import RunConfig, apply_override
    from conftest import tiny_run_dict

    raw = tiny_run_dict(tmp_path)
    for override in ("optim.max_tokens=16384", "optim.lr = 2e-3", "optim.precision=bf16", "model.pre_norm=false"):
        apply_override(raw, override)
    run = RunConfig.from_dict(raw)
    assert (run.optim.max_tokens, run.optim.lr, run.optim.precision, run.model.pre_norm) == (16384, 2e-3, "bf16", False)
    with pytest.raises(DataError, match="expected SECTION.KEY=VALUE"):
        apply_override(raw, "max_tokens=1")
    apply_override(raw, "optim.warmup=10")
    with pytest.raises(DataError, match=r"unknown key\(s\) in \[optim\]: warmup"):
        RunConfig.from_dict(raw)


def test_collate_pads_each_row_as_written():
    """The vectorised padding (train/batching.py) against the plain per-row reading of what it does."""
    import numpy as np
    import torch

    from mtkit.runtime.vocab import BOS_ID, EOS_ID, PAD_ID
    from mtkit.train.batching import collate

    rng = np.random.default_rng(0)
    src = [rng.integers(4, 500, size=n, dtype=np.int32) for n in rng.integers(1, 30, size=40)]
    tgt = [rng.integers(4, 500, size=n, dtype=np.int32) for n in rng.integers(0, 30, size=40)]
    indices = [3, 17, 0, 39, 22, 5]
    src_ids, src_mask, dec_in, labels = collate(src, tgt, indices)

    def padded(rows):
        width = max(map(len, rows))
        return [list(r) + [PAD_ID] * (width - len(r)) for r in rows]

    assert src_ids.tolist() == padded([src[i] for i in indices])
    assert src_mask.tolist() == [[t != PAD_ID for t in row] for row in padded([src[i] for i in indices])]
    assert dec_in.tolist() == padded([[BOS_ID, *tgt[i]] for i in indices])
    assert labels.tolist() == padded([[*tgt[i], EOS_ID] for i in indices])
    assert {t.dtype for t in (src_ids, dec_in, labels)} == {torch.long}
