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

OSWorld's ``gotoRecreationPage_and_get_html_content`` (the expected value of chrome/b4f95342)
is here too: it browses recreation.gov to a campground found by searching "Diamond" and reads
an element's text by class (``get_gotoRecreationPage_and_get_html_content()``), as
desktop-env 1.0.2 does: in OSWorld's code of 2026.04 the step that opens the campground cannot
be reached, and the task file's answer could never score.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.getters.browser import get_active_url_from_accessTree
from osworld_gym.task_setup import cdp

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from osworld_gym.evaluation.getters.base import EvalContext

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


# --- recreation.gov: OSWorld's ``gotoRecreationPage_and_get_html_content`` ---------------------

# The addresses tried for the home page, in order, and for each the load states tried in turn
# (a load that fails for one state is tried again waiting for the next).
_RECREATION_HOMES = (
    "https://www.recreation.gov/",
    "http://www.recreation.gov/",
    "https://recreation.gov/",
)
_HOME_LOAD_STATES = ("domcontentloaded", "load", "networkidle")
_RECREATION_QUERY = "Diamond"
_SEARCH_INPUT = "input#hero-search-input"
_SEARCH_BUTTON = "button.nav-search-button"
_SEARCH_RESULT = ".search-result-highlight--success"
# The campground page's "Next Available" button, by OSWorld's selectors in its order of
# preference. Plain CSS, so the page's own querySelector can test them all at once.
_NEXT_AVAILABLE = (
    "button.next-available",
    "button[class*='next-available']",
    "button[class*='next']",
    ".next-available",
    "[data-testid*='next']",
)
# Whether the first element of any of the selectors shows (Playwright's notion of visible: a
# non-empty box and not visibility:hidden).
_ANY_SHOWS = """(selectors) => selectors.some((selector) => {
  const element = document.querySelector(selector);
  if (!element) return false;
  const box = element.getBoundingClientRect();
  return box.width > 0 && box.height > 0 && getComputedStyle(element).visibility !== 'hidden';
})"""
# Headers OSWorld adds to every request of its tab, so that the site sees an ordinary browser.
_BROWSER_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,image/webp,image/apng,"
    "*/*;q=0.8",
    "Accept-Language": "en-US,en;q=0.9",
    "Accept-Encoding": "gzip, deflate, br",
    "DNT": "1",
    "Connection": "keep-alive",
    "Upgrade-Insecure-Requests": "1",
}
# The marker check_direct_json_object scores 0 on, wherever the expected dict holds it.
_EVALUATION_FAILED = "__EVALUATION_FAILED__"

# OSWorld's limits, in milliseconds: the default of every step, the home page's settling...
_STEP_MS = 60_000
_HOME_SETTLE_MS = 30_000
# ...the pause OSWorld makes after starting the search (here: until the page moves on, at most
# that long), the time the campground tab has to go network-idle (OSWorld pauses 30 s, then
# waits up to 60 s more) and the time for the "Next Available" button to show and be clicked.
_SEARCH_PAUSE_MS = 10_000
_CAMPGROUND_SETTLE_MS = 90_000
_NEXT_AVAILABLE_MS = 30_000
_RECREATION_ATTEMPTS = 3
# OSWorld has no overall limit; here the attempts together get this many seconds.
_RECREATION_BUDGET_S = 600.0


def _open_home(page: Page) -> None:
    """Load recreation.gov's home page (trying OSWorld's addresses and load states in turn).

    Raises:
        RuntimeError: none of them loaded (the site is unreachable).
    """
    failures: list[str] = []
    for url in _RECREATION_HOMES:
        for state in _HOME_LOAD_STATES:
            try:
                page.goto(url, wait_until=state, timeout=_STEP_MS)  # type: ignore[arg-type]
            except Exception as e:  # noqa: BLE001 - the next state or address is tried
                failures.append(f"{url} ({state}): {e}".splitlines()[0])
                continue
            try:
                # The search box is a script's: give the page its chance to finish loading.
                page.wait_for_load_state("networkidle", timeout=_HOME_SETTLE_MS)
            except Exception as e:  # noqa: BLE001 - OSWorld goes on with the page as it is
                logger.info("recreation.gov: the home page did not go idle: %s", e)
            return
    raise RuntimeError("recreation.gov did not load: " + "; ".join(failures))


def _search(page: Page) -> None:
    """Search for "Diamond" from the home page, and let the results page come.

    OSWorld pauses 10 s after the click; here the wait ends as soon as the page's URL changes
    (the search navigates), and otherwise after those 10 s, as OSWorld's does.
    """
    page.wait_for_selector(_SEARCH_INPUT, state="visible")
    page.fill(_SEARCH_INPUT, _RECREATION_QUERY)
    page.wait_for_selector(_SEARCH_BUTTON, state="visible")
    before = page.url
    page.click(_SEARCH_BUTTON)
    try:
        page.wait_for_url(lambda url: url != before, wait_until="commit", timeout=_SEARCH_PAUSE_MS)
    except Exception as e:
        if not isinstance(e, cdp.require_playwright().TimeoutError):
            raise
        logger.info("recreation.gov: the search left the page at %s", page.url)


def _open_campground(page: Page) -> Page:
    """Click the first search result, which opens the campground in a new tab, and settle it.

    Raises:
        Exception: Playwright's, when no result shows, no tab opens or the tab does not go
            network-idle in time (OSWorld retries then).
    """
    page.wait_for_selector(_SEARCH_RESULT, state="visible")
    with page.expect_popup() as opened:
        page.click(_SEARCH_RESULT)
    campground = opened.value
    campground.set_default_timeout(_STEP_MS)
    campground.wait_for_load_state("networkidle", timeout=_CAMPGROUND_SETTLE_MS)
    return campground


def _click_next_available(page: Page) -> bool:
    """Click the campground's "Next Available" button; whether one could be clicked.

    The first of OSWorld's selectors, in its order, whose element shows once any does (they
    get 30 s to show up). A page without the button is read as it is, as OSWorld does.
    """
    try:
        page.wait_for_function(_ANY_SHOWS, arg=list(_NEXT_AVAILABLE), timeout=_NEXT_AVAILABLE_MS)
    except Exception as e:  # noqa: BLE001 - OSWorld goes on without the click
        logger.info("recreation.gov: no Next Available button showed: %s", e)
        return False
    for selector in _NEXT_AVAILABLE:
        button = page.locator(selector).first
        try:
            if button.is_visible():
                button.click(timeout=_NEXT_AVAILABLE_MS)
                return True
        except Exception as e:  # noqa: BLE001 - the next selector is tried, as OSWorld does
            logger.info("recreation.gov: clicking %s failed: %s", selector, e)
    logger.info("recreation.gov: no Next Available button could be clicked")
    return False


def _class_text(page: Page, name: str, config: Mapping[str, Any]) -> str | None:
    """The stripped text of element ``order`` (from 0; the first without one) of class ``name``.

    ``"__EVALUATION_FAILED__"`` when there is no such element or it cannot be read.
    """
    try:
        if "order" not in config:
            element = page.query_selector("." + name)
        else:
            index = int(config["order"])  # a negative index counts from the end, as in OSWorld
            elements = page.query_selector_all("." + name)
            element = elements[index] if len(elements) > index else None
        if element is None:
            logger.warning("recreation.gov: no element %r of class %s", config.get("order"), name)
            return _EVALUATION_FAILED
        text = element.text_content()
    except Exception as e:  # noqa: BLE001 - OSWorld marks an unreadable element as failed
        logger.warning("recreation.gov: reading class %s failed: %s", name, e)
        return _EVALUATION_FAILED
    return text.strip() if text else text


def recreation_expected(page: Page, config: Mapping[str, Any]) -> dict[str, Any]:
    """The value of ``gotoRecreationPage_and_get_html_content`` read from ``page``.

    ``{"expected": {class: text}}`` for ``selector`` ``"class"`` (the text of the element
    ``order`` of that class, or of the first; ``"__EVALUATION_FAILED__"`` when there is none);
    ``{"expected": {}}`` for any other ``selector``, which OSWorld does not read;
    ``{"expected": {"extraction_error": "__EVALUATION_FAILED__"}}`` when the config lacks
    ``selector``, or ``class`` with ``selector`` ``"class"``.
    """
    try:
        if config["selector"] != "class":
            return {"expected": {}}
        name = config["class"]
    except KeyError as e:
        logger.error("gotoRecreationPage_and_get_html_content: config lacks %s", e)
        return {"expected": {"extraction_error": _EVALUATION_FAILED}}
    return {"expected": {name: _class_text(page, name, config)}}


def _visit_recreation(browser: Browser, config: Mapping[str, Any]) -> dict[str, Any]:
    """One attempt: home page, search, the campground, its text."""
    context = browser.new_context()  # OSWorld's browser.new_page(): a context of its own
    try:
        page = context.new_page()
        page.set_default_timeout(_STEP_MS)
        page.set_extra_http_headers(_BROWSER_HEADERS)
        _open_home(page)
        _search(page)
        campground = _open_campground(page)
        _click_next_available(campground)
        # Read at once after the click, as OSWorld does.
        return recreation_expected(campground, config)
    finally:
        try:
            context.close()  # the tabs it opened go with it
        except Exception as e:  # noqa: BLE001 - best effort: the browser may be gone
            logger.debug("gotoRecreationPage_and_get_html_content: closing failed: %s", e)


def _recreation(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + _RECREATION_BUDGET_S
    error: BaseException | None = None
    attempts = 0
    while attempts < _RECREATION_ATTEMPTS and time.monotonic() < deadline:
        attempts += 1
        try:
            return cdp.with_browser(
                ctx.services.get("cdp"),
                lambda b: _visit_recreation(b, config),
                connect_timeout=3.0,
                timeout=max(1.0, deadline - time.monotonic()),
            )
        except DependencyNotInstalled:
            raise
        except cdp.BrowserUnavailableError as e:
            # No browser answered (OSWorld would start one on the desktop; our getters never
            # do), or the time is up: another attempt cannot do better.
            error = e
            break
        except Exception as e:  # noqa: BLE001 - OSWorld retries any failure
            error = e
            logger.warning(
                "gotoRecreationPage_and_get_html_content: attempt %d failed: %s", attempts, e
            )
    noun = "attempt" if attempts == 1 else "attempts"
    logger.error("gotoRecreationPage_and_get_html_content: failed after %d %s", attempts, noun)
    return {
        "expected": {
            "error": _EVALUATION_FAILED,
            "error_message": f"Failed after {attempts} {noun}: {error}",
        }
    }


def get_gotoRecreationPage_and_get_html_content(  # noqa: N802 - OSWorld's getter name
    ctx: EvalContext, config: Mapping[str, Any]
) -> dict[str, Any]:
    """OSWorld's expected value for chrome/b4f95342: a campground's text on recreation.gov.

    In a new browser context (no profile cookies): load recreation.gov (``https://www.``,
    ``http://www.``, ``https://``, each waiting for ``domcontentloaded``, then ``load``, then
    ``networkidle``), fill "Diamond" in ``input#hero-search-input``, click
    ``button.nav-search-button``, click the first ``.search-result-highlight--success``, which
    opens the campground in a new tab; that tab must go network-idle within 90 s. Its "Next
    Available" button is clicked when one shows within 30 s, then the page is read at once
    (``recreation_expected()``): ``{"expected": {class: text}}``. A failing step fails the
    attempt; after three, or at once when no browser answers (OSWorld would start a Chrome on
    the desktop; our getters never do), the failure marker
    ``{"expected": {"error": "__EVALUATION_FAILED__", "error_message": ...}}``, on which
    ``check_direct_json_object`` scores 0.

    The same for both evaluator references, by the task file: desktop-env 1.0.2 reaches the
    campground; OSWorld's code of 2026.04 never does (its step that opens the search result
    sits after a ``raise`` in an exception handler), so there every run of the task scores 0,
    which no answer to the task file could change.
    """
    return _recreation(ctx, config)


CHROME_HTML_GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "active_tab_html_parse": get_active_tab_html_parse,
    "gotoRecreationPage_and_get_html_content": get_gotoRecreationPage_and_get_html_content,
}
