"""Sheet properties that ``compare_table`` rules compare, read from openpyxl worksheets.

Cell styles, charts, pivot tables, row/column dimensions, auto-filters and frozen panes.

Each loader returns a plain, comparable structure; two sheets pass a rule when the structures
are equal. The property names are OSWorld's (``chart_props``, ``pivot_props``, ``props``).
"""

from __future__ import annotations

import logging
import operator as operator_module
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from osworld_gym.evaluation.metrics._deps import require
from osworld_gym.evaluation.metrics._xlsx import RawXlsxReader

logger = logging.getLogger(__name__)

# OSWorld stops testing a conditional-format range after this many empty cells (not reset by
# the filled ones in between, despite the name of its counter).
_MAX_EMPTY_CF_CELLS = 50
# Absolute references in a conditional format: a cell ($B$2) or a range ($A$1:$B$2).
_ABSOLUTE_REFERENCE = re.compile(r"\$[A-Z]{1,3}\$\d+(:\$[A-Z]{1,3}\$\d+)?")


_FONT_ATTRIBUTES = {
    "font_name": "name",
    "font_family": "family",
    "font_color": "color",
    "font_bold": "b",
    "font_italic": "i",
    "font_underline": "u",
    "font_size": "sz",
}


def read_cell_style(name: str, cell: Any, diff_style: Any = None) -> Any:
    """One style property of a cell, or of the differential style a conditional format applies.

    Args:
        name: ``number_format``, ``font_name``, ``font_family``, ``font_color`` (aRGB such as
            ``"FFFF0000"``), ``font_bold``, ``font_italic``, ``font_underline``, ``font_size``,
            ``fill_type``, ``bgcolor`` / ``fgcolor`` (the fill colour), ``hyperlink``, ``merge``.
        cell: An openpyxl cell (or merged cell).
        diff_style: A conditional format's ``DifferentialStyle`` that applies to the cell.

    Returns:
        The value; font properties and the number format are ``None`` for an empty cell.

    Raises:
        ValueError: Unknown property name.
        AttributeError: A font property of a cell (or conditional format) without that font
            part, or the number format of a conditional format without one (as in OSWorld).
    """
    source = diff_style if diff_style is not None else cell
    has_value = cell.value is not None
    if name == "number_format":
        if not has_value or cell.data_type != "n":
            return None
        # A conditional format without a number format raises here, as in OSWorld.
        return cell.number_format if diff_style is None else diff_style.numFmt.formatCode
    if name in _FONT_ATTRIBUTES:
        if not has_value:
            return None
        # No font (a conditional format's) or no colour raises AttributeError, as in OSWorld.
        value = getattr(source.font, _FONT_ATTRIBUTES[name])
        return value.rgb if name == "font_color" else value
    try:
        if name == "fill_type":
            return source.fill.tagname
        if name in ("bgcolor", "fgcolor"):
            # A conditional format paints with bgColor; a plain cell fill keeps it in fgColor.
            return diff_style.fill.bgColor.rgb if diff_style is not None else cell.fill.fgColor.rgb
    except AttributeError:  # no fill / colour defined
        return None
    if name == "hyperlink":
        return (cell.hyperlink or "") if has_value else None
    if name == "merge":
        return type(cell).__name__ == "MergedCell"
    raise ValueError(f"unsupported cell style {name!r}")


# Rule types whose first formula is the test: evaluated per cell, the cell's value as its
# first input. Other types with formulas (timePeriod, containsBlanks) only compile them.
_FORMULA_TEST_TYPES = frozenset(
    {
        "expression",
        "containsText",
        "notContainsText",
        "beginsWith",
        "endsWith",
        "containsErrors",
        "notContainsErrors",
    }
)


def _cell_is(operator: str | None, value: Any, refs: Sequence[Any]) -> Any:
    """Excel's ``cellIs`` comparison of a cell value with the evaluated operands.

    Returns the comparison's own result (a ``formulas`` array where an operand is one), whose
    truth the caller takes; a comparison that fails (mismatched types, a missing operand, an
    unknown operator) is ``False``.
    """
    try:
        if operator in ("between", "notBetween"):
            low, high = min(refs), max(refs)
            if operator == "between":
                return value >= low and value <= high
            return value < low or value > high
        compare = {
            "lessThan": operator_module.lt,
            "lessThanOrEqual": operator_module.le,
            "greaterThan": operator_module.gt,
            "greaterThanOrEqual": operator_module.ge,
            "equal": operator_module.eq,
            "notEqual": operator_module.ne,
        }[operator or ""]
        return compare(value, refs[0])
    except Exception:  # noqa: BLE001 - OSWorld counts any failed comparison as no match
        return False


@dataclass
class _Condition:
    """The test a conditional format puts its cells to, as it stands between rules.

    OSWorld keeps the test and its inputs in variables that outlive each rule, and these
    replay that: a rule of a type it does not evaluate (``top10``, ``aboveAverage``,
    ``duplicateValues``, ...) tests its own cells with the test of the last rule that set one
    (no cell qualifies before any did), reading ``arguments`` as the formulas compiled since
    left them and ``operator`` as the last ``cellIs`` rule left it, even one skipped.
    """

    kind: str | None = None  # "formula" or "cellIs"
    formula: Callable[..., Any] | None = None
    arguments: list[Any] = field(default_factory=list)
    operator: str | None = None
    references: list[Any] = field(default_factory=list)

    def evaluate(self, value: Any) -> Any:
        """The test on one cell value; raises where OSWorld's does (the caller scores it 0)."""
        if self.kind == "formula" and self.formula is not None:
            return self.formula(value, *self.arguments)
        if self.kind == "cellIs":
            return _cell_is(self.operator, value, self.references)
        raise LookupError("no conditional-format rule has set a test yet")


def _compile(parser: Any, formula: str) -> Callable[..., Any] | None:
    """A conditional-format formula compiled by ``formulas``; ``None`` when it does not parse.

    The function takes the formula's distinct references in order of appearance, absolute or
    not (``B2>$C$1`` takes B2, then C1), ranges as flat lists of values.
    """
    try:
        return parser.ast("=" + formula)[1].compile()
    except Exception as e:  # noqa: BLE001 - OSWorld skips the rule on any parse failure
        logger.debug("conditional format formula %r does not compile: %s", formula, e)
        return None


def _absolute_inputs(formula: str, ws: Any, raw: RawXlsxReader) -> list[Any]:
    """Values of the absolute ranges (``$B$2:$B$9``) in ``formula``, in order, from ``ws``.

    These follow the cell's own value as the compiled formula's inputs, each a flat list of
    the stored values row by row; a sheet prefix is not looked at (the sheet is ``ws``).

    Raises:
        ValueError: An absolute single cell (``$B$2``): OSWorld reads it as the range
            ``B2:``, which fails; or a range whose corners are reversed.
    """
    cell_range = require("openpyxl.worksheet.cell_range").CellRange
    column_letter = require("openpyxl.utils").get_column_letter
    values: list[Any] = []
    for match in _ABSOLUTE_REFERENCE.finditer(formula):
        if not match.group(1):
            raise ValueError(f"conditional format formula {formula!r}: B2: is no range")
        cells = cell_range(match.group(0).replace("$", "")).cells
        values.append([raw.value(ws.title, f"{column_letter(c)}{r}") for r, c in cells])
    return values


def _conditional_styles(ws: Any, raw: RawXlsxReader, props: Sequence[str]) -> dict[str, list]:
    """The ``props`` of every cell a conditional format of ``ws`` applies to, as OSWorld finds them.

    Each rule's formulas are compiled with the ``formulas`` library; a formula that does not
    parse skips the rule. ``expression`` rules (and the text and error tests, which LibreOffice
    saves as formulas) evaluate their first formula per cell, feeding the cell's stored value
    as the first reference whatever cell it names, then the absolute ranges' values
    (``_absolute_inputs()``); the formula is not shifted to the cell. A result whose truth
    holds styles the cell, a ``formulas`` error value (``#VALUE!``) included; a call that
    fails (another relative reference, a wrong count of inputs) does not. ``cellIs`` rules
    compare the value with their formulas evaluated without inputs (a formula that needs
    one skips the rule). Empty cells are skipped, and a rule stops testing a range once it has
    met more than 50 of them. Later rules overwrite what earlier ones styled.

    Raises:
        DependencyNotInstalled: A rule has formulas and ``formulas`` is not installed.
        ValueError: Where OSWorld raises: a formula with an absolute single cell, a text or
            expression rule without formulas, a rule without formulas (``top10``, ...) whose
            inherited test styles a cell.
    """
    styles: dict[str, list] = {}
    condition = _Condition()
    parser: Any = None
    for fmt in ws.conditional_formatting:
        for rule in fmt.rules:
            compiled: list[tuple[Callable[..., Any], list[Any]]] = []
            for formula in rule.formula:
                if parser is None:
                    parser = require("formulas").Parser()
                function = _compile(parser, formula)
                if function is None:
                    break
                condition.arguments = _absolute_inputs(formula, ws, raw)
                compiled.append((function, condition.arguments))
            if len(compiled) < len(rule.formula):
                continue
            if rule.type in _FORMULA_TEST_TYPES:
                if not compiled:
                    raise ValueError(f"conditional format of type {rule.type!r} has no formula")
                condition.kind = "formula"
                condition.formula, condition.arguments = compiled[0]
            elif rule.type == "cellIs":
                condition.operator = rule.operator
                try:
                    references = [function() for function, _ in compiled]
                except Exception as e:  # noqa: BLE001 - OSWorld skips the rule on any failure
                    logger.debug("cellIs operands %r do not evaluate: %s", rule.formula, e)
                    continue
                condition.kind = "cellIs"
                condition.references = references
            else:
                logger.debug("conditional format type %r: the previous rule's test", rule.type)
            _apply_rule(ws, raw, fmt, rule, condition, props, styles)
    return styles


def _apply_rule(
    ws: Any,
    raw: RawXlsxReader,
    fmt: Any,
    rule: Any,
    condition: _Condition,
    props: Sequence[str],
    styles: dict[str, list],
) -> None:
    """Store in ``styles`` the ``props`` that ``rule`` gives the cells of ``fmt`` it applies to."""
    empty = 0
    for cell_range in fmt.cells:
        for row, col in cell_range.cells:
            cell = ws.cell(row=row, column=col)
            value = raw.value(ws.title, cell.coordinate)
            if value is None:
                empty += 1
                if empty > _MAX_EMPTY_CF_CELLS:
                    break
                continue
            try:
                outcome = condition.evaluate(value)
            except Exception as e:  # noqa: BLE001 - OSWorld: a test that fails is no match
                logger.debug("conditional format test on %s failed: %s", cell.coordinate, e)
                outcome = False
            # Taken outside the guard, as OSWorld does: a result of several values raises.
            if outcome:
                if not rule.formula:
                    # OSWorld logs each styled cell with the rule's first formula, which fails.
                    raise ValueError(
                        f"conditional format of type {rule.type!r} without a formula styles "
                        f"{cell.coordinate} with an earlier rule's test"
                    )
                styles[cell.coordinate] = [read_cell_style(p, cell, rule.dxf) for p in props]


def load_styles(ws: Any, raw: RawXlsxReader, props: Sequence[str]) -> dict[str, list]:
    """Coordinate → the ``props`` of every cell in the used range, conditional formats applied.

    Conditional formats are evaluated as OSWorld evaluates them (``_conditional_styles()``),
    with the ``formulas`` library where a rule has formulas.

    Raises:
        DependencyNotInstalled: A conditional format has formulas and ``formulas`` (in the
            ``eval`` extra) is not installed.
        ValueError: Where OSWorld's evaluation of a conditional format fails too.
    """
    styles = {
        cell.coordinate: [read_cell_style(p, cell) for p in props]
        for column in ws.iter_cols()
        for cell in column
    }
    styles.update(_conditional_styles(ws, raw, props))
    return styles


def _formula_ref(data: Any) -> str:
    for kind in ("numRef", "strRef"):
        ref = getattr(data, kind, None)
        if ref is not None and getattr(ref, "f", None):
            return str(ref.f)
    return ""


def _rich_title(title: Any) -> Any:
    try:
        return title.tx.rich.p[0].r[0].t
    except (AttributeError, IndexError, TypeError):
        return None


def _chart_info(chart: Any, props: set[str]) -> dict[str, Any]:
    info: dict[str, Any] = {}
    if "title" in props:
        info["title"] = _rich_title(chart.title)
    if "legend" in props:
        info["legend"] = chart.legend.position if chart.legend is not None else None
    if "anchor" in props:
        anchor = chart.anchor
        # OSWorld lists the end row twice (not the start row); kept for identical results.
        info["anchor"] = [
            anchor.editAs,
            anchor._from.col,
            anchor.to.row,
            anchor.to.col,
            anchor.to.row,
        ]
    for prop in ("width", "height"):
        if prop in props:
            info[prop] = getattr(chart, prop)
    if "type" in props:
        info["type"] = chart.tagname
    if "direction" in props:
        info["direction"] = chart.barDir  # a chart other than a bar chart raises, as in OSWorld
    for axis in ("x", "y", "z"):
        if f"{axis}title" in props:
            info[f"{axis}title"] = _rich_title(
                getattr(getattr(chart, f"{axis}_axis", None), "title", None)
            )
    return info


def load_charts(ws: Any, chart_props: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Charts keyed by their data source (``"<values ref>,<categories ref>;..."``)."""
    props = set(chart_props)
    charts: dict[str, dict[str, Any]] = {}
    for chart in ws._charts:  # openpyxl keeps the charts it read only here
        series = ";".join(f"{_formula_ref(s.val)},{_formula_ref(s.cat)}" for s in chart.series)
        charts[series] = _chart_info(chart, props)
    return charts


def _trim_empty(rows: list[list[Any]]) -> tuple[list[list[Any]], int]:
    """Drop empty lists at both ends; also return how many were dropped at the start."""
    start = next((i for i, r in enumerate(rows) if r), len(rows))
    end = len(rows)
    while end > start and not rows[end - 1]:
        end -= 1
    return rows[start:end], start


def pivot_info(pivot: Any, pivot_props: Iterable[str]) -> tuple[str, dict[str, Any]]:
    """One pivot table as ``(source key, {property: value})`` (OSWorld's ``pivot_props``).

    Field indices are shifted by the number of leading pivot fields without items, so that a
    pivot over ``B:D`` and one over ``A:D`` with an unused ``A`` compare equal.
    """
    coordinate_to_tuple = require("openpyxl.utils").coordinate_to_tuple
    props = set(pivot_props)
    raw = [
        [(item.h, item.x) for item in field.items if item.x is not None]
        for field in pivot.pivotFields
    ]
    selection, left = _trim_empty(raw)
    right = len(raw) - left - len(selection)
    source = pivot.cache.cacheSource
    first, last = source.worksheetSource.ref.split(":")
    r1, c1 = coordinate_to_tuple(first)
    r2, c2 = coordinate_to_tuple(last)
    key = f"{source.type};{(r1, c1 + left)}:{(r2, c2 - right)};{source.worksheetSource.sheet}"
    info: dict[str, Any] = {}
    simple = {
        "name": "name",
        "show_total": "visualTotals",
        "show_empty_row": "showEmptyRow",
        "show_empty_col": "showEmptyCol",
        "show_headers": "showHeaders",
        "location": "location",
    }
    for prop, attribute in simple.items():
        if prop in props:
            info[prop] = getattr(pivot, attribute)
    if props & {"filter", "selection"}:
        info["selection"] = selection if "ordered" in props else [set(r) for r in selection]
    if "filter" in props:
        info["filter_fields"] = {f.fld for f in pivot.pageFields}
    for prop, fields in (("col_fields", pivot.colFields), ("row_fields", pivot.rowFields)):
        if prop in props:
            indices = [f.x - left for f in fields]
            if "ignore_special_fields" in props:
                indices = [i for i in indices if i >= 0]
            info[prop] = indices
    if "data_fields" in props:
        named = "data_fields_name" in props
        info["data_fields"] = [
            f"{f.fld - left:d};{f.name if named else ''};{f.subtotal};{f.showDataAs}"
            for f in pivot.dataFields
        ]
    return key, info


def load_pivot_tables(ws: Any, pivot_props: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The sheet's pivot tables keyed by data source (see ``pivot_info()``)."""
    props = list(pivot_props)
    return dict(pivot_info(p, props) for p in ws._pivots)  # openpyxl's read pivots


def load_dimensions(ws: Any, obj: str, props: Iterable[str]) -> dict[Any, dict[str, Any]]:
    """Row (``obj="row"``) or column (``"column"``) dimensions as index → {prop: value}.

    Properties are openpyxl's: ``hidden``, ``height``, ``width``, ``collapsed``, ...
    """
    dimensions = getattr(ws, f"{obj}_dimensions")
    wanted = set(props)
    return {key: {p: getattr(dim, p) for p in wanted} for key, dim in dimensions.items()}


def load_filter(ws: Any) -> dict[str, Any]:
    """The auto-filter: range, per-column filters and the sort state."""
    auto = ws.auto_filter
    columns = []
    for column in auto.filterColumn:
        entry: dict[str, Any] = {
            "col_id": column.colId,
            "hidden_button": column.hiddenButton,
            "show_button": column.showButton,
        }
        if column.filters is not None:
            entry["filters_blank"] = column.filters.blank
            entry["filters"] = set(column.filters.filter)
        if column.customFilters is not None:
            entry["custom_filters_op"] = column.customFilters._and
            entry["custom_filters"] = {
                (f.operator, f.val) for f in column.customFilters.customFilter
            }
        columns.append(entry)
    result: dict[str, Any] = {
        "ref": auto.ref,
        "filter_column": sorted(columns, key=lambda d: d["col_id"]),
    }
    sort = auto.sortState
    if sort is not None:
        result["sort_state"] = {
            "sort": sort.columnSort,
            "case": sort.caseSensitive,
            "method": sort.sortMethod,
            "ref": sort.ref,
            "condition": [
                {
                    "descending": c.descending,
                    "key": c.sortBy,
                    "ref": c.ref,
                    "custom_list": c.customList,
                    "dxf_id": c.dxfId,
                    "icon": c.iconSet,
                    "iconid": c.iconId,
                }
                for c in sort.sortCondition
            ],
        }
    return result


def freeze_key(ws: Any) -> tuple[Any, ...]:
    """A scroll-independent description of frozen panes (``freeze`` rule of 2026.04).

    openpyxl's ``freeze_panes`` is the pane's top-left *visible* cell, which moves when the
    user scrolls; the frozen row and column counts (``ySplit``/``xSplit``) do not. A pane that
    is not frozen (a plain split, whose counts are twips, not cells) keeps its top-left cell,
    as OSWorld's code of 2026.04 keeps it.

    Returns:
        ``("none",)`` without a pane; ``("frozen", columns, rows)`` for a frozen pane;
        ``("other", xSplit, ySplit, topLeftCell)`` otherwise (splits read as ``int``).
    """
    pane = ws.sheet_view.pane
    if pane is None:
        return ("none",)
    x = int(pane.xSplit or 0)
    y = int(pane.ySplit or 0)
    if (pane.state or "").lower() in ("frozen", "frozensplit"):
        return ("frozen", x, y)
    return ("other", x, y, pane.topLeftCell)
