"""The `Translator` API: texts in, Translations out, with sentences, bad input and bundles."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import threading
import time
import unicodedata
import warnings
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ENGLISH, GERMAN, ORT_THREADS
from mtkit.runtime import (BundleError, DecodeOptions, LanguageWarning, LongInputWarning, ModelLoadError, OptionError,
                           Translation, Translator, TranslationError)
from mtkit.runtime import bundle
from mtkit.runtime.batching import length_batches, pad_batch, padded_length
from mtkit.runtime.onnx_backend import SessionSettings, available_cpus, cpu_quota
from mtkit.runtime.sentences import split, split_sentences
from mtkit.runtime.sentence_text import clean


@pytest.fixture(scope="module")
def t(fixture_bundle):
    return Translator(fixture_bundle, threads=ORT_THREADS)


def test_basic_api(t, fixture_bundle):
    assert t.path == Path(fixture_bundle).resolve()
    assert t.languages == ["de", "en"] and t.provider == "cpu" and t.variant == "int8"
    assert set(t.config.language_tags) == {"de", "en"}
    [tr] = t.translate(GERMAN[0])                         # a str gives a list of one
    assert isinstance(tr, Translation) and tr.text == ENGLISH[0]
    assert tr.hypotheses[0].text == tr.text and tr.hypotheses[0].tokens == tr.tokens
    assert tr.text == t.tokenizer.decode_pieces(tr.tokens).strip()
    assert tr.num_tokens == len(tr.tokens) and tr.num_source_tokens > 0
    assert set(tr.timings) >= {"preprocess_ms", "decode_ms", "postprocess_ms"}
    # The default direction is into English; German is the other target.
    assert t.translate(GERMAN[0], to="en")[0].tokens == tr.tokens
    into_german = t.translate(ENGLISH[:2], to="de")
    assert [x.source for x in into_german] == ENGLISH[:2] and [x.text for x in into_german] == GERMAN[:2]


def test_public_names_are_listed_and_load():
    import mtkit.runtime as runtime

    assert set(runtime.__all__) <= set(dir(runtime))        # lazy, yet visible to help() and completion
    assert all(getattr(runtime, name) is not None for name in runtime.__all__)
    # What the calls return, for callers to name in their own hints: Translator.score's Score too.
    assert {"Translation", "Hypothesis", "Alignment", "SourceLanguage", "Score"} <= set(runtime.__all__)


def test_type_checkers_see_the_public_names():
    """An installed mtkit is typed (py.typed, in the wheel), and a type checker, which cannot follow the
    lazy loading, reads each public name from the TYPE_CHECKING imports: the same names from the same
    modules. The texts' hint takes what the call takes: a tuple or a generator too."""
    import ast
    import inspect

    import mtkit
    import mtkit.runtime as runtime

    assert (Path(mtkit.__file__).parent / "py.typed").is_file()
    tree = ast.parse(Path(runtime.__file__).read_text(encoding="utf-8"))
    [block] = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    seen = {alias.asname: node.module for node in block.body for alias in node.names if alias.asname == alias.name}
    assert seen == runtime._EXPORTS
    for method, argument in ((Translator.translate, "texts"), (Translator.score, "sources")):
        assert inspect.signature(method).parameters[argument].annotation == "Iterable[str] | str"


def test_bad_options_are_translation_errors(t):
    with pytest.raises(TranslationError, match="cannot translate into 'fr'.*de, en"):
        t.translate("Hallo", to="fr")
    # Options are checked by DecodeOptions, named as the API names them (the CLIs name their flags).
    with pytest.raises(OptionError, match=r"num_hypotheses \(3\) cannot exceed beam_size \(2\) without sampling"):
        t.translate("Hallo", beam_size=2, num_hypotheses=3)
    with pytest.raises(TranslationError, match="top_p"):
        t.translate("Hallo", sampling=True, top_p=0)
    with pytest.raises(TranslationError, match="num_hypotheses"):          # an override of given options
        t.translate("Hallo", options=DecodeOptions(beam_size=2), num_hypotheses=3)
    with pytest.raises(OptionError):                                          # before any text is read
        t.translate_iter(iter(["Hallo"]), beam_size=0).__next__()
    with pytest.raises(TypeError, match="beam"):                              # not an option at all
        t.translate("Hallo", beam=4)
    with pytest.raises(TranslationError, match="text 2 is a int"):
        t.translate(["Hallo", 3])


def test_bytes_are_refused_as_a_whole(t):
    """Iterated, bytes would be numbers ("text 1 is a int"): say what is wrong instead."""
    for data in (b"Hallo", bytearray(b"Hallo")):
        name = type(data).__name__
        with pytest.raises(TranslationError, match=rf"texts must be str, not {name} \(decode them first\)"):
            t.translate(data)
        with pytest.raises(TranslationError, match=rf"texts must be str, not {name}"):
            list(t.translate_iter(data))


@pytest.mark.parametrize("texts", [None, 42, {"Hallo": "Hi"}])
def test_what_is_no_text_nor_texts_is_refused_by_name(t, texts):
    """None and 42 raised a bare TypeError, and a dict was translated as its keys."""
    name = type(texts).__name__
    with pytest.raises(TranslationError, match=f"texts must be a str or an iterable of str, not {name}"):
        t.translate(texts)
    with pytest.raises(TranslationError, match=f"not {name}"):
        list(t.translate_iter(texts))


def test_option_types_are_checked_before_decoding(t):
    with pytest.raises(OptionError, match=r"beam_size must be an int, not float \(2.5\)"):
        t.translate("Hallo", beam_size=2.5)
    with pytest.raises(OptionError, match="temperature must be a number, not str"):
        next(t.translate_iter(["Hallo"], sampling=True, temperature="0.8"))
    # "no" (from a config file) counted as true: the paragraph was still split into sentences.
    for call in (lambda: t.translate("Hallo", split_sentences="no"),
                 lambda: next(t.translate_iter(iter(["Hallo"]), split_sentences=0)),
                 lambda: t.translate_html("<p>Hallo</p>", split_sentences="no"),
                 lambda: t.translate_json('{"a": "Hallo"}', split_sentences=None)):
        with pytest.raises(TypeError, match="split_sentences must be True or False, not"):
            call()


def test_options_take_a_decode_options_and_a_dict_goes_in_as_keywords(t):
    with pytest.raises(TypeError, match=r"options must be a DecodeOptions, not dict .*\*\*options"):
        t.translate("Hallo", options={"beam_size": 1})
    with pytest.raises(TypeError, match="options must be a DecodeOptions, not dict"):
        next(t.translate_iter(["Hallo"], options={"beam_size": 1}))
    assert t.translate(GERMAN[0], **{"beam_size": 1})[0].text == ENGLISH[0]


def test_a_misspelt_option_is_named_with_the_likely_one(t):
    with pytest.raises(TypeError, match=r"^unknown option 'form_lang' \(did you mean 'from_lang'\?\)"):
        t.translate("Hallo", form_lang="de")
    with pytest.raises(TypeError, match=r"^unknown option 'beamsize' \(did you mean 'beam_size'\?\)"):
        next(t.translate_iter(["Hallo"], beamsize=2))
    with pytest.raises(TypeError, match=r"^unknown option 'zzz'; the options are"):
        t.translate_html("<p>Hallo</p>", zzz=1)


def test_counts_are_checked_alike(t, fixture_bundle):
    """threads, parallel_batches, the batch budgets and batch_size: an int of at least 1, before any loading."""
    for name, value in [("threads", 0), ("parallel_batches", 0), ("max_batch_tokens", 0), ("max_batch_tokens", -5),
                        ("max_batch_sentences", 0)]:
        with pytest.raises(TranslationError, match=f"{name} must be at least 1, not {value}"):
            Translator(fixture_bundle, **{name: value})
    for name, value in [("threads", 2.5), ("max_batch_tokens", "4096"), ("max_batch_sentences", True)]:
        with pytest.raises(TypeError, match=f"{name} must be an int, not {type(value).__name__}"):
            Translator(fixture_bundle, **{name: value})
    for name, value in [("memory_arena", "no"), ("spinning", 1), ("io_binding", "yes"), ("low_latency", "yes")]:
        with pytest.raises(TypeError, match=f"{name} must be True or False"):
            Translator(fixture_bundle, **{name: value})
    with pytest.raises(TranslationError, match="threads must be at most 1024, not 100000"):     # hung ORT
        Translator(fixture_bundle, threads=100_000)
    with pytest.raises(TranslationError, match="max_batch_sentences must be at least 1, not 0"):
        Translator.from_backend(t.backend, t.tokenizer, t.config, t.path, max_batch_sentences=0)
    with pytest.raises(TranslationError, match="batch_size must be at least 1, not 0"):
        next(t.translate_iter(["Hallo"], batch_size=0))


def test_help_explains_the_api():
    assert "translate(texts, to=None, options=None, **overrides)" in Translator.__doc__
    assert "Translator()" in Translator.__doc__                          # an example


def test_language_codes_are_case_insensitive(t):
    assert t.translate(GERMAN[0], to="EN", from_lang="De", beam_size=1)[0].text == ENGLISH[0]
    assert [x.text for x in t.translate_iter(ENGLISH[:1], to="DE", from_lang="EN", beam_size=1)] == GERMAN[:1]
    assert t.tag_id("DE") == t.tag_id("de") and t.target_from("EN") == "de" and t.target_from("De", "EN") == "en"
    with pytest.raises(TranslationError, match="cannot translate into 'fr'"):
        t.translate("Hallo", to="FR")


def test_options_object_and_overrides_are_the_same_call(t):
    """translate(texts, to, options, **overrides): a frozen DecodeOptions, its fields as keywords, or both."""
    by_keywords = t.translate(GERMAN[:3], beam_size=2, num_hypotheses=2)
    by_options = t.translate(GERMAN[:3], options=DecodeOptions(beam_size=2, num_hypotheses=2))
    by_both = t.translate(GERMAN[:3], None, DecodeOptions(beam_size=2), num_hypotheses=2)
    assert [[h.text for h in x.hypotheses] for x in by_keywords] == [[h.text for h in x.hypotheses] for x in by_options] \
        == [[h.text for h in x.hypotheses] for x in by_both]
    assert [x.text for x in by_options] == ENGLISH[:3]
    # The model's positions cap max_length: unset, it is theirs; larger, it is cut to theirs.
    positions = t.config.max_positions
    assert t.decode_options().max_length == positions
    assert t.decode_options(max_length=10 * positions).max_length == positions
    assert t.decode_options(DecodeOptions(max_length=8)).max_length == 8
    assert t.decode_options().beam_size == DecodeOptions().beam_size == 4         # one set of defaults


def test_source_languages_and_directions(t):
    assert t.source_languages == ["de", "en"] and t.directions == [("de", "en"), ("en", "de")]
    assert t.target_from("en") == "de" and t.target_from("de") == "en" and t.target_from("de", "en") == "en"
    with pytest.raises(TranslationError, match="cannot translate from 'fr'; its source languages are: de, en"):
        t.target_from("fr")
    with pytest.raises(TranslationError, match="does not translate en -> en; its directions are: de -> en, en -> de"):
        t.target_from("en", "en")


def test_from_lang_alone_translates_into_the_models_target_for_it(t):
    # As `mt-translate --from en`: no `to`, the target is target_from's (it was "en" too, an error).
    assert t.target_from("en") == "de"
    assert t.translate(ENGLISH[0], from_lang="en", beam_size=1)[0].text == GERMAN[0]
    assert [x.text for x in t.translate_iter(ENGLISH[:1], from_lang="EN", beam_size=1)] == GERMAN[:1]
    # A document's language tag names the language it was translated into.
    page = t.translate_html(f'<html lang="en"><p>{ENGLISH[0]}</p></html>', from_lang="en", beam_size=1)
    assert page == f'<html lang="de"><p>{GERMAN[0]}</p></html>'
    # Given, `to` is kept (and checked); with neither, the default stays "en", the source detected.
    assert t.translate(GERMAN[0], from_lang="de", beam_size=1)[0].text == ENGLISH[0]
    with pytest.raises(TranslationError, match="does not translate en -> en"):
        t.translate(ENGLISH[0], to="en", from_lang="en")
    with pytest.raises(TranslationError, match="cannot translate into 'fr'"):
        t.translate(ENGLISH[0], to="fr", from_lang="en")
    [detected] = t.translate(GERMAN[0], beam_size=1)
    assert detected.text == ENGLISH[0] and detected.translated


def test_empty_and_whitespace_texts_stay_empty(t):
    out = t.translate(["", "   ", "\t\n", GERMAN[0], "\x00\x07"])
    assert [o.text for o in out] == ["", "", "", ENGLISH[0], ""]
    assert [o.num_parts for o in out] == [0, 0, 0, 1, 0]
    assert t.translate([]) == []


def test_paragraphs_are_split_into_sentences_and_rejoined(t):
    paragraph = " ".join(GERMAN[:3])
    assert split_sentences(paragraph) == GERMAN[:3]
    [whole] = t.translate(paragraph, beam_size=1)
    parts = t.translate(split_sentences(paragraph), beam_size=1)
    assert whole.num_parts == 3 and whole.text == " ".join(ENGLISH[:3])
    assert whole.tokens == [p for tr in parts for p in tr.tokens]
    assert whole.text == " ".join(p.text for p in parts if p.text)
    assert whole.score == pytest.approx(sum(p.score for p in parts))        # greedy log-probs add up
    [unsplit] = t.translate(paragraph, beam_size=1, split_sentences=False)
    assert unsplit.num_parts == 1


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5])
def test_a_split_texts_beam_score_is_its_parts_renormalised(t, alpha):
    """Beam scores are log p / length ** alpha: the parts' log-probs add up over the summed length."""
    paragraph = " ".join(GERMAN[:3])
    [whole] = t.translate(paragraph, beam_size=3, length_penalty=alpha)
    parts = t.translate(split_sentences(paragraph), beam_size=3, length_penalty=alpha)   # the same batch
    assert whole.tokens == [p for tr in parts for p in tr.tokens]
    lengths = [len(tr.tokens) + 1 for tr in parts]
    log_p = sum(tr.score * n ** alpha for tr, n in zip(parts, lengths))
    assert whole.score == pytest.approx(log_p / sum(lengths) ** alpha)


def test_newlines_inside_a_text_are_kept(t):
    [tr] = t.translate(f"{GERMAN[0]}\n\n{GERMAN[1]}", beam_size=1)
    assert tr.text == f"{ENGLISH[0]}\n\n{ENGLISH[1]}"


def test_other_line_breaks_and_tabs_between_sentences_become_spaces(t):
    # Python's splitlines() breaks at all of these: one text must stay one line, and a tab would
    # look like an n-best column in mt-translate's output.
    for space in ("\v", "\f", "\t", "\r", "\x1c", "\x85", "\u2028", "\u2029"):
        [tr] = t.translate(f"{GERMAN[0]}{space}{GERMAN[1]}", beam_size=1)
        assert tr.text == f"{ENGLISH[0]} {ENGLISH[1]}", repr(space)
    [tr] = t.translate(f"{GERMAN[0]}\r\n{GERMAN[1]}", beam_size=1)
    assert tr.text == f"{ENGLISH[0]}\r\n{ENGLISH[1]}"


def test_letters_written_with_combining_marks_translate_as_composed_ones(t):
    """Decomposed (NFD, as some web text is), "ü" is "u" and a diaeresis the vocabulary spells in bytes:
    the diaeresis was taken out as an unknown symbol and put back alone into the translation."""
    decomposed = unicodedata.normalize("NFD", GERMAN[2])
    assert decomposed != GERMAN[2]
    assert [tr.text for tr in t.translate([decomposed, GERMAN[2]], from_lang="de", beam_size=1)] == [ENGLISH[2]] * 2


def test_quotes_and_dashes_the_vocabulary_lacks_are_read_as_ones_it_has(t):
    """Masked, a closing quote or a dash went back by word share, mid-sentence; read as '"' or '-',
    the model places it (or drops it) itself."""
    lacked = [mark for mark in "»«”‘—" if t._lacks(mark)]
    assert lacked, "the fixture vocabulary has every mark: this test tests nothing"
    for mark in lacked:
        [tr] = t.translate(f"{mark}{GERMAN[0]}{mark}", from_lang="de", beam_size=1)
        assert mark not in tr.text, (mark, tr.text)
    [kept] = t.translate(f"»{ENGLISH[0]}«", from_lang="auto")        # left as it is, it is left as written
    assert kept.text == f"»{ENGLISH[0]}«"
    code = f"`echo {lacked[0]}hi{lacked[0]}`"                          # so is what masking keeps out
    [tr] = t.translate(f"{GERMAN[0]} {code}", from_lang="de", beam_size=1)
    assert code in tr.text


def test_a_script_the_model_lacks_comes_back_with_a_warning(t):
    with pytest.warns(LanguageWarning, match="looks like ja .*none of its letters are in this model's vocabulary"):
        [tr] = t.translate("日本語のテキストです。")
    assert tr.text == "日本語のテキストです。" and not tr.translated and tr.num_parts == 0
    assert tr.language == "ja" and len(tr.warnings) == 1
    with pytest.warns(LanguageWarning, match="^text 1: none of its letters"):       # no detection when given
        t.translate("日本語のテキストです。", from_lang="de")
    # Words in their order, with the punctuation and numbers the vocabulary has: still not for the model.
    for text in ("Привет мир", "Привет, как дела? Хорошо.", "Привет 2024!"):
        with pytest.warns(LanguageWarning, match="none of its letters are in this model's vocabulary") as caught:
            [tr] = t.translate(text)
        assert tr.text == text and not tr.translated and tr.num_parts == 0
        assert len(tr.warnings) == len(caught) == 1                   # once a text, however many sentences


def test_sentence_splitter():
    cases = {
        "Guten Morgen. Wie geht es dir?": ["Guten Morgen.", "Wie geht es dir?"],
        "Das ist z.B. ein Test. Dr. Müller kommt um 3.5 Uhr.": ["Das ist z.B. ein Test.", "Dr. Müller kommt um 3.5 Uhr."],
        "Am 3. Oktober ist frei. Gut!": ["Am 3. Oktober ist frei.", "Gut!"],
        "Ich weiß nicht... Vielleicht morgen. \"Wirklich?\" Ja.":
            ["Ich weiß nicht...", "Vielleicht morgen.", "\"Wirklich?\"", "Ja."],
        "Wait... what? Mr. J. Smith, e.g. him, left.": ["Wait... what?", "Mr. J. Smith, e.g. him, left."],
        "你好。我很好！": ["你好。", "我很好！"],
        "no split. after lower case": ["no split. after lower case"],
        "Was" + "!" * 5000 + " Ja.… Nein.": ["Was" + "!" * 5000, "Ja.…", "Nein."],   # a run of marks: one end
    }
    for text, expected in cases.items():
        assert split_sentences(text) == expected
        assert "".join(s + sep for s, sep in split(text)) == text


def test_long_input_is_split_with_a_warning(t):
    limit = t.config.max_positions - 2
    long_text = " ".join(["Hund Katze Maus Haus Baum"] * 60)          # one "sentence", far over the limit
    assert len(t.tokenizer.encode(long_text)) > limit
    with pytest.warns(LongInputWarning, match="longer than the model's maximum"):
        [tr] = t.translate(long_text, beam_size=1)
    assert tr.num_parts >= 2 and tr.warnings and "parts" in tr.warnings[0]
    assert tr.num_source_tokens == len(t.tokenizer.encode(long_text))   # nothing dropped


def test_alignment_shape_and_rows(t):
    [tr] = t.translate(f"{GERMAN[0]} {GERMAN[1]}", beam_size=2, return_alignment=True)
    a = tr.alignment
    assert len(a.target_tokens) == len(tr.tokens) + tr.num_parts          # each part closes with </s>
    assert a.source_tokens.count("<2en>") == 2 and a.source_tokens.count("</s>") == 2
    assert len(a.weights) == len(a.target_tokens) and all(len(r) == len(a.source_tokens) for r in a.weights)
    for row in a.weights:                                                # attention rows are distributions
        assert sum(row) == pytest.approx(1.0, abs=1e-3)
    assert t.translate("Hallo")[0].alignment is None


def test_a_seeded_sample_is_the_same_alone_in_a_batch_or_in_another_order(fixture_translator):
    """Each sentence draws from its own generator (seed, its tokens): neither --batch-size nor its
    neighbours change it. It used to be 1 of 4 the same on the shipped model."""
    texts = [*GERMAN[:4], f"{GERMAN[1]} {GERMAN[2]}"]
    options = dict(sampling=True, seed=11, temperature=4.0, num_hypotheses=2, from_lang="de")
    together = [[h.text for h in tr.hypotheses] for tr in fixture_translator.translate(texts, **options)]
    alone = [[h.text for h in fixture_translator.translate(text, **options)[0].hypotheses] for text in texts]
    backwards = [[h.text for h in tr.hypotheses] for tr in fixture_translator.translate(texts[::-1], **options)]
    assert together == alone == backwards[::-1]
    assert together[4] == [f"{a} {b}" for a, b in zip(together[1], together[2])]   # sentence by sentence
    other_seed = [[h.text for h in tr.hypotheses] for tr in fixture_translator.translate(texts, **{**options, "seed": 12})]
    assert other_seed != together


def test_samples_are_well_formed_text_on_one_line(fixture_translator):
    """Hot samples of the whole distribution draw byte pieces: once, 432 of these 512 had a broken
    character (U+FFFD) and 191 a control character (a line break among them)."""
    out = fixture_translator.translate(GERMAN[:32], from_lang="de", sampling=True, seed=1, temperature=5.0,
                                       num_hypotheses=16)
    samples = [h.text for tr in out for h in tr.hypotheses]
    assert len(samples) == 512
    assert not [s for s in samples if "\ufffd" in s or any(unicodedata.category(c) == "Cc" for c in s)]


def test_a_character_left_unfinished_is_dropped_not_shown_as_a_replacement_character(t):
    lead = t.tokenizer.piece_to_id("<0xE2>")
    words = t.tokenizer.encode("Tom")
    assert t.model_text([*words, lead]) == t.model_text(words) == "Tom"
    separator = [t.tokenizer.piece_to_id(f"<0x{b:02X}>") for b in "\u2028".encode()]       # one line, still
    text = t.model_text([*words, *separator, *words])
    assert "\u2028" not in text and text.split() == ["Tom", "Tom"]


def test_translate_iter_takes_a_str_as_one_text(t):
    [tr] = t.translate_iter(GERMAN[0], beam_size=1)                      # like translate: not one per character
    assert tr.source == GERMAN[0] and tr.text == ENGLISH[0]


def test_warnings_point_at_the_callers_line(t):
    long_text = " ".join(["Hund Katze Maus Haus Baum"] * 60)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.translate(long_text, beam_size=1)
        for _ in t.translate_iter([long_text], beam_size=1):              # raised while the caller iterates
            pass
    found = [w for w in caught if issubclass(w.category, LongInputWarning)]
    assert len(found) == 2 and {w.filename for w in found} == {__file__}


def test_translate_iter_streams_in_order(t):
    texts = [GERMAN[0], "", GERMAN[1], GERMAN[2], GERMAN[3], GERMAN[4]]
    seen = []

    def source():
        for x in texts:
            seen.append(x)
            yield x

    stream = t.translate_iter(source(), batch_size=2, beam_size=1)
    first = next(stream)
    assert len(seen) == 2 and first.source == GERMAN[0]                 # lazy: one batch read
    rest = list(stream)
    assert [r.text for r in [first, *rest]] == [ENGLISH[0], "", *ENGLISH[1:5]]
    with pytest.raises(TranslationError):
        next(t.translate_iter(iter(texts), to="xx"))


def test_translate_iter_translates_what_it_read_before_its_input_failed(t):
    def source():
        yield from GERMAN[:3]
        raise OSError("the disk went away")

    got = []
    with pytest.raises(OSError, match="the disk went away"):
        for tr in t.translate_iter(source(), from_lang="de", batch_size=32, beam_size=1):
            got.append(tr.text)
    assert got == ENGLISH[:3]                               # none of them lost with the batch


def test_translate_iter_numbers_texts_across_its_batches(t):
    with pytest.raises(TranslationError, match="^text 6 is a NoneType, not a str$"):
        list(t.translate_iter([GERMAN[0]] * 5 + [None], batch_size=2, beam_size=1))
    with pytest.warns(LanguageWarning, match="^text 4: looks like"):
        list(t.translate_iter([GERMAN[0]] * 3 + ["日本語のテキストです。"], batch_size=2, beam_size=1))


def test_low_latency_puts_the_int8_decoder_on_two_cores(fixture_bundle, monkeypatch):
    """low_latency: one batch at a time, the int8 encoder on one thread, the decoder on two, its extra
    thread busy-waiting and pinned to the last CPU the process may use; the same translations. With one
    CPU or threads=1 there is no second core to use."""
    def options(session):
        o = session.get_session_options()
        try:
            pinned = o.get_session_config_entry("session.intra_op_thread_affinities")
        except RuntimeError:            # not set
            pinned = ""
        return o.intra_op_num_threads, o.get_session_config_entry("session.intra_op.allow_spinning"), pinned

    fast = Translator(fixture_bundle, variant="int8", low_latency=True)
    assert fast.parallel_batches == 1
    assert options(fast.backend.encoder) == (1, "0", "")
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    two_cores = (2, "1", str(cpus[-1] + 1)) if available_cpus() > 1 else (1, "0", "")   # ONNX Runtime counts CPUs from 1
    assert options(fast.backend.decoder) == two_cores
    for beam in (1, 4):
        assert [t.text for t in fast.translate(GERMAN, beam_size=beam, from_lang="de")] == ENGLISH, f"beam {beam}"
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2}, raising=False)
    one_cpu = SessionSettings(low_latency=True)
    assert one_cpu.for_graph("int8", "decoder") == one_cpu.for_graph("int8", "encoder") == replace(one_cpu, threads=1)
    assert SessionSettings(low_latency=True, threads=4).for_graph("fp32", "decoder").threads == 4   # int8 only
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert SessionSettings(low_latency=True, threads=1).for_graph("int8", "decoder").threads == 1
    assert SessionSettings(low_latency=True).for_graph("int8", "decoder").worker_cpu == (1 if available_cpus() > 1 else None)


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_default_threads_stay_within_a_narrowed_cpu_mask(fixture_bundle, monkeypatch, variant):
    """On one CPU of a larger machine (taskset -c 0, docker --cpuset-cpus=0) the default is one thread
    a session: ONNX Runtime's own default counts the machine's cores, not the mask, and put two threads
    on the one CPU. Given threads, and on a mask of every CPU, the sessions keep what they had."""
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    one_cpu = Translator(fixture_bundle, variant=variant)
    assert one_cpu.parallel_batches == 1
    for session in (one_cpu.backend.encoder, one_cpu.backend.decoder):
        assert session.get_session_options().intra_op_num_threads == 1
    assert [t.text for t in one_cpu.translate(GERMAN, beam_size=1, from_lang="de")] == ENGLISH
    given = Translator(fixture_bundle, variant=variant, threads=3, parallel_batches=1)
    assert given.backend.encoder.get_session_options().intra_op_num_threads == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    whole = Translator(fixture_bundle, variant=variant, parallel_batches=1)
    if cpu_quota() is None:           # else the quota's CPUs (test_a_cgroup_cpu_quota_counts_as_fewer_cpus)
        assert whole.backend.encoder.get_session_options().intra_op_num_threads == 0     # ORT's default


def test_a_cgroup_cpu_quota_counts_as_fewer_cpus(fixture_bundle, tmp_path):
    """Under a CPU quota of one CPU (docker --cpus=1, a Kubernetes CPU limit) on a larger machine: one
    batch at a time on one thread. Two batches at once under a one-CPU quota decoded 100 newstest2013
    lines in 1.2-1.7x the time of one (the shipped model), the quota throttling them. Root only: the test
    makes a cgroup (v1's cpu controller, or v2's), and skips where it cannot."""
    import subprocess
    import sys

    if os.geteuid() != 0 or (os.cpu_count() or 1) < 2:
        pytest.skip("making a cgroup needs root, and a quota below the machine's CPUs two of them")
    v1, v2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")
    group = None
    try:
        if (v1 / "cpu.cfs_quota_us").is_file():
            group = v1 / f"mtkit-test-{os.getpid()}"
            group.mkdir()
            (group / "cpu.cfs_period_us").write_text("100000")
            (group / "cpu.cfs_quota_us").write_text("100000")
        elif "cpu" in (v2 / "cgroup.controllers").read_text().split():
            group = v2 / f"mtkit-test-{os.getpid()}"
            group.mkdir()
            (group / "cpu.max").write_text("100000 100000")
        else:
            pytest.skip("no cgroup cpu controller here")
    except OSError as e:
        if group is not None and group.is_dir():
            group.rmdir()
        pytest.skip(f"cannot make a cgroup: {e}")
    probe = ("import os, sys; from mtkit.runtime import Translator; from mtkit.runtime.onnx_backend import available_cpus;"
             f"t = Translator({str(fixture_bundle)!r}, variant='int8');"
             "print(available_cpus(), t.parallel_batches, t.backend.encoder.get_session_options().intra_op_num_threads)")
    try:
        done = subprocess.run(["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" -c "$1"', sys.executable, probe],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
    finally:
        group.rmdir()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1", "1"]


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_parallel_batches_give_the_same_translations(fixture_bundle, variant):
    """Batches decoded at once in threads: the same texts and scores as one batch at a time, in input
    order, and more than one batch really was decoding at the same time."""
    one = Translator(fixture_bundle, variant=variant, threads=1, parallel_batches=1, max_batch_sentences=16)
    two = Translator(fixture_bundle, variant=variant, threads=1, parallel_batches=2, max_batch_sentences=16)
    running, overlapped, lock = [0], [False], threading.Lock()
    start = two.backend.start

    def counted_start(*args):            # the encoder runs once per batch, at the start of its decode
        with lock:
            running[0] += 1
        try:
            time.sleep(0.05)             # long enough for the other worker to begin its batch
            with lock:
                overlapped[0] |= running[0] > 1
            return start(*args)
        finally:
            with lock:
                running[0] -= 1

    two.backend.start = counted_start
    for beam in (1, 4):
        expected = one.translate(GERMAN, beam_size=beam, from_lang="de")
        got = two.translate(GERMAN, beam_size=beam, from_lang="de")
        assert [t.text for t in got] == [t.text for t in expected] == ENGLISH, f"beam {beam}"
        assert [t.score for t in got] == [t.score for t in expected]
    assert overlapped[0]


def test_length_buckets_hold_one_padded_length_a_batch():
    """On Arm, batches pad to length buckets (batching.PAD_MULTIPLE): every batch one padded length,
    a multiple of the bucket or the model's positions, within the token budget."""
    lengths = [3, 5, 16, 17, 18, 31, 32, 33, 47, 60, 61, 62, 9, 12, 14, 2, 40]
    padded = [padded_length(n, 16, 62) for n in lengths]
    batches = list(length_batches(padded, max_tokens=96, max_sentences=4, buckets=padded))
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        widths = {padded_length(lengths[i], 16, 62) for i in b}
        assert len(widths) == 1 and len(b) <= 4 and widths.pop() * len(b) <= 96 or len(b) == 1
        ids, mask = pad_batch([[7] * lengths[i] for i in b], 16, 62)
        assert ids.shape[1] == padded_length(max(lengths[i] for i in b), 16, 62)
        assert ids.shape[1] % 16 == 0 or ids.shape[1] == 62
        assert mask.sum(1).tolist() == [lengths[i] for i in b]
    assert padded_length(61, 16, 62) == 62 and padded_length(17, 16) == 32 and padded_length(17) == 17
    # Without buckets (x86), sentences of different lengths still share a batch.
    assert list(length_batches([3, 5, 9, 12], max_tokens=96, max_sentences=8)) == [[0, 1, 2, 3]]


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_length_buckets_give_the_same_translations(fixture_bundle, variant):
    """The bucketed batches Arm gets translate as the plain ones do, alone and batched."""
    plain = Translator(fixture_bundle, variant=variant, threads=ORT_THREADS, max_batch_sentences=8)
    bucketed = Translator(fixture_bundle, variant=variant, threads=ORT_THREADS, max_batch_sentences=8)
    bucketed.pad_to = 16
    for beam in (1, 4):
        expected = [x.text for x in plain.translate(GERMAN, beam_size=beam, from_lang="de")]
        assert [x.text for x in bucketed.translate(GERMAN, beam_size=beam, from_lang="de")] == expected == ENGLISH
        assert [bucketed.translate(g, beam_size=beam, from_lang="de")[0].text for g in GERMAN[:12]] == ENGLISH[:12]


def test_one_translator_serves_several_threads_at_once(fixture_bundle, tmp_path):
    """An app's worker threads may share one Translator: calls made at the same time each get the
    translations they get alone, and a decode cache opened in one thread is that thread's alone."""
    shared = Translator(fixture_bundle, threads=1, max_batch_sentences=8)
    calls = [("de", "en", 1), ("en", "de", 4), ("de", "en", 4), ("en", "de", 1)] * 2
    texts = {"de": GERMAN[:24], "en": ENGLISH[:24]}
    alone = [[x.text for x in shared.translate(texts[src], to=tgt, beam_size=beam, from_lang=src)]
             for src, tgt, beam in calls]
    together: dict[int, list[str]] = {}
    cache_size: list[int] = []
    gate = threading.Barrier(len(calls))

    def call(i: int) -> None:
        src, tgt, beam = calls[i]
        gate.wait()                                          # all start at once
        if i == 0:
            with shared.decode_cache(tmp_path / "kept.cache") as cache:
                together[i] = [x.text for x in shared.translate(texts[src], to=tgt, beam_size=beam, from_lang=src)]
                cache_size.append(len(cache))
        else:
            together[i] = [x.text for x in shared.translate_iter(texts[src], to=tgt, beam_size=beam, from_lang=src,
                                                                 batch_size=5)]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert [together.get(i) for i in range(len(calls))] == alone
    assert alone[0] == ENGLISH[:24] and alone[1] == GERMAN[:24]
    assert cache_size == [24]                                # thread 0's sentences only, not the others'


def test_ctrl_c_in_the_callers_batch_stops_the_parallel_ones(fixture_bundle):
    """The calling thread decodes batches too: a Ctrl-C there is raised at once, and the other thread
    starts no batch after it (the ones not yet started are dropped, not waited for)."""
    t = Translator(fixture_bundle, threads=1, parallel_batches=2, max_batch_sentences=8)
    start, caller, started = t.backend.start, threading.current_thread(), []

    def interrupted_start(src_ids, src_mask):
        started.append(threading.current_thread() is caller)
        if started[-1] and started.count(True) == 2:
            raise KeyboardInterrupt
        time.sleep(0.02)
        return start(src_ids, src_mask)

    t.backend.start = interrupted_start
    with pytest.raises(KeyboardInterrupt):
        t.translate(GERMAN, beam_size=4, from_lang="de")      # one sentence a batch: 8 rows / (beam 4 x 2)
    after = len(started)
    time.sleep(0.5)
    assert len(started) <= after + 1 < len(GERMAN) and False in started


def test_an_error_in_a_parallel_batch_reaches_the_caller(fixture_bundle):
    t = Translator(fixture_bundle, threads=1, parallel_batches=2, max_batch_sentences=8)
    start = t.backend.start
    calls = []

    def failing_start(src_ids, src_mask):
        calls.append(len(src_ids))
        if len(calls) == 3:
            raise RuntimeError("batch 3 failed")
        return start(src_ids, src_mask)

    t.backend.start = failing_start
    with pytest.raises(RuntimeError, match="batch 3 failed"):
        t.translate(GERMAN, beam_size=4, from_lang="de")
    with pytest.raises(TranslationError, match="parallel_batches"):
        Translator(fixture_bundle, parallel_batches=0)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=30), max_size=3))
def test_fuzz_random_unicode(t, texts):
    out = t.translate(texts, beam_size=1, max_length_ratio=0.2)
    assert len(out) == len(texts)
    for text, tr in zip(texts, out):
        assert isinstance(tr.text, str)
        tr.text.encode("utf-8")
        if not text.strip():
            assert tr.text == ""


def test_control_characters_and_emoji(t):
    out = t.translate(["Hallo\x00Welt\x1b[31m", "Ich 😀 liebe 🇩🇪 dich \u200d", "\ufeffGuten Tag\u0085"], beam_size=1)
    assert len(out) == 3 and all(o.num_parts == 1 for o in out)


def test_words_with_rare_letters_come_through_exactly(t):
    """Copied from their byte pieces, or else decoded again as names: either way verbatim."""
    sources = {"Darina Rychtářová sagt, dass Šumperk schön ist.": ["Rychtářová", "Šumperk"],
               "Uğur Şahin nimmt 5 µg am Tag.": ["Uğur", "Şahin", "µg"]}
    for tr, words in zip(t.translate(list(sources), from_lang="de"), sources.values()):
        assert all(word in tr.text for word in words), tr.text


def test_a_greek_beta_for_a_sharp_s_is_read_as_one(t):
    assert t.translate("Die Maβnahme ist groβ.")[0].tokens == t.translate("Die Maßnahme ist groß.")[0].tokens
    assert clean("Aβ42 und IFN-β, Maβ") == "Aβ42 und IFN-β, Maß"


# Bundles on disk.

def copy_bundle(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_archives_load(fixture_bundle, tmp_path, monkeypatch):
    monkeypatch.setenv("MT_CACHE_DIR", str(tmp_path / "cache"))
    tgz = tmp_path / "model.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(fixture_bundle, arcname="model")
    zpath = tmp_path / "model.zip"
    with zipfile.ZipFile(zpath, "w") as z:                  # files at the archive's root
        for f in Path(fixture_bundle).iterdir():
            z.write(f, f.name)
    for archive in (tgz, zpath):
        tr = Translator(archive, threads=ORT_THREADS)
        assert tr.path.is_relative_to(tmp_path / "cache")
        assert tr.translate(GERMAN[0], beam_size=1)[0].text == ENGLISH[0]
    assert Translator(tgz, threads=ORT_THREADS).path == Translator(tgz, threads=ORT_THREADS).path   # unpacked once


@pytest.mark.parametrize("data_filter", [True, False], ids=["tarfile-data-filter", "python-without-filters"])
def test_archives_that_would_write_outside_are_refused(fixture_bundle, tmp_path, monkeypatch, data_filter):
    """Python before 3.10.12 / 3.11.4 (Debian 12's 3.11.2) has no tarfile filters: the same archives
    must be refused there, and a good one must still unpack."""
    if data_filter and not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no tarfile filters")
    if not data_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    monkeypatch.setenv("MT_CACHE_DIR", str(tmp_path / "cache"))
    good, escape, link, zpath = (tmp_path / name for name in ("good.tar.gz", "escape.tar.gz", "link.tar.gz", "bad.zip"))
    for path, extra in ((good, None), (escape, "../evil.json"), (link, "model/outside")):
        with tarfile.open(path, "w:gz") as tar:
            tar.add(fixture_bundle, arcname="model")
            if extra == "../evil.json":
                tar.add(Path(fixture_bundle) / "config.json", arcname=extra)
            elif extra:
                info = tarfile.TarInfo(extra)
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("../evil.json", "{}")
    for archive, message in ((escape, "unsafe path in archive: ../evil.json"),
                             (link, "not a plain file in archive: model/outside"),
                             (zpath, "unsafe path in archive: ../evil.json")):
        with pytest.raises(BundleError, match=message):
            bundle.resolve_model(archive)
    assert not list(tmp_path.rglob("evil.json")) and not list(tmp_path.rglob("outside"))
    assert (bundle.resolve_model(good) / "config.json").is_file()


def test_default_model_resolution(fixture_bundle, tmp_path, monkeypatch):
    monkeypatch.delenv("MT_MODEL", raising=False)
    monkeypatch.setattr(bundle, "MODELS_DIR", tmp_path / "models")
    with pytest.raises(BundleError, match="pass a bundle .* with -m"):
        bundle.default_model()
    (tmp_path / "models").mkdir()
    copy_bundle(fixture_bundle, tmp_path / "models" / "b-model")
    (tmp_path / "models" / "a-not-a-bundle").mkdir()
    assert bundle.default_model() == tmp_path / "models" / "b-model"
    assert Translator(threads=ORT_THREADS).path == (tmp_path / "models" / "b-model").resolve()
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    assert bundle.default_model() == Path(fixture_bundle)


def test_shipped_models_live_next_to_the_package_source():
    import mtkit.runtime
    assert bundle.MODELS_DIR == (Path(mtkit.runtime.__file__).parent.parent / "models").resolve()


def test_broken_bundles_name_the_file(fixture_bundle, tmp_path):
    def broken(name, damage) -> Path:
        d = copy_bundle(fixture_bundle, tmp_path / name)
        damage(d)
        return d

    def truncate(d):
        data = (d / "decoder.int8.onnx").read_bytes()
        (d / "decoder.int8.onnx").write_bytes(data[: len(data) // 3])

    def garble(name):   # same size, so only opening the file finds the damage
        return lambda d: (d / name).write_bytes(b"garbage".ljust((d / name).stat().st_size, b"\0"))

    def schema(d):
        cfg = json.loads((d / "config.json").read_text())
        cfg["schema_version"] = 99
        (d / "config.json").write_text(json.dumps(cfg))

    def vocab(d):                   # config.json edited: the tokenizer is still the one its checksum records
        cfg = json.loads((d / "config.json").read_text())
        cfg["model"]["vocab_size"] += 1
        (d / "config.json").write_text(json.dumps(cfg))

    def other_tokenizer(d):         # no checksums (an older bundle) to tell which of the two is wrong
        shutil.copy(Path(__file__).parents[1] / "models" / "de-en" / "tokenizer.model", d / "tokenizer.model")
        cfg = json.loads((d / "config.json").read_text())
        del cfg["files"]
        (d / "config.json").write_text(json.dumps(cfg))

    def layers(d):
        cfg = json.loads((d / "config.json").read_text())
        cfg["model"]["decoder_layers"] += 1
        (d / "config.json").write_text(json.dumps(cfg))

    def heads(d):                   # consistent with d_model, but not the graphs' cache shape
        cfg = json.loads((d / "config.json").read_text())
        cfg["model"]["n_heads"], cfg["model"]["head_dim"] = 2 * cfg["model"]["n_heads"], cfg["model"]["head_dim"] // 2
        (d / "config.json").write_text(json.dumps(cfg))

    cases = [
        (broken("truncated", truncate), r"decoder.int8.onnx: \d+ bytes, but config.json records \d+"),
        (broken("garbled", garble("decoder.int8.onnx")), "decoder.int8.onnx: not a usable ONNX model"),
        (broken("schema", schema), "config.json: schema_version 99 is not supported"),
        (broken("notok", lambda d: (d / "tokenizer.model").unlink()), "tokenizer.model: missing"),
        (broken("badtok", garble("tokenizer.model")), "tokenizer.model: not a SentencePiece"),
        (broken("vocab", vocab), r"config.json: model.vocab_size is 761, but tokenizer.model, unchanged since the "
                                 r"export \(its recorded sha256\), has 760 pieces, as the graphs' vocabulary; "
                                 r"set vocab_size back to 760"),
        (broken("othertok", other_tokenizer), "tokenizer.model: 16000 pieces, but config.json says vocab_size 760; "
                                              "the tokenizer does not belong to this model"),
        (broken("layers", layers), "config.json: .*tensors: the name lists do not fit a decoder of 3 layers"),
        (broken("heads", heads), r"decoder.int8.onnx: input \S+ has \d+ heads of \d+, but config.json says"),
        (broken("noconfig", lambda d: (d / "config.json").unlink()), "config.json: missing"),
        (broken("badjson", lambda d: (d / "config.json").write_text("{")), "config.json: not valid JSON"),
        (broken("nograph", lambda d: (d / "encoder.onnx").unlink()), "encoder.onnx: missing"),
        (tmp_path / "nowhere", "nowhere: no such file"),
    ]
    for path, message in cases:
        variant = "fp32" if path.name == "nograph" else "auto"
        with pytest.raises(ModelLoadError, match=message) as info:
            Translator(path, variant=variant)
        assert isinstance(info.value, BundleError) and isinstance(info.value, TranslationError)
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(b"not a tarball")
    with pytest.raises(ModelLoadError, match="corrupt.tar.gz: cannot unpack"):
        Translator(corrupt)


@pytest.mark.parametrize("options", [dict(beam_size=1), dict(beam_size=4), dict(sampling=True, seed=1)])
def test_a_model_whose_weights_are_nan_is_refused_in_words(tmp_path, fixture_bundle, capsys, options):
    """A broken average or export gives NaN scores: beam search finds nothing, greedy finds noise. Either
    way the user hears that the model is broken, not an IndexError or a line of garbage."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from conftest import invoke
    from mtkit.runtime import bundle_format as bf, checksums
    from mtkit.runtime.cli import main

    broken = tmp_path / "bundle"
    shutil.copytree(fixture_bundle, broken)
    graph = onnx.load(broken / "decoder.onnx")
    weight = next(w for w in graph.graph.initializer if w.data_type == onnx.TensorProto.FLOAT and w.dims)
    weight.CopyFrom(numpy_helper.from_array(np.full_like(numpy_helper.to_array(weight), np.nan), weight.name))
    onnx.save(graph, broken / "decoder.onnx")
    config = bf.BundleConfig.load(broken)
    config.files = checksums.manifest(broken)                # sound files: only the numbers are broken
    config.save(broken)
    with pytest.raises(ModelLoadError, match="scores are not numbers .NaN.: its weights are broken"):
        Translator(broken, variant="fp32", threads=ORT_THREADS).translate(GERMAN[0], from_lang="de", **options)
    flags = ["--beam-size", str(options.get("beam_size", 1))] if "sampling" not in options else ["--sampling"]
    code, out, err = invoke(main, ["-m", str(broken), "--variant", "fp32", "--from", "de", *flags, GERMAN[0]], capsys)
    assert code == 1 and out == "" and "weights are broken" in err and "Traceback" not in err


def test_a_text_too_long_for_an_alignment_is_translated_without_one(t, monkeypatch):
    """The alignment is target x source weights for the whole text: 3,000 sentences on one line were
    killed at 18 GB. Past the limit the text comes without one, with a warning; the others keep theirs."""
    from mtkit.runtime import translator

    monkeypatch.setattr(translator, "MAX_ALIGNED_TOKENS", 20)
    long_text = " ".join(GERMAN[:4])
    assert len(t.tokenizer.encode(long_text)) > 20
    with pytest.warns(LongInputWarning, match="text 2: .* too many for an alignment"):
        short, long = t.translate([GERMAN[0], long_text], from_lang="de", beam_size=1, return_alignment=True)
    assert short.alignment is not None and not short.warnings
    assert long.alignment is None and long.text and "translated without one" in long.warnings[0]


def test_a_graph_that_fails_to_load_is_the_error_alone_without_onnx_runtimes_log(fixture_bundle, tmp_path, capfd):
    """A bundle without checksums (exported before them) whose shared weights file was cut short: ONNX
    Runtime logged each failed session, four multi-line red errors on stderr, above the one-line error
    that says the same."""
    from mtkit.runtime import bundle_format as bf

    d = copy_bundle(fixture_bundle, tmp_path / "old")
    config = bf.BundleConfig.load(d)
    config.files = {}
    config.save(d)
    (d / "embedding.int8.bin").write_bytes((d / "embedding.int8.bin").read_bytes()[:1000])
    with pytest.raises(ModelLoadError, match="int8.onnx: not a usable ONNX model"):
        Translator(d, variant="int8", threads=1)
    assert capfd.readouterr().err == ""
