"""Glossaries (runtime/glossary.py): reading the file, finding terms, and the terms' translations in
what `translate`, `translate_html` and `mt-translate --glossary` give back."""

from __future__ import annotations

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime.cli import main
from mtkit.runtime.glossary import Glossary, GlossaryError, holds
from mtkit.runtime.protect import mask, unmask


def write(tmp_path, text: str | bytes, name: str = "glossary.tsv"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_read_skips_comments_and_blank_lines(tmp_path):
    path = write(tmp_path, "\ufeffde\ten\n# the app's words\n\nDatei\tfile\r\nSpeicherort\t storage location \n")
    g = Glossary.read(path)
    assert (g.source, g.target) == ("de", "en")
    assert g.entries == (("Datei", "file"), ("Speicherort", "storage location"))


@pytest.mark.parametrize("text, message", [
    ("Datei\tfile\n", "line 1: the first line must name the two languages"),
    ("de en\nDatei\tfile\n", "line 1: the first line must name the two languages"),
    ("", "line 1: the first line must name the two languages"),
    ("de\ten\nDatei file\n", "line 2: expected a term and its translation"),
    ("de\ten\nDatei\tfile\tx\n", "line 2: expected a term and its translation"),
    ("de\ten\n\nDatei\t \n", "line 3: expected a term and its translation"),
    ("de\ten\nDatei\tfile\n\ndatei\trecord\n", "line 4: 'datei' is given two translations, 'file' and 'record'"),
    ("de\tde\nDatei\tDatei\n", "two different languages"),
])
def test_a_malformed_file_names_its_line(tmp_path, text, message):
    with pytest.raises(GlossaryError, match=message):
        Glossary.read(write(tmp_path, text))


def test_unreadable_files_are_clear_errors(tmp_path):
    with pytest.raises(GlossaryError, match="not UTF-8"):
        Glossary.read(write(tmp_path, "de\ten\nStraße\tstreet\n".encode("latin-1")))
    with pytest.raises(GlossaryError, match="cannot read the glossary"):
        Glossary.read(tmp_path / "missing.tsv")


def test_from_pairs_takes_a_dict_and_refuses_what_is_not_a_pair():
    """A dict is its items: iterated, its keys were split into letters ({"ab": "x"} gave the term "a")."""
    assert Glossary.from_pairs("de", "en", {"Datei": "file", "ab": "x"}).entries == (("Datei", "file"), ("ab", "x"))
    for pairs in ([("Datei",)], [("Datei", None)], ["ab"], [("a", "b", "c")]):
        with pytest.raises(GlossaryError, match="expected a \\(term, translation\\) pair of str"):
            Glossary.from_pairs("de", "en", pairs)


def test_terms_are_whole_words_longest_first():
    g = Glossary.from_pairs("de", "en", [("Datei", "file"), ("Cloud Sync", "CloudSync"), ("Cloud Sync Server", "CSS"),
                                         ("C++", "C++")])
    terms = g.terms("de", "en")
    text = "Dateien, Datei. DATEI CLOUD SYNC SERVER und Cloud Sync mit C++"
    assert [(text[a:b], t) for a, b, t in terms.find(text)] == [
        ("Datei", "file"), ("DATEI", "FILE"), ("CLOUD SYNC SERVER", "CSS"), ("Cloud Sync", "CloudSync"), ("C++", "C++")]


def test_a_term_written_decomposed_matches_the_composed_text():
    """The translator composes what it reads (NFC); a glossary written with combining marks must too."""
    import unicodedata
    g = Glossary.from_pairs("de", "en", [(unicodedata.normalize("NFD", "Schlüssel"), "key")])
    assert g.terms("de", "en").find("Der Schlüssel") == [(4, 13, "key")]


def test_one_glossary_serves_both_directions_and_no_other():
    g = Glossary.from_pairs("de", "en", [("Datei", "file"), ("Akte", "file")])
    assert g.terms("en", "de").find("the file") == [(4, 8, "Datei")]      # reversed: the first one given wins
    assert g.terms("de", "de") is None and g.terms("fr", "en") is None


def test_mask_puts_the_translation_behind_a_placeholder():
    terms = Glossary.from_pairs("de", "en", [("Datei", "file"), ("iPhone", "iPhone")]).terms("de", "en")
    masked = mask("Datei auf https://datei.example laden, dann iPhone.", lambda c: False, terms=terms)
    assert "Datei" not in masked.text and "iPhone" not in masked.text
    assert [(s.original, s.term) for s in masked.spans] == [("file", True), ("https://datei.example", False),
                                                            ("iPhone", True)]
    names = [s.placeholder for s in masked.spans]
    translation = f"{names[0]} load on {names[1]}, then {names[2]}."
    assert unmask(translation, masked.spans) == "File load on https://datei.example, then iPhone."
    # Capitals only where a lower-case term opens the sentence; "iPhone" stays as written there too.
    assert unmask(f"Then {names[2]} {names[0]} {names[1]}.", masked.spans) == "Then iPhone file https://datei.example."
    assert unmask(f"{names[2]} {names[0]} {names[1]}.", masked.spans) == "iPhone file https://datei.example."


def test_a_term_the_model_drops_still_comes_back():
    terms = Glossary.from_pairs("de", "en", [("Datei", "record")]).terms("de", "en")
    masked = mask("Die Datei ist weg.", lambda c: False, terms=terms)
    assert "record" in unmask("It is gone.", masked.spans)


# ----- through the translator (the fixture model) -------------------------------------------------

def test_translations_carry_the_glossary_terms(fixture_translator):
    g = Glossary.from_pairs("de", "en", [("Bananen", "plantains"), ("Glas Wasser", "Wasserglas")])
    plain = fixture_translator.translate([GERMAN[16], GERMAN[5], GERMAN[0]], from_lang="de", beam_size=1)
    with_terms = fixture_translator.translate([GERMAN[16], GERMAN[5], GERMAN[0]], from_lang="de", beam_size=1,
                                              glossary=g)
    assert [t.text for t in plain] == [ENGLISH[16], ENGLISH[5], ENGLISH[0]]
    assert "Plantains" in with_terms[0].text or "plantains" in with_terms[0].text
    assert "Wasserglas" in with_terms[1].text
    assert with_terms[2].text == ENGLISH[0]                  # no term in it: unchanged


def test_a_translation_that_holds_the_terms_is_kept_as_the_model_wrote_it(fixture_translator):
    """A term behind a placeholder name costs the words around it their fit (articles, gender, inflection):
    BLEU fell by 5 on technical documentation with a glossary. A sentence is decoded as it is first, and
    again with its terms behind names only where its translation lacks one of theirs, with the glossary's
    capitals ("water" is in "...glass of water?", "Water" is not)."""
    def translate(text, pairs, **options):
        [tr] = fixture_translator.translate(text, from_lang="de", glossary=Glossary.from_pairs("de", "en", pairs),
                                            **{"beam_size": 1, **options})
        return tr
    assert translate(GERMAN[5], [("Wasser", "water"), ("Glas", "glass")]).text == ENGLISH[5]     # the plain one
    assert "Water" in translate(GERMAN[5], [("Wasser", "Water")]).text
    assert "plantains" in translate(GERMAN[16], [("Bananen", "plantains")]).text.lower()
    # An n-best list is decided on its best hypothesis: all of it is the plain list where that holds the terms.
    [plain] = fixture_translator.translate(GERMAN[5], from_lang="de", beam_size=2, num_hypotheses=2)
    assert "water" in plain.text
    kept = translate(GERMAN[5], [("Wasser", "water")], beam_size=2, num_hypotheses=2)
    assert [h.text for h in kept.hypotheses] == [h.text for h in plain.hypotheses]


def test_a_translation_holds_a_term_as_often_as_the_source_has_it():
    """Whole words, the glossary's capitals as capitals, its other letters in either case, and a term twice
    in the source needs its translation twice."""
    assert holds("File saved. Open the file.", ["file", "file"])
    assert not holds("Open the file.", ["file", "file"])
    assert not holds("Open the settings.", ["Settings"]) and holds("Open the Settings.", ["Settings"])
    assert not holds("Open the profile.", ["file"]) and holds("anything", [])
    assert not holds("Save the file", ["SAVE"]) and holds("SAVE THE FILE", ["SAVE"])
    assert holds("Open the\u00a0file name.", ["file name"])
    # One per term, as the text has them, though a list of terms stands behind one placeholder.
    terms = Glossary.from_pairs("de", "en", [("Glas", "glass"), ("Wasser", "water")]).terms("de", "en")
    assert mask("Ein Glas Wasser, GLAS und https://glas.example", lambda c: False, terms=terms).terms == [
        "glass", "water", "GLASS"]


def test_the_glossary_works_the_other_way_and_in_html(fixture_translator):
    g = Glossary.from_pairs("de", "en", [("Bananen", "plantains")])
    [tr] = fixture_translator.translate("Bananas are delicious.", to="de", from_lang="en", beam_size=1, glossary=g)
    assert "Bananen" in tr.text
    page = fixture_translator.translate_html(f"<p><b>{GERMAN[16]}</b></p>", from_lang="de", beam_size=1, glossary=g)
    assert "lantains" in page and page.startswith("<p><b>") and page.endswith("</b></p>")


def test_a_glossary_must_be_a_glossary(fixture_translator):
    with pytest.raises(TypeError, match="glossary must be a Glossary"):
        fixture_translator.translate("Hallo", glossary={"Hallo": "Hi"})
    with pytest.raises(TypeError, match="glossary must be a Glossary"):
        next(fixture_translator.translate_iter(["Hallo"], glossary={"Hallo": "Hi"}))


def test_cli_glossary(model, tmp_path, capsys):
    path = write(tmp_path, "de\ten\nBananen\tplantains\n")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de",
                                   "--glossary", str(path), GERMAN[16], GERMAN[0]], capsys)
    assert code == 0 and err == ""
    first, second = out.splitlines()
    assert "lantains" in first and second == ENGLISH[0]


def test_cli_bad_glossary_is_one_line_before_the_model_loads(model, tmp_path, capsys):
    path = write(tmp_path, "Bananen\tplantains\n")
    code, out, err = invoke(main, ["--glossary", str(path), "-m", str(tmp_path / "no-model"), "Hallo"], capsys)
    assert code == 1 and out == ""
    assert err.strip() == (f"mt-translate: error: {path}, line 1: the first line must name the two languages, "
                           f"tab-separated (e.g. \"de<TAB>en\")")


def test_a_term_is_found_whatever_case_the_text_matches_it_in():
    """IGNORECASE matches letters whose lower cases differ: Greek mu for the micro sign, "S" for the long s."""
    terms = Glossary.from_pairs("de", "en", [("µm", "micrometre"), ("ſtraße", "street"), ("Datei", "file")]
                                ).terms("de", "en")
    text = "Die Dicke beträgt 5 μm. Die Straße, die DATEI."
    assert [(text[a:b], t) for a, b, t in terms.find(text)] == [("μm", "micrometre"), ("Straße", "street"),
                                                                ("DATEI", "FILE")]
    # Both spellings given: each finds its own entry.
    both = Glossary.from_pairs("de", "en", [("µm", "micro sign"), ("μm", "Greek mu")]).terms("de", "en")
    assert [t for _, _, t in both.find("µm μm")] == ["micro sign", "Greek mu"]


def test_cli_glossary_term_in_another_case_form(model, tmp_path, capsys):
    path = write(tmp_path, "de\ten\nµm\tmicrometre\n")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de",
                                   "--glossary", str(path), "Die Dicke beträgt 5 μm."], capsys)
    assert code == 0 and "Traceback" not in err and "micrometre" in out


def test_a_glossary_must_be_for_languages_the_model_translates_between():
    from types import SimpleNamespace
    de_en = SimpleNamespace(directions=[("de", "en")], source_languages=["de"], languages=["en"])
    Glossary.from_pairs("de", "en", [("Haus", "house")]).check_model(de_en)
    Glossary.from_pairs("en", "de", [("house", "Haus")]).check_model(de_en)     # applied the other way
    with pytest.raises(GlossaryError, match="the glossary is for de and fr, but this model translates de -> en$"):
        Glossary.from_pairs("de", "fr", [("Haus", "maison")]).check_model(de_en)
    any_pair = SimpleNamespace(directions=[], source_languages=["de", "en", "fr"], languages=["de", "en", "fr"])
    Glossary.from_pairs("de", "fr", [("Haus", "maison")]).check_model(any_pair)


def test_the_api_refuses_a_glossary_for_another_pair(fixture_translator):
    de_fr = Glossary.from_pairs("de", "fr", [("Haus", "maison")])
    for call in (lambda: fixture_translator.translate("Das Haus.", glossary=de_fr),
                 lambda: fixture_translator.translate_html("<p>Das Haus.</p>", glossary=de_fr)):
        with pytest.raises(GlossaryError, match="the glossary is for de and fr"):
            call()


def test_cli_glossary_for_another_pair_is_an_error(model, tmp_path, capsys):
    path = write(tmp_path, "de\tfr\nHaus\tmaison\n")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--from", "de", "--glossary", str(path),
                                   "Das Haus."], capsys)
    assert code == 1 and out == ""
    assert err == (f"mt-translate: error: {path}: the glossary is for de and fr, but this model translates "
                   f"de -> en, en -> de\n")


def test_a_placeholder_the_model_lowercased_or_inflected_is_still_the_term():
    """The model writes a placeholder name as it would a name: lower-cased ("the anna journal"), with a
    genitive s ("Toms"), or as a compound's first part ("Tomadministratoren"). The name came out in
    the translation and the term went in again after its share of the words."""
    terms = Glossary.from_pairs("en", "de", [("database", "Datenbank"), ("vendor", "Kreditor"),
                                             ("sales tax", "Mehrwertsteuer")]).terms("en", "de")
    masked = mask("The database administrators", lambda c: False, terms=terms)
    assert unmask(f"Die {masked.spans[0].placeholder}administratoren", masked.spans) == "Die Datenbankadministratoren"
    masked = mask("The vendor's address", lambda c: False, terms=terms)
    assert unmask(f"Die Adresse des {masked.spans[0].placeholder}s", masked.spans) == "Die Adresse des Kreditors"
    masked = mask("Sales tax codes and the database", lambda c: False, terms=terms)
    first, second = (s.placeholder for s in masked.spans)
    assert unmask(f"{first}codes und die {second.lower()}", masked.spans) == "Mehrwertsteuercodes und die Datenbank"
    # a term of several words is joined with a hyphen
    backward = Glossary.from_pairs("de", "en", [("Freigegebenes Produkt", "released product")]).terms("en", "de")
    masked = mask("the released product table", lambda c: False, terms=backward)
    assert unmask(f"die {masked.spans[0].placeholder}tabelle", masked.spans) == "die Freigegebenes Produkt-tabelle"


def test_a_placeholder_is_no_word_of_the_text_in_any_case():
    """A placeholder the model lower-cases is read back as the placeholder: none may be a word of the
    text in another case ("max." in the text, "Max" standing for a term)."""
    terms = Glossary.from_pairs("de", "en", [("Datei", "file")]).terms("de", "en")
    masked = mask("tom und peter öffnen die Datei", lambda c: False, terms=terms)
    assert masked.spans[0].placeholder == "Anna"


def test_a_term_of_several_words_matches_whatever_spaces_part_them():
    """A name written with a no-break space (Word, HTML's &nbsp;), two spaces, or a line break in a
    wrapped paragraph is the same term: "Dynamics\\u00a0365 Finance" was left to the model."""
    terms = Glossary.from_pairs("de", "en", [("Dynamics 365  Finance", "D365 Finance"),
                                             ("Dynamics 365", "D365")]).terms("de", "en")
    text = "Dynamics\u00a0365 Finance, Dynamics  365\nFinance und DYNAMICS 365"
    assert [(text[a:b], t) for a, b, t in terms.find(text)] == [
        ("Dynamics\u00a0365 Finance", "D365 Finance"), ("Dynamics  365\nFinance", "D365 Finance"),
        ("DYNAMICS 365", "D365")]


def test_a_list_of_terms_stands_behind_one_placeholder():
    """A menu's words in a row: 16 placeholder names ran out at the 17th term, which went to the model
    ("Importieren und Teilen" came out "Importing and parts" with Import and Share in the glossary)."""
    menu = ["Öffnen", "Speichern", "Drucken", "Löschen", "Kopieren", "Einfügen", "Suchen", "Ersetzen", "Schließen",
            "Beenden", "Rückgängig", "Wiederholen", "Ausschneiden", "Markieren", "Exportieren", "Importieren", "Teilen"]
    english = ["Open", "Save", "Print", "Delete", "Copy", "Paste", "Find", "Replace", "Close", "Exit", "Undo", "Redo",
               "Cut", "Select", "Export", "Import", "Share"]
    terms = Glossary.from_pairs("de", "en", [*zip(menu, english), ("Datei", "File")]).terms("de", "en")
    masked = mask(f"Das Menü Datei enthält {', '.join(menu[:-1])} und {menu[-1]}.", lambda c: False, terms=terms)
    assert [s.original for s in masked.spans] == ["File", ", ".join(english[:-1]), "Share"]
    file, listed, share = (s.placeholder for s in masked.spans)
    assert unmask(f"The {file} menu contains {listed} and {share}.", masked.spans) == (
        f"The File menu contains {', '.join(english[:-1])} and Share.")


def test_a_capital_of_the_term_must_be_a_capital_in_the_text():
    """A UI word is often a verb's or a noun's homograph: with "Speichern" -> "Save" (the button), "Klicken
    Sie auf Speichern, um die Datei zu speichern." came out "Click Save to see the Settings at Save."
    The term's capitals must be capitals in the text (memoQ's "permissive" case); its other letters may be
    either, so a lower-case term opens a sentence and any term is found in capitals."""
    g = Glossary.from_pairs("de", "en", [("Speichern", "Save"), ("Datei", "file"), ("iPhone", "iPhone")])
    text = "Speichern, um die Datei zu speichern. DATEI SPEICHERN, iphone und iPhone"
    assert [text[a:b] for a, b, _ in g.terms("de", "en").find(text)] == [
        "Speichern", "Datei", "DATEI", "SPEICHERN", "iPhone"]
    text = "Save the File to save the file; SAVE"
    assert [text[a:b] for a, b, _ in g.terms("en", "de").find(text)] == ["Save", "File", "file", "SAVE"]


def test_a_term_written_in_capitals_comes_out_in_capitals():
    """"SAVE THE FILE" into German gave "Speichern HAT DIE DATEI": a term the text writes in capitals (a
    heading, a button's label) is translated in capitals, unless the glossary writes it so itself."""
    g = Glossary.from_pairs("de", "en", [("Speichern", "Save"), ("Datei", "file"), ("IT", "IT department")])
    text = "SPEICHERN, DATEI, Datei, IT"
    assert [t for _, _, t in g.terms("de", "en").find(text)] == ["SAVE", "FILE", "file", "IT department"]
