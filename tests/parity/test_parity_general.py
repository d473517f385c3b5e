"""Parity of the value/rule metrics of OSWorld's ``general`` module with ours.

Results are what the getters hand over (command output, a getter's string or list, a parsed
JSON object); the rules are the ``rule`` getter's dicts, many of them read from OSWorld's task
files at test time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from parity_harness import OSWorld, assert_same_score, real_checks, real_rules

pytestmark = pytest.mark.parity


# --- check_include_exclude ------------------------------------------------------------------


def _include_exclude_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_include_exclude"):
        include, exclude = rules.get("include", []), rules.get("exclude", [])
        passing = "\n".join(["$ eval", *include, "done"])
        cases.append(pytest.param(passing, rules, id=f"{task}-all-included"))
        if exclude:
            cases.append(pytest.param(passing + exclude[0], rules, id=f"{task}-excluded"))
        if include:
            cases.append(pytest.param("\n".join(include[1:]), rules, id=f"{task}-one-missing"))
    return cases


INCLUDE_EXCLUDE = [
    *_include_exclude_real(),
    pytest.param(None, {"include": ["ok"]}, id="none"),
    pytest.param("", {"include": ["ok"]}, id="empty-output"),
    pytest.param("", {}, id="empty-output-no-rules"),
    pytest.param("anything", {"include": [], "exclude": []}, id="empty-rules"),
    pytest.param("3 PASSED", {"include": ["passed"]}, id="case-sensitive"),
    pytest.param("Zürich ✓\n", {"include": ["Zürich ✓"]}, id="unicode"),
    pytest.param("\ufeffok", {"include": ["ok"], "exclude": ["\ufeff"]}, id="bom-excluded"),
    pytest.param("line1\r\nline2\r\n", {"include": ["line1\nline2"]}, id="crlf-vs-lf"),
    pytest.param("a\nb\n", {"include": ["a\nb\n"]}, id="multiline-include"),
    pytest.param("abc", {"include": "ca"}, id="include-is-a-string"),
    pytest.param("x not found", {"include": ["x"], "exclude": ["not found"]}, id="excluded"),
]


@pytest.mark.parametrize(("result", "rules"), INCLUDE_EXCLUDE)
def test_check_include_exclude(osworld: OSWorld, result: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "check_include_exclude", result, rules)


# --- exact_match, match_in_list, is_in_list --------------------------------------------------


def _exact_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("exact_match"):
        want = rules["expected"]
        cases.append(pytest.param(want, rules, id=f"{task}-equal"))
        cases.append(pytest.param(want.strip(), rules, id=f"{task}-stripped"))
        cases.append(pytest.param(want.upper(), rules, id=f"{task}-upper"))
    return cases


EXACT = [
    *_exact_real(),
    pytest.param(None, {"expected": "true\n"}, id="none"),
    pytest.param(None, {"expected": None}, id="none-expects-none"),
    pytest.param("", {"expected": ""}, id="empty"),
    pytest.param("1", {"expected": 1}, id="str-vs-int"),
    pytest.param(1, {"expected": 1.0}, id="int-vs-float"),
    pytest.param(True, {"expected": "true"}, id="bool-vs-text"),
    pytest.param(["a", "b"], {"expected": ["a", "b"]}, id="list"),
    pytest.param(["b", "a"], {"expected": ["a", "b"]}, id="list-order"),
    pytest.param({"k": 1}, {"expected": {"k": 1}}, id="dict"),
    pytest.param("Zürich", {"expected": "Zu\u0308rich"}, id="unicode-nfc-vs-nfd"),
    pytest.param("\ufefftrue\n", {"expected": "true\n"}, id="bom"),
    pytest.param("a", {}, id="rules-without-expected"),
]


@pytest.mark.parametrize(("result", "rules"), EXACT)
def test_exact_match(osworld: OSWorld, result: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "exact_match", result, rules)


def _in_list_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("match_in_list"):
        for value in rules["expected"]:
            cases.append(pytest.param(value, rules, id=f"{task}-{value}"))
        cases.append(pytest.param("Google", rules, id=f"{task}-other"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
        cases.append(pytest.param(rules["expected"][0].lower(), rules, id=f"{task}-lowercase"))
    return cases


MATCH_IN_LIST = [
    *_in_list_real(),
    pytest.param("Bing", {"expected": "Microsoft Bing"}, id="expected-is-a-string"),
    pytest.param(None, {"expected": "Microsoft Bing"}, id="none-in-a-string"),
    pytest.param("", {"expected": []}, id="empty-list"),
    pytest.param("", {"expected": ""}, id="empty-string-in-empty-string"),
    pytest.param(["light"], {"expected": [["light"], "system"]}, id="list-member"),
    pytest.param(1, {"expected": ["1", 2]}, id="int-vs-text"),
    pytest.param("light", {}, id="rules-without-expected"),
]


@pytest.mark.parametrize(("result", "rules"), MATCH_IN_LIST)
def test_match_in_list(osworld: OSWorld, result: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "match_in_list", result, rules)


def _is_in_list_real() -> list[Any]:
    cases = []
    for task, rules in real_rules("is_in_list"):
        want = rules["expected"]
        other = "/home/user/.config/google-chrome/Default/Extensions/abc"
        cases.append(pytest.param([other, want], rules, id=f"{task}-listed"))
        cases.append(pytest.param([other], rules, id=f"{task}-not-listed"))
        cases.append(pytest.param([want + "/"], rules, id=f"{task}-trailing-slash"))
        cases.append(pytest.param([], rules, id=f"{task}-empty"))
        cases.append(pytest.param(None, rules, id=f"{task}-none"))
        cases.append(pytest.param(f"{other}\n{want}\n", rules, id=f"{task}-text"))
    return cases


IS_IN_LIST = [
    *_is_in_list_real(),
    pytest.param("abc", {"expected": ""}, id="empty-expected-in-text"),
    pytest.param({"/a": 1}, {"expected": "/a"}, id="dict-key"),
    pytest.param(["/a"], {}, id="rules-without-expected"),
    pytest.param([["/a"]], {"expected": ["/a"]}, id="nested-list"),
    pytest.param(["/ä"], {"expected": "/ä"}, id="unicode"),
]


@pytest.mark.parametrize(("result", "rules"), IS_IN_LIST)
def test_is_in_list(osworld: OSWorld, result: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "is_in_list", result, rules)


# --- literal_match ----------------------------------------------------------------------------

_SCHOLAR = ["Ashish Vaswani", "123456", "Google Brain"]
_REAL_LITERAL_OPTIONS = [options for _, _, _, options in real_checks("literal_match")] or [
    {"type": "list", "ignore_case": True}
]

LITERAL = [
    *[
        pytest.param(result, _SCHOLAR, options, id=f"real-{name}")
        for options in _REAL_LITERAL_OPTIONS
        for name, result in [
            ("equal", list(_SCHOLAR)),
            ("case", [s.upper() for s in _SCHOLAR]),
            ("number", ["Ashish Vaswani", 123456, "Google Brain"]),
            ("shorter", _SCHOLAR[:2]),
            ("longer", [*_SCHOLAR, ""]),
            ("reordered", list(reversed(_SCHOLAR))),
            ("none", None),
            ("text", "Ashish Vaswani"),
            ("empty", []),
        ]
    ],
    pytest.param([], [], {"type": "list"}, id="list-both-empty"),
    pytest.param(["A"], ["a"], {"type": "list"}, id="list-case-sensitive"),
    pytest.param([1.0], ["1"], {"type": "list"}, id="list-float-vs-text"),
    pytest.param([None], ["None"], {"type": "list"}, id="list-none-item"),
    pytest.param("abc", ["a", "b", "c"], {"type": "list"}, id="list-text-vs-list"),
    pytest.param("A", "a", {}, id="str-default-case-sensitive"),
    pytest.param("A", "a", {"ignore_case": True}, id="str-ignore-case"),
    pytest.param(1, "1", {"type": "str"}, id="str-int-vs-text"),
    pytest.param(1.0, "1", {"type": "str"}, id="str-float-vs-text"),
    pytest.param(None, "None", {}, id="str-none-vs-text"),
    pytest.param(True, "true", {"ignore_case": True}, id="str-bool-ignore-case"),
    pytest.param(["a"], "['a']", {}, id="str-list-repr"),
    pytest.param("Straße", "STRASSE", {"ignore_case": True}, id="str-unicode-fold"),
    pytest.param("a", "a", {"type": "dict"}, id="unknown-type"),
]


@pytest.mark.parametrize(("result", "expected", "options"), LITERAL)
def test_literal_match(
    osworld: OSWorld, result: Any, expected: Any, options: dict[str, Any]
) -> None:
    assert_same_score(osworld, "literal_match", result, expected, **options)


# --- fuzzy_match --------------------------------------------------------------------------

FUZZY = [
    pytest.param("hello world", {"expected": "hello world"}, id="equal"),
    pytest.param("hello world", {"expected": "hello wrld"}, id="one-deletion"),
    pytest.param("kitten", {"expected": "sitting"}, id="kitten-sitting"),
    pytest.param("Hello", {"expected": "hello"}, id="case"),
    pytest.param("", {"expected": ""}, id="both-empty"),
    pytest.param("", {"expected": "abc"}, id="empty-result"),
    pytest.param(None, {"expected": "abc"}, id="none"),
    pytest.param("Zürich", {"expected": "Zurich"}, id="unicode"),
    pytest.param("\ufeffabc", {"expected": "abc"}, id="bom"),
    pytest.param("a b c", {"expected": "c b a"}, id="word-order"),
    pytest.param("x" * 300, {"expected": "x" * 299 + "y"}, id="long"),
    pytest.param("abc", {"expected": 5}, id="expected-not-text"),
    pytest.param("abc", {}, id="rules-without-expected"),
]


@pytest.mark.parametrize(("result", "rules"), FUZZY)
def test_fuzzy_match(osworld: OSWorld, result: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "fuzzy_match", result, rules)


# --- check_direct_json_object ---------------------------------------------------------------


def _altered(expected: dict[str, Any]) -> dict[str, Any]:
    first = next(iter(expected))
    return {**expected, first: "__not-this__"}


def _direct_json_real() -> list[Any]:
    cases = []
    for task, _, expected, _ in real_checks("check_direct_json_object"):
        if not isinstance(expected, dict) or not isinstance(expected.get("rules"), dict):
            continue
        rules = expected["rules"]
        want = rules.get("expected")
        if not isinstance(want, dict) or not want:
            continue
        kind = expected["type"]
        cases += [
            pytest.param(dict(want), rules, id=f"{task}-{kind}-equal"),
            pytest.param(json.dumps(want).replace('"', "'"), rules, id=f"{task}-{kind}-text"),
            pytest.param(_altered(want), rules, id=f"{task}-{kind}-altered"),
            pytest.param({}, rules, id=f"{task}-{kind}-empty"),
            pytest.param(None, rules, id=f"{task}-{kind}-none"),
        ]
    return cases


_IN = {"expect_in_result": True}

DIRECT_JSON = [
    *_direct_json_real(),
    pytest.param("{'city': 'Zurich'}", {"expected": {"city": "Zurich"}}, id="single-quoted"),
    pytest.param('  {"city": "Zurich"}\n', {"expected": {"city": "Zurich"}}, id="whitespace"),
    pytest.param("{not json", {"expected": {"a": 1}}, id="malformed"),
    pytest.param("", {"expected": {"a": 1}}, id="empty-text"),
    pytest.param("null", {"expected": {"a": 1}}, id="json-null"),
    pytest.param("[1, 2]", {"expected": {"a": 1}}, id="json-list"),
    pytest.param("{'ok': True}", {"expected": {"ok": True}}, id="python-true"),
    pytest.param("{'name': 'O'Brien'}", {"expected": {"name": "O'Brien"}}, id="apostrophe"),
    pytest.param({"city": "Zürich"}, {"expected": {"city": "Zurich"}}, id="unicode"),
    pytest.param({"a": 1, "b": 2}, {"expected": {"a": 1}}, id="extra-keys"),
    pytest.param({"a": 1}, {"expected": {}}, id="expected-empty"),
    pytest.param(
        {"a": 1},
        {},
        id="rules-without-expected",  # OSWorld's KeyError is caught inside its try: 0
    ),
    pytest.param({"a": 1}, {"expected": {"a": "__EVALUATION_FAILED__"}}, id="evaluation-failed"),
    pytest.param({"a": 1}, {"expected": ["a"]}, id="expected-is-a-list"),
    pytest.param({"a": None}, {"expected": {"a": None}}, id="none-value"),
    pytest.param({}, {"expected": {"a": None}}, id="missing-key-vs-none"),
    pytest.param(
        {"a": [2, 1], "ignore_list_order": True},
        {"expected": {"a": [1, 2], "ignore_list_order": True}},
        id="ignore-list-order-quirk",
    ),
    pytest.param(
        {"a": [2, 1]}, {"expected": {"a": [1, 2]}, "ignore_list_order": True}, id="order-flag-top"
    ),
    pytest.param({"to": "ARN"}, {"expected": {"to": ["STO", "ARN"]}, **_IN}, id="in-list-text"),
    pytest.param({"to": ["X", "STO"]}, {"expected": {"to": ["STO"]}, **_IN}, id="in-list-list"),
    pytest.param({"to": "ARNX"}, {"expected": {"to": ["ARN"]}, **_IN}, id="in-list-no-substr"),
    pytest.param({"to": None}, {"expected": {"to": ["ARN"]}, **_IN}, id="in-list-none"),
    pytest.param({"q": "drip coffee maker 2"}, {"expected": {"q": "coffee"}, **_IN}, id="in-sub"),
    pytest.param({"q": None}, {"expected": {"q": "coffee"}, **_IN}, id="in-sub-none"),
    pytest.param({}, {"expected": {"q": "coffee"}, **_IN}, id="in-sub-missing"),
    pytest.param({"q": ["coffee"]}, {"expected": {"q": "coffee"}, **_IN}, id="in-sub-list"),
    pytest.param({"b": True}, {"expected": {"b": True}, **_IN}, id="in-bool-unsupported"),
    pytest.param("{'q': 'a'}", {"expected": {"q": "a"}, **_IN}, id="in-text-result"),
    pytest.param({"a": 1}, {"expected": {}, **_IN}, id="in-expected-empty"),
    pytest.param(
        {"a": 1},
        _IN,
        id="in-without-expected",  # the same KeyError with expect_in_result: 0
    ),
]


@pytest.mark.parametrize(("result", "rules"), DIRECT_JSON)
def test_check_direct_json_object(osworld: OSWorld, result: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "check_direct_json_object", result, rules)
