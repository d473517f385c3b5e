"""Metrics over the desktop's accessibility tree (the XML the ``accessibility_tree`` getter reads).

OSWorld's ``general.check_accessibility_tree`` and ``slides.check_left_panel``. Trees use
OSWorld's namespace prefixes (``st``, ``attr``, ``cp``, ...); both the current URIs (those the
guest server writes) and OSWorld's older ``uri:deskat:`` ones are understood. A ``None`` or
unparsable tree scores 0. CSS selectors need the ``cssselect`` package.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from osworld_gym.evaluation.metrics._deps import fuzz_ratio, require

logger = logging.getLogger(__name__)

_CURRENT = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}
_LEGACY = {
    "st": "uri:deskat:state.at-spi.gnome.org",
    "attr": "uri:deskat:attributes.at-spi.gnome.org",
    "cp": "uri:deskat:component.at-spi.gnome.org",
    "doc": "uri:deskat:document.at-spi.gnome.org",
    "docattr": "uri:deskat:attributes.document.at-spi.gnome.org",
    "txt": "uri:deskat:text.at-spi.gnome.org",
    "val": "uri:deskat:value.at-spi.gnome.org",
    "act": "uri:deskat:action.at-spi.gnome.org",
}
assert set(_CURRENT) == set(_LEGACY)


def _parse(tree: str | bytes | None) -> tuple[Any, dict[str, str]] | None:
    """The parsed tree and the namespace map it uses; ``None`` when it does not parse."""
    if not tree:
        return None
    etree = require("lxml.etree")
    parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
    data = tree.encode("utf-8") if isinstance(tree, str) else tree
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as e:
        logger.info("accessibility tree does not parse: %s", e)
        return None
    legacy = _LEGACY["st"] in root.nsmap.values()
    return root, dict(_LEGACY if legacy else _CURRENT)


def _select(root: Any, rule: Mapping[str, Any], namespaces: dict[str, str]) -> list[Any]:
    if "xpath" in rule:
        return list(root.xpath(rule["xpath"], namespaces=namespaces))
    if "selectors" in rule:
        require("cssselect")  # lxml.cssselect's own import error names no package
        selector = require("lxml.cssselect").CSSSelector
        return list(selector(", ".join(rule["selectors"]), namespaces=namespaces)(root))
    raise ValueError(f"accessibility rule needs 'xpath' or 'selectors': {dict(rule)!r}")


def _rule_score(elements: list[Any], rule: Mapping[str, Any]) -> float:
    if "text" not in rule:
        return 1.0
    want = rule["text"]
    if rule.get("exact", True):
        return float(any((e.text or "") == want for e in elements))
    return max(fuzz_ratio(e.text or "", want) / 100.0 for e in elements)


def check_accessibility_tree(result: str | None, rules: Sequence[Mapping[str, Any]]) -> float:
    """Score an accessibility tree against element rules; every rule must find an element.

    Args:
        result: The tree's XML text.
        rules: A list of dicts, each with ``xpath`` (an XPath) or ``selectors`` (CSS
            selectors, joined with ``", "``; ``xpath`` wins when both are given), and
            optionally ``text`` (the text a selected element must have) and ``exact``
            (True: equality; False: best fuzzy ratio among the elements).

    Returns:
        0.0 when a rule selects nothing or the tree is missing or malformed; otherwise the
        product of the rules' scores (1.0 for rules without ``text``).

    Raises:
        ValueError: A rule has neither ``xpath`` nor ``selectors``.
    """
    parsed = _parse(result)
    if parsed is None:
        return 0.0
    root, namespaces = parsed
    score = 1.0
    for rule in rules:
        elements = _select(root, rule, namespaces)
        if not elements:
            logger.info("check_accessibility_tree: nothing matches %s", dict(rule))
            return 0.0
        score *= _rule_score(elements, rule)
    return score


def check_left_panel(result: str | None) -> float:
    """1 when LibreOffice Impress shows its slide panel (the left "Slides View" pane).

    The pane is a ``document-frame`` named ``Slides View``. Trees in OSWorld's older format
    marked it instead as a visible ``split-pane`` at parent coordinate ``(0, 0)`` inside a
    ``root-pane``'s ``panel``; that form is accepted too.
    """
    parsed = _parse(result)
    if parsed is None:
        return 0.0
    root, namespaces = parsed
    if any(frame.get("name") == "Slides View" for frame in root.iter("document-frame")):
        return 1.0
    parent_coord, visible = f"{{{namespaces['cp']}}}parentcoord", f"{{{namespaces['st']}}}visible"
    for pane in root.iter("root-pane"):
        for split in pane.iterfind(".//panel//split-pane"):
            if split.get(parent_coord) == "(0, 0)" and split.get(visible):
                return 1.0
    return 0.0
