"""HTML in, HTML out (runtime/markup.py): `Translator.translate_html` and `mt-translate --html`.

The fixture model reproduces GERMAN[i] -> ENGLISH[i] on any CPU, so the text of a translated page
is asserted exactly. Where the tags land follows the model's attention, which is not held to a
margin, so for real pages the tests check what must hold whatever it is: every tag comes back once,
well nested, around the right text; verbatim parts unchanged. Carrying tags over an alignment is
tested on a hand-made one.
"""

from __future__ import annotations

import html
import random
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from conftest import ENGLISH, GERMAN, translate_cli as cli
from mtkit.runtime import TranslationError
from mtkit.runtime.markup import (MAX_UNIT_WORDS, _Block, _chunks, _events, carry_paths, translate_fragments,
                                  translate_html, word_alignment)

GREEDY = {"from_lang": "de", "beam_size": 1}


class Outline(HTMLParser):
    """A page's tags in order, its text, and whether its elements nest."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.nested, self.open = [], [], True, []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(self.get_starttag_text())
        if tag not in ("br", "img", "hr", "meta", "input", "link", "wbr"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        self.tags.append(f"</{tag}>")
        self.nested &= bool(self.open) and self.open.pop() == tag

    def handle_data(self, data):
        self.text.append(data)

    def words(self) -> str:
        return " ".join("".join(self.text).split())


def translate(translator, page: str) -> str:
    return translator.translate_html(page, **GREEDY)


def test_text_is_translated_sentence_by_sentence_and_block_by_block(fixture_translator):
    page = (f"<!DOCTYPE html>\n<html lang=\"de\">\n<head><title>{GERMAN[0]}</title></head>\n<body>\n"
            f"  <h1>{GERMAN[1]}</h1>\n  <p>{GERMAN[2]} {GERMAN[3]}</p>\n  <ul><li>{GERMAN[4]}</li><li>{GERMAN[5]}</li></ul>\n"
            f"</body>\n</html>\n")
    out = translate(fixture_translator, page)
    expected = page.replace('lang="de"', 'lang="en"')
    for de, en in zip(GERMAN[:6], ENGLISH[:6]):
        expected = expected.replace(de, html.escape(en, quote=False))
    assert out == expected                  # the skeleton, whitespace and all, around the translated text


def test_inline_elements_come_back_once_well_nested(fixture_translator):
    words = GERMAN[7].rstrip(".").split()        # "Wir haben ein sehr kleines Haus"
    page = (f"<p>{words[0]} <b>{words[1]} <i>{words[2]}</i></b> {' '.join(words[3:5])} "
            f"<a href=\"/haus?a=1&amp;b=2\" class=\"x\">{words[5]}</a>.</p>")
    out = translate(fixture_translator, page)
    source, target = Outline(page), Outline(out)
    assert target.words() == ENGLISH[7]
    assert sorted(target.tags) == sorted(source.tags)      # each tag once, attributes as written
    assert target.nested and not target.open
    assert out.startswith("<p>") and out.endswith("</p>")


def test_verbatim_parts_are_kept_byte_for_byte(fixture_translator):
    kept = ['<script>if (a < b && c) { x = "<b>Das</b>"; }</script>', "<style>p > b { color: red }</style>",
            "<pre>  Das wollen\n   wir nicht.</pre>", '<div translate="no">Das wollen wir nicht machen.</div>',
            '<p class="intro notranslate">Es ist Frühling.</p>', "<!-- Kommentar -->"]
    page = f"<p>{GERMAN[0]}</p>" + "".join(kept) + f"<p>{GERMAN[1]}</p>"
    out = translate(fixture_translator, page)
    assert out == f"<p>{ENGLISH[0]}</p>" + "".join(kept) + f"<p>{ENGLISH[1]}</p>"


def test_end_tags_and_references_come_back_as_written(fixture_translator):
    page = f'<P>{GERMAN[0]}</P >\n<DIV>&nbsp<BR>&#160</Div>\n<Ul><Li>{GERMAN[1]}</LI></Ul>'
    out = fixture_translator.translate_html(page, **GREEDY)
    assert out == f'<P>{ENGLISH[0]}</P >\n<DIV>&nbsp<BR>&#160</Div>\n<Ul><Li>{ENGLISH[1]}</LI></Ul>'


def test_a_pages_own_backtick_number_is_not_taken_for_an_element():
    """Inline elements travel through the model as `k`; a `0` written in the page travels the same way,
    as itself, so that it cannot stand for (or swap places with) element 0."""
    from mtkit.runtime.markup import _Block, _chunks, _events
    [block] = [_Block(c) for c in _chunks(_events("<p>Wert `0` und <code>x</code> und `7`.</p>")) if isinstance(c, list)]
    assert block.atoms == ["`0`", "<code>x</code>", "`7`"]
    assert [w.text for w in block.words] == ["Wert", "`0`", "und", "`1`", "und", "`2`", "."]


def test_inline_code_and_images_travel_whole_inside_a_sentence(fixture_translator):
    page = f'<p>{GERMAN[16]} <code>x &lt; 1</code> <img src="b.png"></p>'
    out = translate(fixture_translator, page)
    assert out.count("<code>x &lt; 1</code>") == 1 and out.count('<img src="b.png">') == 1
    assert sorted(Outline(out).tags) == sorted(Outline(page).tags)
    assert "`" not in out                                    # no placeholder is left behind


def test_the_attributes_people_read_are_translated(fixture_translator):
    page = (f'<p title="{GERMAN[0]}">{GERMAN[1]} <img src=a.png alt=\'{GERMAN[2]}\' class=x></p>'
            f'<input type=submit value="{GERMAN[3]}"><input name=q placeholder="{GERMAN[4]}" value="{GERMAN[5]}">'
            f'<a href="/x" aria-label="{GERMAN[6]}" data-note="{GERMAN[7]}">{GERMAN[8]}</a>'
            f'<pre title="{GERMAN[9]}">x</pre><span translate="no" title="{GERMAN[10]}">y</span>')
    out = translate(fixture_translator, page)
    q = lambda text: html.escape(text, quote=True)                           # noqa: E731
    assert f'<p title="{q(ENGLISH[0])}">' in out and f'alt="{q(ENGLISH[2])}" class=x>' in out
    assert f'<input type=submit value="{q(ENGLISH[3])}">' in out
    assert f'placeholder="{q(ENGLISH[4])}" value="{GERMAN[5]}">' in out      # a field's own value is data
    assert f'aria-label="{q(ENGLISH[6])}" data-note="{GERMAN[7]}">' in out
    assert f'<pre title="{GERMAN[9]}">x</pre><span translate="no" title="{GERMAN[10]}">y</span>' in out
    assert len(Outline(out).tags) == len(Outline(page).tags)


def test_entities_and_special_characters_stay_escaped(fixture_translator):
    page = f"<p>{GERMAN[12]} &amp; &lt;tag&gt; &#228; &nbsp;</p>"
    out = translate(fixture_translator, page)
    assert not re.search(r"&(?!(?:[A-Za-z]+|#\d+|#x[0-9a-fA-F]+);)", out)     # every & starts an entity
    assert Outline(out).tags == ["<p>", "</p>"]               # no "<tag>" made out of the text


@pytest.mark.parametrize("page", ["", "   \n", "<br>", "<p></p>\n<hr/>", "<td>2024</td>", "<p> 3.5 % </p>",
                                  "<img src=a.png>", "<!DOCTYPE html><html><body></body></html>",
                                  "<p><code>x</code></p>", "<![CDATA[ Es ist Frühling. ]]><!--[if IE]><p>x</p><![endif]-->",
                                  "<?xml version='1.0'?><svg><text>Es ist Frühling.</text></svg>"])
def test_pages_without_words_come_back_unchanged(fixture_translator, page):
    assert translate(fixture_translator, page) == page


@pytest.mark.parametrize("page", ["<p>Das <b>ist <i>kaputt</b> HTML</p> ohne Ende <span>",
                                  "</b>Es ist Frühling.<p", "<p>Es ist <b></b>Frühling.</i></p>",
                                  "<ul><li>Tom schrie.<li>Tom sah sich um.</ul>", "<p>Nicht &zu Ende"])
def test_malformed_pages_lose_no_tag(fixture_translator, page):
    out = translate(fixture_translator, page)
    assert sorted(Outline(out).tags) == sorted(Outline(page).tags)


@pytest.mark.parametrize("page", ["<style>p { x: 1 }", f"{GERMAN[0]} <script> var x = 1;"])
def test_an_unclosed_script_or_style_keeps_its_content(fixture_translator, page):
    """The parser holds back what an unclosed raw-text element contains: it comes back as written."""
    assert translate(fixture_translator, page).endswith(page[page.index("<"):])


def test_no_fragment_runs_into_the_next(fixture_translator):
    """Subtitle cues, Markdown blocks and mt-serve's texts: a <script> or an open comment in one, or
    markup that looks like the old wrapper, changes nothing in the others."""
    fragments = ["<script>", GERMAN[0], "<!-- x", GERMAN[1], f'<div data-mtkit-unit="7">{GERMAN[2]}</div>',
                 "<style>x", f"<b>{GERMAN[3]}</b>"]
    out = translate_fragments(fixture_translator, fragments, "en", **GREEDY)
    assert len(out) == len(fragments)
    assert out[0] == "<script>" and out[5] == "<style>x"          # out[2]: "<!-- x" read as text
    assert [out[1], out[3]] == ENGLISH[:2]
    assert out[4] == f'<div data-mtkit-unit="7">{ENGLISH[2]}</div>' and out[6] == f"<b>{ENGLISH[3]}</b>"


def test_not_a_string_or_a_language_the_model_lacks_is_a_clear_error(fixture_translator):
    with pytest.raises(TranslationError, match="must be a str"):
        fixture_translator.translate_html(b"<p>Hallo</p>")
    for page in ("<p>Hallo</p>", "<br>"):                    # with words to translate or without
        with pytest.raises(TranslationError, match="cannot translate into 'fr'"):
            fixture_translator.translate_html(page, to="fr")
        with pytest.raises(TranslationError, match="cannot translate from 'fr'"):
            fixture_translator.translate_html(page, from_lang="fr")


# ----- carrying elements over an alignment (a hand-made one: the part under test is not the model) -----

def test_word_alignment_sums_pieces_into_words():
    source = ["<2en>", "▁sehr", "▁wicht", "ig", "</s>"]
    target = ["▁very", "▁import", "ant", "</s>"]
    weights = np.array([[0, .9, .1, 0, 0], [0, .1, .5, .4, 0], [0, 0, .2, .8, 0], [0, 0, 0, 0, 1]], dtype=np.float32)
    scores = word_alignment(source, target, weights, source_words=2, target_words=2)
    assert scores.shape == (2, 2)
    np.testing.assert_allclose(scores, [[.9, .1], [.1, 1.9]], atol=1e-6)


def test_elements_follow_reordered_words_and_are_never_lost():
    bold, link = 10, 20
    source_paths = [(), (bold,), (), (link,)]                 # "Ich habe <b>heute</b> keine <a>Zeit</a>"
    scores = np.array([[1, 0, 0, 0], [.5, 0, 0, .2], [0, 0, 0, .9], [0, .8, 0, 0]], dtype=float)
    assert carry_paths(source_paths, scores) == [(), (), (link,), (bold,)]   # "I have no time today"
    # A source word nobody attends to most still brings its element: to the word attending to it most.
    scores[3] = [.6, .4, 0, 0]
    assert carry_paths(source_paths, scores)[3] == (bold,)


def test_an_element_scattered_by_the_alignment_stays_on_one_run():
    em = 7
    source_paths = [(), (em,), ()]
    scores = np.array([[0, .6, .4], [1, 0, 0], [0, .9, .1]], dtype=float)   # words 0 and 2 both point at em
    paths = carry_paths(source_paths, scores)
    assert paths == [(), (), (em,)]                           # the stronger run keeps it


def test_translate_html_takes_the_decoding_options(fixture_translator):
    out = translate_html(fixture_translator, f"<p>{GERMAN[5]}</p>", None, None, from_lang="de", beam_size=1)
    assert out == f"<p>{ENGLISH[5]}</p>"


# ----- mt-translate --html -----------------------------------------------------------------------------

def test_cli_translates_a_page_file_whole(model, tmp_path, capsys):
    page = tmp_path / "seite.html"
    page.write_bytes(f"<html>\r\n<p>{GERMAN[0]}</p>\r\n<p>{GERMAN[1]}</p>\r\n</html>".encode())
    code, out, err = cli(capsys, "--html", "-i", str(page), "-o", str(tmp_path / "page.html"))
    assert code == 0 and err == "" and out == ""
    written = (tmp_path / "page.html").read_bytes().decode()
    assert written == f"<html>\r\n<p>{ENGLISH[0]}</p>\r\n<p>{ENGLISH[1]}</p>\r\n</html>"   # no line added


def test_cli_html_arguments_are_pages(model, capsys):
    code, out, _ = cli(capsys, "--html", f"<b>{GERMAN[2]}</b>", GERMAN[3])
    assert code == 0 and out == f"<b>{ENGLISH[2]}</b>\n{ENGLISH[3]}\n"


def test_cli_html_refuses_what_it_cannot_write(model, capsys):
    code, _, err = cli(capsys, "--html", "--format", "jsonl", "<p>Hallo</p>")
    assert code == 2 and "--html" in err


def test_cli_html_invalid_utf8_is_one_line_and_no_file(model, tmp_path):
    page = tmp_path / "latin1.html"
    page.write_bytes("<p>Grüße</p>".encode("latin-1"))
    result = subprocess.run([str(Path(sys.executable).parent / "mt-translate"), "--html", "-i", str(page), "-o",
                             str(tmp_path / "out.html")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("mt-translate: error:") and "invalid UTF-8" in result.stderr
    assert not (tmp_path / "out.html").exists()


def test_markup_without_words_follows_the_word_it_came_after():
    from types import SimpleNamespace

    from mtkit.runtime.markup import _carry_over, _Word

    source = [_Word("Ich", ()), _Word("sah", (), after=' <img src="a.png">'), _Word("Tom.", (), after="<br/>")]
    alignment = SimpleNamespace(source_tokens=["<2en>", "▁Ich", "▁sah", "▁Tom", ".", "</s>"],
                                target_tokens=["▁I", "▁saw", "▁Tom", ".", "</s>"],
                                weights=[[0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0],
                                         [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]])
    translation = SimpleNamespace(text="I saw Tom.", translated=True, alignment=alignment)
    targets = _carry_over(source, translation)
    assert [(w.text, w.after) for w in targets] == [("I", ""), ("saw", ' <img src="a.png">'), ("Tom.", "<br/>")]


def test_cli_html_overlong_sentence_is_a_warning_naming_it(model, capsys):
    page = "<p>" + " ".join([GERMAN[0].rstrip(".")] * 60) + ".</p>"
    code, out, err = cli(capsys, "--html", page)
    assert code == 0 and out.startswith("<p>") and out.endswith("</p>\n")
    assert err.startswith("mt-translate: warning: document: sentence 1: a sentence of ") and "Traceback" not in err


SOUP = ["<b>", "</b>", "<i>", "</i>", "<a href='x'>", "</a>", "<p>", "</p>", "<br>", "<img src=a>", "<code>x</code>",
        "<span class=notranslate>Tom</span>", "<script>a<b</script>", "&amp;", "&lt;", "&#228;", "&bogus;",
        "<!-- c -->", " ", "\n", "<", ">", "&", '"', "<div translate=no>", "</div>", "<pre>", "</pre>",
        "<![CDATA[x]]>", "<td>", "</td>", "<li>", "<ul>", "</ul>", "<b/>", "</span>", "<span>", "<wbr>", "<?pi?>"]


def test_tag_soup_never_fails_and_loses_no_tag(fixture_translator):
    """Random mixes of tags, entities, stray brackets and words (seeded): every page translates, and its
    tags all come back."""
    rng = random.Random(7)
    words = " ".join(GERMAN[:10]).split()
    for _ in range(150):
        parts = [rng.choice(SOUP) if rng.random() < 0.4 else " " + rng.choice(words) for _ in range(rng.randint(0, 25))]
        page = "".join(parts)
        out = translate(fixture_translator, page)
        assert sorted(Outline(out).tags) == sorted(Outline(page).tags), page


@pytest.mark.parametrize("split_sentences", [True, False])
def test_a_paragraph_without_sentence_ends_is_translated_in_runs_of_clauses(split_sentences):
    """Each unit's alignment is words x words: a paragraph of 8,000 words with no sentence end took
    4.9 GB. Runs end at a clause mark where one is near the limit, else at the limit."""
    words = [f"w{i}," if i % 70 == 69 else f"w{i}" for i in range(250)]
    [block] = [_Block(c) for c in _chunks(_events("<p>" + " ".join(words) + " <b>x</b></p>")) if isinstance(c, list)]
    units = block.units(split_sentences)
    assert [w.text for unit in units for w in unit] == [*words, "x"]          # all of them, in order
    assert all(len(unit) <= MAX_UNIT_WORDS for unit in units)
    assert [unit[-1].text for unit in units[:2]] == ["w69,", "w139,"]


def test_punctuation_standing_alone_keeps_its_space():
    """"stornieren !" comes back as the plain-text translation has it ("cancel !"), not glued on."""
    from mtkit.runtime.markup import _Word

    [block] = [_Block(c) for c in _chunks(_events("<p>Ich <b>muss</b> stornieren ! ;)</p>")) if isinstance(c, list)]
    block.targets = [_Word("I", ()), _Word("must", block.words[1].path), _Word("cancel", ()), _Word("!", ()),
                     _Word(";)", ())]
    assert block.render() == "I <b>must</b> cancel ! ;)"


def test_xhtml_names_its_language_twice_and_both_follow(fixture_translator):
    page = f'<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="de" lang="de"><body><p>{GERMAN[0]}</p></body></html>'
    assert translate(fixture_translator, page) == page.replace('"de"', '"en"').replace(GERMAN[0], ENGLISH[0])


def test_a_declared_encoding_becomes_the_utf8_the_page_is_written_in(fixture_translator):
    """A page labelled Latin-1 (its bytes ASCII, so it was read) came back in UTF-8 under that label."""
    head = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n<html><head><meta charset="iso-8859-1">'
            '<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"></head>')
    page = f"{head}<body><p>{GERMAN[0]}</p><a href='q?charset=latin1'></a></body></html>"
    expected = (f'<?xml version="1.0" encoding="UTF-8"?>\n<html><head><meta charset="UTF-8">'
                f'<meta http-equiv="Content-Type" content="text/html; charset=UTF-8"></head>'
                f"<body><p>{ENGLISH[0]}</p><a href='q?charset=latin1'></a></body></html>")
    assert translate(fixture_translator, page) == expected


@pytest.mark.parametrize("mark", ['<span epub:type="pagebreak" id="Page_5">5</span>', '<sup><a href="#fn1">1</a></sup>',
                                  "<b>(3)</b>"])
def test_an_element_of_numbers_glued_to_a_word_travels_whole(fixture_translator, mark):
    """A page number or a footnote's mark holds too few of its word's characters to carry its element
    with the alignment: it travels as code does, and comes back once, as written."""
    out = translate(fixture_translator, f"<p>{GERMAN[7].rstrip('.')}{mark} {GERMAN[8]}</p>")
    assert out.count(mark) == 1 and "`" not in out
    kinds = lambda page: [kind for c in _chunks(_events(page)) if isinstance(c, list) for kind, *_ in c]  # noqa: E731
    assert "atom" in kinds(f"<p>Seite{mark} zwei</p>")
    assert "atom" not in kinds(f"<p>Seite {mark} zwei</p>")     # a word of its own: translated with the rest


def test_an_element_inside_a_word_is_never_lost(fixture_translator):
    """"<b>Haupt</b>bahnhof": the element covers part of a word, and comes back around the whole of it."""
    words = GERMAN[7].split()                      # "Wir haben ein sehr kleines Haus."
    page = f'<p>{" ".join(words[:4])} <a id="k">k</a>leines {words[5]}</p>'
    out = translate(fixture_translator, page)
    assert out.count('<a id="k">') == 1 and out.count("</a>") == 1 and Outline(out).words() == ENGLISH[7]


def test_an_element_the_alignment_cannot_place_comes_back_empty():
    """Two sibling elements whose words became one word: the other element comes back, empty, at the end."""
    from mtkit.runtime.markup import _Word

    [block] = [_Block(c) for c in _chunks(_events('<p><a id="x">eins</a> <a id="y">zwei</a></p>'))
               if isinstance(c, list)]
    block.targets = [_Word("one-two", block.words[0].path)]
    block.restore_lost()
    assert block.render() == '<a id="x">one-two</a><a id="y"></a>'


def test_buttons_are_translated_each_on_its_own(fixture_translator):
    page = f'<p><button id="a">{GERMAN[11]}</button> <button id="b">{GERMAN[12]}</button></p>'
    assert translate(fixture_translator, page) == page.replace(GERMAN[11], ENGLISH[11]).replace(GERMAN[12], ENGLISH[12])


def test_code_keeps_the_elements_it_was_in():
    """`<a>[HTML5]</a> <code><a>a</a></code>`: the alignment may carry the code's word into the first
    link, and a link inside a link is no HTML. A word holding code keeps the source word's elements."""
    from types import SimpleNamespace

    from mtkit.runtime.markup import _carry_over, _Word

    link = 3
    source = [_Word("[HTML5]", (link,)), _Word("`0`", ()), _Word("Element", ())]
    alignment = SimpleNamespace(source_tokens=["<2de>", "▁[HTML5]", "▁`0`", "▁Element", "</s>"],
                                target_tokens=["▁[HTML5]", "▁`0`", "▁Element", "</s>"],
                                weights=[[0, 1, 0, 0, 0], [0, .6, .4, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1]])
    targets = _carry_over(source, SimpleNamespace(text="[HTML5] `0` Element", translated=True, alignment=alignment))
    assert [(w.text, w.path) for w in targets] == [("[HTML5]", (link,)), ("`0`", ()), ("Element", ())]


def test_punctuation_alone_keeps_the_element_it_carries():
    """A link on "›" alone (a table of contents' arrow): the translated "‘" keeps it."""
    from mtkit.runtime.markup import _Word

    [block] = [_Block(c) for c in _chunks(_events('<p><a href="#s1">›</a> 1 Einleitung</p>')) if isinstance(c, list)]
    block.targets = [_Word("‘", block.words[0].path), _Word("1", ()), _Word("Introduction", ())]
    assert block.render() == '<a href="#s1">‘</a> 1 Introduction'


def test_a_mark_glued_across_end_tags_travels_whole(fixture_translator):
    """"<span><em>Pepys</em></span><em>,</em>": the comma's element is glued to the word past two end tags."""
    out = translate(fixture_translator, f"<p><span>{GERMAN[7].rstrip('.')}</span><em>,</em> {GERMAN[8]}</p>")
    assert out.count("<em>,</em>") == 1


def test_a_doctype_with_an_internal_subset_comes_back_whole(fixture_translator):
    # XHTML may declare entities in its DOCTYPE: its "]>" came back as text, "]&gt;", which no XML parser reads.
    doctype = '<!DOCTYPE html [\n  <!ENTITY copy "&#169;">\n  <!ENTITY x SYSTEM "file:///etc/passwd">\n]>'
    out = fixture_translator.translate_html(f'<?xml version="1.0"?>\n{doctype}\n<p>{GERMAN[0]}</p>', **GREEDY)
    assert out == f'<?xml version="1.0"?>\n{doctype}\n<p>{ENGLISH[0]}</p>'
