"""DrawingML's paragraphs (a:p): the text of PowerPoint's slides, and of the charts, SmartArt and
shapes that Word, PowerPoint and Excel files all draw with (office.py); and a chart's labels.

A link is part of a run's properties, so it follows its words as any formatting does; a field (the
slide number, a date) is kept whole; a line break (a:br) ends a sentence; a tab, written as a
character, becomes a run of its own; the spell-checker's mark of a word it flagged goes. The language
marks (lang="de-DE") follow the translation.

A chart's series names and category labels are the text values of its string caches (c:pt), which it
shows as they are: each is translated as a paragraph of plain text.
"""

from __future__ import annotations

import copy
import re

from .office import AttributeText, ElementText, Paragraph, other_language

A = "http://schemas.openxmlformats.org/drawingml/2006/main"
C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
DML = "application/vnd.openxmlformats-officedocument.drawingml."


def a(tag: str) -> str:
    return f"{{{A}}}{tag}"


def c(tag: str) -> str:
    return f"{{{C}}}{tag}"


LABELLED = (a("rPr"), a("endParaRPr"), a("defRPr"))     # where a language mark (lang="de-DE") sits
# A file's name or path, which some tools write as a picture's description: "logo.gif", "D:\\My Pictures\\a.png"
FILE_NAME = re.compile(r"^(?:\S+|[A-Za-z]:\\.*|/.*|\w+://.*)\.[A-Za-z0-9]{2,5}$")


class DrawingParagraph(Paragraph):
    """An a:p."""

    TAGS = (a("p"),)
    FIRST, LAST = (a("pPr"),), (a("endParaRPr"),)

    def read(self, child, link) -> None:
        if child.tag == a("r") and child.find(a("t")) is not None:
            self.add_characters(child.find(a("t")).text or "", child.find(a("rPr")), link, a("t"), {"\t": "tab"})
        else:                       # a:br, a:fld (the slide number, a date), a formula
            if child.tag == a("fld") and child.get("type") == "slidenum":
                self.numbers[len(self.items)] = child.findtext(a("t")) or ""     # shown to the model
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


class ChartValue(ElementText):
    """A point's value in a chart's string cache (c:v of a c:pt): a series' name or a category's label.
    Points of number caches are numbers, and are not read."""

    TAGS = (c("v"),)
    TEXT_CACHES = {c("strCache"), c("strLit"), c("lvl")}          # c:lvl: a level of multi-level categories

    def read_text(self, element) -> str:
        point = element.getparent()
        in_text = point.tag == c("pt") and point.getparent() is not None and point.getparent().tag in self.TEXT_CACHES
        return super().read_text(element) if in_text else ""


class PictureDescription(AttributeText):
    """A picture's or shape's description for those who cannot see it (its alt text: descr), in Word
    (wp:docPr), PowerPoint (p:cNvPr), Excel (xdr:cNvPr) and in the picture itself (pic:cNvPr)."""

    TAGS = tuple(f"{{http://schemas.openxmlformats.org/{namespace}}}{tag}" for namespace, tag in (
        ("drawingml/2006/wordprocessingDrawing", "docPr"), ("presentationml/2006/main", "cNvPr"),
        ("drawingml/2006/spreadsheetDrawing", "cNvPr"), ("drawingml/2006/picture", "cNvPr")))
    ATTRIBUTE = "descr"

    def read_attribute(self, element) -> str:
        description = super().read_attribute(element)
        return "" if FILE_NAME.match(description) else description         # what some tools write there


# Parts of DrawingML text in any Office file, and the classes that read them: charts' titles and labels,
# SmartArt's data and its drawn copy.
DRAWINGS = {DML + "chart+xml": (DrawingParagraph, ChartValue), DML + "diagramData+xml": (DrawingParagraph,),
            "application/vnd.ms-office.drawingml.diagramDrawing+xml": (DrawingParagraph,)}
