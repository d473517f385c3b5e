"""Metrics over the desktop's accessibility tree (the XML the ``accessibility_tree`` getter reads).

OSWorld's ``general.check_accessibility_tree`` and ``slides.check_left_panel``. Trees use
OSWorld's namespace prefixes (``st``, ``attr``, ``cp``, ...) bound to the URIs of its guest
servers (Ubuntu's by default; the ``osname`` option picks Windows' or macOS'). A tree in
OSWorld's older ``uri:deskat:`` namespaces matches no prefixed name, as in OSWorld. A ``None``
or unparsable tree scores 0. CSS selectors need the ``cssselect`` package.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from xml.etree import ElementTree

from osworld_gym.evaluation.metrics._deps import require

logger = logging.getLogger(__name__)


def _namespaces(host: str, extra: Sequence[str]) -> dict[str, str]:
    base = f"https://accessibility.{host}.example.org/ns"
    paths = {"st": "state", "attr": "attributes", "cp": "component", "doc": "document"}
    paths |= {"docattr": "document/attributes", "txt": "text", "val": "value"}
    paths |= {"act": "action", "class": "class", "role": "role"}
    core = ["st", "attr", "cp", "doc", "txt", "val", "act"]
    return {prefix: f"{base}/{paths[prefix]}" for prefix in [*core, *extra]}


# OSWorld's prefix -> namespace maps, per guest operating system (``osname``).
NAMESPACE_MAPS: Mapping[str, dict[str, str]] = {
    "ubuntu": _namespaces("ubuntu", ["docattr"]),
    "windows": _namespaces("windows", ["docattr", "class"]),
    "macos": _namespaces("macos", ["role"]),
}


def _parse(tree: str | bytes | None) -> Any | None:
    """The parsed tree, or ``None`` where OSWorld's parser fails.

    Parsed as OSWorld parses it (lxml's default parser): text that declares its encoding in
    an XML declaration is refused (lxml takes such documents only as bytes).
    """
    if not tree:
        return None
    etree = require("lxml.etree")
    try:
        return etree.fromstring(tree)
    except (etree.XMLSyntaxError, ValueError) as e:
        logger.info("accessibility tree does not parse: %s", e)
        return None


def _select(root: Any, rule: Mapping[str, Any], namespaces: dict[str, str]) -> list[Any]:
    if "xpath" in rule:
        return list(root.xpath(rule["xpath"], namespaces=namespaces))
    if "selectors" in rule:
        require("cssselect")  # lxml.cssselect's own import error names no package
        selector = require("lxml.cssselect").CSSSelector
        return list(selector(", ".join(rule["selectors"]), namespaces=namespaces)(root))
    raise ValueError(f"accessibility rule needs 'xpath' or 'selectors': {dict(rule)!r}")


def _rule_score(elements: list[Any], rule: Mapping[str, Any]) -> float:
    """1.0 without ``text``; else the best match of ``text`` among the elements' texts.

    As in OSWorld, a rule with ``text`` must say ``exact`` (KeyError otherwise), and an
    element without text is compared as ``None``: it equals no string, and its fuzzy ratio
    is 0, even against ``""``.
    """
    if "text" not in rule:
        return 1.0
    want = rule["text"]
    if rule["exact"]:
        return float(any(want == (e.text or None) for e in elements))
    ratio = require("rapidfuzz.fuzz").ratio
    return max(0.0, *(ratio(want, e.text or None) / 100.0 for e in elements))


def check_accessibility_tree(
    result: str | None, rules: Sequence[Mapping[str, Any]], osname: str = "ubuntu"
) -> float:
    """Score an accessibility tree against element rules; every rule must find an element.

    Args:
        result: The tree's XML text.
        rules: A list of dicts, each with ``xpath`` (an XPath) or ``selectors`` (CSS
            selectors, joined with ``", "``; ``xpath`` wins when both are given), and
            optionally ``text`` (the text a selected element must have) with ``exact``
            (True: equality; False: best fuzzy ratio among the elements).
        osname: Whose namespace URIs the prefixes stand for: ``ubuntu``, ``windows``,
            ``macos``.

    Returns:
        0.0 when a rule selects nothing or the tree is missing or malformed; otherwise the
        product of the rules' scores (1.0 for rules without ``text``).

    Raises:
        KeyError: Unknown ``osname``, or a rule with ``text`` but no ``exact``.
        ValueError: A rule has neither ``xpath`` nor ``selectors``.
    """
    namespaces = dict(NAMESPACE_MAPS[osname])
    root = _parse(result)
    if root is None:
        return 0.0
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

    The pane is a ``document-frame`` named ``Slides View``. The tree is read with the
    standard library's parser, as OSWorld reads it.
    """
    if not result:
        return 0.0
    try:
        root = ElementTree.fromstring(result)
    except ElementTree.ParseError as e:
        logger.info("check_left_panel: the tree does not parse: %s", e)
        return 0.0
    return float(any(f.get("name") == "Slides View" for f in root.iter("document-frame")))
