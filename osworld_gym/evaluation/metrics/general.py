"""Metrics over plain values: command output, getter strings and lists, parsed JSON objects.

OSWorld's module ``general`` (value part). Each takes the result a getter produced and the
task's ``rules`` dict (from the ``rule`` getter); a ``None`` result scores 0.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from osworld_gym.evaluation.metrics._deps import fuzz_ratio

logger = logging.getLogger(__name__)

# A sentinel some relative-time getters put in ``expected`` when they could not compute it.
_EVALUATION_FAILED = "__EVALUATION_FAILED__"


def check_include_exclude(result: str | None, rules: Mapping[str, Any]) -> float:
    """1 when ``result`` contains every ``include`` string and no ``exclude`` string.

    Example:
        >>> check_include_exclude("done: ok", {"include": ["ok"], "exclude": ["error"]})
        1.0
        >>> check_include_exclude("error: ok", {"include": ["ok"], "exclude": ["error"]})
        0.0
    """
    if result is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    ok = all(s in result for s in include) and all(s not in result for s in exclude)
    return float(ok)


def exact_match(result: Any, rules: Mapping[str, Any]) -> float:
    r"""1 when ``result == rules["expected"]`` (no normalisation: ``"1\n" != "1"``).

    Example:
        >>> exact_match("Thomas", {"expected": "Thomas"})
        1.0
    """
    return float(result == rules["expected"])


def match_in_list(result: Any, rules: Mapping[str, Any]) -> float:
    """1 when ``result`` is one of the values listed in ``rules["expected"]``.

    Example:
        >>> match_in_list("Bing", {"expected": ["Microsoft Bing", "Bing"]})
        1.0
    """
    return float(result in rules["expected"])


def is_in_list(result: Any, rules: Mapping[str, Any]) -> float:
    """1 when ``rules["expected"]`` is an element (or substring) of ``result``.

    Example:
        >>> is_in_list(["/a", "/home/user/ext"], {"expected": "/home/user/ext"})
        1.0
        >>> is_in_list(None, {"expected": "/home/user/ext"})
        0.0
    """
    if result is None:
        return 0.0
    return float(rules["expected"] in result)


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """Compare two literals as strings, or two sequences element-wise as strings.

    Args:
        result: The value produced by the agent.
        expected: The reference value.
        **options: ``type`` (``"str"``, default, or ``"list"``) and ``ignore_case`` (False).

    Returns:
        1.0 when equal under the options, else 0.0. With ``type="list"`` both sides must be
        lists or tuples of the same length.

    Raises:
        ValueError: Unknown ``type``.

    Example:
        >>> literal_match(["A", 3], ["a", "3"], type="list", ignore_case=True)
        1.0
    """
    literal_type = options.get("type", "str")
    fold = (lambda s: str(s).lower()) if options.get("ignore_case", False) else str
    if literal_type == "str":
        return float(fold(result) == fold(expected))
    if literal_type == "list":
        if not isinstance(result, list | tuple) or not isinstance(expected, list | tuple):
            return 0.0
        if len(result) != len(expected):
            return 0.0
        return float([fold(s) for s in result] == [fold(s) for s in expected])
    raise ValueError(f"literal_match: unsupported type {literal_type!r} (use 'str' or 'list')")


def fuzzy_match(result: str | None, rules: Mapping[str, Any]) -> float:
    """Similarity of ``result`` to ``rules["expected"]`` in [0, 1] (rapidfuzz ratio / 100).

    Example:
        >>> fuzzy_match("hello world", {"expected": "hello world"})
        1.0
    """
    if result is None:
        return 0.0
    return fuzz_ratio(result, rules["expected"]) / 100.0


def _parse_json_result(result: Any) -> Any:
    # OSWorld reads command output printed as a Python dict: single quotes become double.
    if isinstance(result, str):
        return json.loads(result.strip().replace("'", '"'))
    return result


def _all_keys_equal(result: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    sort_lists = bool(expected.get("ignore_list_order", False))
    for key, want in expected.items():
        got = result.get(key)
        if sort_lists:
            # OSWorld's quirk, kept for identical scores: the flag sits inside ``expected``
            # and sorts every value, so it only works when all values are lists.
            want, got = sorted(want), sorted(got)
        if want != got:
            return False
    return True


def _all_keys_included(result: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    for key, want in expected.items():
        got = result.get(key)
        if isinstance(want, list):
            if not any(
                (isinstance(got, list) and w in got) or (isinstance(got, str) and w == got)
                for w in want
            ):
                return False
        elif isinstance(want, str):
            if want not in got:
                return False
        else:
            return False
    return True


def check_direct_json_object(result: Any, rules: Mapping[str, Any]) -> float:
    """Compare a JSON object (a dict, or text printing one) with ``rules["expected"]``.

    Args:
        result: A dict, or a string holding one (single quotes are accepted).
        rules: ``expected`` (dict) and optional ``expect_in_result`` (bool). Without it every
            expected key must have an equal value in the result. With it, a list value passes
            when one of its items equals the result's string (or is in the result's list), and
            a string value passes when it is a substring of the result's value.

    Returns:
        1.0 on a match; 0.0 otherwise, including for ``None``, text that is not a JSON object
        (OSWorld raises there; a malformed agent output scores 0 here), rules without
        ``expected`` and an expected value marked ``"__EVALUATION_FAILED__"``.

    Example:
        >>> check_direct_json_object("{'city': 'Zurich'}", {"expected": {"city": "Zurich"}})
        1.0
        >>> rules = {"expected": {"to": ["STO", "ARN"]}, "expect_in_result": True}
        >>> check_direct_json_object({"to": "ARN"}, rules)
        1.0
    """
    try:
        parsed = _parse_json_result(result)
    except json.JSONDecodeError as e:
        logger.info("check_direct_json_object: result is not JSON (%s): %.200r", e, result)
        return 0.0
    if parsed is None:
        return 0.0
    if "expected" not in rules:
        return 0.0  # OSWorld looks rules["expected"] up inside its try: the KeyError scores 0
    expected = rules["expected"]
    if any(value == _EVALUATION_FAILED for value in expected.values()):
        logger.warning("check_direct_json_object: the expected value could not be computed")
        return 0.0
    check = _all_keys_included if rules.get("expect_in_result", False) else _all_keys_equal
    try:
        return float(check(parsed, expected))
    except (AttributeError, TypeError) as e:
        logger.info("check_direct_json_object: cannot compare %.200r: %s", parsed, e)
        return 0.0
