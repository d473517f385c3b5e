"""Value metrics (general, os_state, vscode's extension list): match, each mismatch, None."""

from __future__ import annotations

from typing import Any

import pytest

from osworld_gym.evaluation.metrics import get_metric

INCLUDE = {"include": ["filters-vignette"], "exclude": ["error", "failed"]}
EXT = {"type": "contain", "expected": "mattn.lisp"}
NO_EXT = {"type": "not_contain", "expected": "mattn.lisp"}
APPS = {"expected": ["a.desktop", "b.desktop"]}
JPGS = {"expected": ["a.jpg", "b.jpg"]}


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "score"),
    [
        # check_include_exclude
        ("check_include_exclude", ("ok filters-vignette", INCLUDE), {}, 1.0),
        ("check_include_exclude", ("ok", INCLUDE), {}, 0.0),
        ("check_include_exclude", ("filters-vignette failed", INCLUDE), {}, 0.0),
        ("check_include_exclude", ("anything", {}), {}, 1.0),
        ("check_include_exclude", (None, INCLUDE), {}, 0.0),
        # exact_match: no normalisation
        ("exact_match", ("true", {"expected": "true"}), {}, 1.0),
        ("exact_match", ("true\n", {"expected": "true"}), {}, 0.0),
        ("exact_match", (None, {"expected": "true"}), {}, 0.0),
        # match_in_list / is_in_list
        ("match_in_list", ("Bing", {"expected": ["Microsoft Bing", "Bing"]}), {}, 1.0),
        ("match_in_list", ("Google", {"expected": ["Microsoft Bing", "Bing"]}), {}, 0.0),
        ("match_in_list", (None, {"expected": ["Bing"]}), {}, 0.0),
        ("is_in_list", (["/a", "/home/ext"], {"expected": "/home/ext"}), {}, 1.0),
        ("is_in_list", (["/a"], {"expected": "/home/ext"}), {}, 0.0),
        ("is_in_list", (None, {"expected": "/home/ext"}), {}, 0.0),
        # literal_match
        ("literal_match", (3, "3"), {}, 1.0),
        ("literal_match", ("Abc", "abc"), {}, 0.0),
        ("literal_match", ("Abc", "abc"), {"ignore_case": True}, 1.0),
        ("literal_match", (["A", 1], ("a", "1")), {"type": "list", "ignore_case": True}, 1.0),
        ("literal_match", (["A", 1], ["A"]), {"type": "list"}, 0.0),
        ("literal_match", ("A", ["A"]), {"type": "list"}, 0.0),
        ("literal_match", (None, ["A"]), {"type": "list"}, 0.0),
        # fuzzy_match
        ("fuzzy_match", ("hello", {"expected": "hello"}), {}, 1.0),
        ("fuzzy_match", ("abc", {"expected": "xyz"}), {}, 0.0),
        ("fuzzy_match", (None, {"expected": "xyz"}), {}, 0.0),
        # is_extension_installed
        ("is_extension_installed", ("a.b\nmattn.lisp\n", EXT), {}, 1.0),
        ("is_extension_installed", ("a.b\n", EXT), {}, 0.0),
        ("is_extension_installed", ("a.b\n", NO_EXT), {}, 1.0),
        ("is_extension_installed", ("mattn.lisp\n", NO_EXT), {}, 0.0),
        ("is_extension_installed", (None, {"type": "contain", "expected": "x"}), {}, 0.0),
        # os_state
        ("check_gnome_favorite_apps", ("['b.desktop', 'a.desktop']\n", APPS), {}, 1.0),
        ("check_gnome_favorite_apps", ("['a.desktop']", APPS), {}, 0.0),
        ("check_gnome_favorite_apps", ("['a.desktop', 'a.desktop']", APPS), {}, 0.0),
        ("check_gnome_favorite_apps", ("__import__('os')", {"expected": []}), {}, 0.0),
        ("check_gnome_favorite_apps", (None, {"expected": []}), {}, 0.0),
        # any literal is compared by length and set of items, as OSWorld's eval'd value is
        ("check_gnome_favorite_apps", ("'a'", {"expected": ["a"]}), {}, 1.0),
        ("check_gnome_favorite_apps", ("'ab'", {"expected": ["a", "b"]}), {}, 1.0),
        ("check_gnome_favorite_apps", ("{'a': 1}", {"expected": ["a"]}), {}, 1.0),
        ("is_utc_0", ("L\nU\nR\n       Time zone: Etc/UTC (UTC, +0000)\nS",), {}, 1.0),
        ("is_utc_0", ("L\nU\nR\n       Time zone: Europe/Paris (CET, +0100)\nS",), {}, 0.0),
        ("is_utc_0", ("short",), {}, 0.0),
        ("is_utc_0", (None,), {}, 0.0),
        ("check_moved_jpgs", ({"children": [{"name": "b.jpg"}, {"name": "a.jpg"}]}, JPGS), {}, 1.0),
        ("check_moved_jpgs", ({"children": [{"name": "a.jpg"}]}, JPGS), {}, 0.0),
        ("check_moved_jpgs", (None, {"expected": ["a.jpg"]}), {}, 0.0),
        ("check_moved_jpgs", ({"children": []}, {"expected": []}), {}, 1.0),
        # argument order is OSWorld's: the rule first, then the clipboard text
        ("is_in_vm_clickboard", ({"expected": "/home/user/x.docx"}, "/home/user/x.docx"), {}, 1.0),
        ("is_in_vm_clickboard", ({"expected": ["a", "b"]}, "a only"), {}, 0.0),
        ("is_in_vm_clickboard", ({"expected": "a"}, None), {}, 0.0),
    ],
)
def test_value_metric(name: str, args: tuple, kwargs: dict[str, Any], score: float) -> None:
    assert get_metric(name)(*args, **kwargs) == score


def test_os_state_metrics_raise_where_osworld_does() -> None:
    with pytest.raises(TypeError):  # a number has no length
        get_metric("check_gnome_favorite_apps")("5", {"expected": ["a"]})
    with pytest.raises(KeyError):  # a listing without children
        get_metric("check_moved_jpgs")({"name": "cpjpg", "type": "directory"}, {"expected": []})


def test_literal_match_rejects_unknown_type() -> None:
    with pytest.raises(ValueError, match="unsupported type"):
        get_metric("literal_match")("a", "a", type="dict")


def test_is_extension_installed_rejects_unknown_rule_type() -> None:
    with pytest.raises(ValueError, match="unknown rule type"):
        get_metric("is_extension_installed")("x", {"type": "maybe", "expected": "x"})


def test_fuzzy_match_is_fractional() -> None:
    score = get_metric("fuzzy_match")("kitten", {"expected": "sitting"})
    assert 0.5 < score < 0.7


JSON_CASES: list[tuple[Any, dict[str, Any], float]] = [
    ({"city": "Zurich", "sort": "PRICE"}, {"expected": {"city": "Zurich"}}, 1.0),
    ("{'city': 'Zurich'}", {"expected": {"city": "Zurich"}}, 1.0),  # printed Python dict
    ({"city": "Basel"}, {"expected": {"city": "Zurich"}}, 0.0),
    ({}, {"expected": {"city": "Zurich"}}, 0.0),
    (None, {"expected": {"city": "Zurich"}}, 0.0),
    ("not json at all", {"expected": {"city": "Zurich"}}, 0.0),
    (["a list"], {"expected": {"city": "Zurich"}}, 0.0),
    ({"city": "Zurich"}, {"expected": {"city": "__EVALUATION_FAILED__"}}, 0.0),
    # expect_in_result: any listed value equal to the string, or contained in the list
    ({"to": "ARN"}, {"expected": {"to": ["STO", "ARN"]}, "expect_in_result": True}, 1.0),
    ({"to": ["X", "STO"]}, {"expected": {"to": ["STO"]}, "expect_in_result": True}, 1.0),
    ({"to": "OSL"}, {"expected": {"to": ["STO", "ARN"]}, "expect_in_result": True}, 0.0),
    ({"t": "2024-05-06T10"}, {"expected": {"t": "2024-05-06"}, "expect_in_result": True}, 1.0),
    ({"t": None}, {"expected": {"t": "2024"}, "expect_in_result": True}, 0.0),
    ({"t": 3}, {"expected": {"t": 3}, "expect_in_result": True}, 0.0),  # only str/list values
    # rules without "expected": OSWorld's lookup fails inside its try, so 0 (not "all of none")
    ({"a": 1}, {}, 0.0),
    ({"a": 1}, {"expect_in_result": True}, 0.0),
    ({"a": 1}, {"expected": {}}, 1.0),
]


@pytest.mark.parametrize(("result", "rules", "score"), JSON_CASES)
def test_check_direct_json_object(result: Any, rules: dict[str, Any], score: float) -> None:
    assert get_metric("check_direct_json_object")(result, rules) == score
