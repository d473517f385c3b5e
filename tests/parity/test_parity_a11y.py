"""Parity of the accessibility-tree metrics (OSWorld's ``general.check_accessibility_tree`` and
``slides.check_left_panel``) with ours.

Trees are XML text as the ``accessibility_tree`` getter hands it over, written here with the
namespace prefixes of OSWorld's guest server (``st``, ``attr``, ``cp``...), with its older
``uri:deskat:`` namespaces, or with those of its Windows and macOS servers.
"""

from __future__ import annotations

from typing import Any

import pytest
from parity_harness import OSWorld, assert_same_score, real_rules

from osworld_gym.guest.a11y_walker import NAMESPACES

pytestmark = pytest.mark.parity

LEGACY = {
    "st": "uri:deskat:state.at-spi.gnome.org",
    "attr": "uri:deskat:attributes.at-spi.gnome.org",
    "cp": "uri:deskat:component.at-spi.gnome.org",
}
WINDOWS = {p: uri.replace("ubuntu", "windows") for p, uri in NAMESPACES.items()}
WINDOWS_CLASS = {**WINDOWS, "class": "https://accessibility.windows.example.org/ns/class"}
MACOS = {
    **{p: uri.replace("ubuntu", "macos") for p, uri in NAMESPACES.items() if p != "docattr"},
    "role": "https://accessibility.macos.example.org/ns/role",
}


def tree(body: str, namespaces: dict[str, str] = NAMESPACES, root: str = "desktop-frame") -> str:
    declarations = " ".join(f'xmlns:{p}="{uri}"' for p, uri in namespaces.items())
    return f"<{root} {declarations}>{body}</{root}>"


def thunderbird(recipients: list[str], extra: str = "") -> str:
    pills = "".join(
        f'<section attr:class="address-pill"><label attr:class="pill-label" name="{r}"/></section>'
        for r in recipients
    )
    return (
        '<application name="Thunderbird">'
        f'<tool-bar attr:id="MsgHeadersToolbar"><label name="To"/>{pills}</tool-bar>'
        '<entry name="email" st:focused="true">anonym-x2024@outlook.com</entry>'
        '<password-text name="Password"/>'
        '<page-tab-list attr:id="tabmail-tabs">'
        '<page-tab name="Inbox"/><page-tab name="About Profiles" st:selected="true"/>'
        "</page-tab-list>"
        f"{extra}</application>"
    )


_ALL = ["fox@someuniversity.edu", "iron@someuniversity.edu", "nancy@someuniversity.edu"]
_ALL += ["stark@someuniversity.edu", "vision@someuniversity.edu", "thor@someuniversity.edu"]
_ALL += ["lee@someuniversity.edu", "hulk@someuniversity.edu", "david@someuniversity.edu"]


def _real_cases() -> list[Any]:
    cases = []
    for task, rules in real_rules("check_accessibility_tree"):
        bodies = {
            "all": thunderbird(_ALL),
            "first-three": thunderbird(_ALL[:3]),
            "none": thunderbird([]),
            "other-app": thunderbird(_ALL).replace("Thunderbird", "Firefox"),
            "no-profiles-tab": thunderbird(_ALL).replace("About Profiles", "Settings"),
        }
        for name, body in bodies.items():
            cases.append(pytest.param(tree(body), rules, {}, id=f"{task}-{name}"))
        cases.append(pytest.param(tree(bodies["all"], LEGACY), rules, {}, id=f"{task}-legacy"))
    return cases


_TB = tree(thunderbird(_ALL[:2]))
_ENTRY = [{"xpath": "//entry", "text": "anonym-x2024@outlook.com", "exact": True}]

ACCESSIBILITY_TREE = [
    *_real_cases(),
    pytest.param(_TB, [{"xpath": "//entry"}], {}, id="xpath-found"),
    pytest.param(_TB, [{"xpath": "//combo-box"}], {}, id="xpath-missing"),
    pytest.param(_TB, [{"selectors": ["entry[st|focused=true]"]}], {}, id="css-state"),
    pytest.param(_TB, [{"selectors": ["entry[st|focused=false]"]}], {}, id="css-state-no"),
    pytest.param(_TB, [{"selectors": ["combo-box", "entry"]}], {}, id="css-two-selectors"),
    pytest.param(_TB, [{"xpath": "//entry", "selectors": ["combo-box"]}], {}, id="xpath-wins"),
    pytest.param(_TB, [{"xpath": "//entry[@st:focused='true']"}], {}, id="xpath-namespace"),
    pytest.param(_TB, _ENTRY, {}, id="text-exact"),
    pytest.param(_TB, [{**_ENTRY[0], "text": "anonym"}], {}, id="text-exact-partial"),
    pytest.param(_TB, [{**_ENTRY[0], "exact": False}], {}, id="text-fuzzy-same"),
    pytest.param(_TB, [{**_ENTRY[0], "text": "anonym-x2025@outlook", "exact": False}], {}, id="fz"),
    pytest.param(
        _TB,
        [{**_ENTRY[0], "text": "anonym", "exact": False}, {"xpath": "//page-tab"}],
        {},
        id="fuzzy-times-one",
    ),
    pytest.param(
        _TB,
        [
            {"xpath": "//entry", "text": "anonym-x2024", "exact": False},
            {"xpath": "//page-tab", "text": "Inbo", "exact": False},
        ],
        {},
        id="fuzzy-product",
    ),
    pytest.param(
        _TB, [{"xpath": "//page-tab", "text": "About", "exact": False}], {}, id="fuzzy-max-no-text"
    ),
    pytest.param(_TB, [{"xpath": "//page-tab", "text": "", "exact": True}], {}, id="empty-exact"),
    pytest.param(_TB, [{"xpath": "//page-tab", "text": "", "exact": False}], {}, id="empty-fuzzy"),
    pytest.param(_TB, [{"xpath": "//entry", "text": "x"}], {}, id="text-without-exact"),
    pytest.param(_TB, [{"xpath": "//entry", "exact": False}], {}, id="exact-without-text"),
    pytest.param(
        _TB, [{"xpath": "//entry", "text": "anonym-x2024@outlook.com"}], {}, id="match-no-exact"
    ),
    pytest.param(
        tree('<entry role:kind="field">x</entry>', MACOS),
        [{"selectors": ["entry[role|kind=field]"]}],
        {"osname": "macos"},
        id="macos-role",
    ),
    pytest.param(
        tree('<entry class:kind="field">x</entry>', WINDOWS_CLASS),
        [{"xpath": "//entry[@class:kind='field']"}],
        {"osname": "windows"},
        id="windows-class",
    ),
    pytest.param(_TB, [], {}, id="no-rules"),
    pytest.param(_TB, [{"text": "x", "exact": True}], {}, id="no-selector"),
    pytest.param(_TB, [{"xpath": "//entry"}, {"xpath": "//nothing"}], {}, id="second-missing"),
    pytest.param(_TB, [{"xpath": "count(//entry)"}], {}, id="xpath-number"),
    pytest.param(_TB, [{"xpath": "//entry/text()"}], {}, id="xpath-text-nodes"),
    pytest.param(_TB, [{"xpath": "//entry["}], {}, id="bad-xpath"),
    pytest.param(_TB, [{"selectors": ["entry["]}], {}, id="bad-css"),
    pytest.param(
        tree(thunderbird([]), LEGACY),
        [{"selectors": ["entry[st|focused=true]"]}],
        {},
        id="legacy-state",
    ),
    pytest.param(tree(thunderbird([]), LEGACY), [{"xpath": "//entry"}], {}, id="legacy-plain"),
    pytest.param(
        tree(thunderbird([]), WINDOWS),
        [{"selectors": ["entry[st|focused=true]"]}],
        {"osname": "windows"},
        id="windows",
    ),
    pytest.param(
        _TB,
        [{"selectors": ["entry[st|focused=true]"]}],
        {"osname": "windows"},
        id="ubuntu-tree-windows-map",
    ),
    pytest.param(_TB, [{"xpath": "//entry"}], {"osname": "ubuntu"}, id="osname-ubuntu"),
    pytest.param(_TB, [{"xpath": "//entry"}], {"osname": "android"}, id="osname-unknown"),
    pytest.param(
        '<?xml version="1.0" encoding="UTF-8"?>\n' + _TB,
        [{"xpath": "//entry"}],
        {},
        id="xml-declaration",
    ),
    pytest.param('<?xml version="1.0"?>\n' + _TB, [{"xpath": "//entry"}], {}, id="xml-decl-plain"),
    pytest.param(
        tree("<entry>Zürich 東京</entry>"),
        [{"xpath": "//entry", "text": "Zürich 東京", "exact": True}],
        {},
        id="unicode",
    ),
    pytest.param("<desktop-frame><entry>", [{"xpath": "//entry"}], {}, id="malformed"),
    pytest.param("", [{"xpath": "//entry"}], {}, id="empty"),
    pytest.param(None, [{"xpath": "//entry"}], {}, id="none"),
    pytest.param("<a/>", [], {}, id="tiny-no-rules"),
]


@pytest.mark.parametrize(("result", "rules", "options"), ACCESSIBILITY_TREE)
def test_check_accessibility_tree(
    osworld: OSWorld, result: str | None, rules: list[dict[str, Any]], options: dict[str, Any]
) -> None:
    assert_same_score(osworld, "check_accessibility_tree", result, rules, **options)


def impress(panel: str = '<document-frame name="Slides View"/>') -> str:
    return tree(
        '<application name="soffice"><frame name="Untitled 1 - LibreOffice Impress">'
        f'<panel>{panel}<document-frame name="Slide 1"/></panel>'
        "</frame></application>"
    )


_LEGACY_PANEL = (
    '<root-pane><panel><split-pane cp:parentcoord="(0, 0)" st:visible="true"/></panel></root-pane>'
)

LEFT_PANEL = [
    pytest.param(impress(), id="slides-view"),
    pytest.param(impress(""), id="no-panel"),
    pytest.param(impress('<document-frame name="Slides view"/>'), id="other-case"),
    pytest.param(impress('<document-frame name="Slides View "/>'), id="trailing-space"),
    pytest.param(impress('<panel name="Slides View"/>'), id="panel-named-so"),
    pytest.param(impress('<document-frame attr:name="Slides View"/>'), id="namespaced-name"),
    pytest.param(impress('<section><document-frame name="Slides View"/></section>'), id="nested"),
    pytest.param(tree('<document-frame name="Slides View"/>', root="document-frame"), id="root"),
    pytest.param(impress(_LEGACY_PANEL), id="old-split-pane"),
    pytest.param(tree(_LEGACY_PANEL, LEGACY), id="old-split-pane-legacy-ns"),
    pytest.param('<?xml version="1.0" encoding="UTF-8"?>\n' + impress(), id="xml-declaration"),
    pytest.param("<desktop-frame>", id="malformed"),
    pytest.param("", id="empty"),
    pytest.param(None, id="none"),
]


@pytest.mark.parametrize("result", LEFT_PANEL)
def test_check_left_panel(osworld: OSWorld, result: str | None) -> None:
    assert_same_score(osworld, "check_left_panel", result)
