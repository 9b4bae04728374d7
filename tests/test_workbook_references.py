"""A workbook's tables, formulas, filters and drop-down lists follow its cells' translation
(runtime/workbook_references.py): Excel drops a table whose column names differ from its header
cells, and a formula comparing a cell with its old text would compute something else."""

from __future__ import annotations

import io
import zipfile

from lxml import etree
from office_files import SML, S, zipped

from conftest import ENGLISH, GERMAN
from mtkit.runtime.workbook_references import ListChoices, formula, rename_columns

REL = "http://schemas.openxmlformats.org/package/2006/relationships"
HEADERS = [GERMAN[6], GERMAN[18]]                 # "Tom schrie.", "Es ist Frühling."
VALUE = GERMAN[16]                                # "Bananen sind lecker."


def workbook() -> bytes:
    """Sheet1 holds a table (A1:B2) whose header cells are shared strings, a data row, formulas that
    compare with a cell's text and name the table's columns, a filter, a drop-down list and a rule."""
    shared = [*HEADERS, VALUE]
    cells = (
        '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>'
        '<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>3</v></c>'
        f'<c r="C2"><f>COUNTIF(A:A,"{VALUE.lower()}")</f><v>1</v></c>'
        f'<c r="D2"><f>SUM(Tabelle1[{HEADERS[1]}])+[@[{HEADERS[0]}]]</f><v>3</v></c>'
        f'<c r="E2" t="str"><f>IF(B2&gt;2,A2,"nichts")</f><v>{VALUE}</v></c>'
        f'<c r="F2" t="str"><f>"Kein ""{VALUE}"""</f><v>Kein</v></c></row>')
    sheet = (f'<worksheet xmlns="{S}"><sheetData>{cells}</sheetData>'
             f'<autoFilter ref="A1:B2"><filterColumn colId="0"><filters><filter val="{VALUE}"/></filters>'
             '</filterColumn></autoFilter>'
             f'<conditionalFormatting sqref="A2"><cfRule type="containsText" text="{VALUE}" priority="1">'
             f'<formula>NOT(ISERROR(SEARCH("{VALUE}",A2)))</formula></cfRule></conditionalFormatting>'
             '<dataValidations count="1"><dataValidation type="list" sqref="A3">'
             f'<formula1>"{VALUE.lower()},{GERMAN[23]}"</formula1></dataValidation></dataValidations>'
             '<tableParts count="1"><tablePart r:id="rId1" '
             'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"/></tableParts>'
             '</worksheet>')
    table = (f'<table xmlns="{S}" id="1" name="Tabelle1" displayName="Tabelle1" ref="A1:B2">'
             '<autoFilter ref="A1:B2"/><tableColumns count="2">'
             f'<tableColumn id="1" name="{HEADERS[0]}"/>'
             f'<tableColumn id="2" name="{HEADERS[1]}"><calculatedColumnFormula>[@[{HEADERS[1]}]]*2'
             '</calculatedColumnFormula></tableColumn></tableColumns></table>')
    book = (f'<workbook xmlns="{S}"><sheets><sheet name="Tabelle1" sheetId="1"/></sheets><definedNames>'
            f'<definedName name="Summe">SUM(Tabelle1[{HEADERS[1]}])</definedName></definedNames></workbook>')
    types = [("/xl/workbook.xml", f"{SML}.sheet.main+xml"), ("/xl/sharedStrings.xml", f"{SML}.sharedStrings+xml"),
             ("/xl/worksheets/sheet1.xml", f"{SML}.worksheet+xml"), ("/xl/tables/table1.xml", f"{SML}.table+xml")]
    return zipped({
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                               + "".join(f'<Override PartName="{n}" ContentType="{t}"/>' for n, t in types) + "</Types>",
        "xl/workbook.xml": book,
        "xl/sharedStrings.xml": f'<sst xmlns="{S}">' + "".join(f"<si><t>{t}</t></si>" for t in shared) + "</sst>",
        "xl/worksheets/sheet1.xml": sheet,
        "xl/worksheets/_rels/sheet1.xml.rels": f'<Relationships xmlns="{REL}"><Relationship Id="rId1" '
                                               'Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                                               'relationships/table" Target="../tables/table1.xml"/></Relationships>',
        "xl/tables/table1.xml": table,
    })


def parts(document: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        return {name: etree.fromstring(z.read(name)) for name in z.namelist() if name.endswith(".xml")}


def texts(tree, tag: str) -> list[str]:
    return [e.text for e in tree.iter(f"{{{S}}}{tag}")]


def test_tables_formulas_filters_and_lists_follow_the_cells(fixture_translator):
    out = parts(fixture_translator.translate_xlsx(workbook(), "en", from_lang="de", beam_size=1))
    sheet, table = out["xl/worksheets/sheet1.xml"], out["xl/tables/table1.xml"]
    tom, spring, bananas = ENGLISH[6], ENGLISH[18], ENGLISH[16]      # "It's spring." has a quote
    assert [c.get("name") for c in table.iter(f"{{{S}}}tableColumn")] == [tom, spring]   # = the header cells
    assert texts(sheet, "f") == [f'COUNTIF(A:A,"{bananas}")',
                                 f"SUM(Tabelle1[{spring.replace(chr(39), 2 * chr(39))}])+[@[{tom}]]",
                                 'IF(B2>2,A2,"nichts")', f'"Kein ""{VALUE}"""']
    assert texts(sheet, "v")[-2:] == [bananas, "Kein"]             # a cached text result that is a cell's
    assert texts(table, "calculatedColumnFormula") == ["[@[It''s spring.]]*2"]
    assert texts(out["xl/workbook.xml"], "definedName") == ["SUM(Tabelle1[It''s spring.])"]
    assert next(sheet.iter(f"{{{S}}}filter")).get("val") == bananas
    assert next(sheet.iter(f"{{{S}}}cfRule")).get("text") == bananas
    assert texts(sheet, "formula") == [f'NOT(ISERROR(SEARCH("{bananas}",A2)))']
    assert texts(sheet, "formula1") == [f'"{bananas},{ENGLISH[23]}"']     # an item no cell holds is translated


def test_a_workbook_without_tables_or_references_keeps_them_byte_for_byte(fixture_translator):
    from office_files import xlsx

    source = xlsx([f"<t>{GERMAN[0]}</t>"], '<c r="A1" t="s"><v>0</v></c><c r="B1"><f>SUM(1,2)</f><v>3</v></c>')
    out = fixture_translator.translate_xlsx(source, "en", from_lang="de", beam_size=1)
    with zipfile.ZipFile(io.BytesIO(source)) as a, zipfile.ZipFile(io.BytesIO(out)) as b:
        assert a.read("xl/workbook.xml") == b.read("xl/workbook.xml")
        assert parts(out)["xl/worksheets/sheet1.xml"].findtext(f".//{{{S}}}f") == "SUM(1,2)"


def test_column_names_that_translate_alike_are_made_unique_and_their_cells_follow():
    """Excel requires a table's column names to differ (without regard to case)."""
    strings = etree.fromstring(f'<sst xmlns="{S}"><si><t>Total</t></si><si><t>total</t></si></sst>')
    sheet = etree.fromstring(f'<worksheet xmlns="{S}"><sheetData><row r="3"><c r="C3" t="s"><v>0</v></c>'
                             '<c r="D3" t="s"><v>1</v></c><c r="E3"><v>7</v></c></row></sheetData></worksheet>')
    table = etree.fromstring(f'<table xmlns="{S}" ref="C3:E9"><tableColumns><tableColumn name="Summe"/>'
                             '<tableColumn name="Gesamt"/><tableColumn name="7"/></tableColumns></table>')
    columns = {}
    assert rename_columns(table, sheet, list(strings), columns)
    assert [c.get("name") for c in table.iter(f"{{{S}}}tableColumn")] == ["Total", "total 2", "7"]
    assert columns == {"summe": "Total", "gesamt": "total 2"}
    d3 = sheet.find(f".//{{{S}}}c[@r='D3']")
    assert d3.get("t") == "inlineStr" and d3.findtext(f".//{{{S}}}t") == "total 2"     # its shared string kept
    assert strings[1].findtext(f"{{{S}}}t") == "total"


def test_structured_references_keep_their_escapes_and_leave_literals_and_specials_alone():
    columns = {"preis [€]": "Price [€]", "#": "No.", "menge": "Quantity"}
    texts = {"menge": "quantity"}
    assert formula("Tab[[#This Row],[Preis '[€']]]*[@Menge]&\"[Menge]\"&'Blatt 1'!A1", texts, columns) == \
        "Tab[[#This Row],[Price '[€']]]*[@Quantity]&\"[Menge]\"&'Blatt 1'!A1"
    assert formula("SUM(Tab['#])+[1]Blatt!A1", texts, columns) == "SUM(Tab[No.])+[1]Blatt!A1"


def test_a_lists_items_take_their_cells_translation_and_a_list_too_long_for_excel_stays():
    sheet = etree.fromstring(f'<dataValidations xmlns="{S}"><dataValidation type="list"><formula1>"Ja,Nein"'
                             '</formula1></dataValidation><dataValidation type="list"><formula1>$A$1:$A$3'
                             '</formula1></dataValidation></dataValidations>')
    literal, reference = (ListChoices(e) for e in sheet.iter(f"{{{S}}}formula1"))
    assert (literal.sources, literal.text, reference.has_words) == (["Ja", "Nein"], "JaNein", False)
    literal.rewrite("Yes<br class=\"o1\">No, never", "en-US")
    literal.follow({"ja": "Yes!"})
    assert literal.element.text == '"Yes!,No never"'                # a comma would part the item
    literal.rewrite("Yes<br class=\"o1\">" + "x" * 255, "en-US")
    literal.follow({})
    assert literal.element.text == '"Yes!,No never"'


def test_a_bare_column_after_a_special_item_is_renamed_too():
    """XlsxWriter writes [@Stunden] as [[#This Row],Stunden], which Excel reads."""
    assert formula("[[#This Row],Stunden]*2+Tab[[#Totals],[Stunden]]", {}, {"stunden": "Hours"}) == \
        "[[#This Row],Hours]*2+Tab[[#Totals],[Hours]]"


def test_a_pivot_tables_cache_names_the_cells_as_they_now_read(fixture_translator):
    """Its fields are the source's header cells and its items their values: as it was, a refresh met
    fields it did not know."""
    pivot = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    with zipfile.ZipFile(io.BytesIO(workbook())) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    entries["[Content_Types].xml"] = entries["[Content_Types].xml"].replace(b"</Types>", (
        f'<Override PartName="/xl/pivotCache/pivotCacheDefinition1.xml" ContentType="{pivot}.pivotCacheDefinition+xml"/>'
        f'<Override PartName="/xl/pivotTables/pivotTable1.xml" ContentType="{pivot}.pivotTable+xml"/></Types>').encode())
    entries["xl/pivotCache/pivotCacheDefinition1.xml"] = (
        f'<pivotCacheDefinition xmlns="{S}"><cacheFields><cacheField name="{HEADERS[0]}"><sharedItems>'
        f'<s v="{VALUE}"/><s v="Nein"/></sharedItems></cacheField></cacheFields></pivotCacheDefinition>').encode()
    entries["xl/pivotTables/pivotTable1.xml"] = (
        f'<pivotTableDefinition xmlns="{S}" name="Pivot1" dataCaption="Werte"><dataFields>'
        f'<dataField name="{HEADERS[1]}" fld="0"/></dataFields></pivotTableDefinition>').encode()
    out = parts(fixture_translator.translate_xlsx(zipped(entries), "en", from_lang="de", beam_size=1))
    cache, table = out["xl/pivotCache/pivotCacheDefinition1.xml"], out["xl/pivotTables/pivotTable1.xml"]
    assert next(cache.iter(f"{{{S}}}cacheField")).get("name") == ENGLISH[6]
    assert [s.get("v") for s in cache.iter(f"{{{S}}}s")] == [ENGLISH[16], "Nein"]      # "Nein": no cell's text
    assert next(table.iter(f"{{{S}}}dataField")).get("name") == ENGLISH[18]
    assert table.get("dataCaption") == "Werte"
