"""Accessibility-tree metrics on small hand-written trees in OSWorld's XML format."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip("lxml.etree")
pytest.importorskip("cssselect")

from osworld_gym.evaluation.metrics import get_metric  # noqa: E402
from osworld_gym.guest.a11y_walker import NAMESPACES  # noqa: E402

LEGACY = {
    "st": "uri:deskat:state.at-spi.gnome.org",
    "attr": "uri:deskat:attributes.at-spi.gnome.org",
    "cp": "uri:deskat:component.at-spi.gnome.org",
}


def tree(body: str, namespaces: dict[str, str] = NAMESPACES) -> str:
    declarations = " ".join(f'xmlns:{p}="{uri}"' for p, uri in namespaces.items())
    return f"<desktop-frame {declarations}>{body}</desktop-frame>"


THUNDERBIRD = tree(
    '<application name="Thunderbird">'
    '<tool-bar attr:id="MsgHeadersToolbar">'
    '<label name="To"/>'
    '<section attr:class="address-pill"><label attr:class="pill-label" name="fox@someuniversity.edu"/></section>'  # noqa: E501
    "</tool-bar>"
    '<entry name="email">anonym-x2024@outlook.com</entry>'
    '<password-text name="Password"/>'
    '<page-tab-list attr:id="tabmail-tabs"><page-tab name="About Profiles" st:selected="true"/></page-tab-list>'  # noqa: E501
    "</application>"
)
PILL = (
    'tool-bar[attr|id=MsgHeadersToolbar] label[name=To]~[attr|class="address-pill"]'
    '>label[attr|class="pill-label"][name*="{}"]'
)


@pytest.mark.parametrize(
    ("rules", "score"),
    [
        ([{"selectors": [PILL.format("fox@someuniversity.edu")]}], 1.0),
        ([{"selectors": [PILL.format("fox@")]}, {"selectors": [PILL.format("iron@")]}], 0.0),
        (
            [
                {
                    "xpath": "//application[@name='Thunderbird']//*[contains(text(), "
                    "'anonym-x2024@outlook.com') or contains(@name, 'anonym-x2024@outlook.com')]"
                },
                {"xpath": "//application[@name='Thunderbird']//*[contains(@name, 'Password')]"},
            ],
            1.0,
        ),
        ([{"xpath": "//*[@name='Nothing']"}], 0.0),
        (
            [
                {
                    "selectors": [
                        'application[name=Thunderbird] page-tab-list[attr|id="tabmail-tabs"]'
                        '>page-tab[name="About Profiles"]'
                    ]
                }
            ],
            1.0,
        ),
        ([{"selectors": ["page-tab[st|selected=true]"]}], 1.0),
        ([{"xpath": "//entry", "text": "anonym-x2024@outlook.com", "exact": True}], 1.0),
        ([{"xpath": "//entry", "text": "someone-else@outlook.com", "exact": True}], 0.0),
    ],
)
def test_check_accessibility_tree(rules: list[dict[str, Any]], score: float) -> None:
    assert get_metric("check_accessibility_tree")(THUNDERBIRD, rules) == score


def test_check_accessibility_tree_fuzzy_text_and_bad_inputs() -> None:
    metric = get_metric("check_accessibility_tree")
    fuzzy = [{"xpath": "//entry", "text": "anonym-x2024@outlook.co", "exact": False}]
    assert 0.9 < metric(THUNDERBIRD, fuzzy) < 1.0
    assert metric(None, [{"xpath": "//entry"}]) == 0.0
    assert metric("<desktop-frame><unclosed>", [{"xpath": "//entry"}]) == 0.0
    with pytest.raises(ValueError, match="needs 'xpath' or 'selectors'"):
        metric(THUNDERBIRD, [{"text": "x"}])


def test_check_accessibility_tree_legacy_namespaces_match_nothing_as_in_osworld() -> None:
    legacy = tree('<tool-bar attr:id="MsgHeadersToolbar"/>', LEGACY)
    rules = [{"selectors": ["tool-bar[attr|id=MsgHeadersToolbar]"]}]
    assert get_metric("check_accessibility_tree")(legacy, rules) == 0.0
    assert get_metric("check_accessibility_tree")(legacy, [{"xpath": "//tool-bar"}]) == 1.0


def test_check_accessibility_tree_osworld_details() -> None:
    metric = get_metric("check_accessibility_tree")
    # a rule with text needs "exact" (OSWorld: KeyError)
    with pytest.raises(KeyError):
        metric(THUNDERBIRD, [{"xpath": "//entry", "text": "anonym-x2024@outlook.com"}])
    # an element without text equals no string, not even ""
    assert metric(THUNDERBIRD, [{"xpath": "//password-text", "text": "", "exact": True}]) == 0.0
    assert metric(THUNDERBIRD, [{"xpath": "//password-text", "text": "", "exact": False}]) == 0.0
    # text declaring its encoding is refused by lxml (OSWorld fails there)
    declared = '<?xml version="1.0" encoding="UTF-8"?>\n' + THUNDERBIRD
    assert metric(declared, [{"xpath": "//entry"}]) == 0.0
    windows = tree(
        '<entry st:focused="true"/>', {"st": NAMESPACES["st"].replace("ubuntu", "windows")}
    )
    assert metric(windows, [{"selectors": ["entry[st|focused=true]"]}], osname="windows") == 1.0
    assert metric(windows, [{"selectors": ["entry[st|focused=true]"]}]) == 0.0


IMPRESS = (
    '<application name="soffice"><frame name="deck.pptx - LibreOffice Impress">'
    '<panel>{}<document-frame name="Slide 1"/></panel></frame></application>'
)


def test_check_left_panel() -> None:
    metric = get_metric("check_left_panel")
    assert metric(tree(IMPRESS.format('<document-frame name="Slides View"/>'))) == 1.0
    assert metric(tree(IMPRESS.format(""))) == 0.0
    legacy = tree(
        '<root-pane><panel><split-pane cp:parentcoord="(0, 0)" st:visible="true"/></panel>'
        "</root-pane>",
        LEGACY,
    )
    assert metric(legacy) == 0.0  # OSWorld looks for the "Slides View" frame only
    assert metric(None) == 0.0
    assert metric("not xml") == 0.0


def test_metric_namespaces_match_the_guest_walker() -> None:
    from osworld_gym.evaluation.metrics import a11y

    assert a11y.NAMESPACE_MAPS["ubuntu"] == NAMESPACES


def test_missing_cssselect_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    from osworld_gym.errors import DependencyNotInstalled

    monkeypatch.setitem(sys.modules, "cssselect", None)  # makes `import cssselect` fail
    with pytest.raises(DependencyNotInstalled, match=r"'cssselect'.*osworld-gym\[eval\]"):
        get_metric("check_accessibility_tree")(THUNDERBIRD, [{"selectors": ["entry"]}])
    # XPath rules need no cssselect
    assert get_metric("check_accessibility_tree")(THUNDERBIRD, [{"xpath": "//entry"}]) == 1.0
