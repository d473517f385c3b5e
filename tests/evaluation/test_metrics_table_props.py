"""compare_table: frozen panes, zoom, data validation, row/column props, filters, charts, pivots."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("openpyxl")
pytest.importorskip("pandas")

from openpyxl.chart import BarChart, LineChart, Reference  # noqa: E402
from openpyxl.worksheet.datavalidation import DataValidation  # noqa: E402
from openpyxl.worksheet.views import Pane  # noqa: E402
from table_fixtures import Mutator, book, compare_table, pair, score  # noqa: E402

from osworld_gym.evaluation.metrics.registry import metrics_for  # noqa: E402
from osworld_gym.evaluation.metrics.table import compare_table_1_0_2  # noqa: E402
from osworld_gym.evaluation.metrics.table_props import pivot_info  # noqa: E402

# --- sheet view, validation, dimensions, filters ------------------------------------------------


def frozen(cell: str) -> Mutator:
    def _freeze(ws: Any) -> None:
        ws.freeze_panes = cell

    return _freeze


FREEZE = {"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}


def test_freeze(tmp_path: Path) -> None:
    assert score(pair(tmp_path, frozen("B2"), frozen("B2")), FREEZE) == 1.0
    assert score(pair(tmp_path, frozen("C2"), frozen("B2")), FREEZE) == 0.0
    assert score(pair(tmp_path, None, frozen("B2")), FREEZE) == 0.0


def test_freeze_after_scrolling_passes_but_failed_in_1_0_2(tmp_path: Path) -> None:
    def scrolled(ws: Any) -> None:
        ws.sheet_view.pane = Pane(
            xSplit=1, ySplit=1, topLeftCell="B40", activePane="bottomRight", state="frozen"
        )

    paths = pair(tmp_path, scrolled, frozen("B2"))
    assert score(paths, FREEZE) == 1.0  # 2026.04: the frozen rows and columns match
    assert compare_table_1_0_2(*paths, rules=[FREEZE]) == 0.0  # 1.0.2: the top-left cell
    (tmp_path / "moved").mkdir()
    moved = pair(tmp_path / "moved", frozen("C2"), frozen("B2"))
    for reference in ("osworld-2026.04", "osworld-1.0.2"):
        fixed = metrics_for("fixed", reference)["compare_table"]
        assert fixed(*paths, rules=[FREEZE]) == 1.0
        assert fixed(*moved, rules=[FREEZE]) == 0.0  # another frozen column


def zoomed(scale: int | None) -> Mutator:
    def _zoom(ws: Any) -> None:
        ws.sheet_view.zoomScale = scale

    return _zoom


@pytest.mark.parametrize(("scale", "expected_score"), [(200, 1.0), (None, 1.0), (300, 0.0)])
def test_zoom(tmp_path: Path, scale: int | None, expected_score: float) -> None:
    result = book(tmp_path / "r.xlsx", mutate=zoomed(scale))
    rule = {"type": "zoom", "sheet_idx": 0, "method": "lt", "ref": 260}
    assert compare_table(result, None, rules=[rule]) == expected_score


DV_RULE = {
    "type": "data_validation",
    "sheet_idx": 0,
    "dv_props": [
        {
            "ranges": {"method": "spreadsheet_range", "ref": ["D2:D29", "D2:D1048576"]},
            "type": {"method": "eq", "ref": "list"},
            "formula1": {"method": "str_set_eq", "ref": ["Pass", "Fail", "Held"]},
        }
    ],
}


def validated(formula: str, cells: str = "D2:D100") -> Mutator:
    def _validate(ws: Any) -> None:
        dv = DataValidation(type="list", formula1=formula)
        dv.add(cells)
        ws.add_data_validation(dv)

    return _validate


@pytest.mark.parametrize(
    ("mutate", "expected_score"),
    [
        (validated('"Held,Pass,Fail"'), 1.0),
        (validated('"Pass,Fail"'), 0.0),
        (validated('"Pass,Fail,Held"', cells="D3:D29"), 0.0),  # does not cover D2
        (None, 0.0),
    ],
)
def test_data_validation(tmp_path: Path, mutate: Mutator | None, expected_score: float) -> None:
    result = book(tmp_path / "r.xlsx", mutate=mutate)
    assert compare_table(result, None, rules=[DV_RULE]) == expected_score


def hide_rows(*rows: int) -> Mutator:
    def _hide(ws: Any) -> None:
        for r in rows:
            ws.row_dimensions[r].hidden = True

    return _hide


def test_row_and_col_props(tmp_path: Path) -> None:
    rows = {"type": "row_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["hidden"]}
    assert score(pair(tmp_path, hide_rows(3), hide_rows(3)), rows) == 1.0
    assert score(pair(tmp_path, hide_rows(2), hide_rows(3)), rows) == 0.0

    def widen(width: float) -> Mutator:
        def _widen(ws: Any) -> None:
            ws.column_dimensions["A"].width = width

        return _widen

    cols = {"type": "col_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["width"]}
    assert score(pair(tmp_path, widen(20), widen(20)), cols) == 1.0
    assert score(pair(tmp_path, widen(20), widen(30)), cols) == 0.0


def filtered(values: list[str]) -> Mutator:
    def _filter(ws: Any) -> None:
        ws.auto_filter.ref = "A1:B4"
        ws.auto_filter.add_filter_column(0, values)

    return _filter


def test_filter(tmp_path: Path) -> None:
    rule = {"type": "filter", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert score(pair(tmp_path, filtered(["ann"]), filtered(["ann"])), rule) == 1.0
    assert score(pair(tmp_path, filtered(["bob"]), filtered(["ann"])), rule) == 0.0
    assert score(pair(tmp_path, None, filtered(["ann"])), rule) == 0.0


# --- charts and pivot tables ----------------------------------------------------------------


def charted(kind: type, title: str = "Scores") -> Mutator:
    def _chart(ws: Any) -> None:
        chart = kind()
        chart.title = title
        chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=4))
        ws.add_chart(chart, "D2")

    return _chart


CHART = {"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["type", "title"]}


def test_chart(tmp_path: Path) -> None:
    assert score(pair(tmp_path, charted(BarChart), charted(BarChart)), CHART) == 1.0
    assert score(pair(tmp_path, charted(LineChart), charted(BarChart)), CHART) == 0.0
    assert score(pair(tmp_path, charted(BarChart, "Other"), charted(BarChart)), CHART) == 0.0
    assert score(pair(tmp_path, None, charted(BarChart)), CHART) == 0.0


def test_pivot_table_rule_on_books_without_pivots(tmp_path: Path) -> None:
    rule = {
        "type": "pivot_table",
        "sheet_idx0": 0,
        "sheet_idx1": "EI0",
        "pivot_props": ["col_fields", "filter", "row_fields", "data_fields"],
    }
    assert score(pair(tmp_path), rule) == 1.0


def fake_pivot(
    first_used_field: int, rows: list[int], subtotal: str = "sum", start: str = "A"
) -> SimpleNamespace:
    """A pivot definition shaped like openpyxl's, with fields before ``first_used_field`` empty."""
    ns = SimpleNamespace
    fields = [ns(items=[]) for _ in range(first_used_field)] + [
        ns(items=[ns(h=None, x=0), ns(h=True, x=1)]),
        ns(items=[ns(h=None, x=0)]),
    ]
    last_col = chr(ord(start) + first_used_field + 1)
    return ns(
        pivotFields=fields,
        cache=ns(
            cacheSource=ns(
                type="worksheet", worksheetSource=ns(ref=f"{start}1:{last_col}20", sheet="Data")
            )
        ),
        pageFields=[],
        colFields=[ns(x=-2)],
        rowFields=[ns(x=r + first_used_field) for r in rows],
        dataFields=[ns(fld=first_used_field + 1, name="Sum", subtotal=subtotal, showDataAs=None)],
        name="P",
        visualTotals=True,
        showEmptyRow=False,
        showEmptyCol=False,
        showHeaders=True,
        location=None,
    )


PIVOT_PROPS = ["col_fields", "filter", "row_fields", "data_fields"]


def test_pivot_info_ignores_unused_leading_fields() -> None:
    # A pivot over C:D equals one over A:D whose columns A and B hold no pivot items. (OSWorld
    # shifts the special "Values" field index -2 too, hence ignore_special_fields here.)
    props = [*PIVOT_PROPS, "ignore_special_fields"]
    narrow = pivot_info(fake_pivot(0, [0], start="C"), props)
    assert pivot_info(fake_pivot(2, [0], start="A"), props) == narrow


def test_pivot_info_sees_fields_and_functions() -> None:
    key, info = pivot_info(fake_pivot(0, [0]), PIVOT_PROPS)
    assert key == "worksheet;(1, 1):(20, 2);Data"
    assert info["row_fields"] == [0] and info["col_fields"] == [-2]
    assert info["data_fields"] == ["1;;sum;None"]
    assert info["selection"] == [{(None, 0), (True, 1)}, {(None, 0)}]
    assert pivot_info(fake_pivot(0, [1]), PIVOT_PROPS) != (key, info)
    assert pivot_info(fake_pivot(0, [0], subtotal="count"), PIVOT_PROPS) != (key, info)
    _, special = pivot_info(fake_pivot(0, [0]), [*PIVOT_PROPS, "ignore_special_fields"])
    assert special["col_fields"] == []
