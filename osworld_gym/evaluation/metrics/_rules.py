"""OSWorld's ``{"method": ..., "ref": ...}`` value rules, shared by table, JSON and CSV metrics.

A rule compares one value read from a file with a reference. The methods are OSWorld's:

* ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge`` — the ``operator`` comparison;
* ``re`` or ``re.FLAG.FLAG`` (e.g. ``re.I``) — ``re.search()`` of ``ref`` in the value;
* ``approx:T`` — ``|float(value) - ref| <= T`` (a value that is not a number fails);
* ``range.XY`` with ``X, Y`` in ``{t, e}`` — ``ref[0] <X value <Y ref[1]`` (``t``: strict,
  ``e``: or equal), e.g. ``range.te`` is ``ref[0] < value <= ref[1]``;
* ``str_list_eq`` / ``str_set_eq`` — the value is a comma-separated string (quotes stripped),
  compared as a list / set with ``ref``; a value that is not a string is a ``TypeError``;
* ``spreadsheet_range`` — the value is an openpyxl ``MultiCellRange`` lying between
  ``ref[0]`` (must be covered) and ``ref[1]`` (must cover it).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import require

_COMPARISONS: Mapping[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
_BOUND = {"t": operator.lt, "e": operator.le}


def _regex_flags(method: str) -> re.RegexFlag:
    flags = re.RegexFlag(0)
    for name in method.split(".")[1:]:
        flag = getattr(re, name, None)
        if not isinstance(flag, re.RegexFlag):
            raise ValueError(f"unknown regex flag {name!r} in rule method {method!r}")
        flags |= flag
    return flags


def _approx(value: Any, method: str, ref: Any) -> bool:
    threshold = float(method.split(":", 1)[1])
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return abs(number - ref) <= threshold


def _range(value: Any, method: str, ref: Any) -> bool:
    low, high = _BOUND[method[6]], _BOUND[method[7]]
    return bool(low(ref[0], value) and high(value, ref[1]))


def _str_container_eq(value: Any, method: str, ref: Any) -> bool:
    # OSWorld strips and splits the value itself, so a number or None raises there (the
    # callers score that 0) rather than being read as its text.
    if not isinstance(value, str):
        raise TypeError(f"{method} needs a string value, got {type(value).__name__}")
    container: type = list if method == "str_list_eq" else set
    return container(value.strip("\"'").split(",")) == container(ref)


def _spreadsheet_range(value: Any, ref: Any) -> bool:
    multi_cell_range = require("openpyxl.worksheet.cell_range").MultiCellRange
    must_cover, must_be_within = multi_cell_range(ref[0]), multi_cell_range(ref[1])
    return all(r in value for r in must_cover) and all(r in must_be_within for r in value)


def match_value_to_rule(value: Any, rule: Mapping[str, Any]) -> bool:
    """Whether ``value`` satisfies an OSWorld rule ``{"method": str, "ref": Any}``.

    Args:
        value: The value read from the result (cell value, JSON field, ...).
        rule: The rule; see the module docstring for the methods.

    Returns:
        True when the value satisfies the rule.

    Raises:
        ValueError: Unknown method or regex flag.
        TypeError: The value cannot be compared that way (e.g. ``re`` on a number); callers
            score such a check 0, as OSWorld does.

    Example:
        >>> match_value_to_rule(191.66668, {"method": "approx:0.001", "ref": 191.6667})
        True
        >>> match_value_to_rule("Total Sales", {"method": "re.I", "ref": "^total"})
        True
        >>> match_value_to_rule(2, {"method": "range.te", "ref": [0, 2]})
        True
        >>> match_value_to_rule('"Pass,Fail"', {"method": "str_set_eq", "ref": ["Fail", "Pass"]})
        True
    """
    method: str = rule["method"]
    ref = rule.get("ref")
    if method in _COMPARISONS:
        return bool(_COMPARISONS[method](value, ref))
    if method == "re" or method.startswith("re."):
        return re.search(ref, value, _regex_flags(method)) is not None
    if method.startswith("approx:"):
        return _approx(value, method, ref)
    if method == "spreadsheet_range":
        return _spreadsheet_range(value, ref)
    if re.fullmatch(r"range\.[te][te]", method):
        return _range(value, method, ref)
    if method in ("str_list_eq", "str_set_eq"):
        return _str_container_eq(value, method, ref)
    raise ValueError(f"unknown rule method {method!r}")


def match_record(pattern: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """Whether every key of ``pattern`` is in ``record`` with an equal value.

    Example:
        >>> match_record({"user": "a"}, {"user": "a", "url": "imap://x"})
        True
        >>> match_record({"user": "b"}, {"user": "a"})
        False
    """
    return all(key in record and record[key] == value for key, value in pattern.items())
