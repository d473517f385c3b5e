"""Spreadsheet metric ``compare_table`` with OSWorld's rule types.

``compare_table(result, expected, rules=[...])`` passes when every rule passes, checked in
order. Rules name sheets with OSWorld's sheet indices: an ``int`` (a sheet of the result by
position), ``"RI<n>"``/``"RN<name>"`` (result by position/name) and ``"EI<n>"``/``"EN<name>"``
(expected by position/name). Rule types:

* ``sheet_name`` — the two books have the same sheet names in the same order;
* ``sheet_data`` — pandas frames of two sheets are equal after rounding to ``precision`` (4)
  decimals (OSWorld ignores an ``ignore_case`` key here, and so does this);
* ``sheet_print`` — the CSV exports ``<book stem>-<sheet>.csv`` next to each book (written by
  the task's postconfig) have the same lines, trailing blank lines aside; ``ignore_case``;
* ``sheet_fuzzy`` — cell-by-cell text comparison over ``range`` lists with ``exact_match``,
  ``includes``, ``included_by`` or ``fuzzy_match`` (``threshold``, 85), after
  ``normalization`` pairs, ``trim_leadings``, ``trim_trailings``, ``ignore_chars`` and
  ``ignore_case``;
* ``check_cell`` — one cell's ``props`` (``value`` and the styles of
  :func:`~osworld_gym.evaluation.metrics.table_props.read_cell_style`) against
  ``{"method", "ref"}`` rules;
* ``style`` — the listed style ``props`` of every cell, conditional formats applied;
* ``freeze``, ``zoom`` (``method``/``ref`` on the zoom percentage), ``data_validation``
  (``dv_props``), ``row_props``/``col_props`` (``props``), ``filter``, ``pivot_table``
  (``pivot_props``), ``chart`` (``chart_props``).

Not supported: ``sparkline`` (no OSWorld task uses it) and conditional formats other than
``cellIs`` with constant operands (see :mod:`.table_props`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from osworld_gym.evaluation.metrics import table_props
from osworld_gym.evaluation.metrics._deps import fuzz_ratio, require
from osworld_gym.evaluation.metrics._rules import match_value_to_rule
from osworld_gym.evaluation.metrics._xlsx import RawXlsxReader
from osworld_gym.evaluation.metrics.files import read_lines_any_encoding

logger = logging.getLogger(__name__)

Side = Literal["result", "expected"]
_PREFIXES: Mapping[str, tuple[Side, bool]] = {
    "RI": ("result", True),
    "RN": ("result", False),
    "EI": ("expected", True),
    "EN": ("expected", False),
}


class _Books:
    """The result and expected workbooks of one ``compare_table`` call, loaded on demand."""

    def __init__(self, result: str, expected: str | None) -> None:
        self.paths: dict[Side, str | None] = {"result": result, "expected": expected}
        self._workbooks: dict[Side, Any] = {}
        self._frames: dict[Side, Any] = {}
        self._raw: dict[Side, RawXlsxReader] = {}

    def workbook(self, side: Side) -> Any:
        if side not in self._workbooks:
            path = self.paths[side]
            openpyxl = require("openpyxl")
            self._workbooks[side] = None if path is None else openpyxl.load_workbook(path)
        return self._workbooks[side]

    def sheet_names(self, side: Side) -> list[str] | None:
        book = self.workbook(side)
        return None if book is None else list(book.sheetnames)

    def resolve(self, index: int | str) -> tuple[Side, str]:
        """OSWorld's sheet index → (which book, sheet name); an unknown position gives ``""``."""
        if isinstance(index, int):
            side, position = "result", index
        else:
            if index[:2] not in _PREFIXES:
                raise ValueError(f"unrecognised sheet index {index!r} (use RI/RN/EI/EN or int)")
            side, by_position = _PREFIXES[index[:2]]
            if not by_position:
                return side, index[2:]
            position = int(index[2:])
        names = self.sheet_names(side) or []
        try:
            return side, names[position]
        except IndexError:
            logger.info("sheet index %r out of range (sheets: %s)", index, names)
            return side, ""

    def worksheet(self, index: int | str) -> Any:
        side, name = self.resolve(index)
        book = self.workbook(side)
        return None if book is None or name not in book.sheetnames else book[name]

    def frame(self, index: int | str) -> Any:
        side, name = self.resolve(index)
        if self.paths[side] is None:
            return None
        pandas = require("pandas")
        if side not in self._frames:
            self._frames[side] = pandas.ExcelFile(self.paths[side])
        try:
            return pandas.read_excel(self._frames[side], name)
        except (ValueError, KeyError) as e:  # no such sheet
            logger.info("cannot read sheet %r as a frame: %s", name, e)
            return None

    def close(self) -> None:
        """Release the files pandas keeps open."""
        for frames in self._frames.values():
            frames.close()
        self._frames.clear()

    def raw(self, side: Side) -> RawXlsxReader:
        if side not in self._raw:
            self._raw[side] = RawXlsxReader(self.paths[side] or "")
        return self._raw[side]

    def value(self, index: int | str, coordinate: str) -> Any:
        side, name = self.resolve(index)
        return None if self.paths[side] is None else self.raw(side).value(name, coordinate)

    def printed_lines(self, index: int | str) -> list[str] | None:
        side, name = self.resolve(index)
        path = self.paths[side]
        if path is None:
            return None
        csv_path = f"{os.path.splitext(path)[0]}-{name}.csv"
        try:
            lines = [line.strip() for line in read_lines_any_encoding(csv_path)]
        except OSError as e:
            logger.info("sheet_print: cannot read %s: %s", csv_path, e)
            return None
        while lines and not lines[-1]:
            lines.pop()
        return lines


Check = Callable[[_Books, Mapping[str, Any]], bool]


def _check_sheet_name(books: _Books, rule: Mapping[str, Any]) -> bool:
    return books.sheet_names("result") == books.sheet_names("expected")


def _check_sheet_data(books: _Books, rule: Mapping[str, Any]) -> bool:
    precision = rule.get("precision", 4)
    first = books.frame(rule["sheet_idx0"])
    second = books.frame(rule["sheet_idx1"])
    if first is None or second is None:
        return False
    return bool(first.round(precision).equals(second.round(precision)))


def _check_sheet_print(books: _Books, rule: Mapping[str, Any]) -> bool:
    first = books.printed_lines(rule["sheet_idx0"])
    second = books.printed_lines(rule["sheet_idx1"])
    if first is None or second is None:
        return False
    if rule.get("ignore_case", False):
        first, second = [s.lower() for s in first], [s.lower() for s in second]
    return first == second


def _normalise_fuzzy(value: str, rule: Mapping[str, Any]) -> str:
    for old, new in rule.get("normalization", []):
        value = value.replace(old, new)
    if "trim_leadings" in rule:
        value = value.lstrip(rule["trim_leadings"])
    if "trim_trailings" in rule:
        value = value.rstrip(rule["trim_trailings"])
    if "ignore_chars" in rule:
        value = "".join(ch for ch in value if ch not in set(rule["ignore_chars"]))
    return value.lower() if rule.get("ignore_case", False) else value


def _fuzzy_pair_ok(first: str, second: str, rule: Mapping[str, Any]) -> bool:
    kind = rule["type"]
    if kind == "exact_match":
        return first == second
    if kind == "includes":
        return second in first
    if kind == "included_by":
        return first in second
    if kind == "fuzzy_match":
        return fuzz_ratio(first, second) >= rule.get("threshold", 85.0)
    raise ValueError(f"sheet_fuzzy: unknown match type {kind!r}")


def _check_sheet_fuzzy(books: _Books, rule: Mapping[str, Any]) -> bool:
    cell_range = require("openpyxl.worksheet.cell_range")
    column_letter = require("openpyxl.utils").get_column_letter
    for sub in rule["rules"]:
        for block in cell_range.MultiCellRange(sub["range"]):
            for row, col in block.cells:
                coordinate = f"{column_letter(col)}{row}"
                first = _normalise_fuzzy(str(books.value(rule["sheet_idx0"], coordinate)), sub)
                second = _normalise_fuzzy(str(books.value(rule["sheet_idx1"], coordinate)), sub)
                if not _fuzzy_pair_ok(first, second, sub):
                    logger.debug("sheet_fuzzy %s: %r vs %r", coordinate, first, second)
                    return False
    return True


def _cell_value_or_none(books: _Books, index: int | str, coordinate: str) -> Any:
    """A cell's stored value; ``None`` where reading it fails (OSWorld's ``check_cell`` rule)."""
    try:
        return books.value(index, coordinate)
    except (IndexError, TypeError) as e:  # a broken shared-string index or number cell
        logger.info("check_cell %s: cannot read the value: %s", coordinate, e)
        return None


def _check_cell(books: _Books, rule: Mapping[str, Any]) -> bool:
    sheet = books.worksheet(rule["sheet_idx"])
    if sheet is None:
        return False
    try:
        cell = sheet[rule["coordinate"]]
        for prop, value_rule in rule["props"].items():
            if prop == "value":
                value = _cell_value_or_none(books, rule["sheet_idx"], rule["coordinate"])
            else:
                value = table_props.read_cell_style(prop, cell)
            if not match_value_to_rule(value, value_rule):
                return False
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        logger.info("check_cell %s: %s", rule.get("coordinate"), e)
        return False
    return True


def _both(books: _Books, rule: Mapping[str, Any], load: Callable[[Any], Any]) -> bool:
    """Load a property from both sheets (a missing sheet gives ``{}``) and compare."""
    values = []
    for key in ("sheet_idx0", "sheet_idx1"):
        sheet = books.worksheet(rule[key])
        values.append({} if sheet is None else load(sheet))
    return bool(values[0] == values[1])


def _check_style(books: _Books, rule: Mapping[str, Any]) -> bool:
    props: Sequence[str] = rule.get("props", [])
    styles = []
    for key in ("sheet_idx0", "sheet_idx1"):
        side, _ = books.resolve(rule[key])
        sheet = books.worksheet(rule[key])
        styles.append(
            {} if sheet is None else table_props.load_styles(sheet, books.raw(side), props)
        )
    return styles[0] == styles[1]


def _check_freeze(books: _Books, rule: Mapping[str, Any]) -> bool:
    first = books.worksheet(rule["sheet_idx0"])
    second = books.worksheet(rule["sheet_idx1"])
    if first is None or second is None:
        return False
    return table_props.freeze_key(first) == table_props.freeze_key(second)


def _check_zoom(books: _Books, rule: Mapping[str, Any]) -> bool:
    sheet = books.worksheet(rule["sheet_idx"])
    if sheet is None:
        return False
    return match_value_to_rule(sheet.sheet_view.zoomScale or 100.0, rule)


def _check_data_validation(books: _Books, rule: Mapping[str, Any]) -> bool:
    """Every validation of the sheet matches one of ``dv_props``.

    The sheet must also have at least as many validations as ``dv_props`` has entries.
    """
    sheet = books.worksheet(rule["sheet_idx"])
    if sheet is None:
        return False
    validations = sheet.data_validations.dataValidation
    wanted: Sequence[Mapping[str, Any]] = rule["dv_props"]
    if len(validations) < len(wanted):
        return False
    return all(
        any(
            all(match_value_to_rule(getattr(dv, attr), r) for attr, r in props.items())
            for props in wanted
        )
        for dv in validations
    )


def _check_charts(books: _Books, rule: Mapping[str, Any]) -> bool:
    props = rule.get("chart_props", [])
    return _both(books, rule, lambda ws: table_props.load_charts(ws, props))


def _check_pivot_tables(books: _Books, rule: Mapping[str, Any]) -> bool:
    props = rule.get("pivot_props", [])
    return _both(books, rule, lambda ws: table_props.load_pivot_tables(ws, props))


def _check_row_props(books: _Books, rule: Mapping[str, Any]) -> bool:
    props = rule.get("props", [])
    return _both(books, rule, lambda ws: table_props.load_dimensions(ws, "row", props))


def _check_col_props(books: _Books, rule: Mapping[str, Any]) -> bool:
    props = rule.get("props", [])
    return _both(books, rule, lambda ws: table_props.load_dimensions(ws, "column", props))


def _check_filter(books: _Books, rule: Mapping[str, Any]) -> bool:
    return _both(books, rule, table_props.load_filter)


_RULE_CHECKS: Mapping[str, Check] = {
    "sheet_name": _check_sheet_name,
    "sheet_data": _check_sheet_data,
    "sheet_print": _check_sheet_print,
    "sheet_fuzzy": _check_sheet_fuzzy,
    "check_cell": _check_cell,
    "style": _check_style,
    "freeze": _check_freeze,
    "zoom": _check_zoom,
    "data_validation": _check_data_validation,
    "chart": _check_charts,
    "pivot_table": _check_pivot_tables,
    "row_props": _check_row_props,
    "col_props": _check_col_props,
    "filter": _check_filter,
}
SUPPORTED_RULES = frozenset(_RULE_CHECKS)


def compare_table(result: str | None, expected: str | None = None, **options: Any) -> float:
    """Score a spreadsheet against a reference with OSWorld's ``rules`` (module docstring).

    Args:
        result: Path of the ``.xlsx`` the agent saved.
        expected: Path of the reference book; ``None`` for rules that only look at the result
            (``check_cell``, ``zoom``, ``data_validation``).
        **options: ``rules``: the list of rule dicts.

    Returns:
        1.0 when every rule passes; 0.0 when one fails or the result is missing or unreadable.

    Raises:
        ValueError: A rule type or sheet index this implementation does not know.
    """
    if result is None or not Path(result).exists():
        return 0.0
    books = _Books(result, expected)
    try:
        books.workbook("result")
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # any unreadable agent output scores 0, as in OSWorld
        logger.info("compare_table: cannot open result %s: %s", result, e)
        return 0.0
    try:
        for rule in options["rules"]:
            check = _RULE_CHECKS.get(rule["type"])
            if check is None:
                raise ValueError(
                    f"compare_table: unsupported rule type {rule['type']!r} "
                    f"(supported: {sorted(SUPPORTED_RULES)})"
                )
            if not check(books, rule):
                logger.info("compare_table: rule %s failed", rule["type"])
                return 0.0
    finally:
        books.close()
    return 1.0
