"""Parity of OSWorld's ``basic_os`` metrics with ours: GNOME favourites, time zone, listings,
clipboard.

Inputs are what the getters hand over: command output (``gsettings``, ``timedatectl``,
``xsel``) and the ``list_directory`` getter's tree.
"""

from __future__ import annotations

from typing import Any

import pytest
from parity_harness import OSWorld, assert_same_score, real_rules

pytestmark = pytest.mark.parity

_APPS = ["google-chrome.desktop", "thunderbird.desktop"]
_FAVOURITES_RULES = [rules for _, rules in real_rules("check_gnome_favorite_apps")] or [
    {"expected": _APPS}
]

FAVOURITES = [
    *[
        pytest.param(output, rules, id=f"real-{name}")
        for rules in _FAVOURITES_RULES
        for name, output in [
            ("equal", str(rules["expected"]) + "\n"),
            ("reversed", str(list(reversed(rules["expected"])))),
            ("one-more", str([*rules["expected"], "vim.desktop"])),
            ("one-less", str(rules["expected"][:1])),
            ("duplicate", str([rules["expected"][0]] * len(rules["expected"]))),
            ("empty-gsettings", "@as []\n"),
            ("none", None),
        ]
    ],
    pytest.param("['a.desktop', 'b.desktop']", {"expected": ["a.desktop", "b.desktop"]}, id="ok"),
    pytest.param("('a.desktop', 'b.desktop')", {"expected": ["b.desktop", "a.desktop"]}, id="t"),
    pytest.param("[]", {"expected": []}, id="both-empty"),
    pytest.param("['a', 'a', 'b']", {"expected": ["a", "b", "b"]}, id="duplicates-same-set"),
    pytest.param("  ['a']  \n", {"expected": ["a"]}, id="spaces"),
    pytest.param("['ä.desktop']", {"expected": ["ä.desktop"]}, id="unicode"),
    pytest.param("not a list", {"expected": ["a"]}, id="not-python"),
    pytest.param("", {"expected": []}, id="empty-output"),
    pytest.param(
        "'a'",
        {"expected": ["a"]},
        id="a-string",  # 'a' has the length and set of items of ['a']: 1
    ),
    pytest.param("{'a': 1}", {"expected": ["a"]}, id="a-dict"),
    pytest.param("{'a'}", {"expected": ["a"]}, id="a-set"),
    pytest.param("5", {"expected": ["a"]}, id="a-number"),
    pytest.param("None", {"expected": []}, id="none-literal"),
    pytest.param("['a']", {}, id="rules-without-expected"),
]


@pytest.mark.parametrize(("output", "rules"), FAVOURITES)
def test_check_gnome_favorite_apps(osworld: OSWorld, output: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "check_gnome_favorite_apps", output, rules)


def timedatectl(zone: str, offset: str) -> str:
    """What ``timedatectl status`` prints in a time zone."""
    return (
        "               Local time: Thu 2024-01-25 12:56:06 WET\n"
        "           Universal time: Thu 2024-01-25 12:56:06 UTC\n"
        "                 RTC time: Thu 2024-01-25 12:56:05\n"
        f"                Time zone: {zone} ({offset})\n"
        "System clock synchronized: yes\n"
        "              NTP service: inactive\n"
        "          RTC in local TZ: no\n"
    )


UTC = [
    pytest.param(timedatectl("Atlantic/Faroe", "WET, +0000"), id="faroe"),
    pytest.param(timedatectl("Etc/UTC", "UTC, +0000"), id="utc"),
    pytest.param(timedatectl("Europe/Zurich", "CET, +0100"), id="zurich"),
    pytest.param(timedatectl("America/St_Johns", "NST, -0330"), id="st-johns"),
    pytest.param(timedatectl("Etc/UTC", "UTC, +0000").replace("\n", "\r\n"), id="crlf"),
    pytest.param(timedatectl("Etc/UTC", "UTC, +0000").replace(")\n", ") \n"), id="trailing-space"),
    pytest.param("Time zone: Etc/UTC (UTC, +0000)\n", id="one-line"),
    pytest.param("\n\n\nTime zone: Etc/UTC (UTC, +0000)", id="fourth-line"),
    pytest.param("", id="empty"),
    pytest.param(None, id="none"),
]


@pytest.mark.parametrize("output", UTC)
def test_is_utc_0(osworld: OSWorld, output: str | None) -> None:
    assert_same_score(osworld, "is_utc_0", output)


def listing(*names: str) -> dict[str, Any]:
    """The ``list_directory`` getter's tree of a folder holding files ``names``."""
    return {
        "name": "cpjpg",
        "type": "directory",
        "children": [{"name": n, "type": "file"} for n in names],
    }


_JPGS = [rules for _, rules in real_rules("check_moved_jpgs")] or [{"expected": ["a.jpg", "b.jpg"]}]

MOVED = [
    *[
        pytest.param(tree, rules, id=f"real-{name}")
        for rules in _JPGS
        for name, tree in [
            ("equal", listing(*rules["expected"])),
            ("reversed", listing(*reversed(rules["expected"]))),
            ("one-more", listing(*rules["expected"], "notes.txt")),
            ("one-less", listing(*rules["expected"][1:])),
            ("empty", listing()),
            ("none", None),
        ]
    ],
    pytest.param(listing("a.jpg", "a.jpg"), {"expected": ["a.jpg", "a.jpg"]}, id="duplicates"),
    pytest.param(listing("ä.jpg"), {"expected": ["ä.jpg"]}, id="unicode"),
    pytest.param(listing("A.JPG"), {"expected": ["a.jpg"]}, id="case"),
    pytest.param(
        {"name": "x", "children": [{"name": "sub", "children": [{"name": "a.jpg"}]}]},
        {"expected": ["a.jpg"]},
        id="nested",
    ),
    pytest.param({}, {"expected": []}, id="empty-tree"),
    pytest.param(
        {"name": "cpjpg", "type": "directory"},
        {"expected": []},
        id="no-children-key",  # OSWorld indexes ['children'] and raises
    ),
    pytest.param(listing("a.jpg"), {}, id="rules-without-expected"),
]


@pytest.mark.parametrize(("tree", "rules"), MOVED)
def test_check_moved_jpgs(osworld: OSWorld, tree: Any, rules: dict[str, Any]) -> None:
    assert_same_score(osworld, "check_moved_jpgs", tree, rules)


_CLIPBOARD_RULES = [rules for _, rules in real_rules("is_in_vm_clickboard")] or [
    {"expected": "/home/user/Data3/List3/secret.docx"}
]

CLIPBOARD = [
    *[
        pytest.param(rules, output, id=f"real-{name}")
        for rules in _CLIPBOARD_RULES
        for name, output in [
            ("equal", rules["expected"]),
            ("with-newline", rules["expected"] + "\n"),
            ("file-uri", "file://" + rules["expected"]),
            ("other", "/home/user/Data3/List3/public.docx"),
            ("empty", ""),
            ("none", None),
        ]
    ],
    pytest.param({"expected": ["a", "b"]}, "a b", id="list-all"),
    pytest.param({"expected": ["a", "c"]}, "a b", id="list-one-missing"),
    pytest.param({"expected": []}, "", id="empty-list"),
    pytest.param({"expected": "Zürich"}, "Zürich", id="unicode"),
    pytest.param({"expected": ""}, "", id="empty-in-empty"),
    pytest.param({}, "x", id="config-without-expected"),
]


@pytest.mark.parametrize(("config", "output"), CLIPBOARD)
def test_is_in_vm_clickboard(osworld: OSWorld, config: dict[str, Any], output: Any) -> None:
    assert_same_score(osworld, "is_in_vm_clickboard", config, output)
