"""Raw cell values from an ``.xlsx`` package, the way OSWorld's ``read_cell_value`` reads them.

openpyxl converts values (integers, dates) and hides the cached results of formulas unless
the whole book is reopened with ``data_only=True``. OSWorld's table checks compare the values
stored in the sheet XML instead, converted the way ``xmltodict`` hands them to its code:

* a number (type ``n`` or no type) → ``float``;
* a shared string (``s``) → its text, runs joined (not stripped);
* a formula's string result (``str``) or an error (``e``) → the stored text with its ends
  stripped (``None`` when that leaves nothing);
* an inline string (``inlineStr``, which openpyxl writes) → the stripped text of its ``<t>``;
  when the ``<t>`` carries attributes (``xml:space="preserve"``, written for text with
  spaces at its ends) the whole mapping OSWorld receives, e.g.
  ``{'@http://www.w3.org/XML/1998/namespace:space': 'preserve', '#text': 'a'}``; rich text
  (runs, no ``<t>`` of its own) → ``None``;
* booleans, dates stored as ISO text, a missing ``<v>`` and absent cells → ``None``.

Sheets are found as OSWorld finds them: the part ``xl/worksheets/sheet<sheetId>.xml``, so a
sheet whose part is numbered otherwise (a book saved by Excel after deleting a sheet) reads
as absent. Cells are found by their exact ``r`` coordinate. Each sheet is parsed once per
reader; a reader belongs to one metric call (no global cache).
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

logger = logging.getLogger(__name__)

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def _stripped(text: str | None) -> str | None:
    """Element text as xmltodict gives it: ends stripped, nothing left is ``None``."""
    text = (text or "").strip()
    return text or None


def _attribute_key(name: str) -> str:
    """An attribute's key in xmltodict's mapping (namespaces spelled out as ``uri:name``)."""
    if name.startswith("{"):
        uri, local = name[1:].split("}", 1)
        return f"@{local}" if uri == _MAIN[1:-1] else f"@{uri}:{local}"
    return f"@{name}"


def _xmltodict_leaf(element: ElementTree.Element) -> Any:
    """A text element as xmltodict converts it.

    Its stripped text, or, when it has attributes, a mapping of them (``@`` keys) with the
    text under ``#text`` when there is any.
    """
    if not element.attrib:
        return _stripped(element.text)
    value: dict[str, Any] = {_attribute_key(k): v for k, v in element.attrib.items()}
    text = _stripped(element.text)
    if text is not None:
        value["#text"] = text
    return value


def _inline_string(cell: ElementTree.Element) -> Any:
    """What OSWorld reads from an inline-string cell's ``<is><t>`` (``None`` when absent)."""
    inline = cell.find(f"{_MAIN}is")
    if inline is None:
        return None
    texts = inline.findall(f"{_MAIN}t")
    if not texts:
        return None
    values = [_xmltodict_leaf(t) for t in texts]
    return values[0] if len(values) == 1 else values


class RawXlsxReader:
    """Reads stored cell values of one workbook file.

    Args:
        path: The ``.xlsx`` file.

    Attributes:
        path: The workbook file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._shared: list[str] | None = None
        self._sheet_parts: dict[str, str] | None = None
        self._cells: dict[str, dict[str, ElementTree.Element]] = {}

    def _read(self, member: str) -> ElementTree.Element:
        with zipfile.ZipFile(self.path) as zf:
            return ElementTree.fromstring(zf.read(member))

    def _shared_strings(self) -> list[str]:
        """Each shared string's ``<t>`` texts joined (rich-text runs, not stripped).

        OSWorld falls back to no shared strings at all when the part is missing or does not
        parse, or when a ``<t>`` is empty (its join fails on it).
        """
        if self._shared is None:
            try:
                items = self._read("xl/sharedStrings.xml").findall(f"{_MAIN}si")
            except (KeyError, ElementTree.ParseError):
                items = []
            texts = [[t.text for t in si.iter(f"{_MAIN}t")] for si in items]
            empty_t = any(None in parts for parts in texts)
            self._shared = [] if empty_t else ["".join(t or "" for t in parts) for parts in texts]
        return self._shared

    def sheet_parts(self) -> dict[str, str]:
        """Sheet name → zip member of its worksheet XML, named after the ``sheetId``."""
        if self._sheet_parts is None:
            workbook = self._read("xl/workbook.xml")
            sheets = workbook.findall(f"{_MAIN}sheets/{_MAIN}sheet")
            self._sheet_parts = {
                sheet.get("name", ""): f"xl/worksheets/sheet{sheet.get('sheetId')}.xml"
                for sheet in sheets
            }
        return self._sheet_parts

    def _sheet_cells(self, sheet_name: str) -> dict[str, ElementTree.Element]:
        if sheet_name not in self._cells:
            root = self._read(self.sheet_parts()[sheet_name])
            cells: dict[str, ElementTree.Element] = {}
            for row in root.iter(f"{_MAIN}row"):
                for cell in row.findall(f"{_MAIN}c"):
                    cells.setdefault(cell.get("r", ""), cell)  # the first one, as OSWorld
            self._cells[sheet_name] = cells
        return self._cells[sheet_name]

    def value(self, sheet_name: str, coordinate: str) -> Any:
        """The stored value of one cell (see the module docstring); ``None`` when absent.

        A missing file, sheet or unreadable package also gives ``None``, as in OSWorld.

        Raises:
            IndexError: a shared-string index past the book's shared strings.
            TypeError: a number or shared-string cell with an empty ``<v>``.
            (OSWorld's reader raises both there; callers score such a book 0.)
        """
        if not self.path.is_file():
            return None
        try:
            cell = self._sheet_cells(sheet_name).get(coordinate)
        except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError) as e:
            logger.info("cannot read %s!%s from %s: %s", sheet_name, coordinate, self.path, e)
            return None
        if cell is None:
            return None
        return self._convert(cell)

    def _convert(self, cell: ElementTree.Element) -> Any:
        kind = cell.get("t", "n")
        v = cell.find(f"{_MAIN}v")
        if kind == "inlineStr":
            return _inline_string(cell)
        if kind not in ("n", "s", "str", "e") or v is None:
            return None
        text = _stripped(v.text)
        if kind in ("str", "e"):
            return text
        if text is None:  # OSWorld converts the missing text to a number and fails there
            raise TypeError(f"cell {cell.get('r')}: empty <v>")
        try:
            number = int(text) if kind == "s" else float(text)
        except ValueError:
            return None
        return self._shared_strings()[number] if kind == "s" else number


_X14 = "{http://schemas.microsoft.com/office/spreadsheetml/2009/9/main}"
_XM = "{http://schemas.microsoft.com/office/excel/2006/main}"


def sparklines(path: str | Path, sheet_name: str) -> dict[Any, Any]:
    """A sheet's sparklines as ``{cells (xm:sqref): data range (xm:f)}``, as OSWorld reads them.

    The sheet is found by its ``sheetId`` part (as ``RawXlsxReader`` does); each
    ``x14:sparkline`` gives its ``xm:sqref`` and ``xm:f`` texts converted the way ``xmltodict``
    hands them over (stripped, ``None`` when empty).

    Raises:
        zipfile.BadZipFile: Not a zip package (OSWorld reads no sparklines then).
        KeyError: No sheet of that name, no part for it, or a sparkline without ``xm:f`` or
            ``xm:sqref`` (OSWorld raises there too).
    """
    with zipfile.ZipFile(path) as archive:
        workbook = ElementTree.fromstring(archive.read("xl/workbook.xml"))
        ids = {
            sheet.get("name"): sheet.get("sheetId")
            for sheet in workbook.findall(f"{_MAIN}sheets/{_MAIN}sheet")
        }
        sheet = ElementTree.fromstring(archive.read(f"xl/worksheets/sheet{ids[sheet_name]}.xml"))
    found: dict[Any, Any] = {}
    for sparkline in sheet.iter(f"{_X14}sparkline"):
        parts = {child.tag: child for child in sparkline}
        found[_xmltodict_leaf(parts[f"{_XM}sqref"])] = _xmltodict_leaf(parts[f"{_XM}f"])
    return found
