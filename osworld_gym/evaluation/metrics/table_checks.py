"""Spreadsheet task metrics that check one column against an answer list.

OSWorld's ``table.compare_conference_city_in_order``. Workbooks are read with openpyxl; a
missing or unreadable workbook scores 0.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)

_CITY_RANGE = "C2:C22"  # the task's city column, below its header


def _city_matches(actual: Any, accepted: Any) -> bool:
    """Whether the cell text contains the city (or one of a list of spellings), as written.

    The comparison is OSWorld's: a plain, case-sensitive substring test; a cell that is not
    text, or an entry that is neither text nor a list, fails.
    """
    if not isinstance(actual, str):
        return False
    if isinstance(accepted, str):
        return accepted in actual
    if isinstance(accepted, list):
        return any(isinstance(c, str) and c in actual for c in accepted)
    return False


def compare_conference_city_in_order(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when cells C2:C22 of the active sheet name the expected cities, in order.

    Args:
        result: Path of the ``.xlsx``.
        rules: ``expected``: one entry per row, a city or a list of accepted spellings; a
            cell passes when it is text containing the city (one spelling), case and accents
            as written.

    Returns:
        1.0 or 0.0; 0.0 also when the list has fewer entries than the range has rows.
    """
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
    if len(expected) < len(cells):
        return 0.0
    return float(all(_city_matches(c, e) for c, e in zip(cells, expected, strict=False)))
