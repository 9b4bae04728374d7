"""Small Office files written by hand for the tests of runtime/word.py and runtime/slides.py: the parts
a .docx or a .pptx needs, with the text given as WordprocessingML or DrawingML."""

from __future__ import annotations

import io
import zipfile

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
NAMESPACES = (f'xmlns:w="{W}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
              'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
              'xmlns:w14="http://schemas.microsoft.com/office/word/2010/wordml" mc:Ignorable="w14"')
RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
TYPES = "application/vnd.openxmlformats-officedocument.wordprocessingml"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")


def docx(body: str, header: str | None = None, footnotes: str | None = None, lang: str = "de-DE") -> bytes:
    """A .docx whose document.xml body is `body` (paragraphs, tables), with a header and footnotes if given."""
    overrides = [("/word/document.xml", f"{TYPES}.document.main+xml"), ("/word/styles.xml", f"{TYPES}.styles+xml")]
    rels = [("rId1", "styles", "styles.xml"), ("rId2", "hyperlink", "https://example.org/")]
    parts = {"word/styles.xml": f'<w:styles {NAMESPACES}><w:docDefaults><w:rPrDefault><w:rPr><w:lang w:val="{lang}"/>'
                                f'</w:rPr></w:rPrDefault></w:docDefaults></w:styles>',
             "word/media/image1.png": PNG}
    section = ""
    if header is not None:
        overrides.append(("/word/header1.xml", f"{TYPES}.header+xml"))
        rels.append(("rId3", "header", "header1.xml"))
        parts["word/header1.xml"] = f"<w:hdr {NAMESPACES}>{header}</w:hdr>"
        section = '<w:sectPr><w:headerReference w:type="default" r:id="rId3"/></w:sectPr>'
    if footnotes is not None:
        overrides.append(("/word/footnotes.xml", f"{TYPES}.footnotes+xml"))
        rels.append(("rId4", "footnotes", "footnotes.xml"))
        parts["word/footnotes.xml"] = f"<w:footnotes {NAMESPACES}>{footnotes}</w:footnotes>"
    parts["word/document.xml"] = f"<w:document {NAMESPACES}><w:body>{body}{section}</w:body></w:document>"
    parts["word/_rels/document.xml.rels"] = (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' + "".join(
            f'<Relationship Id="{rid}" Type="{RELS}/{kind}" Target="{target}"'
            + (' TargetMode="External"' if kind == "hyperlink" else "") + "/>" for rid, kind, target in rels)
        + "</Relationships>")
    content_types = ('<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                     '<Default Extension="rels" '
                     'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                     '<Default Extension="xml" ContentType="application/xml"/>'
                     '<Default Extension="png" ContentType="image/png"/>'
                     + "".join(f'<Override PartName="{name}" ContentType="{kind}"/>' for name, kind in overrides)
                     + "</Types>")
    package = {"[Content_Types].xml": content_types,
               "_rels/.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                              f'<Relationship Id="rId1" Type="{RELS}/officeDocument" Target="word/document.xml"/>'
                              '</Relationships>', **parts}
    return zipped(package)


def zipped(entries: dict[str, str | bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return out.getvalue()


def paragraph(*runs: str, style: str | None = None) -> str:
    """A w:p of `runs` (each a w:r, w:hyperlink, ... as XML, or plain text for a run of its own)."""
    ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{ppr}{''.join(r if r.startswith('<') else run(r) for r in runs)}</w:p>"


def run(text: str, properties: str = "") -> str:
    rpr = f"<w:rPr>{properties}</w:rPr>" if properties else ""
    return f'<w:r>{rpr}<w:t xml:space="preserve">{text}</w:t></w:r>'


def texts(document: bytes, part: str = "word/document.xml") -> list[str]:
    """Each Word paragraph's text in `part`: its w:t, with a tab as "\\t"."""
    return paragraph_texts(document, part, W, {"tab": "\t"})


def paragraph_texts(document: bytes, part: str, namespace: str, marks: dict[str, str]) -> list[str]:
    """Each paragraph (p) of `namespace` in `part`: the text of its t elements, and for each element
    named in `marks` the character it stands for."""
    from lxml import etree

    with zipfile.ZipFile(io.BytesIO(document)) as z:
        tree = etree.fromstring(z.read(part))
    tags = [f"{{{namespace}}}t", *(f"{{{namespace}}}{name}" for name in marks)]
    return ["".join(t.text or "" if t.tag == tags[0] else marks[t.tag.split("}")[1]] for t in p.iter(*tags))
            for p in tree.iter(f"{{{namespace}}}p")]


A = "http://schemas.openxmlformats.org/drawingml/2006/main"
PML = "application/vnd.openxmlformats-officedocument.presentationml"
SLIDE_NAMESPACES = (f'xmlns:a="{A}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
                    'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"')


def pptx(*slides: str, notes: str | None = None, lang: str = "de-DE", extra: dict | None = None) -> bytes:
    """A .pptx whose slides hold the given shapes (p:sp, p:graphicFrame, ... as XML), notes for the first
    slide and `extra` parts ({name: (content type, XML)}) if given. Only what runtime/slides.py reads: no
    master, layout or theme."""
    overrides = [("/ppt/presentation.xml", f"{PML}.presentation.main+xml")]
    parts = {"ppt/presentation.xml": f'<p:presentation {SLIDE_NAMESPACES}><p:defaultTextStyle><a:lvl1pPr>'
                                     f'<a:defRPr lang="{lang}"/></a:lvl1pPr></p:defaultTextStyle></p:presentation>',
             "ppt/media/image1.png": PNG}
    for number, shapes in enumerate(slides, start=1):
        overrides.append((f"/ppt/slides/slide{number}.xml", f"{PML}.slide+xml"))
        parts[f"ppt/slides/slide{number}.xml"] = (f"<p:sld {SLIDE_NAMESPACES}><p:cSld><p:spTree>{shapes}</p:spTree>"
                                                  "</p:cSld></p:sld>")
    if notes is not None:
        overrides.append(("/ppt/notesSlides/notesSlide1.xml", f"{PML}.notesSlide+xml"))
        parts["ppt/notesSlides/notesSlide1.xml"] = (f"<p:notes {SLIDE_NAMESPACES}><p:cSld><p:spTree>{notes}"
                                                    "</p:spTree></p:cSld></p:notes>")
    for name, (kind, xml) in (extra or {}).items():
        overrides.append((f"/{name}", kind))
        parts[name] = xml
    content_types = ('<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                     '<Default Extension="xml" ContentType="application/xml"/>'
                     '<Default Extension="png" ContentType="image/png"/>'
                     + "".join(f'<Override PartName="{name}" ContentType="{kind}"/>' for name, kind in overrides)
                     + "</Types>")
    return zipped({"[Content_Types].xml": content_types, **parts})


def shape(*paragraphs: str) -> str:
    """A text box (p:sp) of DrawingML paragraphs."""
    return ('<p:sp><p:nvSpPr><p:cNvPr id="2" name="TextBox"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr/>'
            f'<p:txBody><a:bodyPr/><a:lstStyle/>{"".join(paragraphs)}</p:txBody></p:sp>')


def slide_paragraph(*runs: str, end: str = '<a:endParaRPr lang="de-DE"/>') -> str:
    """An a:p of `runs` (a:r, a:br, a:fld as XML, or plain text for a run of its own)."""
    return f"<a:p>{''.join(r if r.startswith('<') else slide_run(r) for r in runs)}{end}</a:p>"


def slide_run(text: str, properties: str = 'lang="de-DE"', inside: str = "") -> str:
    return f"<a:r><a:rPr {properties}>{inside}</a:rPr><a:t>{text}</a:t></a:r>"


def slide_texts(document: bytes, part: str = "ppt/slides/slide1.xml") -> list[str]:
    """Each DrawingML paragraph's text in `part`, a line break as "\\n"."""
    return paragraph_texts(document, part, A, {"br": "\n"})


S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
SML = "application/vnd.openxmlformats-officedocument.spreadsheetml"


def xlsx(shared: list[str], cells: str, comments: str | None = None, chart: str | None = None,
         plot: str = "") -> bytes:
    """A .xlsx with shared strings (each an si's content, as XML), one sheet of `cells` (c elements of
    one row), a comments part and a chart whose title is the DrawingML paragraph `chart`, if given,
    with `plot` (a c:plotArea) after it.
    Only what runtime/sheets.py reads: no styles or theme."""
    overrides = [("/xl/workbook.xml", f"{SML}.sheet.main+xml"), ("/xl/sharedStrings.xml", f"{SML}.sharedStrings+xml"),
                 ("/xl/worksheets/sheet1.xml", f"{SML}.worksheet+xml")]
    workbook = f'<workbook xmlns="{S}"><sheets><sheet name="Tabelle1" sheetId="1"/></sheets></workbook>'
    parts = {"xl/workbook.xml": workbook,
             "xl/sharedStrings.xml": f'<sst xmlns="{S}" count="{len(shared)}" uniqueCount="{len(shared)}">'
                                     + "".join(f"<si>{si}</si>" for si in shared) + "</sst>",
             "xl/worksheets/sheet1.xml": f'<worksheet xmlns="{S}"><sheetData><row r="1">{cells}</row></sheetData>'
                                         '</worksheet>'}
    if comments is not None:
        overrides.append(("/xl/comments1.xml", f"{SML}.comments+xml"))
        parts["xl/comments1.xml"] = (f'<comments xmlns="{S}"><authors><author>A</author></authors><commentList>'
                                     f'<comment ref="A1" authorId="0"><text>{comments}</text></comment>'
                                     '</commentList></comments>')
    if chart is not None:
        overrides.append(("/xl/charts/chart1.xml", "application/vnd.openxmlformats-officedocument.drawingml.chart+xml"))
        parts["xl/charts/chart1.xml"] = (
            '<c:chartSpace xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" '
            f'xmlns:a="{A}"><c:chart><c:title><c:tx><c:rich><a:bodyPr/>{chart}</c:rich></c:tx></c:title>'
            f'{plot}</c:chart></c:chartSpace>')
    content_types = ('<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                     '<Default Extension="xml" ContentType="application/xml"/>'
                     + "".join(f'<Override PartName="{name}" ContentType="{kind}"/>' for name, kind in overrides)
                     + "</Types>")
    return zipped({"[Content_Types].xml": content_types, **parts})


def cell_texts(document: bytes, part: str = "xl/sharedStrings.xml", tag: str = "si") -> list[str]:
    from lxml import etree

    with zipfile.ZipFile(io.BytesIO(document)) as z:
        tree = etree.fromstring(z.read(part))
    return ["".join(t.text or "" for t in si.iter(f"{{{S}}}t")) for si in tree.iter(f"{{{S}}}{tag}")]
