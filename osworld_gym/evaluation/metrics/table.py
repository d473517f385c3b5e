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
  ``read_cell_style()``) against
  ``{"method", "ref"}`` rules;
* ``style`` — the listed style ``props`` of every cell, conditional formats applied (their
  formulas evaluated with the ``formulas`` library, as OSWorld evaluates them; see
  ``load_styles()``);
* ``freeze`` (the frozen rows and columns, see below), ``zoom`` (``method``/``ref`` on the
  zoom percentage), ``data_validation``
  (``dv_props``), ``row_props``/``col_props`` (``props``), ``filter``, ``pivot_table``
  (``pivot_props``), ``chart`` (``chart_props``), ``sparkline`` (cell -> data range of the
  sheets' sparklines).

Two OSWorld references (``osworld_gym.evaluation.references``) differ in ``freeze`` only:
``compare_table()`` follows OSWorld's code of 2026.04, which compares a frozen pane's split
(``xSplit``/``ySplit``, the frozen column and row counts) and so ignores where the view was
scrolled; ``compare_table_1_0_2()`` keeps desktop-env 1.0.2's comparison of openpyxl's
``freeze_panes``, the pane's top-left *visible* cell, which LibreOffice saves wherever the
frozen view was scrolled to.
"""

from __future__ import annotations

import logging
import os
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from osworld_gym.evaluation.metrics import table_props
from osworld_gym.evaluation.metrics._deps import fuzz_ratio, require
from osworld_gym.evaluation.metrics._rules import match_value_to_rule
from osworld_gym.evaluation.metrics._xlsx import RawXlsxReader, sparklines
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
    """The result and expected workbooks of one ``compare_table`` call.

    Both books are opened up front, with openpyxl and as pandas ``ExcelFile`` objects, as
    OSWorld opens them: a result that does not open scores 0, an expected book that does not
    open raises. Sheet names (for positions and ``sheet_name``) are pandas' (worksheets only).
    """

    def __init__(self, result: str, expected: str | None) -> None:
        self.paths: dict[Side, str | None] = {"result": result, "expected": expected}
        self._workbooks: dict[Side, Any] = {}
        self._frames: dict[Side, Any] = {}
        self._names: dict[Side, list[str] | None] = {"result": None, "expected": None}
        self._raw: dict[Side, RawXlsxReader] = {}

    def open(self, side: Side) -> None:
        """Load one book with openpyxl and pandas (exceptions propagate)."""
        path = self.paths[side]
        if path is None:
            return
        self._workbooks[side] = require("openpyxl").load_workbook(path)
        self._frames[side] = require("pandas").ExcelFile(path)
        self._names[side] = list(self._frames[side].sheet_names)

    def workbook(self, side: Side) -> Any:
        if self.paths[side] is None:
            raise ValueError(f"compare_table: a rule reads the {side} book, which is missing")
        return self._workbooks[side]

    def sheet_names(self, side: Side) -> list[str] | None:
        return self._names[side]

    def resolve(self, index: int | str) -> tuple[Side, str]:
        """OSWorld's sheet index -> (which book, sheet name); a bad position gives ``""``."""
        if isinstance(index, int):
            side, position = "result", index
        else:
            if index[:2] not in _PREFIXES:
                raise ValueError(f"unrecognised sheet index {index!r} (use RI/RN/EI/EN or int)")
            side, by_position = _PREFIXES[index[:2]]
            if not by_position:
                return side, index[2:]
            try:
                position = int(index[2:])
            except ValueError:
                logger.info("sheet index %r is no position", index)
                return side, ""
        names = self.sheet_names(side)
        if names is None or (isinstance(index, int) and position >= len(names)):
            return side, ""
        try:
            return side, names[position]
        except IndexError:
            logger.info("sheet index %r out of range (sheets: %s)", index, names)
            return side, ""

    def worksheet(self, index: int | str) -> Any:
        """The openpyxl sheet, ``None`` when the book has no such sheet."""
        side, name = self.resolve(index)
        book = self.workbook(side)
        return book[name] if name in book.sheetnames else None

    def frame(self, index: int | str) -> Any:
        """The sheet as a pandas frame, ``None`` when it cannot be read."""
        side, name = self.resolve(index)
        self.workbook(side)
        pandas = require("pandas")
        try:
            return pandas.read_excel(self._frames[side], name)
        except ImportError:
            raise
        except Exception as e:  # no such sheet, unreadable: OSWorld reads None
            logger.info("cannot read sheet %r as a frame: %s", name, e)
            return None

    def close(self) -> None:
        """Release the files pandas keeps open."""
        for frames in self._frames.values():
            frames.close()
        self._frames.clear()

    def raw(self, side: Side) -> RawXlsxReader:
        path = self.paths[side]
        if path is None:
            raise ValueError(f"compare_table: a rule reads the {side} book, which is missing")
        if side not in self._raw:
            self._raw[side] = RawXlsxReader(path)
        return self._raw[side]

    def value(self, index: int | str, coordinate: str) -> Any:
        side, name = self.resolve(index)
        return self.raw(side).value(name, coordinate)

    def printed_lines(self, index: int | str) -> list[str] | None:
        side, name = self.resolve(index)
        path = self.paths[side]
        if path is None:
            raise ValueError(f"compare_table: a rule reads the {side} book, which is missing")
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
    if first is None:
        return False
    second = books.frame(rule["sheet_idx1"])
    if second is None:
        return False
    return bool(first.round(precision).equals(second.round(precision)))


def _check_sheet_print(books: _Books, rule: Mapping[str, Any]) -> bool:
    first = books.printed_lines(rule["sheet_idx0"])
    if first is None:
        return False
    second = books.printed_lines(rule["sheet_idx1"])
    if second is None:
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
    except Exception as e:  # noqa: BLE001 - a broken book reads as no value, as in OSWorld
        logger.info("check_cell %s: cannot read the value: %s", coordinate, e)
        return None


def _style_or_none(prop: str, cell: Any) -> Any:
    """A cell's style property; ``None`` where reading it fails (unknown property included)."""
    try:
        return table_props.read_cell_style(prop, cell)
    except Exception as e:  # noqa: BLE001 - OSWorld's check_cell reads None on any failure
        logger.info("check_cell: cannot read %s: %s", prop, e)
        return None


def _matches(value: Any, rule: Mapping[str, Any]) -> bool:
    """``match_value_to_rule()``, but ``str_*_eq`` need a string value (OSWorld strips it)."""
    if rule.get("method") in ("str_list_eq", "str_set_eq") and not isinstance(value, str):
        raise TypeError(f"{rule['method']} needs a text value, got {type(value).__name__}")
    return match_value_to_rule(value, rule)


def _check_cell(books: _Books, rule: Mapping[str, Any]) -> bool:
    """One cell's ``props``; any failure on the way (sheet, coordinate, rule) scores it 0."""
    try:
        sheet = books.worksheet(rule["sheet_idx"])
        if sheet is None:
            return False
        cell = sheet[rule["coordinate"]]
        for prop, value_rule in rule["props"].items():
            if prop == "value":
                value = _cell_value_or_none(books, rule["sheet_idx"], rule["coordinate"])
            else:
                value = _style_or_none(prop, cell)
            if not _matches(value, value_rule):
                return False
    except Exception as e:  # noqa: BLE001 - OSWorld scores a check_cell that fails 0
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


def _frozen_panes_equal(
    books: _Books, rule: Mapping[str, Any], describe: Callable[[Any], Any]
) -> bool:
    """Whether both sheets' panes read the same through ``describe``; a missing sheet fails.

    (OSWorld scores a missing first sheet 0 and raises on a missing second one: 0 either way.)
    """
    first = books.worksheet(rule["sheet_idx0"])
    if first is None:
        return False
    second = books.worksheet(rule["sheet_idx1"])
    if second is None:
        return False
    return bool(describe(first) == describe(second))


def _check_freeze(books: _Books, rule: Mapping[str, Any]) -> bool:
    """The frozen rows and columns of both sheets, wherever the view was scrolled (2026.04).

    A pane that is not frozen (a plain split) still compares its top-left cell, as OSWorld's
    code of 2026.04 does: see ``freeze_key()``.
    """
    return _frozen_panes_equal(books, rule, table_props.freeze_key)


def _check_freeze_1_0_2(books: _Books, rule: Mapping[str, Any]) -> bool:
    """Openpyxl's ``freeze_panes`` (the pane's top-left visible cell) of both sheets (1.0.2)."""
    return _frozen_panes_equal(books, rule, lambda ws: ws.freeze_panes)


def _check_zoom(books: _Books, rule: Mapping[str, Any]) -> bool:
    sheet = books.worksheet(rule["sheet_idx"])
    if sheet is None:
        return False
    return _matches(sheet.sheet_view.zoomScale or 100.0, rule)


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
        any(all(_matches(getattr(dv, attr), r) for attr, r in props.items()) for props in wanted)
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


def _check_sparklines(books: _Books, rule: Mapping[str, Any]) -> bool:
    """The sparklines (cell -> data range) of both sheets, read from the packages' XML."""
    found = []
    for key in ("sheet_idx0", "sheet_idx1"):
        side, name = books.resolve(rule[key])
        path = books.paths[side]
        if path is None:
            raise ValueError(f"compare_table: a rule reads the {side} book, which is missing")
        try:
            found.append(sparklines(path, name))
        except zipfile.BadZipFile as e:  # OSWorld reads no sparklines from a broken zip
            logger.info("sparkline: %s: %s", path, e)
            found.append({})
    return found[0] == found[1]


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
    "sparkline": _check_sparklines,
}
SUPPORTED_RULES = frozenset(_RULE_CHECKS)


_RULE_CHECKS_1_0_2: Mapping[str, Check] = {**_RULE_CHECKS, "freeze": _check_freeze_1_0_2}


def compare_table(result: str | None, expected: str | None = None, **options: Any) -> float:
    """Score a spreadsheet against a reference with OSWorld's ``rules`` (module docstring).

    Behaves as OSWorld's code of 2026.04: a ``freeze`` rule compares the frozen rows and
    columns, not where the frozen view was scrolled (``compare_table_1_0_2()`` for 1.0.2's).

    Args:
        result: Path of the ``.xlsx`` the agent saved.
        expected: Path of the reference book; ``None`` for rules that only look at the result
            (``check_cell``, ``zoom``, ``data_validation``).
        **options: ``rules``: the list of rule dicts.

    Returns:
        1.0 when every rule passes; 0.0 when one fails or the result is missing or unreadable.

    Raises:
        ValueError: A rule type or sheet index this implementation does not know, or a rule
            that reads the expected book when there is none (OSWorld raises there too).
    """
    return _compare(result, expected, options, _RULE_CHECKS)


def compare_table_1_0_2(result: str | None, expected: str | None = None, **options: Any) -> float:
    """``compare_table()`` as desktop-env 1.0.2 scores it: ``freeze`` by the top-left cell.

    1.0.2 compares openpyxl's ``freeze_panes``, the pane's top-left *visible* cell, which
    LibreOffice saves where the frozen view was scrolled to: a correctly frozen sheet fails when
    the user scrolled before saving. Every other rule is the same as ``compare_table()``'s.
    """
    return _compare(result, expected, options, _RULE_CHECKS_1_0_2)


def compare_table_fixed(result: str | None, expected: str | None = None, **options: Any) -> float:
    """``compare_table()`` whose ``freeze`` rule ignores where the view was scrolled.

    This is the correction of 1.0.2's ``freeze`` rule (``compare_table_1_0_2()``) for the
    ``"fixed"`` evaluation mode; OSWorld's own code made the same correction by 2026.04, so
    this scores as ``compare_table()`` does.
    """
    return _compare(result, expected, options, _RULE_CHECKS)


def _compare(
    result: str | None,
    expected: str | None,
    options: Mapping[str, Any],
    checks: Mapping[str, Check],
) -> float:
    if result is None or not Path(result).exists():
        return 0.0
    books = _Books(result, expected)
    try:
        try:
            books.open("result")
        except ImportError:
            raise  # a missing library is an installation problem, never a score
        except Exception as e:  # any unreadable agent output scores 0, as in OSWorld
            logger.info("compare_table: cannot open result %s: %s", result, e)
            return 0.0
        books.open("expected")  # an unreadable reference raises, as in OSWorld
        for rule in options["rules"]:
            check = checks.get(rule["type"])
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
