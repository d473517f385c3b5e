"""Chrome metrics: tabs, URLs, bookmarks, profile settings, cookies, history, desktop shortcuts.

OSWorld's module ``chrome`` (the browser part; ``compare_pdfs`` and the archive metrics live in
``archives``). Each takes what a Chrome getter produced and
the task's rule dict, and scores as OSWorld does: a missing (falsy) result scores 0, and a rule
``type`` OSWorld does not know raises ``TypeError`` where OSWorld's does (the evaluator scores
that check 0 with the error recorded) or scores 0 where OSWorld's does.

Two functions changed in OSWorld's code of 2026.04 (the default reference, see
``osworld_gym.evaluation.references``); ``<name>_1_0_2`` keeps desktop-env 1.0.2's scoring:
``is_expected_installed_extensions()`` treats the Zoom extension's two store names as one,
and ``is_shortcut_on_desktop()`` also accepts a ``Name=``/``Exec=`` line that contains the
expected text or is contained in it.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlparse, urlunparse

from osworld_gym.evaluation.metrics._urls import are_lists_equal, compare_urls

logger = logging.getLogger(__name__)


def _url_of(active_tab_info: Any) -> Any:
    """A tab's URL from a getter's dict (``{"url": ...}``) or a bare URL string."""
    return active_tab_info.get("url") if isinstance(active_tab_info, Mapping) else active_tab_info


def is_expected_active_tab(active_tab_info: Any, rule: Mapping[str, Any]) -> float:
    """1 when the active tab's URL equals ``rule["url"]`` under OSWorld's URL equality.

    Args:
        active_tab_info: ``active_tab_info``'s dict or ``active_url_from_accessTree``'s URL.
        rule: ``{"type": "url", "url": ...}``; another type scores 0.

    Example:
        >>> is_expected_active_tab("https://www.drugs.com/npc/",
        ...                        {"type": "url", "url": "https://drugs.com/npc/"})
        1.0
    """
    if not active_tab_info:
        return 0.0
    if rule["type"] != "url":
        logger.error("is_expected_active_tab: unknown rule type %r", rule["type"])
        return 0.0
    return float(compare_urls(rule["url"], _url_of(active_tab_info)))


def _without_query(url: str) -> str:
    return urlunparse(urlparse(url)._replace(query=""))


def is_expected_active_tab_approximate(active_tab_info: Any, rule: Mapping[str, Any]) -> float:
    """Like ``is_expected_active_tab()``, but exact URLs compared without their query.

    Example:
        >>> rule = {"type": "url", "url": "chrome://password-manager/passwords"}
        >>> is_expected_active_tab_approximate("chrome://password-manager/passwords?q=a", rule)
        1.0
    """
    if not active_tab_info:
        return 0.0
    if rule["type"] != "url":
        logger.error("is_expected_active_tab_approximate: unknown rule type %r", rule["type"])
        return 0.0
    actual = _url_of(active_tab_info)
    if not isinstance(actual, str):
        return 0.0
    return float(_without_query(rule["url"]) == _without_query(actual))


def is_expected_url_pattern_match(result: Any, rules: Mapping[str, Any]) -> float:
    r"""1 when every regex of ``rules["expected"]`` is found (``re.search``) in the URL.

    Args:
        result: A URL string, or a dict with a ``url`` key.
        rules: ``expected``: a list of regular expressions.

    Example:
        >>> is_expected_url_pattern_match({"url": "https://united.com/en/us/checked-bag-fee"},
        ...                               {"expected": [r"united\.com/en/us/checked-bag"]})
        1.0
    """
    if not result:
        return 0.0
    if isinstance(result, str):
        url = result
    elif isinstance(result, Mapping) and "url" in result:
        url = result["url"]
    else:
        logger.error("is_expected_url_pattern_match: result %r is no URL", type(result))
        return 0.0
    return float(all(re.search(pattern, url) for pattern in rules["expected"]))


# Extension names that the Chrome Web Store has shown for the same extension: 2026.04 counts a
# name of a group as any other of the group (multi_apps/873cafdd's list names Zoom's newer one).
_EXTENSION_ALIASES: tuple[frozenset[str], ...] = (
    frozenset({"Zoom Chrome Extension", "Zoom for Google Chrome"}),
)


def _extension_name(name: Any) -> Any:
    """One name per alias group (the group's first in sorted order); other names unchanged."""
    for group in _EXTENSION_ALIASES:
        if name in group:
            return min(group)
    return name


def _as_written(name: Any) -> Any:
    return name


def _has_extensions(installed: Any, expected: Mapping[str, Any], canonical: bool) -> float:
    if not installed:
        return 0.0
    name: Callable[[Any], Any] = _extension_name if canonical else _as_written
    wanted = {name(n) for n in expected["expected"]}
    return float(wanted.issubset({name(n) for n in installed}))


def is_expected_installed_extensions(installed: Any, expected: Mapping[str, Any]) -> float:
    """1 when every name in ``expected["expected"]`` is among the installed extension names.

    As OSWorld's code of 2026.04: "Zoom Chrome Extension" and "Zoom for Google Chrome" (the
    same extension under the store's old and new names) stand for each other, on both sides.
    Names are otherwise compared exactly.

    Example:
        >>> is_expected_installed_extensions(["uBlock", "Dark Reader"], {"expected": ["uBlock"]})
        1.0
        >>> is_expected_installed_extensions(["Zoom Chrome Extension"],
        ...                                  {"expected": ["Zoom for Google Chrome"]})
        1.0
    """
    return _has_extensions(installed, expected, canonical=True)


def is_expected_installed_extensions_1_0_2(installed: Any, expected: Mapping[str, Any]) -> float:
    """``is_expected_installed_extensions()`` as desktop-env 1.0.2 scores it: no aliases.

    Example:
        >>> is_expected_installed_extensions_1_0_2(["Zoom Chrome Extension"],
        ...                                        {"expected": ["Zoom for Google Chrome"]})
        0.0
    """
    return _has_extensions(installed, expected, canonical=False)


def is_expected_tabs(
    open_tabs: Sequence[Mapping[str, Any]] | None, rule: Mapping[str, Any]
) -> float:
    """1 when the open tabs' URLs match ``rule["urls"]``: same count, each expected URL open.

    Args:
        open_tabs: ``open_tabs_info``'s list of ``{"title", "url"}``.
        rule: ``{"type": "url", "urls": [...]}``; another type scores 0.

    Example:
        >>> tabs = [{"url": "https://www.airbnb.com/"}, {"url": "https://www.lonelyplanet.com/"}]
        >>> is_expected_tabs(tabs, {"type": "url", "urls": ["https://www.lonelyplanet.com",
        ...                                                  "https://www.airbnb.com"]})
        1.0
    """
    if not open_tabs:
        return 0.0
    if rule["type"] != "url":
        logger.error("is_expected_tabs: unknown rule type %r", rule["type"])
        return 0.0
    actual = [tab["url"] for tab in open_tabs]
    return float(are_lists_equal(rule["urls"], actual, compare_urls))


def _bar_children(bookmarks: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(bookmarks["bookmark_bar"]["children"])


def is_expected_bookmarks(bookmarks: Any, rule: Mapping[str, Any]) -> float:
    """Check the bookmarks bar (the ``roots`` of Chrome's ``Bookmarks`` file).

    Rule types: ``bookmark_bar_folders_names`` (the set of folder names on the bar equals
    ``names``), ``bookmark_bar_websites_urls`` (the set of bookmark URLs on the bar equals
    ``urls``), ``liked_authors_websites_urls`` (a ``Liked Authors`` folder on the bar whose URL
    set equals one choice per ``urls`` item, an item being a URL or a list of alternatives).

    Raises:
        TypeError: another rule type (as OSWorld).

    Example:
        >>> roots = {"bookmark_bar": {"children": [{"type": "folder", "name": "Favorites"}]}}
        >>> is_expected_bookmarks(roots, {"type": "bookmark_bar_folders_names",
        ...                               "names": ["Favorites"]})
        1.0
    """
    if not bookmarks:
        return 0.0
    kind = rule["type"]
    if kind == "bookmark_bar_folders_names":
        names = {b["name"] for b in _bar_children(bookmarks) if b["type"] == "folder"}
        return float(names == set(rule["names"]))
    if kind == "bookmark_bar_websites_urls":
        urls = {b["url"] for b in _bar_children(bookmarks) if b["type"] == "url"}
        return float(urls == set(rule["urls"]))
    if kind == "liked_authors_websites_urls":
        folder = next(
            (
                b
                for b in _bar_children(bookmarks)
                if b["type"] == "folder" and b["name"] == "Liked Authors"
            ),
            None,
        )
        if folder is None:
            return 0.0
        liked = {b["url"] for b in folder["children"] if b["type"] == "url"}
        choices = [[u] if isinstance(u, str) else list(u) for u in rule["urls"]]
        return float(any(set(combo) == liked for combo in itertools.product(*choices)))
    raise TypeError(f"{kind} not support yet!")


def is_expected_search_query(active_tab_info: Any, rules: Mapping[str, Any]) -> float:
    r"""1 when ``rules["expect"]["pattern"]`` is found (``re.search``) in the tab's URL.

    Example:
        >>> is_expected_search_query({"url": "https://www.google.com/search?q=nereida"},
        ...                          {"expect": {"pattern": r"google\.com/search\?q=nereida"}})
        1.0
    """
    if not active_tab_info:
        return 0.0
    return float(re.search(rules["expect"]["pattern"], active_tab_info["url"]) is not None)


def is_cookie_deleted(
    cookie_data: Sequence[Sequence[Any]] | None, rule: Mapping[str, Any]
) -> float:
    """1 when no cookie's host (column 1 of Chrome's ``cookies`` table) matches a domain.

    Args:
        cookie_data: ``cookie_data``'s rows; None (the file could not be read) scores 0.
        rule: ``{"type": "domains", "domains": [...]}``, domains compared as URLs.

    Raises:
        TypeError: another rule type (as OSWorld).
    """
    if rule["type"] != "domains":
        raise TypeError(f"{rule['type']} not support yet!")
    if cookie_data is None:
        return 0.0  # OSWorld fails on None; the evaluator would score that 0 as well
    hosts = [row[1] for row in cookie_data]
    for domain in rule["domains"]:
        if any(compare_urls(domain, host) for host in hosts):
            return 0.0
    return 1.0


def _shortcut_key(rule: Mapping[str, Any]) -> str:
    """``"Name"`` or ``"Exec"``: the ``.desktop`` key a rule of type name or exec looks at.

    Raises:
        TypeError: another rule type (as OSWorld, which names url and id but supports neither).
    """
    kind = rule["type"]
    if kind not in ("name", "exec"):
        raise TypeError(f"{kind} not support yet!")
    return "Name" if kind == "name" else "Exec"


def _entry_matches(key: str, actual: str, wanted: str) -> bool:
    r"""2026.04's loose test of one ``Name=``/``Exec=`` value against the rule's text.

    Equal, or either contains the other: ignoring case for names, exactly for commands. The
    value is the rest of the line after ``=``: a CRLF file's ``\r`` stays in it (so only the
    containment tests can match there), and an empty value is contained in any text.
    """
    if key == "Name":
        actual, wanted = actual.lower(), wanted.lower()
    return actual == wanted or wanted in actual or actual in wanted


def is_shortcut_on_desktop(shortcuts: Mapping[str, str] | None, rule: Mapping[str, Any]) -> float:
    r"""1 when a ``.desktop`` file on the Desktop has a matching ``Name=`` (or ``Exec=``) line.

    As OSWorld's code of 2026.04: a file passes when it holds the line ``Name=<name>``
    (newline-terminated) exactly, or when one of its lines starting ``Name=`` has a value that
    contains the expected name or is contained in it, ignoring case (the page's title may have
    changed since the task was written). ``exec`` rules do the same with ``Exec=`` lines, with
    case. A ``Name[de]=`` or ``GenericName=`` line is not a ``Name=`` line.

    Args:
        shortcuts: ``shortcuts_on_desktop``'s file name → content.
        rule: ``{"type": "name", "name": ...}`` or ``{"type": "exec", "exec": ...}``.

    Raises:
        TypeError: another rule type (as OSWorld).

    Example:
        >>> is_shortcut_on_desktop({"a.desktop": "Name=Slides\nExec=x\n"},
        ...                        {"type": "name", "name": "Slides"})
        1.0
        >>> is_shortcut_on_desktop({"a.desktop": "Name=2048\nExec=x\n"},
        ...                        {"type": "name", "name": "Play Puzzle Game 2048"})
        1.0
    """
    key = _shortcut_key(rule)
    wanted = rule[key.lower()]
    prefix = f"{key}="
    for content in (shortcuts or {}).values():
        if prefix + wanted + "\n" in content:  # a name that is no text raises, as in OSWorld
            return 1.0
        for line in content.split("\n"):
            if line.startswith(prefix) and _entry_matches(key, line[len(prefix) :], wanted):
                return 1.0
    return 0.0


def is_shortcut_on_desktop_1_0_2(
    shortcuts: Mapping[str, str] | None, rule: Mapping[str, Any]
) -> float:
    r"""``is_shortcut_on_desktop()`` as desktop-env 1.0.2 scores it: the exact line only.

    A file passes only when it holds ``Name=<name>`` (or ``Exec=<exec>``) followed by a
    newline: case, a ``\r`` before the newline, or a missing final newline make it fail.

    Example:
        >>> is_shortcut_on_desktop_1_0_2({"a.desktop": "Name=2048\nExec=x\n"},
        ...                              {"type": "name", "name": "Play Puzzle Game 2048"})
        0.0
    """
    key = _shortcut_key(rule)
    line = key + "=" + rule[key.lower()] + "\n"
    return float(any(line in content for content in (shortcuts or {}).values()))


def check_history_deleted(
    history_data: Sequence[Sequence[Any]] | None, rule: Mapping[str, Any]
) -> float:
    """1 when no history URL (column 0 of ``history``'s rows) contains a keyword.

    Raises:
        TypeError: another rule type than ``keywords`` (as OSWorld).

    Example:
        >>> check_history_deleted([("https://www.nytimes.com/", "NYT", 0)],
        ...                       {"type": "keywords", "keywords": ["youtube"]})
        1.0
    """
    if rule["type"] != "keywords":
        raise TypeError(f"{rule['type']} not support yet!")
    if history_data is None:
        return 0.0  # OSWorld fails on None; the evaluator would score that 0 as well
    urls = [row[0] for row in history_data]
    return float(not any(keyword in url for keyword in rule["keywords"] for url in urls))


def check_enabled_experiments(enabled_experiments: Sequence[str], rule: Mapping[str, Any]) -> float:
    """1 when the enabled ``chrome://flags`` names (before ``@``) equal ``rule["names"]``.

    Raises:
        TypeError: another rule type than ``names`` (as OSWorld).

    Example:
        >>> check_enabled_experiments(["a@1", "b"], {"type": "names", "names": ["a", "b"]})
        1.0
    """
    names = [experiment.split("@")[0] for experiment in enabled_experiments]
    if rule["type"] != "names":
        raise TypeError(f"{rule['type']} not support yet!")
    return float(names == rule["names"])


def check_font_size(font_size: Mapping[str, Any], rule: Mapping[str, Any]) -> float:
    """Check Chrome's ``default_font_size``: ``value`` (equal) or ``range`` (``min < x < max``).

    Raises:
        TypeError: another rule type (as OSWorld).

    Example:
        >>> check_font_size({"default_font_size": 20}, {"type": "range", "min": 16, "max": 99})
        1.0
    """
    size = font_size["default_font_size"]
    if rule["type"] == "value":
        return float(size == rule["value"])
    if rule["type"] == "range":
        return float(rule["min"] < size < rule["max"])
    raise TypeError(f"{rule['type']} not support yet!")


def is_added_to_steam_cart(active_tab_info: Mapping[str, Any], rule: Mapping[str, Any]) -> float:
    """1 when every item name of ``rule["items"]`` is in the page's HTML (``content``).

    Example:
        >>> is_added_to_steam_cart({"content": "<li>Soundtrack</li>"}, {"items": ["Soundtrack"]})
        1.0
    """
    content = active_tab_info["content"]
    return float(all(item in content for item in rule["items"]))
