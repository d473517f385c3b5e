"""compare_table: sheet data, names, printed values, fuzzy ranges, cell checks, styles."""

from __future__ import annotations

import datetime
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import osworld_ref
import pytest

pytest.importorskip("openpyxl")
pytest.importorskip("pandas")

import openpyxl  # noqa: E402
from openpyxl.formatting.rule import CellIsRule, FormulaRule, Rule  # noqa: E402
from openpyxl.styles import Font, PatternFill  # noqa: E402
from openpyxl.styles.differential import DifferentialStyle  # noqa: E402
from table_fixtures import (  # noqa: E402
    DATA,
    RED,
    ROWS,
    Mutator,
    book,
    compare_table,
    pair,
    score,
    set_cell,
)

from osworld_gym.errors import DependencyNotInstalled  # noqa: E402
from osworld_gym.evaluation.metrics._xlsx import RawXlsxReader  # noqa: E402
from osworld_gym.evaluation.metrics.table_props import load_styles  # noqa: E402

# --- sheet data, names, printed values -------------------------------------------------------


def test_sheet_data_equal_books_pass(tmp_path: Path) -> None:
    assert score(pair(tmp_path), DATA) == 1.0


def test_sheet_data_detects_a_changed_cell(tmp_path: Path) -> None:
    assert score(pair(tmp_path, result=set_cell("B3", 8)), DATA) == 0.0


def test_sheet_data_rounds_to_precision(tmp_path: Path) -> None:
    paths = pair(tmp_path, result=set_cell("B4", 9.50001))
    assert score(paths, DATA) == 1.0
    assert score(paths, {**DATA, "precision": 6}) == 0.0


@pytest.mark.parametrize("index", ["RNNoSuchSheet", "EI3", 5])
def test_sheet_data_missing_sheet_fails(tmp_path: Path, index: Any) -> None:
    assert score(pair(tmp_path), {**DATA, "sheet_idx1": index}) == 0.0


def test_sheet_indices_by_name_and_position(tmp_path: Path) -> None:
    paths = pair(tmp_path, title="Data")
    assert (
        score(paths, {"type": "sheet_data", "sheet_idx0": "RNData", "sheet_idx1": "ENData"}) == 1.0
    )
    assert score(paths, {"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}) == 1.0


def test_bad_sheet_index_and_rule_type_raise(tmp_path: Path) -> None:
    paths = pair(tmp_path)
    with pytest.raises(ValueError, match="sheet index"):
        score(paths, {**DATA, "sheet_idx0": "XX0"})
    with pytest.raises(ValueError, match="unsupported rule type 'pie_chart'"):
        score(paths, {"type": "pie_chart", "sheet_idx0": 0, "sheet_idx1": "EI0"})


def test_missing_or_unreadable_result_scores_zero(tmp_path: Path) -> None:
    gold = book(tmp_path / "gold.xlsx")
    assert compare_table(None, gold, rules=[DATA]) == 0.0
    assert compare_table(str(tmp_path / "absent.xlsx"), gold, rules=[DATA]) == 0.0
    junk = tmp_path / "junk.xlsx"
    junk.write_text("not a workbook")
    assert compare_table(str(junk), gold, rules=[DATA]) == 0.0


def test_sheet_name(tmp_path: Path) -> None:
    same = pair(tmp_path)
    assert score(same, {"type": "sheet_name"}) == 1.0
    renamed = (book(tmp_path / "r2.xlsx", title="Other"), same[1])
    assert score(renamed, {"type": "sheet_name"}) == 0.0


PRINT = {"type": "sheet_print", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}


@pytest.mark.parametrize(
    ("result_csv", "expected_csv", "rule", "expected_score"),
    [
        ("a,1.50\nb,2.00\n", "a,1.50\nb,2.00", PRINT, 1.0),
        ("a,1.50\nb,2.00\n\n\n", "a,1.50\nb,2.00\n", PRINT, 1.0),  # trailing blank lines
        ("a,1.5\nb,2\n", "a,1.50\nb,2.00\n", PRINT, 0.0),
        ("A,1.50\n", "a,1.50\n", PRINT, 0.0),
        ("A,1.50\n", "a,1.50\n", {**PRINT, "ignore_case": True}, 1.0),
    ],
)
def test_sheet_print_compares_csv_exports(
    tmp_path: Path, result_csv: str, expected_csv: str, rule: dict, expected_score: float
) -> None:
    paths = pair(tmp_path)
    (tmp_path / "result-Sheet1.csv").write_text(result_csv)
    (tmp_path / "gold-Sheet1.csv").write_text(expected_csv)
    assert score(paths, rule) == expected_score


def test_sheet_print_without_export_fails(tmp_path: Path) -> None:
    paths = pair(tmp_path)
    (tmp_path / "gold-Sheet1.csv").write_text("a\n")
    assert score(paths, PRINT) == 0.0


# --- sheet_fuzzy --------------------------------------------------------------------------------


def fuzzy(**sub: Any) -> dict[str, Any]:
    return {
        "type": "sheet_fuzzy",
        "sheet_idx0": "RNSheet1",
        "sheet_idx1": "ENSheet1",
        "rules": [{"range": ["A2:A2"], **sub}],
    }


@pytest.mark.parametrize(
    ("result_value", "gold_value", "rule", "expected_score"),
    [
        ("Main Road", "Main Road", fuzzy(type="exact_match"), 1.0),
        ("Main Rd", "Main Road", fuzzy(type="exact_match"), 0.0),
        ("Main Rd", "Main Road", fuzzy(type="exact_match", normalization=[["Rd", "Road"]]), 1.0),
        ("Main Road+", "Main Road", fuzzy(type="exact_match", trim_trailings="+"), 1.0),
        ("--Main Road", "Main Road", fuzzy(type="exact_match", trim_leadings="-"), 1.0),
        # openpyxl stores text with spaces at its ends as an inline string marked
        # xml:space="preserve"; OSWorld's reader then hands the metric the whole XML mapping
        # (its text stripped), so trimming the spaces cannot make it match.
        (
            "  Main Road+",
            "Main Road",
            fuzzy(type="exact_match", trim_leadings=" ", trim_trailings="+"),
            0.0,
        ),
        ("  Main Road", "Main Road", fuzzy(type="includes"), 1.0),
        ("(Main) Road", "Main Road", fuzzy(type="exact_match", ignore_chars="()"), 1.0),
        ("MAIN ROAD", "main road", fuzzy(type="exact_match"), 0.0),
        ("MAIN ROAD", "main road", fuzzy(type="exact_match", ignore_case=True), 1.0),
        ("12 Main Road, Town", "Main Road", fuzzy(type="includes"), 1.0),
        ("Main Road", "12 Main Road, Town", fuzzy(type="includes"), 0.0),
        ("Main Road", "12 Main Road, Town", fuzzy(type="included_by"), 1.0),
        ("Main Raod", "Main Road", fuzzy(type="fuzzy_match"), 1.0),
        ("Main Raod", "Main Road", fuzzy(type="fuzzy_match", threshold=95), 0.0),
        (3, "3.0", fuzzy(type="exact_match"), 1.0),  # stored numbers read as floats
    ],
)
def test_sheet_fuzzy(
    tmp_path: Path, result_value: Any, gold_value: Any, rule: dict, expected_score: float
) -> None:
    paths = pair(tmp_path, result=set_cell("A2", result_value), expected=set_cell("A2", gold_value))
    assert score(paths, rule) == expected_score


def test_sheet_fuzzy_unknown_match_type_raises(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown match type"):
        score(pair(tmp_path), fuzzy(type="sounds_like"))


# --- check_cell, style --------------------------------------------------------------------------


def styled(ws: Any) -> None:
    ws["A1"].font = Font(bold=True, color=RED)
    ws["A1"].fill = PatternFill(fill_type="solid", fgColor=RED)
    ws["C2"] = "=B2*2"


def cell_rule(coordinate: str, **props: Any) -> dict[str, Any]:
    return {"type": "check_cell", "sheet_idx": 0, "coordinate": coordinate, "props": props}


@pytest.mark.parametrize(
    ("rule", "expected_score"),
    [
        (cell_rule("A1", value={"method": "eq", "ref": "Name"}), 1.0),
        (cell_rule("A1", value={"method": "eq", "ref": "Nom"}), 0.0),
        (cell_rule("B4", value={"method": "approx:0.01", "ref": 9.505}), 1.0),
        (cell_rule("B4", value={"method": "approx:0.001", "ref": 9.6}), 0.0),
        (
            cell_rule(
                "A1",
                font_bold={"method": "eq", "ref": True},
                font_color={"method": "eq", "ref": RED},
                bgcolor={"method": "eq", "ref": RED},
            ),
            1.0,
        ),
        (cell_rule("A2", font_bold={"method": "eq", "ref": True}), 0.0),
        (cell_rule("A1", value={"method": "re.I", "ref": "^name$"}), 1.0),
        (cell_rule("B2", value={"method": "re", "ref": "1"}), 0.0),  # a number: no regex
        (cell_rule("Z99", value={"method": "eq", "ref": None}), 1.0),  # absent cell
        ({**cell_rule("A1", value={"method": "eq", "ref": "Name"}), "sheet_idx": "RNNope"}, 0.0),
    ],
)
def test_check_cell(tmp_path: Path, rule: dict, expected_score: float) -> None:
    result = book(tmp_path / "r.xlsx", mutate=styled)
    assert compare_table(result, None, rules=[rule]) == expected_score


STYLE = {"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["bgcolor"]}


def fill_red(coordinates: list[str]) -> Mutator:
    def _fill(ws: Any) -> None:
        for c in coordinates:
            ws[c].fill = PatternFill(fill_type="solid", fgColor=RED)

    return _fill


def red_when_above_5(ws: Any) -> None:
    fill = PatternFill(bgColor=RED)
    ws.conditional_formatting.add(
        "B2:B4", CellIsRule(operator="greaterThan", formula=["5"], fill=fill)
    )


def test_style_same_fills_pass(tmp_path: Path) -> None:
    paths = pair(tmp_path, result=fill_red(["B3"]), expected=fill_red(["B3"]))
    assert score(paths, STYLE) == 1.0


def test_style_different_fill_fails(tmp_path: Path) -> None:
    paths = pair(tmp_path, result=fill_red(["B2"]), expected=fill_red(["B3"]))
    assert score(paths, STYLE) == 0.0


def test_style_applies_conditional_formats(tmp_path: Path) -> None:
    # B3 (7) and B4 (9.5) are above 5: the conditional format paints what the gold fills.
    paths = pair(tmp_path, result=red_when_above_5, expected=fill_red(["B3", "B4"]))
    assert score(paths, STYLE) == 1.0
    wrong = pair(tmp_path, result=red_when_above_5, expected=fill_red(["B3"]))
    assert score(wrong, STYLE) == 0.0


# --- conditional formats with formulas (evaluated with `formulas`, as OSWorld does) -----------

# Monday 2024-01-01 to Wednesday 2024-01-10: A7 (Saturday) and A8 (Sunday) are the weekend.
CALENDAR: list[list[Any]] = [
    ["Date", "Value"],
    *[
        [datetime.date(2024, 1, 1) + datetime.timedelta(days=i), v]
        for i, v in enumerate([3, 8, 1, 5, 12, 7, 2, 9, 4, 6])
    ],
]
BLUE = "FF0000FF"


def when(formula: str, cells: str = "B2:B4", colour: str = RED) -> Mutator:
    """An ``expression`` conditional format painting ``cells`` where ``formula`` holds."""

    def _add(ws: Any) -> None:
        fill = PatternFill(bgColor=colour)
        ws.conditional_formatting.add(cells, FormulaRule(formula=[formula], fill=fill))

    return _add


def rule_of(kind: str, formula: list[str], cells: str = "B2:B4", **fields: Any) -> Mutator:
    """A conditional format of another type (blue fill)."""

    def _add(ws: Any) -> None:
        dxf = DifferentialStyle(fill=PatternFill(bgColor=BLUE))
        ws.conditional_formatting.add(cells, Rule(type=kind, formula=formula, dxf=dxf, **fields))

    return _add


def both(*mutators: Mutator) -> Mutator:
    def _all(ws: Any) -> None:
        for mutate in mutators:
            mutate(ws)

    return _all


def painted(tmp_path: Path, result: Mutator, rows: list[list[Any]] = ROWS) -> dict[str, Any]:
    """The bgcolor of every cell ``result``'s conditional formats paint (others left out)."""
    path = book(tmp_path / "cf.xlsx", rows=rows, mutate=result)
    ws = openpyxl.load_workbook(path).worksheets[0]
    styles = load_styles(ws, RawXlsxReader(path), ["bgcolor"])
    return {c: v[0] for c, v in styles.items() if v[0] not in (None, "00000000")}


@pytest.mark.parametrize(
    ("formula", "cells", "rows", "expected"),
    [
        pytest.param("B2>5", "B2:B4", ROWS, ["B3", "B4"], id="above"),
        # The highest value (21ab7b40): the absolute range is fed as a list of its values.
        pytest.param("B2=MAX($B$2:$B$4)", "B2:B4", ROWS, ["B4"], id="max"),
        pytest.param("B2>AVERAGE($B$2:$B$4)", "B2:B4", ROWS, ["B3", "B4"], id="average"),
        # Weekends (8b1ce5f2): the date's serial number goes to WEEKDAY.
        pytest.param("WEEKDAY(A2,2)>5", "A2:A11", CALENDAR, ["A7", "A8"], id="weekend"),
        pytest.param(
            "OR(WEEKDAY(A2)=1,WEEKDAY(A2)=7)", "A2:A11", CALENDAR, ["A7", "A8"], id="weekend-or"
        ),
        # Excel's text comparison ignores case.
        pytest.param('A2="BOB"', "A2:A4", ROWS, ["A3"], id="text"),
        # The cell's own value is the first reference, whatever cell the formula names.
        pytest.param("B3>5", "B2:B4", ROWS, ["B3", "B4"], id="other-row"),
        pytest.param("$B2>5", "B2:B4", ROWS, ["B3", "B4"], id="mixed"),
        # Not shifted to the row's date: column B's numbers are days of 1900 (8 and 1 are
        # Sundays, 7 a Saturday).
        pytest.param(
            "WEEKDAY($A2,2)>5",
            "A2:B11",
            CALENDAR,
            ["A7", "A8", "B3", "B4", "B7"],
            id="mixed-two-columns",
        ),
        # An error result counts as true; a failed call, a parse error or no reference do not.
        pytest.param("B2/0", "B2:B4", ROWS, ["B2", "B3", "B4"], id="error-value"),
        pytest.param("B2+C2>5", "B2:B4", ROWS, [], id="two-relative"),
        pytest.param("1=1", "B2:B4", ROWS, [], id="no-reference"),
        pytest.param("B2>>5", "B2:B4", ROWS, [], id="unparsable"),
    ],
)
def test_expression_conditional_formats(
    tmp_path: Path, formula: str, cells: str, rows: list[list[Any]], expected: list[str]
) -> None:
    pytest.importorskip("formulas")
    assert painted(tmp_path, when(formula, cells), rows) == dict.fromkeys(expected, RED)


def test_style_scores_expression_formats_against_the_gold(tmp_path: Path) -> None:
    pytest.importorskip("formulas")
    weekend = when("WEEKDAY(A2,2)>5", "A2:A11")
    paths = pair(tmp_path, result=weekend, expected=fill_red(["A7", "A8"]), rows=CALENDAR)
    assert score(paths, STYLE) == 1.0
    wrong = pair(tmp_path, result=weekend, expected=fill_red(["A7"]), rows=CALENDAR)
    assert score(wrong, STYLE) == 0.0


@pytest.mark.parametrize(
    "formula", ["B2>$B$3", "B2=MAX($B$4:$B$2)"], ids=["absolute-cell", "reversed-range"]
)
def test_expression_formats_that_fail_in_osworld_raise(tmp_path: Path, formula: str) -> None:
    pytest.importorskip("formulas")
    with pytest.raises(ValueError):
        painted(tmp_path, when(formula))


def test_later_rules_overwrite_earlier_ones(tmp_path: Path) -> None:
    pytest.importorskip("formulas")
    rules = both(when("B2>5"), when("B2>8", colour=BLUE))
    assert painted(tmp_path, rules) == {"B3": RED, "B4": BLUE}


def test_text_rules_evaluate_their_formula(tmp_path: Path) -> None:
    pytest.importorskip("formulas")
    contains = rule_of("containsText", ['NOT(ISERROR(SEARCH("o",A2)))'], "A2:A4", text="o")
    assert painted(tmp_path, contains) == {"A3": BLUE}
    with pytest.raises(ValueError):  # OSWorld fails on a text rule without its formula
        painted(tmp_path, rule_of("containsText", [], "A2:A4"))


def test_unevaluated_types_test_cells_with_the_previous_rule(tmp_path: Path) -> None:
    pytest.importorskip("formulas")
    # Alone, a top10 rule paints nothing; after another rule it inherits that rule's test.
    assert painted(tmp_path, rule_of("top10", [], rank=1)) == {}
    blanks = rule_of("containsBlanks", ["LEN(TRIM(B2))=0"])
    assert painted(tmp_path, both(when("B2>5"), blanks)) == {"B3": BLUE, "B4": BLUE}
    # A rule without formulas that inherits a match fails, as OSWorld's does.
    with pytest.raises(ValueError):
        painted(tmp_path, both(when("B2>5"), rule_of("top10", [], rank=1)))


@pytest.mark.parametrize(
    ("formula", "expected"),
    [(["2*3"], ["B3", "B4"]), (["1E3"], []), (["B3"], [])],
    ids=["product", "unparsable", "reference"],
)
def test_cell_is_operands_are_evaluated_formulas(
    tmp_path: Path, formula: list[str], expected: list[str]
) -> None:
    pytest.importorskip("formulas")

    def _add(ws: Any) -> None:
        fill = PatternFill(bgColor=RED)
        ws.conditional_formatting.add(
            "B2:B4", CellIsRule(operator="greaterThan", formula=formula, fill=fill)
        )

    assert painted(tmp_path, _add) == dict.fromkeys(expected, RED)


def test_formula_rules_need_the_formulas_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "formulas", None)  # makes `import formulas` fail
    paths = pair(tmp_path, result=when("B2>5"), expected=fill_red(["B3", "B4"]))
    with pytest.raises(DependencyNotInstalled, match=r"'formulas'.*osworld-gym\[eval\]"):
        score(paths, STYLE)
    # Rules without formulas (top10, ...) and sheets without conditional formats need none.
    assert painted(tmp_path, rule_of("top10", [], rank=1)) == {}
    assert score(pair(tmp_path, fill_red(["B3"]), fill_red(["B3"])), STYLE) == 1.0


# --- several rules ----------------------------------------------------------------------------


FREEZE_RULE = {"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}


def frozen(cell: str) -> Mutator:
    def _freeze(ws: Any) -> None:
        ws.freeze_panes = cell

    return _freeze


def test_all_rules_must_pass(tmp_path: Path) -> None:
    paths = pair(tmp_path, frozen("B2"), frozen("B2"))
    assert score(paths, DATA, FREEZE_RULE) == 1.0
    changed = pair(tmp_path, lambda ws: (frozen("B2")(ws), set_cell("A2", "x")(ws)), frozen("B2"))
    assert score(changed, FREEZE_RULE, DATA) == 0.0


# --- stored cell values, as OSWorld's read_cell_value reads them -------------------------------


def _edit_part(path: str, member: str, edit: Callable[[bytes], bytes]) -> str:
    """Rewrite one XML part of a workbook in place (to store what openpyxl never writes)."""
    with zipfile.ZipFile(path) as zf:
        parts = {info.filename: zf.read(info.filename) for info in zf.infolist()}
    parts[member] = edit(parts[member])
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in parts.items():
            zf.writestr(name, data)
    return path


def _values_book(tmp_path: Path) -> str:
    path = book(tmp_path / "values.xlsx", rows=[["hello"], ["  padded  "], [3], [True]])
    rich = b'<c r="A5" t="inlineStr"><is><r><t>ri</t></r><r><t>ch</t></r></is></c>'
    formula = b'<c r="A6" t="str"><f>A1</f><v>  hi  </v></c>'
    rows = b'<row r="5">' + rich + b'</row><row r="6">' + formula + b"</row>"
    return _edit_part(
        path,
        "xl/worksheets/sheet1.xml",
        lambda xml: xml.replace(b"</sheetData>", rows + b"</sheetData>"),
    )


def test_stored_values_are_read_as_osworld_reads_them(tmp_path: Path) -> None:
    from osworld_gym.evaluation.metrics._xlsx import RawXlsxReader

    reader = RawXlsxReader(_values_book(tmp_path))
    assert reader.value("Sheet1", "A1") == "hello"  # openpyxl writes inline strings
    # Spaces at the ends: openpyxl marks the text xml:space="preserve", and OSWorld's
    # xmltodict hands over the element's mapping, its text stripped.
    preserve = "@http://www.w3.org/XML/1998/namespace:space"
    assert reader.value("Sheet1", "A2") == {preserve: "preserve", "#text": "padded"}
    assert reader.value("Sheet1", "A3") == 3.0
    assert reader.value("Sheet1", "A4") is None  # booleans are not read
    assert reader.value("Sheet1", "A5") is None  # rich text has no <t> of its own
    assert reader.value("Sheet1", "A6") == "hi"  # a formula's text result, stripped
    assert reader.value("Sheet1", "$A$1") is None  # coordinates are matched as written
    assert reader.value("Sheet1", "A99") is None
    assert reader.value("Nope", "A1") is None


def test_sheets_are_found_by_sheet_id_as_in_osworld(tmp_path: Path) -> None:
    from osworld_gym.evaluation.metrics._xlsx import RawXlsxReader

    path = book(tmp_path / "renumbered.xlsx", rows=[["x"]])
    # A book whose first sheet has id 7 but is stored as sheet1.xml (Excel after a deletion).
    _edit_part(path, "xl/workbook.xml", lambda xml: xml.replace(b'sheetId="1"', b'sheetId="7"'))
    assert RawXlsxReader(path).value("Sheet1", "A1") is None


def test_stored_values_match_osworld_read_cell_value(tmp_path: Path) -> None:
    utils = osworld_ref.load("evaluators/metrics/utils.py")
    from osworld_gym.evaluation.metrics._xlsx import RawXlsxReader

    path = _values_book(tmp_path)
    reader = RawXlsxReader(path)
    for coordinate in [f"A{row}" for row in range(1, 8)]:
        assert reader.value("Sheet1", coordinate) == utils.read_cell_value(
            path, "Sheet1", coordinate
        ), coordinate


def test_sheet_fuzzy_reads_padded_inline_text_as_osworld(tmp_path: Path) -> None:
    """The padded text is compared as the mapping's text, so only containment matches."""
    paths = pair(tmp_path, result=set_cell("A2", "  Main Road "), expected=set_cell("A2", "Main"))
    assert score(paths, fuzzy(type="includes")) == 1.0
    assert score(paths, fuzzy(type="exact_match", trim_leadings=" ", trim_trailings=" ")) == 0.0


# --- sparklines, a missing expected book ---------------------------------------------------

SPARKLINE_EXT = (
    '<extLst><ext uri="{{05C60535-1F16-4fd2-B633-F4F36F0B64E0}}" '
    'xmlns:x14="http://schemas.microsoft.com/office/spreadsheetml/2009/9/main">'
    '<x14:sparklineGroups xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main">'
    "<x14:sparklineGroup><x14:sparklines>"
    "<x14:sparkline><xm:f>Sheet1!B2:B4</xm:f><xm:sqref>{cell}</xm:sqref></x14:sparkline>"
    "</x14:sparklines></x14:sparklineGroup></x14:sparklineGroups></ext></extLst>"
)


def with_sparkline(path: Path, cell: str) -> str:
    """The book at ``path`` rewritten with one sparkline in ``cell`` of its first sheet."""
    source = Path(book(path.with_name("plain-" + path.name)))
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            data = old.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                ext = SPARKLINE_EXT.format(cell=cell).encode()
                data = data.replace(b"</worksheet>", ext + b"</worksheet>")
            new.writestr(info, data)
    return str(path)


def test_sparklines_compare_cells_and_ranges(tmp_path: Path) -> None:
    rule = {"type": "sparkline", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    gold = with_sparkline(tmp_path / "gold.xlsx", "D2")
    assert compare_table(with_sparkline(tmp_path / "same.xlsx", "D2"), gold, rules=[rule]) == 1.0
    assert compare_table(with_sparkline(tmp_path / "other.xlsx", "E2"), gold, rules=[rule]) == 0.0
    assert compare_table(book(tmp_path / "none.xlsx"), gold, rules=[rule]) == 0.0


def test_a_rule_on_a_missing_expected_book_raises(tmp_path: Path) -> None:
    result = book(tmp_path / "result.xlsx")
    with pytest.raises(ValueError, match="expected book"):  # OSWorld raises there too
        compare_table(result, None, rules=[DATA])
    broken = tmp_path / "broken.xlsx"
    broken.write_text("not a workbook")
    with pytest.raises(Exception):  # noqa: B017,PT011 - whatever openpyxl raises, as OSWorld
        compare_table(result, str(broken), rules=[{"type": "sheet_name"}])
