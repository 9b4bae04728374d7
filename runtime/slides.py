"""PowerPoint presentations in, presentations out (`mt-translate --pptx`, `Translator.translate_pptx`).

The paragraphs (a:p, drawingml.py) of the slides' text boxes, shapes, placeholders, tables, charts
and SmartArt, of the speaker notes and of the comments (a:p in PowerPoint 365's, plain text in
earlier ones'), are translated as office.py says. Slide masters and layouts keep their text (the
prompts of empty placeholders), but their language marks, like those of the runs, follow the
translation.
"""

from __future__ import annotations

from .drawingml import DRAWINGS, DrawingParagraph, PictureDescription
from .office import ElementText, Format, translate_package

PML = "application/vnd.openxmlformats-officedocument.presentationml."
MACROS = "application/vnd.ms-powerpoint."      # .pptm and .potm
MAIN = frozenset({PML + "presentation.main+xml", PML + "slideshow.main+xml", PML + "template.main+xml",
                  MACROS + "presentation.macroEnabled.main+xml", MACROS + "slideshow.macroEnabled.main+xml",
                  MACROS + "template.macroEnabled.main+xml"})


class CommentText(ElementText):
    """An earlier PowerPoint's comment: the plain text of a p:text."""

    TAGS = ("{http://schemas.openxmlformats.org/presentationml/2006/main}text",)


PPTX = Format(
    name="a PowerPoint presentation", suffix=".pptx", old="PowerPoint .ppt", main=MAIN,
    parts={**dict.fromkeys({PML + "slide+xml", PML + "notesSlide+xml"}, (DrawingParagraph, PictureDescription)),
           PML + "comments+xml": (CommentText,), MACROS + "comments+xml": (DrawingParagraph,), **DRAWINGS},
    styles=dict.fromkeys({*MAIN, PML + "slideMaster+xml", PML + "slideLayout+xml", PML + "notesMaster+xml"},
                         DrawingParagraph))


def translate_pptx(translator, document: bytes, to=None, options=None, **settings) -> bytes:
    """`document`, a .pptx file's bytes, with its slides' and notes' text translated into `to` and all else kept."""
    return translate_package(PPTX, translator, document, to, options, **settings)
