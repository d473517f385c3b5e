"""Raw cell values from an ``.xlsx`` package, the way OSWorld's ``read_cell_value`` reads them.

openpyxl converts values (integers, dates) and hides the cached results of formulas unless
the whole book is reopened with ``data_only=True``. OSWorld's table checks compare the values
stored in the sheet XML instead, so this reader does too:

* a number (type ``n`` or no type) → ``float``;
* a shared string (``s``), a formula's string result (``str``), an inline string, an error
  (``e``) → ``str``;
* booleans, dates stored as ISO text, and absent cells → ``None``.

Each sheet is parsed once per reader; a reader belongs to one metric call (no global cache).
"""

from __future__ import annotations

import logging
import posixpath
import re
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

logger = logging.getLogger(__name__)

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_COORDINATE = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d+)$")


def normalise_coordinate(coordinate: str) -> str:
    """``"$b$3"`` → ``"B3"``: the form cells carry in the sheet XML.

    Example:
        >>> normalise_coordinate("$b$3")
        'B3'
    """
    match = _COORDINATE.match(coordinate.strip())
    if match is None:
        raise ValueError(f"not a cell coordinate: {coordinate!r}")
    return f"{match.group(1).upper()}{match.group(2)}"


def _text_of(element: ElementTree.Element) -> str:
    """All ``<t>`` text under an element (rich-text runs concatenated)."""
    return "".join(t.text or "" for t in element.iter(f"{_MAIN}t"))


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
        if self._shared is None:
            try:
                root = self._read("xl/sharedStrings.xml")
            except KeyError:
                root = None
            items = [] if root is None else root.findall(f"{_MAIN}si")
            self._shared = [_text_of(si) for si in items]
        return self._shared

    def sheet_parts(self) -> dict[str, str]:
        """Sheet name → zip member of its worksheet XML (through the workbook's relations)."""
        if self._sheet_parts is None:
            workbook = self._read("xl/workbook.xml")
            try:
                rels = self._read("xl/_rels/workbook.xml.rels")
                targets = {r.get("Id"): r.get("Target", "") for r in rels.iter(_PKG_REL)}
            except KeyError:
                targets = {}
            parts: dict[str, str] = {}
            for sheet in workbook.iter(f"{_MAIN}sheet"):
                target = targets.get(sheet.get(_REL_ID), "")
                if target.startswith("/"):
                    member = target.lstrip("/")
                elif target:
                    member = posixpath.normpath(posixpath.join("xl", target))
                else:  # OSWorld's assumption when a book has no relations part
                    member = f"xl/worksheets/sheet{sheet.get('sheetId')}.xml"
                parts[sheet.get("name", "")] = member
            self._sheet_parts = parts
        return self._sheet_parts

    def _sheet_cells(self, sheet_name: str) -> dict[str, ElementTree.Element]:
        if sheet_name not in self._cells:
            root = self._read(self.sheet_parts()[sheet_name])
            self._cells[sheet_name] = {c.get("r", ""): c for c in root.iter(f"{_MAIN}c")}
        return self._cells[sheet_name]

    def value(self, sheet_name: str, coordinate: str) -> Any:
        """The stored value of one cell (see the module docstring); ``None`` when absent.

        A missing file, sheet or unreadable package also gives ``None``, as in OSWorld.
        """
        try:
            cell = self._sheet_cells(sheet_name).get(normalise_coordinate(coordinate))
        except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError) as e:
            logger.info("cannot read %s!%s from %s: %s", sheet_name, coordinate, self.path, e)
            return None
        if cell is None:
            return None
        kind = cell.get("t", "n")
        v = cell.find(f"{_MAIN}v")
        try:
            if kind == "n":
                return float(v.text) if v is not None and v.text is not None else None
            if kind == "s":
                return self._shared_strings()[int(v.text)] if v is not None else None
            if kind in ("str", "e"):
                return v.text if v is not None else None
            if kind == "inlineStr":
                inline = cell.find(f"{_MAIN}is")
                return _text_of(inline) if inline is not None else None
        except (ValueError, IndexError, TypeError):
            return None
        return None
