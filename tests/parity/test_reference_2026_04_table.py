"""Reference ``osworld-2026.04`` for the spreadsheet metrics that changed since desktop-env 1.0.2.

PyPI ships no OSWorld of April 2026, so there is no side venv to compare with: every expected
score below was derived by reading that code (OSWorld's ``metrics/table.py`` at GitHub
``ljxpython/OSWorldUse`` f6cee71), never by running it. Each case also states the score of
desktop-env 1.0.2, which the ``*_1_0_2`` variants must keep (``test_parity_table.py`` checks
those against 1.0.2 itself). Rules and answer lists are the task files' own (``real_checks``,
``real_rules``), read at collection time; synthetic cases cover the edges they do not reach.

What changed:

* ``compare_table``'s ``freeze`` rule: 1.0.2 compares openpyxl's ``freeze_panes``, the pane's
  top-left *visible* cell (it moves when the frozen view is scrolled); 2026.04 compares
  ``("frozen", xSplit, ySplit)`` for a frozen (or frozenSplit) pane, ``("none",)`` without a
  pane, and split count plus top-left cell for any other pane.
* ``compare_conference_city_in_order``: 1.0.2 tests whether the cell's text contains the
  expected city (one of a list of spellings) as written; 2026.04 first normalizes both sides
  (NFKD, combining marks dropped, lower case, every run of characters other than ASCII letters
  and digits one space, trimmed; ``None`` is empty, other values ``str``), skips spellings that
  normalize to nothing, and reads non-text cells and spellings through ``str``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.worksheet.views import Pane
from osworld_data import needs_osworld_tasks
from parity_harness import ABSENT, FileContent, make_file, real_checks, real_rules

from osworld_gym.evaluation.metrics.registry import metrics_for
from osworld_gym.evaluation.metrics.table import compare_table_1_0_2
from osworld_gym.evaluation.metrics.table_checks import compare_conference_city_in_order_1_0_2
from osworld_gym.evaluation.references import OSWORLD_2026_04

pytestmark = pytest.mark.parity

METRICS_2026_04 = metrics_for("osworld", OSWORLD_2026_04)
Edit = Callable[[Any], None]


# --- compare_table: the freeze rule ---------------------------------------------------------

ROWS: list[list[Any]] = [["Name", "Score", "City"], ["Ada", 3.5, "Paris"], ["Bob", 7, "Rome"]]
FREEZE = {"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}


def _write_book(path: Path, edit: Edit | None) -> str:
    """A one-sheet book of ``ROWS``, its sheet changed by ``edit``."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for row in ROWS:
        ws.append(row)
    if edit is not None:
        edit(ws)
    wb.save(path)
    return str(path)


def frozen(cell: str) -> Edit:
    """Freeze above and left of ``cell``, as openpyxl (and LibreOffice, unscrolled) write it."""
    return lambda ws: setattr(ws, "freeze_panes", cell)


def pane(state: str, x: float | None, y: float | None, top_left: str) -> Edit:
    """A pane record as written by hand: LibreOffice saves ``topLeftCell`` where it scrolled."""

    def edit(ws: Any) -> None:
        ws.sheet_view.pane = Pane(
            xSplit=x, ySplit=y, topLeftCell=top_left, activePane="bottomRight", state=state
        )

    return edit


# (result, expected, score in 2026.04, score in 1.0.2, id)
FREEZE_CASES: list[tuple[Edit | None, Edit | None, float, float, str]] = [
    (frozen("C2"), frozen("C2"), 1.0, 1.0, "same"),
    # Scrolled after freezing: the same split, another top-left cell.
    (pane("frozen", 2, 1, "C40"), frozen("C2"), 1.0, 0.0, "scrolled-down"),
    (pane("frozen", 2, 1, "H2"), frozen("C2"), 1.0, 0.0, "scrolled-right"),
    (pane("frozen", None, 1, "A30"), frozen("A2"), 1.0, 0.0, "rows-only-scrolled"),
    # "frozenSplit" counts as frozen (its state is compared case-insensitively).
    (pane("frozenSplit", 2, 1, "C9"), frozen("C2"), 1.0, 0.0, "frozen-split-state"),
    # The same top-left cell, other frozen columns: 1.0.2 sees only the cell.
    (pane("frozen", 1, 1, "C2"), frozen("C2"), 0.0, 1.0, "same-cell-other-split"),
    # A plain split at the frozen pane's cell is no freeze in 2026.04.
    (pane("split", 2, 1, "C2"), frozen("C2"), 0.0, 1.0, "split-vs-frozen"),
    (pane("split", 1500, 600, "C2"), pane("split", 1500, 600, "C2"), 1.0, 1.0, "split-same"),
    (pane("split", 1500, 600, "C9"), pane("split", 1500, 600, "C2"), 0.0, 0.0, "split-scrolled"),
    (frozen("B2"), frozen("C2"), 0.0, 0.0, "other-column"),
    (None, frozen("C2"), 0.0, 0.0, "none-vs-frozen"),
    (None, None, 1.0, 1.0, "none-both"),
]


def _freeze_rule_sets() -> list[tuple[str, list[dict[str, Any]]]]:
    """The task files' rule lists that hold a ``freeze`` rule, and a bare one."""
    found = [
        (task, options["rules"])
        for task, _, _, options in real_checks("compare_table")
        if any(rule["type"] == "freeze" for rule in options.get("rules", []))
    ]
    return [*found, ("synthetic", [FREEZE])]


@pytest.mark.parametrize(
    ("result", "expected", "new", "old", "rules"),
    [
        pytest.param(result, expected, new, old, rules, id=f"{task}-{label}")
        for task, rules in _freeze_rule_sets()
        for result, expected, new, old, label in FREEZE_CASES
    ],
)
def test_compare_table_freeze(
    tmp_path: Path,
    result: Edit | None,
    expected: Edit | None,
    new: float,
    old: float,
    rules: list[dict[str, Any]],
) -> None:
    paths = (
        _write_book(tmp_path / "result.xlsx", result),
        _write_book(tmp_path / "expected.xlsx", expected),
    )
    assert METRICS_2026_04["compare_table"](*paths, rules=rules) == new
    assert compare_table_1_0_2(*paths, rules=rules) == old


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param({**FREEZE, "sheet_idx0": "RNnope"}, id="result"),
        pytest.param({**FREEZE, "sheet_idx1": "ENnope"}, id="expected"),
    ],
)
def test_compare_table_freeze_missing_sheet(tmp_path: Path, rule: dict[str, Any]) -> None:
    """A missing first sheet scores 0; a missing second one raises in OSWorld (we score 0)."""
    paths = (
        _write_book(tmp_path / "result.xlsx", frozen("C2")),
        _write_book(tmp_path / "expected.xlsx", frozen("C2")),
    )
    assert METRICS_2026_04["compare_table"](*paths, rules=[rule]) == 0.0
    assert compare_table_1_0_2(*paths, rules=[rule]) == 0.0


def test_compare_table_other_rules_did_not_change(tmp_path: Path) -> None:
    """Rules other than ``freeze`` score as before: a data change fails in both."""
    data = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    same = (_write_book(tmp_path / "a.xlsx", None), _write_book(tmp_path / "b.xlsx", None))
    changed = _write_book(tmp_path / "c.xlsx", lambda ws: ws.__setitem__("B2", 4))
    for metric in (METRICS_2026_04["compare_table"], compare_table_1_0_2):
        assert metric(*same, rules=[data]) == 1.0
        assert metric(changed, same[1], rules=[data]) == 0.0


# --- compare_conference_city_in_order ------------------------------------------------------

CITY_ROWS = 21  # C2:C22


def _city_book(tmp_path: Path, cities: list[Any]) -> str:
    """The task's sheet: a header row, then one conference a row with its city in column C."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["Year", "Conference", "City"])
    for i, city in enumerate(cities):
        ws.append([2013 + i // 3, f"Conf {i}", city])
    path = tmp_path / "ConferenceCity.xlsx"
    wb.save(path)
    return str(path)


def _score_both(path: str | None, rules: dict[str, Any]) -> tuple[float, float]:
    return (
        METRICS_2026_04["compare_conference_city_in_order"](path, rules),
        compare_conference_city_in_order_1_0_2(path, rules),
    )


def _first(entry: Any) -> str:
    return entry if isinstance(entry, str) else entry[0]


def _replace_in(cities: list[str], old: str, new: str) -> list[str]:
    return [c.replace(old, new) for c in cities]


def _fullwidth(text: str) -> str:
    """ASCII letters as their full-width forms (NFKD maps them back)."""
    return "".join(chr(ord(ch) + 0xFEE0) if ch.isascii() and ch.isalpha() else ch for ch in text)


def _index_of(entries: list[Any], spelling: str) -> int | None:
    for i, entry in enumerate(entries):
        if spelling in ([entry] if isinstance(entry, str) else entry):
            return i
    return None


# How a sheet is made from the task's ``expected`` list: (label, make, 2026.04, 1.0.2). ``make``
# returns the C2:C22 column, or None where the task's list has no entry the case needs.
CityCase = tuple[str, Callable[[list[Any]], list[Any] | None], float, float]


def _with_row(entries: list[Any], spelling: str, cell: Any) -> list[Any] | None:
    """The first spellings, with the row of the entry that lists ``spelling`` set to ``cell``."""
    i = _index_of(entries, spelling)
    if i is None:
        return None
    cities: list[Any] = [_first(e) for e in entries]
    cities[i] = cell
    return cities


def _last_entry_row(entries: list[Any], cell: Any) -> list[Any]:
    cities: list[Any] = [_first(e) for e in entries]
    cities[CITY_ROWS - 1] = cell
    return cities


def _rockies(cell: str) -> Callable[[list[Any]], list[Any] | None]:
    """The row whose spellings have the curly apostrophe (6f4073b8's) set to ``cell``."""
    return lambda entries: _with_row(entries, "Alberta’s Rockies", cell)


REAL_CITY_CASES: list[CityCase] = [
    ("first-spellings", lambda e: [_first(x) for x in e], 1.0, 1.0),
    ("last-spellings", lambda e: [x if isinstance(x, str) else x[-1] for x in e], 1.0, 1.0),
    ("with-state", lambda e: [f"{_first(x)}, Country" for x in e], 1.0, 1.0),
    # Case, accents and punctuation: 2026.04 ignores them, 1.0.2 needs them as written.
    ("lower-case", lambda e: [_first(x).lower() for x in e], 1.0, 0.0),
    ("upper-case", lambda e: [_first(x).upper() for x in e], 1.0, 0.0),
    ("padded", lambda e: [f"  {_first(x)} " for x in e], 1.0, 1.0),
    ("full-width", lambda e: [_fullwidth(_first(x)) for x in e], 1.0, 0.0),
    ("hyphenated", lambda e: [_first(x).replace(" ", "-") for x in e], 1.0, 0.0),
    # The curly apostrophe variant (and the straight one) pass in both: the list has both.
    ("curly-apostrophe", _rockies("Alberta’s Rockies"), 1.0, 1.0),
    ("straight-apostrophe", _rockies("Alberta's Rockies"), 1.0, 1.0),
    # Other apostrophes are only 2026.04's (they become a space there).
    ("left-quote-apostrophe", _rockies("Alberta‘s Rockies"), 1.0, 0.0),
    ("acute-apostrophe", _rockies("Alberta´s Rockies"), 1.0, 0.0),
    ("rockies-lower-case", _rockies("alberta’s rockies"), 1.0, 0.0),
    ("accent-dropped", lambda e: _with_row(e, "Montréal", "MONTREAL, QC"), 1.0, 0.0),
    ("dotted-abbreviation", lambda e: _with_row(e, "NYC", "N.Y.C."), 0.0, 0.0),
    # 2026.04 tests substrings of the normalized text: "la" is in "atlanta".
    ("la-inside-a-word", lambda e: _with_row(e, "LA", "Atlanta"), 1.0, 0.0),
    ("wrong-city", lambda e: _with_row(e, "Sydney", "Melbourne"), 0.0, 0.0),
    ("reversed", lambda e: [_first(x) for x in e][::-1], 0.0, 0.0),
    ("last-row-empty", lambda e: _last_entry_row(e, None), 0.0, 0.0),
    ("last-row-number", lambda e: _last_entry_row(e, 7), 0.0, 0.0),
]


def _real_city_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("compare_conference_city_in_order"):
        for label, make, new, old in REAL_CITY_CASES:
            cities = make(list(rules["expected"]))
            if cities is not None:
                cases.append(pytest.param(cities, rules, new, old, id=f"{task}-{label}"))
    return cases


@needs_osworld_tasks  # its cases are the task file's answer list
@pytest.mark.parametrize(("cities", "rules", "new", "old"), _real_city_cases())
def test_conference_cities_real(
    tmp_path: Path, cities: list[Any], rules: dict[str, Any], new: float, old: float
) -> None:
    assert _score_both(_city_book(tmp_path, cities), rules) == (new, old)


def test_conference_cities_real_cases_are_there() -> None:
    """multi_apps/6f4073b8 (the issue's case) is among the task files, with its variants."""
    if not real_rules("compare_conference_city_in_order"):
        pytest.skip("no task files")
    ids = {p.id for p in _real_city_cases() if p.id.startswith("6f4073b8-")}
    assert len(ids) == len(REAL_CITY_CASES)  # every case found its row in that task's list


SYNTHETIC = [f"City {chr(ord('A') + i)}" for i in range(CITY_ROWS)]  # "City A" ... "City U"


def _synthetic(change: dict[int, Any] | None = None) -> list[Any]:
    cities: list[Any] = list(SYNTHETIC)
    for i, value in (change or {}).items():
        cities[i] = value
    return cities


def _expected(
    change: dict[int, Any] | None = None, extra: list[Any] | None = None
) -> dict[str, Any]:
    entries: list[Any] = list(SYNTHETIC)
    for i, value in (change or {}).items():
        entries[i] = value
    return {"expected": entries + (extra or [])}


# (cells, rules, 2026.04, 1.0.2, id)
SYNTHETIC_CASES = [
    (_synthetic(), _expected(), 1.0, 1.0, "equal"),
    (_synthetic(), _expected(extra=["never read"]), 1.0, 1.0, "entries-past-c22-ignored"),
    (_synthetic(), {"expected": SYNTHETIC[:-1]}, 0.0, 0.0, "list-too-short"),
    # Spellings that normalize to nothing never match in 2026.04; "" is in any text in 1.0.2.
    (_synthetic(), {"expected": [""] * CITY_ROWS}, 0.0, 1.0, "empty-spellings"),
    (_synthetic(), _expected({0: "--"}), 0.0, 0.0, "punctuation-only-spelling"),
    (_synthetic({0: "City A--"}), _expected({0: "--"}), 0.0, 1.0, "punctuation-spelling-in-text"),
    (_synthetic(), {"expected": [[]] * CITY_ROWS}, 0.0, 0.0, "empty-lists"),
    (_synthetic(), _expected({0: ["", "City A"]}), 1.0, 1.0, "empty-then-right"),
    # Non-text cells and spellings go through str() in 2026.04; 1.0.2 raises on them (0).
    (_synthetic({3: 2019}), _expected({3: "2019"}), 1.0, 0.0, "number-cell"),
    (_synthetic({3: 2019.0}), _expected({3: "2019"}), 1.0, 0.0, "float-cell"),
    (_synthetic({3: 2019}), _expected({3: ["x", 2019]}), 1.0, 0.0, "number-spelling"),
    (_synthetic(), _expected({3: [7, "City D"]}), 1.0, 0.0, "number-before-spelling"),
    (_synthetic(), _expected({3: ["City D", 7]}), 1.0, 1.0, "number-after-spelling"),
    (_synthetic(), _expected({3: 7}), 0.0, 0.0, "number-entry"),
    (_synthetic(), _expected({3: {"city": "City D"}}), 0.0, 0.0, "dict-entry"),
    (_synthetic({3: None}), _expected(), 0.0, 0.0, "empty-cell"),
    # Substrings: anywhere in the text, across what were separate words.
    (_synthetic({3: "Old City D-Town"}), _expected(), 1.0, 1.0, "substring"),
    (_synthetic({3: "Cit y D"}), _expected(), 0.0, 0.0, "split-word"),
    (_synthetic({3: "CityD"}), _expected(), 0.0, 0.0, "joined-words"),
    (_synthetic({3: "city\td"}), _expected(), 1.0, 0.0, "tab-and-case"),
    (_synthetic({3: "Cíty D"}), _expected(), 1.0, 0.0, "accent-in-cell"),
    (_synthetic(), _expected({3: "Cíty D"}), 1.0, 0.0, "accent-in-spelling"),
    # Only ASCII letters and digits count: other letters are separators.
    (_synthetic({3: "Straße D"}), _expected({3: "Straße D"}), 1.0, 1.0, "eszett-both"),
    (_synthetic({3: "Strasse D"}), _expected({3: "Straße D"}), 0.0, 0.0, "eszett-vs-ss"),
    (_synthetic({3: "Strae D"}), _expected({3: "Straße D"}), 0.0, 0.0, "eszett-dropped"),
    (_synthetic({3: "Stra e D"}), _expected({3: "Straße D"}), 1.0, 0.0, "eszett-is-a-space"),
]


@pytest.mark.parametrize(
    ("cities", "rules", "new", "old"),
    [pytest.param(c, r, n, o, id=i) for c, r, n, o, i in SYNTHETIC_CASES],
)
def test_conference_cities_synthetic(
    tmp_path: Path, cities: list[Any], rules: dict[str, Any], new: float, old: float
) -> None:
    assert _score_both(_city_book(tmp_path, cities), rules) == (new, old)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"not a workbook", id="corrupt"),
        pytest.param(ABSENT, id="absent"),
        pytest.param(None, id="none"),
    ],
)
def test_conference_cities_no_workbook(tmp_path: Path, content: FileContent) -> None:
    """No readable workbook: OSWorld raises (outside its try), which our evaluator records as 0."""
    path = make_file(tmp_path, "ConferenceCity.xlsx", content)
    assert _score_both(None if path is None else str(path), _expected()) == (0.0, 0.0)


def test_conference_cities_read_the_active_sheet(tmp_path: Path) -> None:
    """Cells C2:C22 of the active sheet only: another sheet's cities are not read."""
    wb = openpyxl.Workbook()
    wb.active.title = "Notes"
    other = wb.create_sheet("Cities")
    other.append(["Year", "Conference", "City"])
    for city in SYNTHETIC:
        other.append([2013, "Conf", city])
    path = tmp_path / "ConferenceCity.xlsx"
    wb.save(path)
    assert _score_both(str(path), _expected()) == (0.0, 0.0)
