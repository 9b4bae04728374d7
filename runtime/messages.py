"""The messages of a program's catalogs (--po, --json): short strings, all in one language, some over
several lines, some with spaces around them that the program relies on ("Error: ")."""

from __future__ import annotations


def translate_messages(translator, messages: list[str], to: str, options=None, *, from_lang: str = "auto",
                       glossary=None, **overrides) -> dict[str, str]:
    """Each message's translation into `to`: line by line, with the spaces around each line kept. With
    `from_lang` "auto", from the one language the model translates into `to` from, when there is one:
    a catalog is never in its target language, and detecting short strings one by one fails ("Name")."""
    from_lang = catalog_source(translator, to, from_lang)
    messages = list(dict.fromkeys(messages))
    lines = [line for message in messages for line in message.split("\n")]
    done = iter(translator.translate(lines, to, options, from_lang=from_lang, glossary=glossary, **overrides))
    return {message: "\n".join(keep_spaces(line, next(done).text) for line in message.split("\n"))
            for message in messages}


def catalog_source(translator, to: str, from_lang: str) -> str:
    """The language a catalog's messages are taken to be in: `from_lang`, or for "auto" the one language
    the model translates into `to` from, when there is one (else "auto")."""
    if from_lang == "auto" and len(sources := translator.sources_into(to)) == 1:
        return sources[0]
    return from_lang


def keep_spaces(source: str, translation: str) -> str:
    """`translation` with the white space `source` had before and after it."""
    if not source.strip():
        return source
    lead, trail = source[: len(source) - len(source.lstrip())], source[len(source.rstrip()):]
    return lead + translation.strip() + trail


def with_line_ends_of(document: str, text: str) -> str:
    """`text`, a catalog written again by its parser with "\n" alone, with the "\r\n" line ends of a
    `document` written on Windows: its parser read each as "\n"."""
    return text.replace("\n", "\r\n") if "\r\n" in document else text
