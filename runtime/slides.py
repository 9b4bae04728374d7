"""PowerPoint presentations in, presentations out (`mt-translate --pptx`, `Translator.translate_pptx`).

The paragraphs (a:p) of the slides' text boxes, shapes, placeholders, tables and speaker notes are
translated as office.py says. DrawingML's own rules: a link is part of a run's properties, so it follows
its words as any formatting does; a field (the slide number, a date) is kept whole; a line break
(a:br) ends a sentence; a tab, written as a character, becomes a run of its own. Slide masters and
layouts keep their text (the prompts of empty placeholders), but their language marks, like those of
the runs, follow the translation, as does the spell-checker's mark of a word it flagged.
"""

from __future__ import annotations

import copy

from .office import Format, Paragraph, other_language, translate_package

A = "http://schemas.openxmlformats.org/drawingml/2006/main"
PML = "application/vnd.openxmlformats-officedocument.presentationml."
MACROS = "application/vnd.ms-powerpoint."      # .pptm and .potm


def a(tag: str) -> str:
    return f"{{{A}}}{tag}"


LABELLED = (a("rPr"), a("endParaRPr"), a("defRPr"))     # where a language mark (lang="de-DE") sits


class SlideParagraph(Paragraph):
    """An a:p."""

    FIRST, LAST = (a("pPr"),), (a("endParaRPr"),)

    def read(self, child, link) -> None:
        if child.tag == a("r") and child.find(a("t")) is not None:
            rpr = child.find(a("rPr"))
            for number, text in enumerate((child.find(a("t")).text or "").split("\t")):
                if number:
                    tab = child.makeelement(a("t"), {})
                    tab.text = "\t"
                    self.items.append(("object", (rpr, tab), "tab", link))
                if text:
                    self.add_text(text, rpr, link)
        else:                       # a:br, a:fld (the slide number, a date), a formula
            self.items.append(("object", child, "br" if child.tag == a("br") else "img", link))

    def run(self, text: str, rpr):
        t = self.element.makeelement(a("t"), {})
        t.text = text
        return self.run_of(rpr, t)

    def run_of(self, rpr, part):
        run = part.makeelement(a("r"), {})
        if rpr is not None:
            rpr = copy.deepcopy(rpr)
            rpr.attrib.pop("err", None)         # the spell-checker's mark of the source's word
            run.append(rpr)
        run.append(part)
        return run

    @staticmethod
    def relabel(tree, locale: str) -> None:
        for element in tree.iter(*LABELLED):
            if other_language(element.get("lang"), locale):
                element.set("lang", locale)


MAIN = frozenset({PML + "presentation.main+xml", PML + "slideshow.main+xml", PML + "template.main+xml",
                  MACROS + "presentation.macroEnabled.main+xml", MACROS + "slideshow.macroEnabled.main+xml",
                  MACROS + "template.macroEnabled.main+xml"})
PPTX = Format(
    name="a PowerPoint presentation", suffix=".pptx", old="PowerPoint .ppt", paragraphs=(a("p"),), reader=SlideParagraph,
    main=MAIN, text_parts=frozenset({PML + "slide+xml", PML + "notesSlide+xml"}),
    styles=MAIN | {PML + "slideMaster+xml", PML + "slideLayout+xml", PML + "notesMaster+xml"})


def translate_pptx(translator, document: bytes, to=None, options=None, **settings) -> bytes:
    """`document`, a .pptx file's bytes, with its slides' and notes' text translated into `to` and all else kept."""
    return translate_package(PPTX, translator, document, to, options, **settings)
