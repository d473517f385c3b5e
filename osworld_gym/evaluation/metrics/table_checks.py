"""Spreadsheet task metrics that check one column against an answer list.

OSWorld's ``table.compare_conference_city_in_order``. Workbooks are read with openpyxl; a
missing or unreadable workbook scores 0.

Two OSWorld references (``osworld_gym.evaluation.references``) differ in how a cell is
matched against the expected city: ``compare_conference_city_in_order()`` follows OSWorld's
code of 2026.04, which compares both sides after ``normalize_city()`` (case, accents and
punctuation ignored); ``compare_conference_city_in_order_1_0_2()`` keeps desktop-env 1.0.2's
plain, case-sensitive substring test.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_CITY_RANGE = "C2:C22"  # the task's city column, below its header
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")  # ASCII only: other letters are separators too

CityMatch = Callable[[Any, Any], bool]


def normalize_city(value: Any) -> str:
    """A city name as OSWorld's code of 2026.04 compares it.

    Compatibility-decomposed (NFKD) with its combining marks dropped (so accents go),
    lower-cased, every run of characters other than ASCII letters and digits made one space,
    trimmed. ``None`` is ``""``; other non-text values are read through ``str``.

    Example:
        >>> normalize_city("  Alberta’s Rockies ")
        'alberta s rockies'
        >>> normalize_city("Montréal (QC)")
        'montreal qc'
        >>> normalize_city(None), normalize_city(3.0)
        ('', '3 0')
    """
    if value is None:
        return ""
    decomposed = unicodedata.normalize("NFKD", value if isinstance(value, str) else str(value))
    unaccented = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _NOT_ALNUM.sub(" ", unaccented.lower()).strip()


def _city_matches(actual: Any, accepted: Any) -> bool:
    """Whether the cell names the city, or one of a list of spellings (2026.04).

    Both sides are ``normalize_city()``'d and the spelling must occur in the cell's text,
    anywhere (``"la"`` is in ``"atlanta"``: OSWorld tests substrings, not words). A spelling
    that normalizes to nothing never matches; non-text spellings in a list are read through
    ``str``; an entry that is neither text nor a list fails (OSWorld raises a TypeError it
    scores 0).
    """
    if isinstance(accepted, str):
        spellings: list[Any] = [accepted]
    elif isinstance(accepted, list):
        spellings = accepted
    else:
        return False
    cell = normalize_city(actual)
    for spelling in spellings:
        wanted = normalize_city(spelling)
        if wanted and wanted in cell:
            return True
    return False


def _city_matches_1_0_2(actual: Any, accepted: Any) -> bool:
    """Whether the cell text contains the city (or one of a list of spellings), as written.

    desktop-env 1.0.2's test: a plain, case-sensitive substring test. Where it hits a ``TypeError``
    (a cell that is not text, a non-text spelling reached before one that matches, an entry
    that is neither text nor a list) it scores 0, so those fail here.
    """
    if not isinstance(actual, str):
        return False
    if isinstance(accepted, str):
        return accepted in actual
    if isinstance(accepted, list):
        for spelling in accepted:  # in order: OSWorld's any() stops at the first match
            if not isinstance(spelling, str):
                return False
            if spelling in actual:
                return True
    return False


def _score_cities(result: str | None, rules: Mapping[str, Any], matches: CityMatch) -> float:
    """1.0 when each cell of C2:C22 of the active sheet ``matches`` its expected entry, in order."""
    if not result:
        return 0.0
    try:
        sheet = require("openpyxl").load_workbook(result).active
        cells = [row[0].value for row in sheet[_CITY_RANGE]]
    except ImportError:
        raise  # a missing library is an installation problem, never a score
    except Exception as e:  # not a workbook, no active sheet: the agent's output scores 0
        logger.info("compare_conference_city_in_order: cannot read %s: %s", result, e)
        return 0.0
    expected = list(rules["expected"])
    if len(expected) < len(cells):  # OSWorld runs out of entries (IndexError): 0
        return 0.0
    for row, (cell, entry) in enumerate(zip(cells, expected, strict=False), start=2):
        if not matches(cell, entry):
            logger.info("conference cities: C%d is %r, expected %r", row, cell, entry)
            return 0.0
    return 1.0


def compare_conference_city_in_order(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when cells C2:C22 of the active sheet name the expected cities, in order.

    Behaves as OSWorld's code of 2026.04 (``compare_conference_city_in_order_1_0_2()`` for
    1.0.2's): case, accents and punctuation do not matter (``normalize_city()``).

    Args:
        result: Path of the ``.xlsx``.
        rules: ``expected``: one entry per row, a city or a list of accepted spellings; a
            cell passes when its normalized text contains the normalized city (one spelling).
            Entries past the 21st are not read.

    Returns:
        1.0 or 0.0; 0.0 also when the list has fewer entries than the range has rows.
    """
    return _score_cities(result, rules, _city_matches)


def compare_conference_city_in_order_1_0_2(result: str | None, rules: Mapping[str, Any]) -> float:
    """``compare_conference_city_in_order()`` as desktop-env 1.0.2 scores it.

    A cell passes when it is text containing the city (one spelling) exactly as written: case,
    accents and punctuation (a straight or a curly apostrophe) must match.
    """
    return _score_cities(result, rules, _city_matches_1_0_2)
