"""Parity of the spreadsheet metrics (OSWorld's ``table`` module) with ours.

Workbooks are written at test time with openpyxl (a builder per case), or saved by LibreOffice
itself: the module-scoped ``lo`` fixture writes a handful of base books, converts them all in one
``soffice --convert-to xlsx`` call and cases name them (``Lo("name")``), optionally with zip-level
edits of the saved package. ``compare_table`` is called with rule dicts as the task files write
them (``real_checks``) and with variants of each rule type.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from fixture_marks import needs
from office_convert import convert, patch_zip
from openpyxl.chart import BarChart, LineChart, PieChart, Reference
from openpyxl.formatting.rule import CellIsRule, FormulaRule, Rule
from openpyxl.styles import Font, PatternFill
from openpyxl.styles.differential import DifferentialStyle
from openpyxl.worksheet.datavalidation import DataValidation
from osworld_data import needs_osworld_tasks
from parity_harness import ABSENT, OSWorld, assert_same_score, real_checks

pytestmark = pytest.mark.parity

Build = Callable[[Path], None]
Edit = Callable[[Any], None]


# --- builders -----------------------------------------------------------------------------

ROWS: list[list[Any]] = [
    ["Name", "Score", "City"],
    ["Ada", 3.5, "Paris"],
    ["Bob", 7, "Rome"],
    ["Cid", 9.25, "Oslo"],
]


def book(
    rows: list[list[Any]] | None = None,
    *,
    sheets: dict[str, list[list[Any]]] | None = None,
    edit: Edit | None = None,
) -> Build:
    """A builder writing a workbook: ``sheets`` (name -> rows) or one ``Sheet1`` of ``rows``."""
    spec = sheets if sheets is not None else {"Sheet1": ROWS if rows is None else rows}

    def build(path: Path) -> None:
        wb = openpyxl.Workbook()
        for index, (name, data) in enumerate(spec.items()):
            ws = wb.active if index == 0 else wb.create_sheet()
            ws.title = name
            for row in data:
                ws.append(row)
        if edit is not None:
            edit(wb)
        wb.save(path)

    return build


def with_rows(change: dict[str, Any], rows: list[list[Any]] | None = None) -> list[list[Any]]:
    """``rows`` (default ``ROWS``) with cells replaced: ``{"B2": 4}``."""
    data = copy.deepcopy(ROWS if rows is None else rows)
    for coordinate, value in change.items():
        col, row = openpyxl.utils.cell.coordinate_from_string(coordinate)
        c = openpyxl.utils.column_index_from_string(col) - 1
        while len(data) < row:
            data.append([])
        while len(data[row - 1]) <= c:
            data[row - 1].append(None)
        data[row - 1][c] = value
    return data


def edits(*steps: Edit) -> Edit:
    def run(wb: Any) -> None:
        for step in steps:
            step(wb)

    return run


def on_sheet(step: Callable[[Any], None], sheet: int = 0) -> Edit:
    return lambda wb: step(wb.worksheets[sheet])


@dataclass(frozen=True)
class Lo:
    """A book saved by LibreOffice (a base of ``LO_BASES``), optionally edited in its zip."""

    name: str
    edits: dict[str, Callable[[bytes], bytes] | None] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Lo({self.name})"


def xml_sub(pattern: str, repl: str, count: int = 0) -> Callable[[bytes], bytes]:
    return lambda data: re.sub(pattern, repl, data.decode("utf-8"), count=count).encode("utf-8")


Spec = Build | Lo | None | Any


def materialise(spec: Spec, folder: Path, name: str, lo: dict[str, Path]) -> Path | None:
    """The file of a case argument at ``folder/name``."""
    if spec is None:
        return None
    path = folder.resolve() / name
    if spec is ABSENT:
        return path
    if isinstance(spec, Lo):
        if spec.edits:
            patch_zip(lo[spec.name], path, spec.edits)
        else:
            shutil.copyfile(lo[spec.name], path)
        return path
    if isinstance(spec, bytes):
        path.write_bytes(spec)
        return path
    spec(path)
    return path


# --- LibreOffice-saved bases ----------------------------------------------------------------


def _styled(ws: Any) -> None:
    ws["A1"].font = Font(bold=True, color="FFFF0000", name="Arial", size=12)
    ws["B2"].fill = PatternFill("solid", fgColor="FFFFFF00")
    ws["B3"].number_format = "0.00%"
    ws["C4"].hyperlink = "https://example.com/"


def _cf(ws: Any) -> None:
    ws.conditional_formatting.add(
        "B2:B4",
        CellIsRule(operator="greaterThan", formula=["5"], fill=PatternFill(bgColor="FFFF0000")),
    )
    ws.conditional_formatting.add(
        "B2:B4",
        CellIsRule(operator="lessThan", formula=["5"], font=Font(color="FF0000FF")),
    )


# Ten days from Monday 2024-01-01: the weekend is A7 (Saturday) and A8 (Sunday); the highest
# value is B6.
CALENDAR: list[list[Any]] = [
    ["Date", "Value"],
    *[
        [date(2024, 1, 1) + timedelta(days=i), v]
        for i, v in enumerate([3, 8, 1, 5, 12, 7, 2, 9, 4, 6])
    ],
]
WEEKEND = ["A7", "A8"]


def _expr(ws: Any, formula: str, cells: str = "B2:B4", colour: str = "FFFF0000") -> None:
    """An ``expression`` conditional format (fill and font colour) on ``cells``."""
    ws.conditional_formatting.add(
        cells,
        FormulaRule(formula=[formula], fill=PatternFill(bgColor=colour), font=Font(color=colour)),
    )


def _calendar_cf(ws: Any) -> None:
    _expr(ws, "WEEKDAY(A2,2)>5", "A2:A11")
    _expr(ws, "B2=MAX($B$2:$B$11)", "B2:B11")


def _calendar_painted(ws: Any) -> None:
    _paint(ws, [*WEEKEND, "B6"], "FFFF0000")


def _freeze(cell: str) -> Edit:
    return on_sheet(lambda ws: setattr(ws, "freeze_panes", cell))


def _zoom(scale: int) -> Edit:
    return on_sheet(lambda ws: setattr(ws.sheet_view, "zoomScale", scale))


def _validation(formula: str, ref: str = "D2:D29", kind: str = "list") -> Edit:
    def add(ws: Any) -> None:
        dv = DataValidation(type=kind, formula1=formula, allow_blank=True)
        dv.add(ref)
        ws.add_data_validation(dv)

    return on_sheet(add)


def _hide_row(row: int) -> Edit:
    return on_sheet(lambda ws: setattr(ws.row_dimensions[row], "hidden", True))


def _col_width(col: str, width: float) -> Edit:
    return on_sheet(lambda ws: setattr(ws.column_dimensions[col], "width", width))


def _auto_filter(ref: str, col: int | None = None, values: list[str] | None = None) -> Edit:
    def add(ws: Any) -> None:
        ws.auto_filter.ref = ref
        if col is not None:
            ws.auto_filter.add_filter_column(col, values or [])

    return on_sheet(add)


def _chart(kind: str = "bar", title: str | None = "Scores", direction: str = "col") -> Edit:
    def add(ws: Any) -> None:
        chart: Any = {"bar": BarChart, "line": LineChart, "pie": PieChart}[kind]()
        if kind == "bar":
            chart.type = direction
        if title is not None:
            chart.title = title
        chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=4))
        ws.add_chart(chart, "E2")

    return on_sheet(add)


def _merge(cells: str, sheet: int = 0) -> Edit:
    return on_sheet(lambda ws: ws.merge_cells(cells), sheet)


def _formulas(ws: Any) -> None:
    ws["D1"] = "Double"
    for row in range(2, 5):
        ws[f"D{row}"] = f"=B{row}*2"
    ws["E1"] = "Label"
    ws["E2"] = '=A2&"!"'


TWO_SHEETS = {"Sheet1": ROWS, "Sheet2": [["Investment Summary"], ["High Interest Rate"]]}

_SPARK_EXT = (
    '<extLst><ext uri="{{05C60535-1F16-4fd2-B633-F4F36F0B64E0}}" '
    'xmlns:x14="http://schemas.microsoft.com/office/spreadsheetml/2009/9/main">'
    '<x14:sparklineGroups xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main">'
    '<x14:sparklineGroup displayEmptyCellsAs="gap"><x14:colorSeries rgb="FF376092"/>'
    "<x14:sparklines>{lines}</x14:sparklines></x14:sparklineGroup>"
    "</x14:sparklineGroups></ext></extLst>"
)


def sparkline_book(lines: dict[str, str], base: Build | None = None, sheet: int = 1) -> Build:
    """A book (default ``book()``) whose sheet part ``sheet`` gets x14 sparklines."""

    def build(path: Path) -> None:
        source = path.with_name("plain-" + path.name)
        (base or book())(source)
        xml = "".join(
            f"<x14:sparkline><xm:f>{f}</xm:f><xm:sqref>{cell}</xm:sqref></x14:sparkline>"
            for cell, f in lines.items()
        )
        ext = _SPARK_EXT.format(lines=xml)
        patch_zip(
            source,
            path,
            {f"xl/worksheets/sheet{sheet}.xml": xml_sub(r"</worksheet>", ext + "</worksheet>")},
        )

    return build


LO_BASES: dict[str, Build] = {
    "plain": book(),
    "plain_copy": book(),
    "changed": book(with_rows({"B3": 8})),
    "strings": book([["  padded ", "x"], ["Rd 5", "+1 (555) 010"], ["ÆØÅ", "tab\there"]]),
    "styled": book(edit=on_sheet(_styled)),
    "cf": book(edit=on_sheet(_cf)),
    "cf_expression": book(CALENDAR, edit=on_sheet(_calendar_cf)),
    "calendar_painted": book(CALENDAR, edit=on_sheet(_calendar_painted)),
    "formulas": book(edit=on_sheet(_formulas)),
    "freeze_b2": book(edit=_freeze("B2")),
    "freeze_a2": book(edit=_freeze("A2")),
    "zoom_150": book(edit=_zoom(150)),
    "validation": book(edit=_validation('"Pass,Fail,Held"')),
    "hidden_row": book(edit=_hide_row(3)),
    "col_width": book(edit=_col_width("A", 25)),
    "filter": book(edit=_auto_filter("A1:C4", 2, ["Rome"])),
    "chart_bar": book(edit=_chart("bar")),
    "chart_line": book(edit=_chart("line")),
    "two_sheets": book(sheets=TWO_SHEETS),
    "merged": book(sheets=TWO_SHEETS, edit=_merge("A1:C1", 1)),
    "sparklines": sparkline_book({"D2": "Sheet1!B2:C2", "D3": "Sheet1!B3:C3"}),
}


@pytest.fixture(scope="module")
@needs("apps")
def lo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The ``LO_BASES`` books written by openpyxl, then saved by LibreOffice as .xlsx."""
    folder = tmp_path_factory.mktemp("lo-table")
    sources = []
    for name, build in LO_BASES.items():
        path = folder / "src" / f"{name}.xlsx"
        path.parent.mkdir(exist_ok=True)
        build(path)
        sources.append(path)
    return convert(sources, "xlsx:Calc Office Open XML", folder / "lo")


def needs_lo(*specs: Spec) -> bool:
    return any(isinstance(s, Lo) for s in specs)


@pytest.fixture
def lo_books(request: pytest.FixtureRequest) -> dict[str, Path]:
    """The LibreOffice books, requested only by cases that use one."""
    specs = [v for v in request.node.callspec.params.values()]
    if not needs_lo(*specs):
        return {}
    return request.getfixturevalue("lo")


def run_table(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rules: list[dict[str, Any]],
    csv: dict[str, str] | None = None,
) -> None:
    r = materialise(result, tmp_path, "result.xlsx", lo_books)
    e = materialise(expected, tmp_path, "expected.xlsx", lo_books)
    for name, text in (csv or {}).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert_same_score(osworld, "compare_table", r, e, rules=rules)


def _rule(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def _real_rules(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """Distinct ``kind`` rules of the task files: (task id, rule)."""
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for task, _, _, options in real_checks("compare_table"):
        for rule in options.get("rules", []):
            if rule["type"] == kind:
                seen.setdefault(json.dumps(rule, sort_keys=True), (task, rule))
    return list(seen.values())


DATA = _rule("sheet_data", sheet_idx0=0, sheet_idx1="EI0")


# --- sheet_name ---------------------------------------------------------------------------

SHEET_NAME = [
    pytest.param(book(), book(), id="same"),
    pytest.param(book(sheets=TWO_SHEETS), book(sheets=TWO_SHEETS), id="same-two"),
    pytest.param(book(sheets=TWO_SHEETS), book(), id="extra-sheet"),
    pytest.param(
        book(sheets={"Sheet2": [], "Sheet1": []}),
        book(sheets={"Sheet1": [], "Sheet2": []}),
        id="order",
    ),
    pytest.param(book(sheets={"sheet1": []}), book(), id="case"),
    pytest.param(book(), None, id="no-expected"),
    pytest.param(Lo("two_sheets"), book(sheets=TWO_SHEETS), id="lo-vs-openpyxl"),
    pytest.param(Lo("plain"), Lo("plain_copy"), id="lo-both"),
]


@pytest.mark.parametrize(("result", "expected"), SHEET_NAME)
def test_sheet_name(
    osworld: OSWorld, tmp_path: Path, lo_books: dict[str, Path], result: Spec, expected: Spec
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [_rule("sheet_name")])


# --- sheet_data ---------------------------------------------------------------------------

SHEET_DATA_BOOKS = [
    pytest.param(book(), book(), id="equal"),
    pytest.param(book(with_rows({"B3": 8})), book(), id="value-differs"),
    pytest.param(book(with_rows({"B2": 3.50001})), book(), id="within-precision"),
    pytest.param(book(with_rows({"B2": 3.5001})), book(), id="beyond-precision"),
    pytest.param(book(with_rows({"B3": "7"})), book(), id="text-vs-number"),
    pytest.param(book(with_rows({"D1": "Extra"})), book(), id="extra-column"),
    pytest.param(book([*ROWS, ["Dan", 1, "Nice"]]), book(), id="extra-row"),
    pytest.param(book(with_rows({"A1": "name"})), book(), id="header-case"),
    pytest.param(book(with_rows({"B3": None})), book(with_rows({"B3": None})), id="nan-both"),
    pytest.param(book(with_rows({"B3": 7.0})), book(), id="int-vs-float"),
    pytest.param(book([]), book([]), id="both-empty"),
    pytest.param(book([]), book(), id="result-empty"),
    pytest.param(book(with_rows({"A2": "Ada "})), book(), id="trailing-space"),
    pytest.param(Lo("plain"), book(), id="lo-vs-openpyxl"),
    pytest.param(Lo("plain"), Lo("plain_copy"), id="lo-both"),
    pytest.param(Lo("changed"), Lo("plain"), id="lo-changed"),
    pytest.param(Lo("formulas"), book(edit=on_sheet(_formulas)), id="lo-formulas-vs-uncached"),
    pytest.param(Lo("formulas"), Lo("formulas"), id="lo-formulas-both"),
    pytest.param(Lo("styled"), Lo("plain"), id="lo-styles-only"),
    pytest.param(
        Lo("plain", {"xl/sharedStrings.xml": xml_sub("Rome", "Roma")}),
        Lo("plain"),
        id="lo-zip-edited",
    ),
    pytest.param(b"not a workbook", book(), id="corrupt-result"),
    pytest.param(ABSENT, book(), id="absent-result"),
    pytest.param(None, book(), id="none-result"),
    pytest.param(book(), b"not a workbook", id="corrupt-expected"),
    pytest.param(book(), ABSENT, id="absent-expected"),
    pytest.param(book(), None, id="no-expected"),
]


@pytest.mark.parametrize(("result", "expected"), SHEET_DATA_BOOKS)
def test_sheet_data(
    osworld: OSWorld, tmp_path: Path, lo_books: dict[str, Path], result: Spec, expected: Spec
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [DATA])


def _sheet_data_real() -> list[Any]:
    books = book(sheets={f"Sheet{i + 1}": with_rows({"A2": f"s{i}"}) for i in range(8)})
    other = book(sheets={f"Sheet{i + 1}": with_rows({"B2": i}) for i in range(8)})
    named = book(sheets={"Sheet1": ROWS, "Sheet2": ROWS, "unseen_movies": ROWS})
    cases = []
    for task, rule in _real_rules("sheet_data"):
        key = "-".join(str(rule[k]) for k in ("sheet_idx0", "sheet_idx1"))
        cases.append(pytest.param(books, books, rule, id=f"{task}-{key}-equal"))
        cases.append(pytest.param(other, books, rule, id=f"{task}-{key}-differs"))
        cases.append(pytest.param(named, named, rule, id=f"{task}-{key}-few-sheets"))
    return cases


SHEET_DATA_RULES = [
    *_sheet_data_real(),
    pytest.param(book(with_rows({"B2": 3.46})), book(), {**DATA, "precision": 1}, id="precision-1"),
    pytest.param(book(with_rows({"B2": 3.46})), book(), {**DATA, "precision": 2}, id="precision-2"),
    pytest.param(book(), book(), {**DATA, "sheet_idx0": 5}, id="index-out-of-range"),
    pytest.param(book(), book(), {**DATA, "sheet_idx1": "EI5"}, id="expected-out-of-range"),
    pytest.param(book(), book(), {**DATA, "sheet_idx0": -1}, id="negative-index"),
    pytest.param(book(), book(), {**DATA, "sheet_idx0": "RNnope"}, id="unknown-name"),
    pytest.param(book(), book(), {**DATA, "sheet_idx1": "ENnope"}, id="unknown-expected-name"),
    pytest.param(book(), book(), {**DATA, "sheet_idx0": "RIx"}, id="bad-position"),
    pytest.param(book(), book(), {**DATA, "sheet_idx0": "XX0"}, id="bad-prefix"),
    pytest.param(book(), None, DATA, id="expected-index-without-expected"),
    pytest.param(book(), None, {**DATA, "sheet_idx1": "RI0"}, id="result-only"),
]


@pytest.mark.parametrize(("result", "expected", "rule"), SHEET_DATA_RULES)
def test_sheet_data_rules(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


# --- sheet_print --------------------------------------------------------------------------

PRINT = _rule("sheet_print", sheet_idx0="RNSheet1", sheet_idx1="ENSheet1")
CSV = "Name,Score\nAda,3.5\nBob,7\n"

SHEET_PRINT = [
    pytest.param({"result-Sheet1.csv": CSV, "expected-Sheet1.csv": CSV}, PRINT, id="equal"),
    pytest.param(
        {"result-Sheet1.csv": CSV.replace("7", "8"), "expected-Sheet1.csv": CSV},
        PRINT,
        id="differs",
    ),
    pytest.param(
        {"result-Sheet1.csv": CSV + "\n\n", "expected-Sheet1.csv": CSV},
        PRINT,
        id="trailing-blank-lines",
    ),
    pytest.param(
        {"result-Sheet1.csv": "\n" + CSV, "expected-Sheet1.csv": CSV}, PRINT, id="leading-blank"
    ),
    pytest.param(
        {"result-Sheet1.csv": CSV.replace(",", " , "), "expected-Sheet1.csv": CSV},
        PRINT,
        id="inner-spaces",
    ),
    pytest.param(
        {"result-Sheet1.csv": "  " + CSV.replace("\n", "  \n"), "expected-Sheet1.csv": CSV},
        PRINT,
        id="outer-spaces",
    ),
    pytest.param({"result-Sheet1.csv": CSV.upper(), "expected-Sheet1.csv": CSV}, PRINT, id="case"),
    pytest.param(
        {"result-Sheet1.csv": CSV.upper(), "expected-Sheet1.csv": CSV},
        {**PRINT, "ignore_case": True},
        id="ignore-case",
    ),
    pytest.param(
        {"result-Sheet1.csv": CSV.replace("\n", "\r\n"), "expected-Sheet1.csv": CSV},
        PRINT,
        id="crlf",
    ),
    pytest.param(
        {"result-Sheet1.csv": "\ufeff" + CSV, "expected-Sheet1.csv": CSV}, PRINT, id="bom"
    ),
    pytest.param({"expected-Sheet1.csv": CSV}, PRINT, id="result-csv-missing"),
    pytest.param({"result-Sheet1.csv": CSV}, PRINT, id="expected-csv-missing"),
    pytest.param({}, PRINT, id="both-missing"),
    pytest.param(
        {"result-Sheet1.csv": CSV, "expected-Sheet1.csv": CSV},
        _rule("sheet_print", sheet_idx0=0, sheet_idx1="EI0"),
        id="by-position",
    ),
    pytest.param(
        {"result-Sheet1.csv": CSV, "expected-Sheet1.csv": CSV},
        _rule("sheet_print", sheet_idx0=3, sheet_idx1="EI0"),
        id="position-out-of-range",
    ),
    pytest.param(
        {"result-.csv": CSV, "expected-Sheet1.csv": CSV},
        _rule("sheet_print", sheet_idx0=3, sheet_idx1="EI0"),
        id="out-of-range-reads-dash-csv",
    ),
    pytest.param(
        {"result-Sheet1.csv": "a\u2028b\n", "expected-Sheet1.csv": "a\nb\n"},
        PRINT,
        id="unicode-line-separator",
    ),
    pytest.param(
        {"result-Sheet1.csv": "Zoë,Zürich\n", "expected-Sheet1.csv": "Zoë,Zürich\n"},
        PRINT,
        id="unicode",
    ),
]


@pytest.mark.parametrize(("csv", "rule"), SHEET_PRINT)
def test_sheet_print(
    osworld: OSWorld, tmp_path: Path, csv: dict[str, str], rule: dict[str, Any]
) -> None:
    run_table(osworld, tmp_path, {}, book(), book(), [rule], csv)


def _sheet_print_real() -> list[Any]:
    cases = []
    for task, rule in _real_rules("sheet_print"):
        a, b = (f"{side}-Sheet1.csv" for side in ("result", "expected"))
        cases.append(pytest.param({a: CSV, b: CSV}, rule, id=f"{task}-equal"))
        cases.append(pytest.param({a: CSV.lower(), b: CSV}, rule, id=f"{task}-lower"))
        cases.append(pytest.param({a: "x\n", b: CSV}, rule, id=f"{task}-differs"))
    return cases


@needs_osworld_tasks  # its cases are OSWorld's rules only
@pytest.mark.parametrize(("csv", "rule"), _sheet_print_real())
def test_sheet_print_real(
    osworld: OSWorld, tmp_path: Path, csv: dict[str, str], rule: dict[str, Any]
) -> None:
    run_table(osworld, tmp_path, {}, book(), book(), [rule], csv)


def test_sheet_print_latin1(osworld: OSWorld, tmp_path: Path) -> None:
    (tmp_path / "result-Sheet1.csv").write_bytes("Zoë,1\n".encode("latin-1"))
    run_table(osworld, tmp_path, {}, book(), book(), [PRINT], {"expected-Sheet1.csv": "Zoë,1\n"})


# --- sheet_fuzzy --------------------------------------------------------------------------

FUZZY_ROWS = [
    ["Name", "Address", "Phone", "Code"],
    ["Ada", "12 Main Rd", "+1 (555) 010-1234", "A1"],
    ["Bob", "3 High St", "555-0101", "B2"],
    ["Cid", "9 Park Road", "(555) 0102", "C3"],
    ["Dee", "1 Low St", "5550103", "D4"],
    ["Eve", "2 Side Rd", "+1 555 0104", "E5"],
]


def _fuzzy_real() -> list[Any]:
    cases = []
    expected_rows = [
        ["Name", "Address", "Phone", "Code"],
        ["Ada", "12 Main Road", "5550101234", "A1"],
        ["Bob", "3 High Street", "5550101", "B2"],
        ["Cid", "9 Park Road", "5550102", "C3"],
        ["Dee", "1 Low Street", "5550103", "D4"],
        ["Eve", "2 Side Road", "15550104", "E5"],
    ]
    for task, rule in _real_rules("sheet_fuzzy"):
        base = book(FUZZY_ROWS)
        cases += [
            pytest.param(base, base, rule, id=f"{task}-equal"),
            pytest.param(base, book(expected_rows), rule, id=f"{task}-normalised"),
            pytest.param(
                book([[str(v).lower() for v in row] for row in FUZZY_ROWS]),
                base,
                rule,
                id=f"{task}-lower",
            ),
            pytest.param(
                book([[f" {v} " for v in row] for row in FUZZY_ROWS]),
                base,
                rule,
                id=f"{task}-padded",
            ),
            pytest.param(book(with_rows({"A3": "Rob"}, FUZZY_ROWS)), base, rule, id=f"{task}-typo"),
            pytest.param(book([]), base, rule, id=f"{task}-empty-result"),
        ]
    return cases


def _fz(kind: str, rng: list[str], **extra: Any) -> dict[str, Any]:
    return _rule(
        "sheet_fuzzy",
        sheet_idx0="RNSheet1",
        sheet_idx1="ENSheet1",
        rules=[{"range": rng, "type": kind, **extra}],
    )


SHEET_FUZZY = [
    *_fuzzy_real(),
    pytest.param(book(), book(), _fz("exact_match", ["A1:C4"]), id="exact-equal"),
    pytest.param(book(with_rows({"C3": "Roma"})), book(), _fz("exact_match", ["C1:C4"]), id="x"),
    pytest.param(
        book(with_rows({"C3": "Rome, Italy"})), book(), _fz("includes", ["C3"]), id="includes"
    ),
    pytest.param(
        book(with_rows({"C3": "Ro"})), book(), _fz("included_by", ["C3"]), id="included-by"
    ),
    pytest.param(
        book(with_rows({"C3": "Rone"})),
        book(),
        _fz("fuzzy_match", ["C3"], threshold=70),
        id="fuzzy-70",
    ),
    pytest.param(
        book(with_rows({"C3": "Rone"})), book(), _fz("fuzzy_match", ["C3"]), id="fuzzy-default"
    ),
    pytest.param(
        book(with_rows({"B2": 3.5})),
        book(with_rows({"B2": "3.5"})),
        _fz("exact_match", ["B2"]),
        id="number-vs-text",
    ),
    pytest.param(
        book(with_rows({"B3": 7.0})), book(), _fz("exact_match", ["B3"]), id="int-float-text"
    ),
    pytest.param(book(), book(), _fz("exact_match", ["F10"]), id="empty-cells"),
    pytest.param(
        book(with_rows({"A2": " Ada"})),
        book(),
        _fz("exact_match", ["A2"], trim_leadings=" "),
        id="inline-space-trim",
    ),
    pytest.param(
        book(with_rows({"A2": "A-d(a)"})),
        book(),
        _fz("exact_match", ["A2"], ignore_chars="-()"),
        id="ignore-chars",
    ),
    pytest.param(
        book(with_rows({"A2": "ADA"})),
        book(),
        _fz("exact_match", ["A2"], ignore_case=True),
        id="ignore-case",
    ),
    pytest.param(
        book(with_rows({"C2": "P."})),
        book(),
        _fz("exact_match", ["C2"], normalization=[["P.", "Paris"]]),
        id="normalization",
    ),
    pytest.param(Lo("plain"), Lo("plain_copy"), _fz("exact_match", ["A1:C4"]), id="lo-equal"),
    pytest.param(Lo("changed"), Lo("plain"), _fz("exact_match", ["A1:C4"]), id="lo-changed"),
    pytest.param(Lo("plain"), book(), _fz("exact_match", ["A1:C4"]), id="lo-vs-inline"),
    pytest.param(Lo("strings"), Lo("strings"), _fz("exact_match", ["A1:B3"]), id="lo-strings"),
    pytest.param(
        Lo("strings"),
        book([["padded", "x"], ["Rd 5", "+1 (555) 010"], ["ÆØÅ", "tab\there"]]),
        _fz("exact_match", ["A1:B3"], trim_leadings=" ", trim_trailings=" "),
        id="lo-strings-trimmed",
    ),
    pytest.param(Lo("formulas"), Lo("formulas"), _fz("exact_match", ["D1:E4"]), id="lo-formulas"),
    pytest.param(
        Lo("formulas"),
        book(
            with_rows({"D1": "Double", "D2": 7, "D3": 14, "D4": 18.5, "E1": "Label", "E2": "Ada!"})
        ),
        _fz("exact_match", ["D1:E4"]),
        id="lo-formulas-vs-values",
    ),
    pytest.param(
        Lo("plain", {"xl/sharedStrings.xml": None}),
        Lo("plain"),
        _fz("exact_match", ["A1:C4"]),
        id="lo-no-shared-strings",
    ),
    pytest.param(
        Lo("plain", {"xl/sharedStrings.xml": xml_sub(r"<t([^>]*)>Rome</t>", r"<t\1></t>")}),
        Lo("plain"),
        _fz("exact_match", ["C2"]),
        id="lo-empty-shared-string",
    ),
    pytest.param(
        Lo(
            "plain",
            {"xl/worksheets/sheet1.xml": xml_sub(r'(<c r="B3"[^>]*>)<v>7</v>', r"\1<v></v>")},
        ),
        Lo("plain"),
        _fz("exact_match", ["B3"]),
        id="lo-empty-number",
    ),
    pytest.param(
        Lo("plain", {"xl/worksheets/sheet1.xml": xml_sub(r'(<c r="A2"[^>]*><v>)\d+', r"\g<1>99")}),
        Lo("plain"),
        _fz("exact_match", ["A2"]),
        id="lo-shared-index-out-of-range",
    ),
    pytest.param(book(), None, _fz("exact_match", ["A1"]), id="no-expected"),
    pytest.param(
        book(),
        book(),
        {**_fz("exact_match", ["A1"]), "sheet_idx0": "RNnope"},
        id="unknown-sheet",
    ),
]


@pytest.mark.parametrize(("result", "expected", "rule"), SHEET_FUZZY)
def test_sheet_fuzzy(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


# --- check_cell ---------------------------------------------------------------------------


def _cell(coordinate: str, sheet: Any = 0, **props: Any) -> dict[str, Any]:
    return _rule("check_cell", sheet_idx=sheet, coordinate=coordinate, props=props)


def _eq(ref: Any) -> dict[str, Any]:
    return {"method": "eq", "ref": ref}


def _check_cell_real() -> list[Any]:
    merged = book(
        sheets={
            "Sheet1": ROWS,
            "Sheet2": [
                ["Investment Summary"],
                ["High Interest Rate", None, "Low Interest Rate"],
            ],
        },
        edit=edits(_merge("A1:C1", 1), _merge("A2:B2", 1), _merge("C2:D2", 1)),
    )

    def demographic(wb: Any) -> None:
        ws = wb.create_sheet("Sheet2")
        ws["A1"] = "Demographic Profile"
        ws["A1"].fill = PatternFill("solid", fgColor="FF0000FF")
        ws["A1"].font = Font(color="FFFFFFFF", bold=True)

    values = book(
        [
            ["x", None, None, None, None],
            [None] * 5,
            [None, None, None, None, 191.66668],
            *[[None] * 5 for _ in range(5)],
            *[
                [None, None, None, d, e]
                for d, e in zip(
                    [-186.93, -3670, -5.7, -154.06, -8.1],
                    [603.07, -3066.93, -3072.63, -3226.69, -3234.79],
                    strict=True,
                )
            ],
        ]
    )
    books = {
        "merged": merged,
        "demographic": book(edit=demographic),
        "values": values,
        "plain": book(),
    }
    cases = []
    seen_tasks: set[str] = set()
    for task, rule in _real_rules("check_cell"):
        for name, build in books.items():
            if (task, name) in seen_tasks and name == "plain":
                continue
            seen_tasks.add((task, name))  # type: ignore[arg-type]
            cases.append(pytest.param(build, None, rule, id=f"{task}-{rule['coordinate']}-{name}"))
    return cases


CHECK_CELL = [
    *_check_cell_real(),
    pytest.param(book(), None, _cell("A2", value=_eq("Ada")), id="text-eq"),
    pytest.param(book(), None, _cell("A2", value=_eq("ada")), id="text-ne"),
    pytest.param(book(), None, _cell("B2", value=_eq(3.5)), id="number-eq"),
    pytest.param(book(), None, _cell("B3", value=_eq(7)), id="int-eq-float"),
    pytest.param(book(), None, _cell("B3", value={"method": "gt", "ref": 5}), id="gt"),
    pytest.param(book(), None, _cell("A2", value={"method": "gt", "ref": 5}), id="gt-type-error"),
    pytest.param(book(), None, _cell("A2", value={"method": "re.I", "ref": "^ad"}), id="re-flag"),
    pytest.param(book(), None, _cell("B2", value={"method": "re", "ref": "3"}), id="re-number"),
    pytest.param(
        book(), None, _cell("B2", value={"method": "approx:0.1", "ref": 3.45}), id="approx"
    ),
    pytest.param(
        book(), None, _cell("A2", value={"method": "approx:0.1", "ref": 3.45}), id="approx-text"
    ),
    pytest.param(
        book(), None, _cell("B3", value={"method": "range.te", "ref": [5, 7]}), id="range"
    ),
    pytest.param(
        book(with_rows({"A2": "Pass,Fail"})),
        None,
        _cell("A2", value={"method": "str_set_eq", "ref": ["Fail", "Pass"]}),
        id="str-set-eq",
    ),
    pytest.param(
        book(),
        None,
        _cell("B3", value={"method": "str_set_eq", "ref": ["7.0"]}),
        id="str-set-eq-on-number",
    ),
    pytest.param(book(), None, _cell("Z99", value=_eq(None)), id="empty-cell-none"),
    pytest.param(book(), None, _cell("A2", value={"method": "bogus", "ref": 1}), id="bad-method"),
    pytest.param(book(), None, _cell("A1", font_bold=_eq(True)), id="not-bold"),
    pytest.param(book(edit=on_sheet(_styled)), None, _cell("A1", font_bold=_eq(True)), id="bold"),
    pytest.param(
        book(edit=on_sheet(_styled)),
        None,
        _cell("A1", font_color=_eq("FFFF0000"), font_name=_eq("Arial"), font_size=_eq(12)),
        id="font",
    ),
    pytest.param(
        book(edit=on_sheet(_styled)), None, _cell("B2", bgcolor=_eq("FFFFFF00")), id="bgcolor"
    ),
    pytest.param(
        book(edit=on_sheet(_styled)), None, _cell("B2", fill_type=_eq("patternFill")), id="fill"
    ),
    pytest.param(
        book(edit=on_sheet(_styled)), None, _cell("B3", number_format=_eq("0.00%")), id="numfmt"
    ),
    pytest.param(
        book(edit=on_sheet(_styled)), None, _cell("A3", number_format=_eq(None)), id="numfmt-text"
    ),
    pytest.param(
        book(edit=on_sheet(_styled)),
        None,
        _cell("C4", hyperlink={"method": "re", "ref": "example"}),
        id="hyperlink",
    ),
    pytest.param(book(), None, _cell("A1", font_strike=_eq(None)), id="unknown-style-none"),
    pytest.param(book(), None, _cell("A1", font_strike=_eq(True)), id="unknown-style"),
    pytest.param(book(), None, _cell("A2", sheet="RNnope", value=_eq("Ada")), id="no-sheet"),
    pytest.param(book(), None, _cell("A2", sheet=3, value=_eq("Ada")), id="index-past-end"),
    pytest.param(book(), book(), _cell("A2", sheet="EI0", value=_eq("Ada")), id="expected-sheet"),
    pytest.param(book(), None, _cell("A2", sheet="EI0", value=_eq("Ada")), id="ei-no-expected"),
    pytest.param(book(), None, _cell("not a cell", value=_eq(None)), id="bad-coordinate"),
    pytest.param(book(), b"junk", _cell("A2", value=_eq("Ada")), id="corrupt-unused-expected"),
    pytest.param(book(), ABSENT, _cell("A2", value=_eq("Ada")), id="absent-unused-expected"),
    pytest.param(Lo("plain"), None, _cell("C3", value=_eq("Rome")), id="lo-shared-string"),
    pytest.param(Lo("plain"), None, _cell("B4", value=_eq(9.25)), id="lo-number"),
    pytest.param(Lo("formulas"), None, _cell("D3", value=_eq(14)), id="lo-formula-cached"),
    pytest.param(Lo("formulas"), None, _cell("E2", value=_eq("Ada!")), id="lo-formula-text"),
    pytest.param(
        book(edit=on_sheet(_formulas)), None, _cell("D3", value=_eq(14)), id="uncached-formula"
    ),
    pytest.param(Lo("styled"), None, _cell("A1", font_bold=_eq(True)), id="lo-bold"),
    pytest.param(Lo("styled"), None, _cell("A1", font_color=_eq("FFFF0000")), id="lo-color"),
    pytest.param(Lo("styled"), None, _cell("B2", bgcolor=_eq("FFFFFF00")), id="lo-bgcolor"),
    pytest.param(Lo("styled"), None, _cell("B3", number_format=_eq("0.00%")), id="lo-numfmt"),
    pytest.param(Lo("merged"), None, _cell("B1", sheet="RNSheet2", merge=_eq(True)), id="lo-merge"),
    pytest.param(Lo("merged"), None, _cell("A1", sheet="RNSheet2", merge=_eq(False)), id="lo-m0"),
    pytest.param(
        Lo(
            "plain",
            {"xl/worksheets/sheet1.xml": xml_sub(r'(<c r="B3"[^>]*>)<v>7</v>', r"\1<v></v>")},
        ),
        None,
        _cell("B3", value=_eq(None)),
        id="lo-empty-number-none",
    ),
]


@pytest.mark.parametrize(("result", "expected", "rule"), CHECK_CELL)
def test_check_cell(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


# --- style --------------------------------------------------------------------------------


def _style(*props: str) -> dict[str, Any]:
    return _rule("style", sheet_idx0=0, sheet_idx1="EI0", props=list(props))


def _cf_rule(operator: str, formula: list[str], colour: str = "FFFF0000") -> Edit:
    def add(ws: Any) -> None:
        ws.conditional_formatting.add(
            "B2:B4",
            CellIsRule(
                operator=operator,
                formula=formula,
                fill=PatternFill(bgColor=colour),
                font=Font(color=colour),
            ),
        )

    return on_sheet(add)


def _style_real() -> list[Any]:
    cases = []
    for task, rule in _real_rules("style"):
        cases += [
            pytest.param(book(), book(), rule, id=f"{task}-plain"),
            pytest.param(book(edit=_cf_rule("greaterThan", ["5"])), book(), rule, id=f"{task}-cf"),
            pytest.param(
                book(edit=_cf_rule("greaterThan", ["5"])),
                book(edit=_cf_rule("greaterThan", ["5"])),
                rule,
                id=f"{task}-cf-both",
            ),
            pytest.param(
                book(edit=_cf_rule("greaterThan", ["5"])),
                book(edit=on_sheet(lambda ws: _paint(ws, ["B3", "B4"], "FFFF0000"))),
                rule,
                id=f"{task}-cf-vs-painted",
            ),
            pytest.param(Lo("cf"), book(edit=on_sheet(_cf)), rule, id=f"{task}-lo-cf"),
            pytest.param(Lo("styled"), Lo("styled"), rule, id=f"{task}-lo-styled"),
        ]
    return cases


def _paint(ws: Any, cells: list[str], colour: str) -> None:
    for c in cells:
        ws[c].fill = PatternFill("solid", fgColor=colour, bgColor=colour)
        ws[c].font = Font(color=colour)


def _expr_rule(formula: str, cells: str = "B2:B4", colour: str = "FFFF0000") -> Edit:
    return on_sheet(lambda ws: _expr(ws, formula, cells, colour))


def _painted(
    cells: list[str], rows: list[list[Any]] | None = None, colour: str = "FFFF0000"
) -> Build:
    return book(rows, edit=on_sheet(lambda ws: _paint(ws, cells, colour)))


def _dxf(colour: str) -> DifferentialStyle:
    return DifferentialStyle(fill=PatternFill(bgColor=colour), font=Font(color=colour))


def _typed_rule(cells: str, kind: str, formula: list[str], **fields: Any) -> Edit:
    """A conditional format of another type (``containsText``, ``top10``, ...) on ``cells``."""
    return on_sheet(
        lambda ws: ws.conditional_formatting.add(
            cells, Rule(type=kind, formula=formula, dxf=_dxf("FF0000FF"), **fields)
        )
    )


def _cf_expression_cases() -> list[Any]:
    """``expression`` conditional formats (and the other rule types OSWorld compiles)."""
    bg = _style("bgcolor")
    both = _style("bgcolor", "font_color")

    def case(result: Spec, expected: Spec, rule: dict[str, Any], name: str) -> Any:
        return pytest.param(result, expected, rule, id=f"cf-expr-{name}")

    def cal(*steps: Edit) -> Build:
        return book(CALENDAR, edit=edits(*steps))

    return [
        case(book(edit=_expr_rule("B2>5")), _painted(["B3", "B4"]), both, "vs-painted"),
        case(book(edit=_expr_rule("B2>5")), _painted(["B4"]), both, "vs-painted-fewer"),
        case(book(edit=_expr_rule("B2>5")), book(edit=_expr_rule("B2>8")), bg, "differs"),
        case(
            book(edit=_expr_rule("B2>5")),
            book(edit=_cf_rule("greaterThan", ["5"])),
            bg,
            "vs-cellis",
        ),
        # The highest value (21ab7b40): an absolute range fed as a list.
        case(book(edit=_expr_rule("B2=MAX($B$2:$B$4)")), _painted(["B4"]), both, "max"),
        case(book(edit=_expr_rule("B2=MAX($B$2:$B$4)")), _painted(["B3"]), both, "max-wrong"),
        case(
            cal(_expr_rule("B2=MAX($B$2:$B$11)", "B2:B11")),
            _painted(["B6"], CALENDAR),
            _style("font_color"),
            "max-calendar",
        ),
        case(book(edit=_expr_rule("B2>=LARGE($B$2:$B$4,2)")), _painted(["B3", "B4"]), bg, "large"),
        case(book(edit=_expr_rule("B2>AVERAGE($B$2:$B$4)")), _painted(["B3", "B4"]), bg, "average"),
        # Weekends (8b1ce5f2): the date's serial number fed to WEEKDAY.
        case(
            cal(_expr_rule("WEEKDAY(A2,2)>5", "A2:A11")), _painted(WEEKEND, CALENDAR), bg, "weekend"
        ),
        case(
            cal(_expr_rule("OR(WEEKDAY(A2)=1,WEEKDAY(A2)=7)", "A2:A11")),
            _painted(WEEKEND, CALENDAR),
            bg,
            "weekend-or",
        ),
        case(
            cal(_expr_rule("WEEKDAY($A2,2)>5", "A2:B11")),
            _painted([*WEEKEND, "B7", "B8"], CALENDAR),
            bg,
            "weekend-rows",
        ),
        case(
            cal(_expr_rule("WEEKDAY(A2,2)>5", "A2:A11")),
            _painted(["A7"], CALENDAR),
            bg,
            "weekend-wrong",
        ),
        case(
            cal(_expr_rule("WEEKDAY(A2,2)=5", "A2:A11")), _painted(WEEKEND, CALENDAR), bg, "friday"
        ),
        # Relative and absolute references: the cell's value is the first input, unshifted.
        case(book(edit=_expr_rule("$B2>5")), _painted(["B3", "B4"]), bg, "mixed-column"),
        case(book(edit=_expr_rule("B$2>5")), _painted(["B3", "B4"]), bg, "mixed-row"),
        case(book(edit=_expr_rule("B3>5")), _painted(["B3", "B4"]), bg, "other-row"),
        case(book(edit=_expr_rule("B2+C2>5")), book(), bg, "two-relative"),
        case(book(edit=_expr_rule("B2>$B$3")), book(), bg, "absolute-cell"),
        case(book(edit=_expr_rule("B2=MAX($B$4:$B$2)")), book(), bg, "reversed-range"),
        case(book(edit=_expr_rule("$B$2:$B$3<B2")), book(), bg, "absolute-first"),
        case(book(edit=_expr_rule("B2=MAX($B$2:$C$4)")), _painted(["B4"]), bg, "range-2d"),
        case(book(edit=_expr_rule('C2="Rome"', "C2:C4")), _painted(["C3"]), bg, "text"),
        case(
            book(edit=_expr_rule("ISNUMBER(A1)", "A1:C4")),
            _painted(["B2", "B3", "B4"]),
            bg,
            "header",
        ),
        # Formulas that fail: an error value counts as true; a failed call, a parse error do not.
        case(book(edit=_expr_rule("B2/0")), _painted(["B2", "B3", "B4"]), bg, "div-zero"),
        case(
            book(edit=_expr_rule("C2*2>1", "C2:C4")),
            _painted(["C2", "C3", "C4"]),
            bg,
            "value-error",
        ),
        case(book(edit=_expr_rule("ISERROR(B2/0)")), _painted(["B2", "B3", "B4"]), bg, "iserror"),
        case(book(edit=_expr_rule("1=1")), book(), bg, "no-reference"),
        case(book(edit=_expr_rule("B2>>5")), book(), bg, "unparsable"),
        case(book(edit=_expr_rule("B2>NOSUCHFUNC(1)")), book(), bg, "unknown-function"),
        # Several rules: later ones overwrite; types OSWorld does not evaluate inherit the test.
        case(
            book(edit=edits(_expr_rule("B2>5"), _expr_rule("B2>8", colour="FF00FF00"))),
            book(edit=edits(_expr_rule("B2>5"), _expr_rule("B2>8", colour="FF00FF00"))),
            both,
            "two-rules",
        ),
        case(
            book(edit=edits(_expr_rule("B2>5"), _typed_rule("B2:B4", "top10", [], rank=1))),
            book(),
            bg,
            "then-top10",
        ),
        case(book(edit=_typed_rule("B2:B4", "top10", [], rank=1)), book(), bg, "top10-only"),
        case(
            book(
                edit=edits(
                    _expr_rule("B2>5"),
                    _typed_rule(
                        "B2:B4", "timePeriod", ["FLOOR(B2,1)=TODAY()-1"], timePeriod="yesterday"
                    ),
                )
            ),
            book(),
            bg,
            "then-time-period",
        ),
        case(
            book(
                edit=edits(
                    _cf_rule("lessThan", ["8"]),
                    _typed_rule("B2:C4", "containsBlanks", ["LEN(TRIM(B2))=0"]),
                )
            ),
            book(),
            bg,
            "cellis-then-blanks",
        ),
        case(
            book(
                edit=_typed_rule(
                    "A2:A4",
                    "containsText",
                    ['NOT(ISERROR(SEARCH("o",A2)))'],
                    operator="containsText",
                    text="o",
                )
            ),
            _painted(["A3"], colour="FF0000FF"),
            bg,
            "contains-text",
        ),
        case(book(edit=_typed_rule("A2:A4", "containsText", [])), book(), bg, "text-no-formula"),
        # cellIs operands are formulas too, evaluated without inputs.
        case(
            book(edit=_cf_rule("greaterThan", ["2*3"])),
            _painted(["B3", "B4"]),
            bg,
            "cellis-product",
        ),
        case(book(edit=_cf_rule("greaterThan", ["1E3"])), book(), bg, "cellis-unparsable"),
        case(
            book(edit=_cf_rule("between", ["MIN(1,4)", "8"])),
            _painted(["B2", "B3"]),
            bg,
            "cellis-between",
        ),
        case(book(edit=_cf_rule("greaterThan", ["B3"])), book(), bg, "cellis-relative"),
        # Books LibreOffice saved (it writes the formulas with commas).
        case(Lo("cf_expression"), Lo("calendar_painted"), both, "lo"),
        case(Lo("cf_expression"), Lo("cf_expression"), both, "lo-both"),
        case(Lo("cf_expression"), book(CALENDAR), bg, "lo-vs-plain"),
        case(Lo("cf_expression"), _painted([*WEEKEND, "B6"], CALENDAR), bg, "lo-vs-painted"),
    ]


def _cf_expression_real() -> list[Any]:
    """The style rules of the weekend (8b1ce5f2) and highest-value (21ab7b40) tasks.

    Each is met by an ``expression`` format the agent may write, against the gold's painted
    cells, a wrong painting, the same format and no painting.
    """
    formulas = {
        "8b1ce5f2": ("WEEKDAY(A2,2)>5", "A2:A11", WEEKEND),
        "21ab7b40": ("B2=MAX($B$2:$B$11)", "B2:B11", ["B6"]),
    }
    cases = []
    for task, _, _, options in real_checks("compare_table"):
        if task not in formulas:
            continue
        formula, cells, gold = formulas[task]
        result = book(CALENDAR, edit=_expr_rule(formula, cells))
        for index, rule in enumerate(r for r in options.get("rules", []) if r["type"] == "style"):
            for name, expected in (
                ("gold", _painted(gold, CALENDAR)),
                ("wrong", _painted([gold[0], "B2"], CALENDAR)),
                ("same-rule", result),
                ("plain", book(CALENDAR)),
                ("lo-painted-both", Lo("calendar_painted")),
            ):
                cases.append(pytest.param(result, expected, rule, id=f"{task}-{index}-expr-{name}"))
            cases.append(
                pytest.param(
                    Lo("cf_expression"), Lo("calendar_painted"), rule, id=f"{task}-{index}-lo-expr"
                )
            )
    return cases


CF_EXPRESSION = [*_cf_expression_cases(), *_cf_expression_real()]


STYLE = [
    *_style_real(),
    pytest.param(book(), book(), _style("font_bold", "font_italic"), id="plain"),
    pytest.param(book(edit=on_sheet(_styled)), book(), _style("font_bold"), id="bold-differs"),
    pytest.param(
        book(edit=on_sheet(_styled)),
        book(edit=on_sheet(_styled)),
        _style(
            "number_format",
            "font_name",
            "font_family",
            "font_color",
            "font_bold",
            "font_italic",
            "font_underline",
            "font_size",
            "fill_type",
            "bgcolor",
            "fgcolor",
            "hyperlink",
            "merge",
        ),
        id="all-props",
    ),
    pytest.param(book(), book(), _style("font_strike"), id="unknown-prop"),
    pytest.param(book(), book(), _style(), id="no-props"),
    pytest.param(book([*ROWS, ["Dan"]]), book(), _style(), id="more-cells"),
    pytest.param(
        book(edit=_cf_rule("between", ["4", "8"])),
        book(edit=_cf_rule("between", ["8", "4"])),
        _style("bgcolor"),
        id="cf-between",
    ),
    pytest.param(
        book(edit=_cf_rule("notBetween", ["4", "8"])),
        book(),
        _style("bgcolor"),
        id="cf-not-between",
    ),
    pytest.param(book(edit=_cf_rule("equal", ["7"])), book(), _style("font_color"), id="cf-equal"),
    pytest.param(
        book(edit=_cf_rule("notEqual", ["7"])), book(), _style("font_color"), id="cf-not-equal"
    ),
    pytest.param(
        book(edit=_cf_rule("lessThanOrEqual", ["7"])), book(), _style("bgcolor"), id="cf-le"
    ),
    pytest.param(
        book(edit=_cf_rule("greaterThanOrEqual", ["-3"])), book(), _style("bgcolor"), id="cf-neg"
    ),
    pytest.param(
        book(edit=_cf_rule("greaterThan", ["$B$2"])), book(), _style("bgcolor"), id="cf-cell-ref"
    ),
    pytest.param(book(edit=_cf_rule("equal", ['"Rome"'])), book(), _style("bgcolor"), id="cf-text"),
    pytest.param(
        book(edit=_cf_rule("greaterThan", ["5"])),
        book(edit=_cf_rule("greaterThan", ["8"])),
        _style("bgcolor"),
        id="cf-threshold-differs",
    ),
    pytest.param(
        book(
            edit=on_sheet(
                lambda ws: ws.conditional_formatting.add(
                    "B2:B4", FormulaRule(formula=["B2>5"], fill=PatternFill(bgColor="FFFF0000"))
                )
            )
        ),
        book(
            edit=on_sheet(
                lambda ws: ws.conditional_formatting.add(
                    "B2:B4", FormulaRule(formula=["B2>5"], fill=PatternFill(bgColor="FFFF0000"))
                )
            )
        ),
        _style("bgcolor"),
        id="cf-expression-both",
    ),
    pytest.param(
        book(
            edit=on_sheet(
                lambda ws: ws.conditional_formatting.add(
                    "B2:B4", FormulaRule(formula=["B2>5"], fill=PatternFill(bgColor="FFFF0000"))
                )
            )
        ),
        book(),
        _style("bgcolor"),
        id="cf-expression",
    ),
    *CF_EXPRESSION,
    pytest.param(Lo("cf"), Lo("cf"), _style("bgcolor", "font_color"), id="lo-cf-both"),
    pytest.param(Lo("cf"), Lo("plain"), _style("bgcolor", "font_color"), id="lo-cf-vs-plain"),
    pytest.param(
        Lo("styled"),
        book(edit=on_sheet(_styled)),
        _style("font_bold", "font_color", "bgcolor", "number_format"),
        id="lo-styled-vs-openpyxl",
    ),
    pytest.param(Lo("styled"), Lo("plain"), _style("font_name"), id="lo-font-name"),
    pytest.param(book(), None, _style("bgcolor"), id="no-expected"),
    pytest.param(book(), book(), {**_style("bgcolor"), "sheet_idx0": "RNnope"}, id="no-sheet"),
]


@pytest.mark.parametrize(("result", "expected", "rule"), STYLE)
def test_style(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


# --- freeze, zoom -------------------------------------------------------------------------

FREEZE = _rule("freeze", sheet_idx0=0, sheet_idx1="EI0")


def _scrolled(cell: str, top_left: str) -> Edit:
    def freeze(ws: Any) -> None:
        ws.freeze_panes = cell
        ws.sheet_view.pane.topLeftCell = top_left

    return on_sheet(freeze)


def _split(x: float, y: float) -> Edit:
    def split(ws: Any) -> None:
        from openpyxl.worksheet.views import Pane

        ws.sheet_view.pane = Pane(xSplit=x, ySplit=y, topLeftCell="B2", state="split")

    return on_sheet(split)


SCROLLED = (
    "frozen panes after scrolling: openpyxl's freeze_panes is the pane's topLeftCell, the first "
    "cell shown below/right of the split, which LibreOffice saves where the view was scrolled "
    "to; OSWorld compares it, ours compares the frozen rows and columns (xSplit/ySplit)"
)

FREEZE_CASES = [
    *[
        pytest.param(book(edit=_freeze("B2")), book(edit=_freeze("B2")), rule, id=f"{task}-b2")
        for task, rule in _real_rules("freeze")
    ],
    pytest.param(book(edit=_freeze("B2")), book(edit=_freeze("A2")), FREEZE, id="differs"),
    pytest.param(book(), book(edit=_freeze("A2")), FREEZE, id="none-vs-frozen"),
    pytest.param(book(), book(), FREEZE, id="none-both"),
    pytest.param(
        book(edit=_scrolled("A2", "A40")), book(edit=_freeze("A2")), FREEZE, id="scrolled"
    ),
    pytest.param(
        book(edit=_split(1500, 600)), book(edit=_freeze("B2")), FREEZE, id="split-vs-frozen"
    ),
    pytest.param(Lo("freeze_b2"), book(edit=_freeze("B2")), FREEZE, id="lo-b2"),
    pytest.param(Lo("freeze_a2"), Lo("freeze_b2"), FREEZE, id="lo-differs"),
    pytest.param(Lo("plain"), Lo("freeze_b2"), FREEZE, id="lo-none"),
    pytest.param(
        Lo(
            "freeze_a2",
            {"xl/worksheets/sheet1.xml": xml_sub(r'topLeftCell="A2"', 'topLeftCell="A30"', 1)},
        ),
        Lo("freeze_a2"),
        FREEZE,
        id="lo-scrolled",
    ),
    pytest.param(book(), book(), {**FREEZE, "sheet_idx0": "RNnope"}, id="no-result-sheet"),
    pytest.param(book(), book(), {**FREEZE, "sheet_idx1": "ENnope"}, id="no-expected-sheet"),
]


@pytest.mark.parametrize(("result", "expected", "rule"), FREEZE_CASES)
def test_freeze(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


def _zoom_rule(method: str, ref: Any) -> dict[str, Any]:
    return _rule("zoom", sheet_idx=0, method=method, ref=ref)


ZOOM = [
    *[
        pytest.param(build, rule, id=f"{task}-{label}")
        for task, rule in _real_rules("zoom")
        for label, build in (
            ("100", book()),
            ("300", book(edit=_zoom(300))),
            ("50", book(edit=_zoom(50))),
        )
    ],
    pytest.param(book(), _zoom_rule("eq", 100), id="default-100"),
    pytest.param(book(edit=_zoom(150)), _zoom_rule("eq", 150), id="eq"),
    pytest.param(book(edit=_zoom(150)), _zoom_rule("ge", 200), id="ge"),
    pytest.param(book(edit=_zoom(150)), _zoom_rule("range.ee", [100, 150]), id="range"),
    pytest.param(book(edit=_zoom(150)), _zoom_rule("approx:5", 148), id="approx"),
    pytest.param(Lo("zoom_150"), _zoom_rule("eq", 150), id="lo-150"),
    pytest.param(Lo("plain"), _zoom_rule("lt", 260), id="lo-default"),
    pytest.param(book(), {**_zoom_rule("eq", 100), "sheet_idx": "RNnope"}, id="no-sheet"),
]


@pytest.mark.parametrize(("result", "rule"), ZOOM)
def test_zoom(
    osworld: OSWorld, tmp_path: Path, lo_books: dict[str, Path], result: Spec, rule: dict[str, Any]
) -> None:
    run_table(osworld, tmp_path, lo_books, result, None, [rule])


# --- data_validation ----------------------------------------------------------------------


def _dv(**props: Any) -> dict[str, Any]:
    return _rule("data_validation", sheet_idx=0, dv_props=[props])


DATA_VALIDATION = [
    *[
        pytest.param(build, rule, id=f"{task}-{label}")
        for task, rule in _real_rules("data_validation")
        for label, build in (
            ("pass-fail-held", book(edit=_validation('"Pass,Fail,Held"'))),
            ("other-order", book(edit=_validation('"Held,Pass,Fail"'))),
            ("missing-item", book(edit=_validation('"Pass,Fail"'))),
            ("short-range", book(edit=_validation('"Pass,Fail,Held"', "D2:D10"))),
            ("whole-column", book(edit=_validation('"Pass,Fail,Held"', "D1:D1048576"))),
            ("other-column", book(edit=_validation('"Pass,Fail,Held"', "E2:E29"))),
            ("none", book()),
            ("lo", Lo("validation")),
        )
    ],
    pytest.param(book(edit=_validation("1", kind="whole")), _dv(type=_eq("whole")), id="whole"),
    pytest.param(
        book(edit=edits(_validation('"a,b"'), _validation("5", "E2:E9", "decimal"))),
        _dv(type=_eq("list")),
        id="two-one-matches",
    ),
    pytest.param(
        book(edit=edits(_validation('"a,b"'), _validation("5", "E2:E9", "decimal"))),
        {
            **_dv(type=_eq("list")),
            "dv_props": [{"type": _eq("list")}, {"type": _eq("decimal")}],
        },
        id="two-both-match",
    ),
    pytest.param(book(edit=_validation('"a,b"')), _dv(bogus=_eq(1)), id="unknown-attribute"),
    pytest.param(book(), {**_dv(type=_eq("list")), "sheet_idx": "RNnope"}, id="no-sheet"),
]


@pytest.mark.parametrize(("result", "rule"), DATA_VALIDATION)
def test_data_validation(
    osworld: OSWorld, tmp_path: Path, lo_books: dict[str, Path], result: Spec, rule: dict[str, Any]
) -> None:
    run_table(osworld, tmp_path, lo_books, result, None, [rule])


# --- row_props, col_props, filter ---------------------------------------------------------


def _pair_rule(kind: str, **extra: Any) -> dict[str, Any]:
    return _rule(kind, sheet_idx0=0, sheet_idx1="EI0", **extra)


DIMENSIONS = [
    *[
        pytest.param(r, e, rule, id=f"{task}-{label}")
        for task, rule in _real_rules("row_props")
        for label, r, e in (
            ("same", book(edit=_hide_row(3)), book(edit=_hide_row(3))),
            ("differs", book(edit=_hide_row(2)), book(edit=_hide_row(3))),
            ("none", book(), book(edit=_hide_row(3))),
            ("lo", Lo("hidden_row"), book(edit=_hide_row(3))),
            ("lo-both", Lo("hidden_row"), Lo("hidden_row")),
        )
    ],
    pytest.param(
        book(edit=on_sheet(lambda ws: setattr(ws.row_dimensions[2], "height", 30))),
        book(edit=on_sheet(lambda ws: setattr(ws.row_dimensions[2], "height", 30))),
        _pair_rule("row_props", props=["height", "hidden"]),
        id="row-height-same",
    ),
    pytest.param(
        book(edit=on_sheet(lambda ws: setattr(ws.row_dimensions[2], "height", 31))),
        book(edit=on_sheet(lambda ws: setattr(ws.row_dimensions[2], "height", 30))),
        _pair_rule("row_props", props=["height"]),
        id="row-height-differs",
    ),
    pytest.param(book(), book(), _pair_rule("row_props", props=["bogus"]), id="row-bad-prop"),
    pytest.param(
        book(edit=_col_width("A", 25)),
        book(edit=_col_width("A", 25)),
        _pair_rule("col_props", props=["width", "hidden"]),
        id="col-width-same",
    ),
    pytest.param(
        book(edit=_col_width("A", 20)),
        book(edit=_col_width("A", 25)),
        _pair_rule("col_props", props=["width"]),
        id="col-width-differs",
    ),
    pytest.param(
        Lo("col_width"),
        book(edit=_col_width("A", 25)),
        _pair_rule("col_props", props=["width"]),
        id="lo-col-width",
    ),
    pytest.param(
        Lo("col_width"),
        Lo("col_width"),
        _pair_rule("col_props", props=["width", "min", "max"]),
        id="lo-col-both",
    ),
    pytest.param(book(), book(), _pair_rule("col_props"), id="col-no-props"),
    pytest.param(book(), None, _pair_rule("col_props", props=["width"]), id="col-no-expected"),
]


@pytest.mark.parametrize(("result", "expected", "rule"), DIMENSIONS)
def test_row_col_props(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


def _sorted(ref: str, descending: bool) -> Edit:
    def add(ws: Any) -> None:
        ws.auto_filter.ref = "A1:C4"
        ws.auto_filter.add_sort_condition(ref, descending=descending)

    return on_sheet(add)


FILTER = _pair_rule("filter")
FILTERS = [
    pytest.param(book(), book(), FILTER, id="none"),
    pytest.param(
        book(edit=_auto_filter("A1:C4")), book(edit=_auto_filter("A1:C4")), FILTER, id="same"
    ),
    pytest.param(book(edit=_auto_filter("A1:C4")), book(), FILTER, id="vs-none"),
    pytest.param(
        book(edit=_auto_filter("A1:B4")), book(edit=_auto_filter("A1:C4")), FILTER, id="ref"
    ),
    pytest.param(
        book(edit=_auto_filter("A1:C4", 2, ["Rome"])),
        book(edit=_auto_filter("A1:C4", 2, ["Rome"])),
        FILTER,
        id="column-same",
    ),
    pytest.param(
        book(edit=_auto_filter("A1:C4", 2, ["Rome", "Oslo"])),
        book(edit=_auto_filter("A1:C4", 2, ["Oslo", "Rome"])),
        FILTER,
        id="column-set",
    ),
    pytest.param(
        book(edit=_auto_filter("A1:C4", 2, ["Rome"])),
        book(edit=_auto_filter("A1:C4", 2, ["Oslo"])),
        FILTER,
        id="column-differs",
    ),
    pytest.param(
        book(edit=_sorted("B2:B4", True)), book(edit=_sorted("B2:B4", True)), FILTER, id="sort"
    ),
    pytest.param(
        book(edit=_sorted("B2:B4", True)), book(edit=_sorted("B2:B4", False)), FILTER, id="sort-dir"
    ),
    pytest.param(Lo("filter"), book(edit=_auto_filter("A1:C4", 2, ["Rome"])), FILTER, id="lo"),
    pytest.param(Lo("filter"), Lo("filter"), FILTER, id="lo-both"),
    pytest.param(Lo("filter"), Lo("plain"), FILTER, id="lo-vs-none"),
    pytest.param(book(), None, FILTER, id="no-expected"),
]


@pytest.mark.parametrize(("result", "expected", "rule"), FILTERS)
def test_filter(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


# --- chart --------------------------------------------------------------------------------


def _chart_real() -> list[Any]:
    cases = []
    for task, rule in _real_rules("chart"):
        sheets = {"Sheet1": ROWS, "Sheet2": ROWS}
        on = 1 if rule["sheet_idx0"] == "RNSheet2" else 0

        def with_chart(
            kind: str,
            title: str | None = "Scores",
            d: str = "col",
            s: int = on,
            sheets: dict[str, list[list[Any]]] = sheets,
        ) -> Build:
            return book(sheets=sheets, edit=lambda wb: _chart(kind, title, d)(_Front(wb, s)))

        cases += [
            pytest.param(with_chart("bar"), with_chart("bar"), rule, id=f"{task}-same"),
            pytest.param(with_chart("line"), with_chart("bar"), rule, id=f"{task}-type"),
            pytest.param(with_chart("bar", "Other"), with_chart("bar"), rule, id=f"{task}-title"),
            pytest.param(
                with_chart("bar", None), with_chart("bar", None), rule, id=f"{task}-untitled"
            ),
            pytest.param(with_chart("bar", d="bar"), with_chart("bar"), rule, id=f"{task}-dir"),
            pytest.param(book(sheets=sheets), with_chart("bar"), rule, id=f"{task}-no-chart"),
            pytest.param(with_chart("line"), with_chart("line"), rule, id=f"{task}-line-both"),
        ]
    return cases


class _Front:
    """A workbook whose ``worksheets[0]`` is its sheet ``index`` (for the chart builder)."""

    def __init__(self, wb: Any, index: int) -> None:
        self.worksheets = [wb.worksheets[index]]


def _chart_rule(*props: str) -> dict[str, Any]:
    return _pair_rule("chart", chart_props=list(props))


CHARTS = [
    *_chart_real(),
    pytest.param(
        book(edit=_chart("bar")),
        book(edit=_chart("bar")),
        _chart_rule(
            "title",
            "legend",
            "anchor",
            "width",
            "height",
            "type",
            "direction",
            "xtitle",
            "ytitle",
            "ztitle",
        ),
        id="all-props",
    ),
    pytest.param(
        book(edit=_chart("pie")), book(edit=_chart("pie")), _chart_rule("type", "xtitle"), id="pie"
    ),
    pytest.param(
        book(edit=_chart("bar")), book(edit=_chart("bar")), _pair_rule("chart"), id="no-props"
    ),
    pytest.param(
        Lo("chart_bar"), book(edit=_chart("bar")), _chart_rule("type", "title"), id="lo-vs-openpyxl"
    ),
    pytest.param(
        Lo("chart_bar"),
        Lo("chart_bar"),
        _chart_rule("type", "title", "legend", "direction", "xtitle", "ytitle"),
        id="lo-both",
    ),
    pytest.param(Lo("chart_line"), Lo("chart_bar"), _chart_rule("type"), id="lo-type"),
    pytest.param(
        Lo("chart_line"), Lo("chart_line"), _chart_rule("type", "direction"), id="lo-line-dir"
    ),
    pytest.param(
        Lo("chart_bar"), Lo("chart_bar"), _chart_rule("anchor", "width", "height"), id="lo-anchor"
    ),
    pytest.param(book(edit=_chart("bar")), None, _chart_rule("type"), id="no-expected"),
]


@pytest.mark.parametrize(("result", "expected", "rule"), CHARTS)
def test_chart(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


# --- pivot_table --------------------------------------------------------------------------


def _pivot(
    row_fields: list[int],
    data_field: int = 1,
    subtotal: str = "sum",
    ref: str = "A1:C4",
    name: str = "PivotTable1",
    col_fields: list[int] | None = None,
    page_fields: list[int] | None = None,
) -> Edit:
    """A pivot table on a new sheet ``Sheet2`` over ``Sheet1!ref``, built from openpyxl objects."""

    def add(wb: Any) -> None:
        from openpyxl.pivot.cache import (
            CacheDefinition,
            CacheField,
            CacheSource,
            SharedItems,
            WorksheetSource,
        )
        from openpyxl.pivot.table import (
            DataField,
            FieldItem,
            Location,
            PageField,
            PivotField,
            RowColField,
            TableDefinition,
        )

        source = wb.worksheets[0]
        first, last = ref.split(":")
        c1 = openpyxl.utils.cell.column_index_from_string(re.sub(r"\d", "", first))
        c2 = openpyxl.utils.cell.column_index_from_string(re.sub(r"\d", "", last))
        n = c2 - c1 + 1
        cache_fields = [
            CacheField(name=str(source.cell(1, c1 + i).value), sharedItems=SharedItems())
            for i in range(n)
        ]
        cache = CacheDefinition(
            cacheSource=CacheSource(
                type="worksheet", worksheetSource=WorksheetSource(ref=ref, sheet="Sheet1")
            ),
            cacheFields=cache_fields,
        )
        fields = []
        for i in range(n):
            if i in row_fields or i in (col_fields or []) or i in (page_fields or []):
                fields.append(
                    PivotField(
                        axis="axisRow",
                        showAll=False,
                        items=[FieldItem(x=0), FieldItem(x=1), FieldItem(t="default")],
                    )
                )
            else:
                fields.append(PivotField(showAll=False, dataField=i == data_field))
        pivot = TableDefinition(
            name=name,
            cacheId=1,
            dataCaption="Values",
            location=Location(ref="A3:B6", firstHeaderRow=1, firstDataRow=1, firstDataCol=1),
            pivotFields=fields,
            rowFields=[RowColField(x=i) for i in row_fields],
            colFields=[RowColField(x=i) for i in (col_fields or [])],
            pageFields=[PageField(fld=i) for i in (page_fields or [])],
            dataFields=[DataField(name="Sum", fld=data_field, subtotal=subtotal)],
        )
        pivot.cache = cache
        sheet = wb["Sheet2"] if "Sheet2" in wb.sheetnames else wb.create_sheet("Sheet2")
        sheet.add_pivot(pivot)

    return add


def _pivot_book(*args: Any, **kwargs: Any) -> Build:
    return book(sheets={"Sheet1": ROWS}, edit=_pivot(*args, **kwargs))


def _pivot_rule(*props: str) -> dict[str, Any]:
    return _rule(
        "pivot_table", sheet_idx0="RNSheet2", sheet_idx1="ENSheet2", pivot_props=list(props)
    )


def _pivot_real() -> list[Any]:
    cases = []
    for task, rule in _real_rules("pivot_table"):
        cases += [
            pytest.param(_pivot_book([0]), _pivot_book([0]), rule, id=f"{task}-same"),
            pytest.param(_pivot_book([2]), _pivot_book([0]), rule, id=f"{task}-other-row"),
            pytest.param(
                _pivot_book([0], subtotal="count"), _pivot_book([0]), rule, id=f"{task}-count"
            ),
            pytest.param(
                _pivot_book([0], page_fields=[2]), _pivot_book([0]), rule, id=f"{task}-filter"
            ),
            pytest.param(book(sheets=TWO_SHEETS), _pivot_book([0]), rule, id=f"{task}-none"),
        ]
    return cases


PIVOTS = [
    *_pivot_real(),
    pytest.param(
        _pivot_book([0], name="A"), _pivot_book([0], name="B"), _pivot_rule("name"), id="name"
    ),
    pytest.param(
        _pivot_book([0]),
        _pivot_book([0]),
        _pivot_rule("show_total", "show_empty_row", "show_empty_col", "show_headers", "location"),
        id="flags",
    ),
    pytest.param(
        _pivot_book([0], ref="A1:C4"), _pivot_book([0], ref="A1:C9"), _pivot_rule(), id="source"
    ),
    pytest.param(
        _pivot_book([0]), _pivot_book([0], col_fields=[2]), _pivot_rule("col_fields"), id="cols"
    ),
    pytest.param(
        _pivot_book([0]), _pivot_book([0]), _pivot_rule("selection", "ordered"), id="ordered"
    ),
    pytest.param(
        _pivot_book([0]),
        _pivot_book([0]),
        _pivot_rule("data_fields", "data_fields_name"),
        id="data-names",
    ),
    pytest.param(_pivot_book([0]), None, _pivot_rule("name"), id="no-expected"),
]


@pytest.mark.parametrize(("result", "expected", "rule"), PIVOTS)
def test_pivot_table(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


# --- sparkline ----------------------------------------------------------------------------

SPARK = _rule("sparkline", sheet_idx0=0, sheet_idx1="EI0")
LINES = {"D2": "Sheet1!B2:C2", "D3": "Sheet1!B3:C3"}
SPARKLINES = [
    pytest.param(sparkline_book(LINES), sparkline_book(LINES), SPARK, id="same"),
    pytest.param(sparkline_book({"D2": "Sheet1!B2:C2"}), sparkline_book(LINES), SPARK, id="fewer"),
    pytest.param(
        sparkline_book({"D2": "Sheet1!A2:C2", "D3": "Sheet1!B3:C3"}),
        sparkline_book(LINES),
        SPARK,
        id="other-range",
    ),
    pytest.param(
        sparkline_book({"E2": "Sheet1!B2:C2", "D3": "Sheet1!B3:C3"}),
        sparkline_book(LINES),
        SPARK,
        id="other-cell",
    ),
    pytest.param(book(), sparkline_book(LINES), SPARK, id="none"),
    pytest.param(book(), book(), SPARK, id="none-both"),
    pytest.param(
        sparkline_book({"D2": " Sheet1!B2:C2 "}),
        sparkline_book({"D2": "Sheet1!B2:C2"}),
        SPARK,
        id="spaces",
    ),
    pytest.param(sparkline_book({"D2": ""}), sparkline_book({"D2": ""}), SPARK, id="empty-range"),
    pytest.param(Lo("sparklines"), sparkline_book(LINES), SPARK, id="lo"),
    pytest.param(Lo("sparklines"), Lo("sparklines"), SPARK, id="lo-both"),
    pytest.param(Lo("plain"), Lo("sparklines"), SPARK, id="lo-none"),
    pytest.param(
        sparkline_book(LINES),
        sparkline_book(LINES),
        {**SPARK, "sheet_idx0": "RNnope"},
        id="no-sheet",
    ),
    pytest.param(sparkline_book(LINES), None, SPARK, id="no-expected"),
    pytest.param(
        sparkline_book(LINES, book(sheets=TWO_SHEETS), sheet=2),
        sparkline_book(LINES, book(sheets=TWO_SHEETS), sheet=2),
        _rule("sparkline", sheet_idx0="RNSheet2", sheet_idx1="ENSheet2"),
        id="second-sheet",
    ),
]


@pytest.mark.parametrize(("result", "expected", "rule"), SPARKLINES)
def test_sparkline(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rule: dict[str, Any],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, [rule])


# --- several rules, unknown rules, missing options ----------------------------------------


def _whole_tasks() -> list[Any]:
    """Each real task's full rule list on an equal pair and a differing pair of plain books."""
    cases = []
    for task, _, _, options in real_checks("compare_table"):
        rules = options.get("rules", [])
        if len(rules) < 2:
            continue
        sheets = {"Sheet1": ROWS, "Sheet2": ROWS}
        cases.append(pytest.param(book(sheets=sheets), book(sheets=sheets), rules, id=f"{task}-eq"))
        cases.append(
            pytest.param(
                book(sheets={"Sheet1": with_rows({"B3": 1}), "Sheet2": ROWS}),
                book(sheets=sheets),
                rules,
                id=f"{task}-differs",
            )
        )
    return cases


SEVERAL = [
    *_whole_tasks(),
    pytest.param(book(), book(), [DATA, _rule("sheet_name")], id="two-pass"),
    pytest.param(
        book(with_rows({"B2": 1})), book(), [_rule("sheet_name"), DATA], id="second-fails"
    ),
    pytest.param(book(), book(), [_rule("no_such_rule")], id="unknown-rule"),
    pytest.param(
        book(with_rows({"B2": 1})), book(), [DATA, _rule("no_such_rule")], id="unknown-after-fail"
    ),
    pytest.param(book(), book(), [], id="no-rules"),
]


@pytest.mark.parametrize(("result", "expected", "rules"), SEVERAL)
def test_several_rules(
    osworld: OSWorld,
    tmp_path: Path,
    lo_books: dict[str, Path],
    result: Spec,
    expected: Spec,
    rules: list[dict[str, Any]],
) -> None:
    run_table(osworld, tmp_path, lo_books, result, expected, rules)


def test_no_rules_option(osworld: OSWorld, tmp_path: Path) -> None:
    path = materialise(book(), tmp_path, "result.xlsx", {})
    assert_same_score(osworld, "compare_table", path, path)


# --- compare_conference_city_in_order -----------------------------------------------------


def _cities(values: list[Any]) -> Build:
    return book([["#", "Conference", "City"], *[[i, f"C{i}", v] for i, v in enumerate(values)]])


def _spellings(entry: Any) -> list[Any]:
    return [entry] if isinstance(entry, str) else list(entry)


def _city_cases() -> list[Any]:
    cases = []
    for task, _, expected, _ in real_checks("compare_conference_city_in_order"):
        rules = expected["rules"]
        first = [e if isinstance(e, str) else e[0] for e in rules["expected"]]
        second = [e if isinstance(e, str) else e[-1] for e in rules["expected"]]
        cases += [
            pytest.param(_cities(first), rules, id=f"{task}-first-spelling"),
            pytest.param(_cities(second), rules, id=f"{task}-last-spelling"),
            pytest.param(_cities([f"{c}, Country" for c in first]), rules, id=f"{task}-longer"),
            pytest.param(_cities([c.lower() for c in first]), rules, id=f"{task}-lower"),
            pytest.param(_cities([c.upper() for c in first]), rules, id=f"{task}-upper"),
            pytest.param(_cities(first[::-1]), rules, id=f"{task}-reversed"),
            pytest.param(_cities(first[:-1]), rules, id=f"{task}-one-missing"),
            pytest.param(_cities([*first[:5], 7, *first[6:]]), rules, id=f"{task}-number"),
            pytest.param(
                _cities([c.replace("Montreal", "Montréal") for c in first]),
                rules,
                id=f"{task}-accent",
            ),
            pytest.param(
                _cities([c.replace("Montreal", "Montreal") for c in first]),
                rules,
                id=f"{task}-ascii",
            ),
            pytest.param(
                _cities(["Banff" if c == "Banff" else c for c in first]), rules, id=f"{task}-x"
            ),
            pytest.param(
                _cities(first), {"expected": rules["expected"][:10]}, id=f"{task}-short-list"
            ),
            pytest.param(
                _cities(first), {"expected": [*first[:3], 5, *first[4:]]}, id=f"{task}-bad-rule"
            ),
            pytest.param(_cities(first), {"expected": [""] * 21}, id=f"{task}-empty-strings"),
            pytest.param(_cities(first), {"expected": [[]] * 21}, id=f"{task}-empty-lists"),
            pytest.param(
                _cities(first),
                {"expected": [[5, *_spellings(e)] for e in rules["expected"]]},
                id=f"{task}-number-spelling-first",
            ),
            pytest.param(
                _cities(first),
                {"expected": [[*_spellings(e), 5] for e in rules["expected"]]},
                id=f"{task}-number-spelling-last",
            ),
            pytest.param(Lo("plain"), rules, id=f"{task}-other-book"),
            pytest.param(b"not a workbook", rules, id=f"{task}-corrupt"),
            pytest.param(ABSENT, rules, id=f"{task}-absent"),
            pytest.param(None, rules, id=f"{task}-none"),
        ]
    return cases


@needs_osworld_tasks  # its cases are OSWorld's rules only
@pytest.mark.parametrize(("result", "rules"), _city_cases())
def test_compare_conference_city_in_order(
    osworld: OSWorld, tmp_path: Path, lo_books: dict[str, Path], result: Spec, rules: dict[str, Any]
) -> None:
    path = materialise(result, tmp_path, "ConferenceCity.xlsx", lo_books)
    assert_same_score(osworld, "compare_conference_city_in_order", path, rules)
