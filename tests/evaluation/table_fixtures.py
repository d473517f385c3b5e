"""Workbook builders shared by the compare_table tests (openpyxl writers into tmp_path)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl

from osworld_gym.evaluation.metrics import get_metric

compare_table = get_metric("compare_table")
ROWS: list[list[Any]] = [["Name", "Score"], ["ann", 1.0], ["bob", 7], ["cid", 9.5]]
RED = "FFFF0000"
Mutator = Callable[[Any], None]


def book(
    path: Path, rows: list[list[Any]] = ROWS, mutate: Mutator | None = None, title: str = "Sheet1"
) -> str:
    """Write a one-sheet workbook (plus whatever ``mutate`` adds) and return its path."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    for row in rows:
        ws.append(row)
    if mutate is not None:
        mutate(ws)
    wb.save(path)
    return str(path)


def pair(
    tmp_path: Path, result: Mutator | None = None, expected: Mutator | None = None, **kwargs: Any
) -> tuple[str, str]:
    return (
        book(tmp_path / "result.xlsx", mutate=result, **kwargs),
        book(tmp_path / "gold.xlsx", mutate=expected, **kwargs),
    )


def score(paths: tuple[str, str], *rules: dict[str, Any]) -> float:
    return compare_table(paths[0], paths[1], rules=list(rules))


DATA = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}


def set_cell(coordinate: str, value: Any) -> Mutator:
    def _set(ws: Any) -> None:
        ws[coordinate] = value

    return _set
