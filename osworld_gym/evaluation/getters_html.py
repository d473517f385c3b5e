"""OSWorld's ``active_tab_html_parse``: values read from the elements of the active tab's page.

The tab is found as OSWorld finds it: the open page whose URL, percent-decoded and without
trailing slashes, equals the active tab's URL as ``active_url_from_accessTree`` computes it
(with the config's ``goto_prefix``). Each page is first given up to 60 s to go network-idle.
No such page gives ``{}``; no active URL gives ``None``.

Config ``category`` and its keys (OSWorld's names):

* ``class``: ``class_singleObject`` {class: key} (first element's text),
  ``class_multiObject`` {class: {index: key}} (the index-th element's text),
  ``class_multiObject_child`` {class: {index: key}} (the index-th direct text node of the
  first element), ``class_multiObject_only_child`` {class: {index: key}} (the text of the
  ``h3`` of the index-th element), ``class_multiObject_search_exist`` {class: [texts]}
  (``text: bool`` for each, and ``is_other_exist`` when listed). Missing elements give ``""``.
* ``label``: ``labelObject`` {text: key}: the first element with that text.
* ``xpath``: ``xpathObject`` {xpath: key}: the first match's text.
* ``input``: ``inputObject`` {xpath: key}: the first match's input value.
* ``class&url``: ``class_multiObject`` / ``class_multiObject_li`` {class: [texts]} (found
  texts, lowercased, as True; ``is_other_exist``), ``url_include_expected`` [texts] and
  ``url_include_expected_multichoice`` {text in URL: key} (whether the page URL contains it).

Texts are stripped; all text comparisons of ``class&url`` ignore case.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from osworld_gym import cdp
from osworld_gym.evaluation.getters_browser import get_active_url_from_accessTree

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from osworld_gym.evaluation.getters import EvalContext

logger = logging.getLogger(__name__)

_SETTLE_MS = 60_000
_DIRECT_TEXT = """(node) => Array.from(node.childNodes)
    .filter(n => n.nodeType === Node.TEXT_NODE)
    .map(n => n.textContent.trim())
    .filter(Boolean)"""


def _same_url(a: str, b: str) -> bool:
    return unquote(a).rstrip("/") == unquote(b).rstrip("/")


def _find_page(browser: Browser, url: str) -> Page | None:
    for page in cdp.all_pages(browser):
        try:
            page.wait_for_load_state("networkidle", timeout=_SETTLE_MS)
            if not page.is_closed() and _same_url(page.url, url):
                return page
        except Exception as e:  # noqa: BLE001 - a tab that fails to settle is skipped
            logger.debug("active_tab_html_parse: skipping a tab: %s", e)
    return None


def _safely(name: str, read: Callable[[], list[Any]]) -> list[Any]:
    try:
        return read()
    except Exception as e:  # noqa: BLE001 - OSWorld treats an unreadable element as absent
        logger.info("active_tab_html_parse: %s: %s", name, e)
        return []


def _texts(page: Page, selector: str) -> list[str]:
    return _safely(
        selector,
        lambda: [(e.text_content() or "").strip() for e in page.query_selector_all(selector)],
    )


def _direct_texts(page: Page, selector: str) -> list[str]:
    def read() -> list[str]:
        found = [e.evaluate(_DIRECT_TEXT) for e in page.query_selector_all(selector)]
        return found[0] if found else []

    return _safely(selector, read)


def _child_texts(page: Page, selector: str, child: str, inner: bool = False) -> list[str]:
    def read() -> list[str]:
        out = []
        for element in page.query_selector_all(selector):
            found = element.query_selector(child)
            if found:
                text = found.inner_text() if inner else (found.text_content() or "")
                out.append(text.strip())
        return out

    return _safely(selector, read)


def _by_index(texts: list[str], wanted: Mapping[str, str], out: dict[str, Any]) -> None:
    for index, key in wanted.items():
        position = int(index)
        out[key] = texts[position] if len(texts) > position else ""


def _search_exist(texts: list[str], wanted: list[str], out: dict[str, Any]) -> None:
    for item in wanted:
        if item != "is_other_exist":
            out[item] = item in texts
    if "is_other_exist" in wanted:
        out["is_other_exist"] = any(text not in wanted for text in texts)


def _class_values(page: Page, config: Mapping[str, Any], out: dict[str, Any]) -> None:
    for name, wanted in config.get("class_multiObject", {}).items():
        _by_index(_texts(page, "." + name), wanted, out)
    for name, wanted in config.get("class_multiObject_child", {}).items():
        _by_index(_direct_texts(page, "." + name), wanted, out)
    for name, wanted in config.get("class_multiObject_only_child", {}).items():
        _by_index(_child_texts(page, "." + name, "h3"), wanted, out)
    for name, wanted in config.get("class_multiObject_search_exist", {}).items():
        _search_exist(_texts(page, "." + name), wanted, out)
    for name, key in config.get("class_singleObject", {}).items():
        texts = _texts(page, "." + name)
        out[key] = texts[0] if texts else ""


def _first_text(page: Page, selector: str, value: bool = False) -> str:
    try:
        found = page.locator(selector)
        if found.count() == 0:
            return ""
        text = found.first.input_value() if value else found.first.text_content()
    except Exception as e:  # noqa: BLE001 - an unreadable element reads as empty
        logger.info("active_tab_html_parse: %s: %s", selector, e)
        return ""
    return text.strip() if text else ""


def _xpath_values(page: Page, config: Mapping[str, Any], out: dict[str, Any]) -> None:
    for xpath, key in config.get("xpathObject", {}).items():
        text = _first_text(page, f"xpath={xpath}")
        if not text and page.locator(f"xpath={xpath}").count() == 0:
            text = _first_text(page, xpath)  # OSWorld retries as a plain selector
        out[key] = text


def _known_texts(texts: list[str], wanted: list[str], out: dict[str, Any]) -> None:
    for item in wanted:
        if any(item.lower() == text.lower() for text in texts):
            out[item.lower()] = True
    if any(all(text.lower() not in item.lower() for item in wanted) for text in texts):
        out["is_other_exist"] = True
    out.setdefault("is_other_exist", False)


def _class_url_values(page: Page, config: Mapping[str, Any], out: dict[str, Any]) -> None:
    for name, wanted in config.get("class_multiObject", {}).items():
        _known_texts(_texts(page, "." + name), wanted, out)
    for name, wanted in config.get("class_multiObject_li", {}).items():
        items = _child_texts(page, f".{name} li.catAllProducts", "span", inner=True)
        _known_texts(items, wanted, out)
    url = page.url.lower()
    for item in config.get("url_include_expected", []):
        out.setdefault(item.lower(), item.lower() in url)
    for fragment, key in config.get("url_include_expected_multichoice", {}).items():
        out.setdefault(key.lower(), fragment.lower() in url)


def parse_page(page: Page, config: Mapping[str, Any]) -> dict[str, Any]:
    """The values ``config`` asks for, read from ``page`` (see the module docstring)."""
    out: dict[str, Any] = {}
    category = config["category"]
    if category == "class":
        _class_values(page, config, out)
    elif category == "label":
        for label, key in config.get("labelObject", {}).items():
            out[key] = _first_text(page, f"text={label}")
    elif category == "xpath":
        _xpath_values(page, config, out)
    elif category == "input":
        for xpath, key in config.get("inputObject", {}).items():
            out[key] = _first_text(page, f"xpath={xpath}", value=True)
    elif category == "class&url":
        _class_url_values(page, config, out)
    else:
        logger.error("active_tab_html_parse: unknown category %r", category)
    return out


def get_active_tab_html_parse(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Values read from the active tab's page (see the module docstring).

    Returns:
        The dict of values; ``{}`` when no open page has the active URL or no browser answers
        during the read; None when there is no active URL.
    """
    url = get_active_url_from_accessTree(ctx, config)
    if not isinstance(url, str):
        return None

    def read(browser: Browser) -> dict[str, Any]:
        page = _find_page(browser, url)
        if page is None:
            logger.warning("active_tab_html_parse: no open tab shows %s", url)
            return {}
        return parse_page(page, config)

    try:
        return cdp.with_browser(ctx.services.get("cdp"), read, connect_timeout=3.0, timeout=600.0)
    except cdp.BrowserUnavailableError as e:
        logger.warning("active_tab_html_parse: %s", e)
        return {}


CHROME_HTML_GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "active_tab_html_parse": get_active_tab_html_parse,
}
