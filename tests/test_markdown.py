"""Markdown (runtime/markdown.py): `Translator.translate_markdown` and `mt-translate --markdown`.
GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so where a block's
text is one of those sentences the result is asserted exactly; the syntax around it, code and link
targets must come back as written."""

from __future__ import annotations

import textwrap

from markdown_it import MarkdownIt

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime.cli import main
from mtkit.runtime.markdown import wrap

GREEDY = {"from_lang": "de", "beam_size": 1}


def test_text_is_translated_and_the_syntax_kept(fixture_translator):
    half = len(GERMAN[1].split()) // 2
    first, second = " ".join(GERMAN[1].split()[:half]), " ".join(GERMAN[1].split()[half:])
    document = (f"---\ntitle: {GERMAN[9]}\n---\n\n# {GERMAN[0]}\n\n{first}\n{second}\n\n- {GERMAN[2]}\n  1. {GERMAN[3]}\n\n"
                f"> **{GERMAN[4]}**\n\n| {GERMAN[5]} | 42 |\n|---|--:|\n| 7 | {GERMAN[6]} |\n\n"
                f"```python\nprint('{GERMAN[7]}')\n```\n\n    {GERMAN[8]}\n\n<div>\n{GERMAN[10]}\n</div>\n")
    out = fixture_translator.translate_markdown(document, **GREEDY)
    # The paragraph written over two lines is wrapped at the width of its wider line.
    paragraph = "\n".join(textwrap.wrap(ENGLISH[1], max(len(first), len(second)), break_long_words=False,
                                       break_on_hyphens=False))
    assert out == (f"---\ntitle: {GERMAN[9]}\n---\n\n# {ENGLISH[0]}\n\n{paragraph}\n\n- {ENGLISH[2]}\n"
                   f"  1. {ENGLISH[3]}\n\n> **{ENGLISH[4]}**\n\n| {ENGLISH[5]} | 42 |\n|---|--:|\n| 7 | {ENGLISH[6]} |\n\n"
                   f"```python\nprint('{GERMAN[7]}')\n```\n\n    {GERMAN[8]}\n\n<div>\n{GERMAN[10]}\n</div>\n")


def test_toml_front_matter_is_kept(fixture_translator):
    # Hugo's and Zola's front matter: it was read as a paragraph, translated and wrapped again.
    front = f"+++\ntitle = '{GERMAN[9]}'\ndraft = false\n+++\n"
    out = fixture_translator.translate_markdown(f"{front}\n# {GERMAN[0]}\n", **GREEDY)
    assert out == f"{front}\n# {ENGLISH[0]}\n"


def test_links_images_and_code_spans_come_back_as_written(fixture_translator):
    document = (f"{GERMAN[11]} [{GERMAN[12]}](../docs/a_b.md \"Titel\") `x * y` ![Bild *1*](img/a.png) "
                f"<https://example.com/x_y> <b>{GERMAN[13]}</b>\n")
    out = fixture_translator.translate_markdown(document, **GREEDY)
    for kept in ('](../docs/a_b.md "', "`x * y`", "](img/a.png)", "<https://example.com/x_y>", "<b>", "</b>"):
        assert out.count(kept) == 1, (kept, out)
    assert out.count("[") == out.count("]") == 2 and out.endswith("\n") and "\n" not in out[:-1]
    # The link's title and the image's alt text are what readers see: translated, as --html does.
    alt = fixture_translator.translate("Bild 1", **GREEDY)[0].text
    title = fixture_translator.translate("Titel", **GREEDY)[0].text
    assert f"![{alt}](img/a.png)" in out and f'](../docs/a_b.md "{title}")' in out


def blocks(document: str) -> list[tuple[str, int]]:
    """The block structure CommonMark reads: each block token's type and nesting level."""
    return [(t.type, t.level) for t in MarkdownIt("commonmark").parse(document) if t.type != "inline"]


def test_paragraphs_over_several_lines_are_wrapped_with_their_prefixes(fixture_translator):
    """In a quote and in a list item, each new line gets the prefix the paragraph's second line had,
    and the document reads as the same blocks."""
    words = " ".join(GERMAN[:6]).split()
    lines = [" ".join(words[i:i + 4]) for i in range(0, len(words), 4)]
    document = ("> " + "\n> ".join(lines) + "\n\n- " + "\n  ".join(lines) + "\n\n1. " + "\n   ".join(lines) + "\n")
    out = fixture_translator.translate_markdown(document, **GREEDY)
    assert blocks(out) == blocks(document)
    width = max(len(line) for line in document.splitlines())
    quote, item, numbered = out.split("\n\n")
    assert all(line.startswith("> ") for line in quote.splitlines())
    assert all(line.startswith("  ") for line in item.splitlines()[1:])
    assert all(line.startswith("   ") for line in numbered.splitlines()[1:])
    assert all(len(line) <= width or " " not in line.strip("> ").strip() for line in out.splitlines())


def test_wrap_never_starts_a_line_with_what_would_start_a_block():
    assert wrap("one two three four", 9, 9) == ["one two", "three", "four"]
    assert wrap("one two three four", 3, 14) == ["one", "two three four"]
    assert wrap("a verylongword b", 3, 3) == ["a", "verylongword", "b"]
    for word in ["#", "-", "+", "*", "1.", "3)", "===", "---", "___", "> x", "```py", "~~~", "<div>", "|"]:
        text = f"aaaa {word} bbbb"
        assert all(not line.startswith(word.split()[0]) for line in wrap(text, 4, 4)[1:]), (word, wrap(text, 4, 4))


def test_alt_texts_and_titles_are_written_back_as_markdown():
    from mtkit.runtime.markdown import ESCAPE, _MarkdownWriter
    writer = _MarkdownWriter([("![", "a b.png"), ("[", "https://x.org")], ESCAPE)
    writer.feed('<img alt="A [big] *dog*" title=\'The "best"\' data-m="0"> <a title="Help" data-m="1">here</a>')
    assert "".join(writer.out) == r'![A \[big\] \*dog\*](a b.png "The \"best\"") [here](https://x.org "Help")'


def test_text_that_would_read_as_markdown_is_escaped(fixture_translator):
    from mtkit.runtime.markdown import ESCAPE, _MarkdownWriter
    writer = _MarkdownWriter([], ESCAPE)
    writer.feed("5 * 3 = a_b [sic] &lt;tag&gt; `x`")
    assert "".join(writer.out) == r"5 \* 3 = a\_b \[sic\] \<tag\> \`x\`"


def test_inline_script_or_comment_takes_in_nothing_after_it(fixture_translator):
    """Inline HTML that an HTML parser would read to its end tag travels whole: the text after it, and
    the next paragraphs, are translated."""
    document = f"{GERMAN[0]} <script>\n\n{GERMAN[1]}\n\n{GERMAN[2]} <!-- x -->\n\n{GERMAN[3]}\n"
    paragraphs = fixture_translator.translate_markdown(document, **GREEDY).split("\n\n")
    assert len(paragraphs) == 4 and [paragraphs[1], paragraphs[3]] == [ENGLISH[1], ENGLISH[3] + "\n"]
    assert paragraphs[0].count("<script>") == 1 and paragraphs[2].count("<!-- x -->") == 1


def test_documents_without_text_come_back_unchanged(fixture_translator):
    for document in ["", "\n", "```\nDas wollen wir nicht machen.\n```\n", "---\n\n***\n", "| 1 | 2 |\n|---|---|\n"]:
        assert fixture_translator.translate_markdown(document, **GREEDY) == document


def test_cli_markdown(fixture_bundle, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    source = tmp_path / "README.de.md"
    source.write_text(f"## {GERMAN[14]}\r\n\r\n* {GERMAN[15]}\r\n", encoding="utf-8")
    args = ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de", "--markdown"]
    code, out, err = invoke(main, [*args, "-i", str(source), "-o", str(tmp_path / "README.en.md")], capsys)
    assert (code, out, err) == (0, "", "")
    assert (tmp_path / "README.en.md").read_bytes() == f"## {ENGLISH[14]}\r\n\r\n* {ENGLISH[15]}\r\n".encode()
    code, _, err = invoke(main, [*args, "# Hallo"], capsys)
    assert code == 2 and "--markdown reads a file" in err


def test_cli_shows_a_documents_first_warnings_and_counts_the_rest(fixture_bundle, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    french = ["Le chat dort sur le canapé.", "Nous allons au marché demain.", "Il fait très beau aujourd'hui.",
              "Elle lit un livre intéressant.", "Les enfants jouent dans le jardin.", "Je voudrais un café, s'il vous plaît.",
              "Le train arrive à la gare.", "Où est la bibliothèque ?"]
    source = tmp_path / "doc.md"
    source.write_text("\n\n".join(french) + "\n", encoding="utf-8")
    code, _, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--markdown", "-i", str(source)],
                          capsys)
    lines = err.splitlines()
    assert code == 0 and len(lines) == 6 and all("looks like fr" in line for line in lines[:5])
    assert lines[5] == ("mt-translate: warning: document: 3 more warnings (--from LANG translates every sentence "
                        "from LANG, without detecting it)")
