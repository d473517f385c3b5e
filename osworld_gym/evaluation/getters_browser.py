"""Getters that ask the running Chrome over CDP: the active tab, open tabs, pages, URL parts.

**The active tab's URL.** OSWorld's ``active_url_from_accessTree`` reads the text of Chrome's
address bar from the accessibility tree and prepends the config's ``goto_prefix`` (default
``https://``). The address bar hides ``http(s)://``, a leading ``www.`` and a bare ``/`` path,
so ``https://www.drugs.com/npc/`` reads ``drugs.com/npc/`` and, with the tasks' usual prefix
``https://www.``, comes back as ``https://www.drugs.com/npc/``. Here the active tab comes from
Chrome's DevTools endpoint (``/json/list`` lists tabs most recently active first) and its URL
is turned into the same text by :func:`~osworld_gym.evaluation.metrics._urls.omnibox_text`:
the same value OSWorld computes, without depending on Chrome's accessibility tree (which needs
an AT-SPI bus in the desktop, depends on the UI language and the window being found, and the
English name of Chrome's application node). Every URL getter built on it (``active_tab_info``,
``active_tab_url_parse``, ``url_dashPart``, ``url_path_parse``, ``active_tab_html_parse``)
therefore sees OSWorld's value. A browser that does not answer gives what OSWorld gives when it
finds no address bar: ``None``.

Getters that load a page (``active_tab_info``, ``page_info``, ``info_from_website``,
``pdf_from_url``, ``number_of_search_results``) reach whatever the URL names: on the live web
they need the internet, as in OSWorld.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlparse

from osworld_gym import cdp
from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.getters_chrome import preferences_color_scheme
from osworld_gym.evaluation.metrics._urls import accessibility_tree_url

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from osworld_gym.evaluation.getters import EvalContext

logger = logging.getLogger(__name__)

# OSWorld's limits, in milliseconds.
_PAGE_LOAD_MS = 60_000
_TAB_SETTLE_MS = 30_000
_SELECTOR_MS = 10_000


def _endpoint(ctx: EvalContext) -> str | None:
    return ctx.services.get("cdp")


def _session(ctx: EvalContext, action: Callable[[Browser], Any], timeout: float = 180.0) -> Any:
    return cdp.with_browser(_endpoint(ctx), action, connect_timeout=3.0, timeout=timeout)


def get_active_url_from_accessTree(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:  # noqa: N802
    """``goto_prefix`` + the address bar's text of the active tab (see the module docstring).

    Returns:
        The URL, or None when no browser answers or the active tab shows no address (the New
        Tab page).
    """
    try:
        tab = cdp.active_tab(_endpoint(ctx))
    except cdp.BrowserUnavailableError as e:
        logger.warning("active_url_from_accessTree: %s", e)
        return None
    if tab is None:
        return None
    return accessibility_tree_url(tab.get("url"), config.get("goto_prefix", "https://"))


def _load_in_fresh_context(browser: Browser, url: str) -> dict[str, str]:
    context = browser.new_context()  # OSWorld's browser.new_page(): a context of its own
    try:
        page = context.new_page()
        page.set_default_timeout(_PAGE_LOAD_MS)
        page.goto(url, wait_until="networkidle", timeout=_PAGE_LOAD_MS)
        page.wait_for_load_state("networkidle", timeout=_PAGE_LOAD_MS)
        return {"title": page.title(), "url": page.url, "content": page.content()}
    finally:
        context.close()


def get_active_tab_info(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str] | None:
    """The active tab's URL reloaded in a fresh browser context: ``{title, url, content}``.

    As OSWorld's: the page is loaded again (a new context, so without the profile's cookies)
    and ``url`` is where that load ended. None when there is no URL or the load fails (a load
    that times out included: OSWorld's handler for timeouts never matches Playwright's).
    """
    url = get_active_url_from_accessTree(ctx, config)
    if url is None:
        return None
    try:
        return _session(ctx, lambda browser: _load_in_fresh_context(browser, url))
    except DependencyNotInstalled:
        raise
    except Exception as e:  # noqa: BLE001 - OSWorld: any failure gives None
        logger.warning("active_tab_info: cannot load %s: %s", url, e)
        return None


def _tab_info(page: Page) -> dict[str, str]:
    try:
        page.set_default_timeout(_TAB_SETTLE_MS)
        page.wait_for_load_state("networkidle", timeout=_TAB_SETTLE_MS)
        return {"title": page.title(), "url": page.url}
    except Exception as e:  # noqa: BLE001 - OSWorld records the tab with this title
        logger.info("open_tabs_info: tab %s did not settle: %s", page.url, e)
        return {"title": "Error encountered", "url": page.url}


def get_open_tabs_info(ctx: EvalContext, config: Mapping[str, Any]) -> list[dict[str, str]]:
    """``{title, url}`` of every open tab, each once settled; ``[]`` when no browser answers."""
    try:
        return _session(ctx, lambda b: [_tab_info(p) for p in cdp.all_pages(b)], timeout=600.0)
    except cdp.BrowserUnavailableError as e:
        logger.warning("open_tabs_info: %s", e)
        return []


def get_active_tab_url_parse(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The first value of each ``parse_keys`` query parameter of the active tab's URL.

    Options: ``replace`` renames keys (``{old: new}``), ``split_list`` splits each value on
    commas. A parameter that is absent gives ``""``. None when there is no active URL.
    """
    url = get_active_url_from_accessTree(ctx, config)
    if url is None:
        return None
    query = parse_qs(urlparse(url).query)
    values: dict[str, Any] = {key: query.get(key, [""])[0] for key in config["parse_keys"]}
    for old, new in config.get("replace", {}).items():
        values[new] = values.pop(old)
    if config.get("split_list", False):
        values = {key: value.split(",") for key, value in values.items()}
    return values


def get_url_dashPart(ctx: EvalContext, config: Mapping[str, Any]) -> Any:  # noqa: N802
    """Part ``partIndex`` of the active URL split on ``/`` (OSWorld's name says dash).

    Options: ``needDeleteId`` cuts the part at ``?``; ``returnType`` ``"string"`` gives the
    part, ``"json"`` gives ``{key: part}``. None when there is no URL or the index is out of
    range.
    """
    url = get_active_url_from_accessTree(ctx, config)
    if url is None:
        return None
    try:
        index = int(config["partIndex"])
    except (ValueError, TypeError):
        logger.error("url_dashPart: partIndex %r is not an integer", config.get("partIndex"))
        return None
    parts = url.split("/")
    if index >= len(parts):
        return None
    part = parts[index]
    if config.get("needDeleteId", False):
        part = part.split("?")[0]
    if config["returnType"] == "string":
        return part
    if config["returnType"] == "json":
        return {config["key"]: part}
    logger.error("url_dashPart: returnType %r is neither 'string' nor 'json'", config["returnType"])
    return None


def _discount_rank(values: list[str] | None) -> str:
    best = "50_PERCENT_ off & more"
    others = ("30_PERCENT_ off & more", "20_PERCENT_ off & more")
    if values is not None and best in values and not any(o in values for o in others):
        return best
    return "not_50_PERCENT_ off & more"


def get_url_path_parse(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Facets of a Macy's product-listing path (OSWorld's ``url_path_parse``).

    Returns ``mens_clothing`` (True when the path has ``mens-clothing``, else None),
    ``shirts`` and ``short_sleeve`` (True or None, from the path or the facet pairs) and each
    of ``parse_keys`` found in the first pair of comma lists in consecutive path segments
    (``Price_discount_range`` reduced to ``"50_PERCENT_ off & more"`` or
    ``"not_50_PERCENT_ off & more"``). None when there is no active URL.
    """
    url = get_active_url_from_accessTree(ctx, config)
    if url is None:
        return None
    path = unquote(urlparse(url).path)
    segments = path.strip("/").split("/")
    facets: dict[str, Any] = {}
    shirts, short_sleeve = "shirts" in path, "short-sleeve" in path
    for left, right in zip(segments, segments[1:], strict=False):
        if "," in left and "," in right:
            keys = [k.strip() for k in left.split(",")]
            values = [v.strip() for v in right.split(",")]
            for key, value in zip(keys, values, strict=False):
                if key == "Price_discount_range":
                    facets[key] = [item.strip() for item in value.split("|")] if value else None
                else:
                    facets[key] = value or None
                shirts |= key == "Product_department" and value in ("shirts", "Shirts", "Shirt")
                short_sleeve |= key == "Sleeve_length" and value in ("short-sleeve", "Short Sleeve")
            break
    for key in ("Men_regular_size_t", "Price_discount_range"):
        facets.setdefault(key, None)
    result: dict[str, Any] = {
        "mens_clothing": True if "mens-clothing" in path else None,
        "shirts": True if shirts else None,
        "short_sleeve": True if short_sleeve else None,
    }
    for key in config["parse_keys"]:
        if key in facets:
            result[key] = (
                _discount_rank(facets[key]) if key == "Price_discount_range" else facets[key]
            )
    return result


def _open_in_profile(browser: Browser, url: str, wait_until: str = "networkidle") -> Page:
    """A new tab of the user's own profile (its cookies: a cart, a login) showing ``url``."""
    page = browser.contexts[0].new_page()
    page.set_default_timeout(_PAGE_LOAD_MS)
    page.goto(url, wait_until=wait_until, timeout=_PAGE_LOAD_MS)  # type: ignore[arg-type]
    return page


def get_page_info(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str]:
    """``{title, url, content}`` of ``config["url"]`` loaded in a new tab of the profile.

    Two tries; then OSWorld's ``{"title": "Connection failed", "url": url, "content": ""}``.
    """
    url = config["url"]

    def load(browser: Browser) -> dict[str, str]:
        page = _open_in_profile(browser, url)
        try:
            page.wait_for_load_state("networkidle", timeout=_PAGE_LOAD_MS)
            return {"title": page.title(), "url": page.url, "content": page.content()}
        finally:
            page.close()

    for attempt in range(2):
        try:
            return _session(ctx, load)
        except DependencyNotInstalled:
            raise
        except Exception as e:  # noqa: BLE001 - OSWorld retries any failure, then gives up
            logger.warning("page_info: attempt %d for %s failed: %s", attempt + 1, url, e)
    return {"title": "Connection failed", "url": url, "content": ""}


def _extract(page: Page, url: str, info: Mapping[str, Any]) -> Any:
    if page.url != url:
        page.goto(url)
        page.wait_for_load_state("load")
    action = info.get("action", "inner_text")
    selectors = info.get("selector")
    if action in ("click_and_inner_text", "click_and_attribute"):
        *clicks, last = selectors
        for selector in clicks:
            page.wait_for_selector(selector, state="attached", timeout=_SELECTOR_MS).click()
            page.wait_for_load_state("load")
        selectors = last
    elif action not in ("inner_text", "attribute"):
        raise NotImplementedError(f"The action {action} is not supported yet.")
    element = page.wait_for_selector(selectors, state="attached", timeout=_SELECTOR_MS)
    if action.endswith("inner_text"):
        return element.inner_text()
    return element.get_attribute(info["attribute"])


def get_info_from_website(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Texts or attributes scraped from ``config["url"]`` by ``infos``; ``backups`` on failure.

    Each of ``infos`` is ``{action, selector, attribute}``: ``inner_text`` / ``attribute`` of
    the element a selector finds, or ``click_and_inner_text`` / ``click_and_attribute``, which
    click each selector of a list but the last, then read the last. Any failure gives the
    config's ``backups`` (as OSWorld).
    """
    url = config["url"]

    def scrape(browser: Browser) -> list[Any]:
        page = _open_in_profile(browser, url, wait_until="load")
        try:
            return [_extract(page, url, info) for info in config.get("infos", [])]
        finally:
            page.close()

    try:
        return _session(ctx, scrape)
    except DependencyNotInstalled:
        raise
    except Exception as e:  # noqa: BLE001 - OSWorld falls back on any failure
        logger.warning("info_from_website: %s failed (%s); using the backups", url, e)
        return config.get("backups", None)


def get_pdf_from_url(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """``config["path"]`` (a URL) printed to PDF by Chrome, saved as ``dest``.

    After three failed tries the file holds an empty PDF (OSWorld's fallback), which scores
    low rather than failing the check.
    """
    url = config["path"]
    target = ctx.fetch_dir / config["dest"]

    def render(browser: Browser) -> None:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(url, wait_until="networkidle", timeout=_PAGE_LOAD_MS)
            page.wait_for_load_state("networkidle", timeout=_PAGE_LOAD_MS)
            page.pdf(path=str(target))
        finally:
            context.close()

    for attempt in range(3):
        try:
            _session(ctx, render)
            if target.is_file():
                return str(target)
        except DependencyNotInstalled:
            raise
        except Exception as e:  # noqa: BLE001 - OSWorld retries any failure
            logger.warning("pdf_from_url: attempt %d for %s failed: %s", attempt + 1, url, e)
    target.write_text("%PDF-1.4\n%EOF\n")
    return str(target)


def get_number_of_search_results(ctx: EvalContext, config: Mapping[str, Any]) -> int:
    """How many ``.search-result`` elements Google's results page for "query" shows.

    OSWorld's hard-coded page (live web); 0 when it cannot be loaded.
    """

    def count(browser: Browser) -> int:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto("https://google.com/search?q=query", wait_until="networkidle")
            return len(page.query_selector_all(".search-result"))
        finally:
            context.close()

    try:
        return int(_session(ctx, count))
    except DependencyNotInstalled:
        raise
    except Exception as e:  # noqa: BLE001 - OSWorld gives 0 on any failure
        logger.warning("number_of_search_results: %s", e)
        return 0


# Chrome's settings prefs behind the appearance page, read through the page's own API.
_APPEARANCE_PREFS = ("browser.theme.color_scheme", "browser.theme.color_scheme2",
                     "extensions.theme.system_theme")  # fmt: skip
_READ_PREFS = """async (names) => {
  const read = (name) => new Promise((resolve) => {
    try { chrome.settingsPrivate.getPref(name, (p) => resolve(p ? p.value : null)); }
    catch (e) { resolve(null); }
  });
  const out = {};
  for (const name of names) out[name] = await read(name);
  return out;
}"""


def appearance_from_settings(values: Mapping[str, Any]) -> str | None:
    """The appearance mode OSWorld reads from the settings page's prefs, or None.

    Light if any pref says light (a color scheme of 1 or a ``system_theme`` of 0), else dark
    (a color scheme of 2, a ``system_theme`` of 1), else system (a color scheme of 0).

    Example:
        >>> appearance_from_settings({"browser.theme.color_scheme2": 2})
        'dark'
    """
    modes = set()
    for name, value in values.items():
        text = str(value).lower()
        if name.endswith("system_theme"):
            modes |= {"light"} if value in (0, "0", False) else set()
            modes |= {"dark"} if value in (1, "1", True) else set()
        else:
            modes |= {"light"} if text in ("1", "light") else set()
            modes |= {"dark"} if text in ("2", "dark") else set()
            modes |= {"system"} if text in ("0", "system", "default", "device") else set()
    return next((m for m in ("light", "dark", "system") if m in modes), None)


def get_chrome_appearance_mode_ui(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """Chrome's appearance mode (``light``, ``dark`` or ``system``) as its settings page has it.

    OSWorld opens ``chrome://settings/appearance`` and reads the theme prefs from the page
    (plus the text of selected controls); here the page's ``chrome.settingsPrivate`` API gives
    the same prefs. The live value matters: Chrome writes Preferences seconds after a change.
    Falls back to the Preferences file when the page cannot be read.
    """

    def probe(browser: Browser) -> Any:
        page = _open_in_profile(browser, "chrome://settings/appearance", "domcontentloaded")
        try:
            return page.evaluate(_READ_PREFS, list(_APPEARANCE_PREFS))
        finally:
            page.close()

    try:
        mode = appearance_from_settings(_session(ctx, probe, timeout=60.0) or {})
    except DependencyNotInstalled:
        raise
    except Exception as e:  # noqa: BLE001 - OSWorld falls back to the file on any failure
        logger.warning("chrome_appearance_mode_ui: settings page unreadable (%s)", e)
        mode = None
    return mode or preferences_color_scheme(ctx)


CHROME_BROWSER_GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "active_url_from_accessTree": get_active_url_from_accessTree,
    "active_tab_info": get_active_tab_info,
    "open_tabs_info": get_open_tabs_info,
    "active_tab_url_parse": get_active_tab_url_parse,
    "url_dashPart": get_url_dashPart,
    "url_path_parse": get_url_path_parse,
    "page_info": get_page_info,
    "info_from_website": get_info_from_website,
    "pdf_from_url": get_pdf_from_url,
    "number_of_search_results": get_number_of_search_results,
    "chrome_appearance_mode_ui": get_chrome_appearance_mode_ui,
}
