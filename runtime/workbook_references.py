"""What in a workbook names a cell's text, made to follow the cells' translation (sheets.py).

An Excel table's column names must equal its header cells (Excel "repairs" a workbook where they
differ, dropping the table), so each column takes its header cell's translation, made unique in its
table. Formulas name columns in structured references (`Sales[Total]`, `[@Total]`), and compare
cells with text (`=IF(A1="Ja"; ...)`, `COUNTIF(B:B; "offen")`), as do filters, drop-down lists,
conditional formats and pivot tables' caches: a column's new name and any text that is a cell's whole text take their
translation, so the workbook computes what it computed before. Other text in formulas stays.
"""

from __future__ import annotations

import posixpath
import re

from .office import PlainTexts, parse_part

S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
SML = "application/vnd.openxmlformats-officedocument.spreadsheetml."       # its parts' content types
TABLE, SHARED_STRINGS = SML + "table+xml", SML + "sharedStrings+xml"
RELATIONSHIPS = "http://schemas.openxmlformats.org/package/2006/relationships"
STRING = re.compile(r'"((?:[^"]|"")*)"')               # a formula's text literal; "" is a quote
COLUMN = re.compile(r"(\[@?)((?:'.|[^\[\]'])+)(\])")  # an innermost [Column] or [@Column]; ' escapes [ ] # '
BARE_COLUMN = re.compile(r"(\[#[A-Za-z ]+\],\s*)((?:'.|[^\[\]',])+)(\])")     # [#This Row],Column]
ESCAPED = re.compile(r"'(.)")
SPECIAL = re.compile(r"([\[\]#'])")                   # escaped by ' in a structured reference
MAX_LIST = 255                                          # characters Excel allows a drop-down list's literal
CELL = re.compile(r"\$?([A-Z]+)\$?(\d+)")
TEXT_ATTRIBUTES = (("filter", "val"), ("customFilter", "val"), ("cfRule", "text"), ("tableColumn", "totalsRowLabel"),
                   # a pivot table's cache (its fields are the source's header cells, its items their values)
                   # and its own captions, which its cells show
                   ("cacheField", "name"), ("s", "v"), ("dataField", "name"), ("pivotField", "name"), ("item", "n"),
                   ("pivotTableDefinition", "dataCaption"), ("pivotTableDefinition", "rowHeaderCaption"),
                   ("pivotTableDefinition", "colHeaderCaption"))
PIVOTS = {f"{SML}{kind}+xml" for kind in ("pivotCacheDefinition", "pivotCacheRecords", "pivotTable")}
FORMULAS = ("f", "formula", "formula1", "formula2", "calculatedColumnFormula", "totalsRowFormula")


def s(tag: str) -> str:
    return f"{{{S}}}{tag}"


def cell_value(element) -> str:
    """The text of an si, is or comment text, as Excel compares it: its t, or its runs' t in order."""
    return "".join(child.text or "" if child.tag == s("t") else child.findtext(s("t")) or ""
                   for child in element if child.tag in (s("t"), s("r")))


class ListChoices(PlainTexts):
    """A drop-down list's own items (`"Ja,Nein"`), each a sentence. An item that is also a cell's text
    takes that cell's translation (follow_translation, which writes them once the cells are done)."""

    TAGS = (f"{{{S}}}formula1",)

    def __init__(self, element):
        literal = STRING.fullmatch(element.text or "") if element.getparent().get("type") == "list" else None
        super().__init__(element, literal.group(1).replace('""', '"').split(",") if literal else [])
        self.translations = None

    def write(self, translations: list[str]) -> None:
        self.translations = translations

    def follow(self, texts: dict) -> None:
        """The items written back, unless that would pass Excel's limit."""
        if self.translations is None:
            return
        items = ",".join(re.sub(r"\s*,\s*", " ", texts.get(source.casefold(), new))     # a comma parts items
                         for source, new in zip(self.sources, self.translations))
        if len(items) <= MAX_LIST:
            self.element.text = '"' + items.replace('"', '""') + '"'


def follow_translation(entries: dict, types: dict, trees: dict, paragraphs: list) -> set[str]:
    """The parts changed so that tables, formulas, filters and lists name the cells' translated text."""
    texts = {}
    for p in paragraphs:
        if p.has_words and p.element.tag in (s("si"), s("is")):
            texts.setdefault(p.value.casefold(), cell_value(p.element))   # Excel compares text without case
    for p in paragraphs:
        if isinstance(p, ListChoices):          # its sheet has words, so it is written anyway
            p.follow(texts)
    if not texts:
        return set()                            # no cell was translated: nothing else names a new text
    tables = [name for name in entries if types.get(name) == TABLE]
    others = [n for n in entries if n not in trees and (types.get(n) in PIVOTS or types.get(n, "").endswith(".main+xml"))]
    for name in tables + others:
        trees[name] = parse_part(name, entries[name])
    columns, changed, strings, sheets = {}, set(), shared_strings(types, trees), owners(entries, trees)
    for name in tables:
        if name in sheets and rename_columns(trees[name], trees[sheets[name]], strings, columns):
            changed |= {name, sheets[name]}
    for name, tree in trees.items():
        if follow(tree, texts, columns):
            changed.add(name)
    return changed


def shared_strings(types: dict, trees: dict) -> list:
    return next((list(tree.iter(s("si"))) for name, tree in trees.items() if types.get(name) == SHARED_STRINGS), [])


def owners(entries: dict, trees: dict) -> dict[str, str]:
    """Each table part's name -> the name of the sheet whose relationships point at it."""
    found = {}
    for sheet in trees:
        folder, _, base = sheet.rpartition("/")
        if (rels := f"{folder}/_rels/{base}.rels") in entries:
            for relation in parse_part(rels, entries[rels]).iter(f"{{{RELATIONSHIPS}}}Relationship"):
                if relation.get("Type", "").endswith("/table"):
                    found[posixpath.normpath(posixpath.join(folder, relation.get("Target", "")))] = sheet
    return found


def rename_columns(table, sheet, strings: list, columns: dict) -> bool:
    """Each column named as its header cell now reads, unique in the table (" 2" added if not), the
    cell rewritten where that changed its text; `columns` maps each old name (casefolded) to the new."""
    if table.get("headerRowCount", "1") == "0" or not (found := CELL.match(table.get("ref", ""))):
        return False
    first, row = column_number(found.group(1)), found.group(2)
    cells = {c.get("r"): c for c in sheet.iter(s("c"))}
    headers = [(column, cells.get(f"{column_letters(first + offset)}{row}"))
               for offset, column in enumerate(table.iter(s("tableColumn")))]
    headers = [(column, cell, header_text(cell, strings) if cell is not None else None) for column, cell in headers]
    taken = {column.get("name", "").casefold() for column, _, name in headers if not (name or "").strip()}
    renamed = False
    for column, cell, name in headers:
        if not (name or "").strip():
            continue                            # a number, or no cell: the name stays
        unique, number = name, 1
        while unique.casefold() in taken:
            number += 1
            unique = f"{name} {number}"
        taken.add(unique.casefold())
        if unique != name:
            write_inline(cell, unique)
        if unique != (old := column.get("name", "")):
            column.set("name", unique)
            columns.setdefault(old.casefold(), unique)
            renamed = True
    return renamed


def header_text(cell, strings: list) -> str | None:
    """A header cell's text, or None where it holds none (a number, a formula's result)."""
    if cell.get("t") == "s":
        index = cell.findtext(s("v"))
        return cell_value(strings[int(index)]) if index and index.isdigit() and int(index) < len(strings) else None
    if cell.get("t") == "inlineStr" and (inline := cell.find(s("is"))) is not None:
        return cell_value(inline)
    return None


def write_inline(cell, text: str) -> None:
    """`cell` made to hold `text` itself (not a shared string, which other cells may show)."""
    for child in list(cell):
        if child.tag in (s("v"), s("is"), s("f")):
            cell.remove(child)
    cell.set("t", "inlineStr")
    inline = cell.makeelement(s("is"), {})
    t = inline.makeelement(s("t"), {})
    t.text = text
    inline.append(t)
    cell.append(inline)


def follow(tree, texts: dict, columns: dict) -> bool:
    """Formulas, cached text results, filters, lists and rules in `tree` renamed; whether any changed."""
    changed = False
    for element in tree.iter(*(s(tag) for tag in FORMULAS), s("definedName")):
        if element.text and (text := formula(element.text, texts, columns)) != element.text:
            element.text, changed = text, True
    for cell in tree.iter(s("c")):
        value = cell.find(s("v"))
        if cell.get("t") == "str" and value is not None and (new := texts.get((value.text or "").casefold())):
            value.text, changed = new, True
    for tag, attribute in TEXT_ATTRIBUTES:
        for element in tree.iter(s(tag)):
            if (new := texts.get((element.get(attribute) or "").casefold())) is not None:
                element.set(attribute, new)
                changed = True
    return changed


def formula(text: str, texts: dict, columns: dict) -> str:
    """`text`, a formula, with its literals that are a cell's text translated and its structured
    references to renamed columns renamed."""
    out, start = [], 0
    for literal in STRING.finditer(text):
        out.append(references(text[start:literal.start()], columns))
        value = literal.group(1).replace('""', '"')
        out.append('"' + texts.get(value.casefold(), value).replace('"', '""') + '"')
        start = literal.end()
    out.append(references(text[start:], columns))
    return "".join(out)


def references(text: str, columns: dict) -> str:
    """Structured references to renamed columns renamed: `[Umsatz]` -> `[Sales]`, `[@Umsatz]` alike, and
    the bare name after a special item that some writers use (`[[#This Row],Umsatz]`)."""
    if not columns:
        return text

    def rename(match):
        name = ESCAPED.sub(r"\1", match.group(2))
        new = columns.get(name.strip().casefold())
        return match.group(0) if new is None else match.group(1) + SPECIAL.sub(r"'\1", new) + match.group(3)
    return BARE_COLUMN.sub(rename, COLUMN.sub(rename, text))


def column_number(letters: str) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - 64
    return number


def column_letters(number: int) -> str:
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters
