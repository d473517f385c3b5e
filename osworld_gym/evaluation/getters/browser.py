"""Getters that ask the running Chrome over CDP: the active tab, open tabs, pages, URL parts.

**The active tab's URL.** OSWorld's ``active_url_from_accessTree`` reads the text of Chrome's
address bar from the accessibility tree and prepends the config's ``goto_prefix`` (default
``https://``). The address bar hides ``http(s)://``, a leading ``www.`` and a bare ``/`` path,
so ``https://www.drugs.com/npc/`` reads ``drugs.com/npc/`` and, with the tasks' usual prefix
``https://www.``, comes back as ``https://www.drugs.com/npc/``. Here the active tab comes from
Chrome's DevTools endpoint (``/json/list`` lists tabs most recently active first) and its URL
is turned into the same text by ``omnibox_text()``:
the same value OSWorld computes, without depending on Chrome's accessibility tree (which needs
an AT-SPI bus in the desktop, depends on the UI language and the window being found, and the
English name of Chrome's application node). Every URL getter built on it (``active_tab_info``,
``active_tab_url_parse``, ``url_dashPart``, ``url_path_parse``, ``active_tab_html_parse``)
therefore sees OSWorld's value. A browser that does not answer gives what OSWorld gives when it
finds no address bar: ``None``.

Getters that load a page (``active_tab_info``, ``page_info``, ``info_from_website``,
``pdf_from_url``, ``number_of_search_results``) reach whatever the URL names: on the live web
they need the internet, as in OSWorld.

**References.** These getters behave as OSWorld's code of 2026.04 (the default reference).
Three changed since desktop-env 1.0.2 in what they return, and keep 1.0.2's behaviour as
``<name>_1_0_2``: 2026.04 catches Playwright's own timeout (1.0.2's handlers named Python's
built-in ``TimeoutError``, which Playwright's is not), so a tab or page that times out gives a
"Load timeout" result where 1.0.2 gave an error result or None; ``active_tab_info`` reloads
the page until ``load`` instead of ``networkidle``; ``page_info`` loads the page in the user's
profile (its cookies: a cart, a login) where 1.0.2 used a fresh context. 2026.04's other
changes to these getters concern ARM desktops (the snap Chromium and its accessibility name)
and leave x86_64 desktops as they were. ``chrome_appearance_mode_ui`` is new in 2026.04.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlparse

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.getters.chrome import COLOR_SCHEMES, get_chrome_color_scheme
from osworld_gym.evaluation.metrics._urls import accessibility_tree_url
from osworld_gym.task_setup import cdp

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from osworld_gym.evaluation.getters.base import EvalContext

logger = logging.getLogger(__name__)

# OSWorld's limits, in milliseconds.
_PAGE_LOAD_MS = 60_000
_TAB_SETTLE_MS = 30_000
_SELECTOR_MS = 10_000


def _endpoint(ctx: EvalContext) -> str | None:
    return ctx.services.get("cdp")


def _session(ctx: EvalContext, action: Callable[[Browser], Any], timeout: float = 180.0) -> Any:
    return cdp.with_browser(_endpoint(ctx), action, connect_timeout=3.0, timeout=timeout)


def _is_timeout(error: BaseException) -> bool:
    """Whether ``error`` is Playwright's timeout (imported already when a page raised it)."""
    return isinstance(error, cdp.require_playwright().TimeoutError)


# The title 2026.04 gives a tab or page that timed out, and the one of any other failure (also
# 1.0.2's for timeouts, which its handlers did not recognize).
_LOAD_TIMEOUT = "Load timeout"
_ERROR_ENCOUNTERED = "Error encountered"


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


def _load_in_fresh_context(
    browser: Browser, url: str, wait_until: str, timeout_gives_page: bool
) -> dict[str, str] | None:
    """``{title, url, content}`` of ``url`` loaded in a context of its own (no profile cookies).

    None when the load fails; with ``timeout_gives_page``, a load that times out gives the page
    as far as it got, titled "Load timeout" (reading that page may raise: the caller retries).
    """
    context = browser.new_context()  # OSWorld's browser.new_page(): a context of its own
    try:
        page = context.new_page()
        page.set_default_timeout(_PAGE_LOAD_MS)
        try:
            page.goto(url, wait_until=wait_until, timeout=_PAGE_LOAD_MS)  # type: ignore[arg-type]
            page.wait_for_load_state(wait_until, timeout=_PAGE_LOAD_MS)  # type: ignore[arg-type]
            return {"title": page.title(), "url": page.url, "content": page.content()}
        except Exception as e:  # noqa: BLE001 - OSWorld: a failed load gives None
            if timeout_gives_page and _is_timeout(e):
                logger.warning("active_tab_info: %s timed out: %s", url, e)
                return {"title": _LOAD_TIMEOUT, "url": page.url, "content": page.content()}
            logger.warning("active_tab_info: cannot load %s: %s", url, e)
            return None
    finally:
        context.close()


def _active_tab_info(
    ctx: EvalContext, config: Mapping[str, Any], wait_until: str, timeout_gives_page: bool
) -> dict[str, str] | None:
    url = get_active_url_from_accessTree(ctx, config)
    if url is None:
        return None
    for attempt in range(2):  # OSWorld tries twice when something outside the load fails
        try:
            return _session(  # type: ignore[no-any-return]
                ctx, lambda b: _load_in_fresh_context(b, url, wait_until, timeout_gives_page)
            )
        except DependencyNotInstalled:
            raise
        except cdp.BrowserUnavailableError as e:  # OSWorld gives up at once when not connected
            logger.warning("active_tab_info: %s", e)
            return None
        except Exception as e:  # noqa: BLE001 - retried, then None
            logger.warning("active_tab_info: attempt %d for %s failed: %s", attempt + 1, url, e)
    return None


def get_active_tab_info(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str] | None:
    """The active tab's URL reloaded in a fresh browser context: ``{title, url, content}``.

    As OSWorld's of 2026.04: the page is loaded again (a new context, so without the
    profile's cookies) until its ``load`` event, and ``url`` is where that load ended. A load
    that times out gives the page as it stands, titled "Load timeout"; None when there is no
    URL or the load fails otherwise.
    """
    return _active_tab_info(ctx, config, "load", timeout_gives_page=True)


def get_active_tab_info_1_0_2(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str] | None:
    """``get_active_tab_info()`` as desktop-env 1.0.2 has it.

    The reload waits for ``networkidle`` (a page that keeps polling the network never gets
    there), and any failure, a timeout included, gives None.
    """
    return _active_tab_info(ctx, config, "networkidle", timeout_gives_page=False)


def _tab_info(page: Page, timeout_title: str) -> dict[str, str]:
    try:
        page.set_default_timeout(_TAB_SETTLE_MS)
        page.wait_for_load_state("networkidle", timeout=_TAB_SETTLE_MS)
        return {"title": page.title(), "url": page.url}
    except Exception as e:  # noqa: BLE001 - OSWorld records the tab with this title
        title = timeout_title if _is_timeout(e) else _ERROR_ENCOUNTERED
        logger.info("open_tabs_info: tab %s did not settle (%s): %s", page.url, title, e)
        return {"title": title, "url": page.url}


def _open_tabs_info(ctx: EvalContext, timeout_title: str) -> list[dict[str, str]]:
    for attempt in range(2):  # OSWorld tries twice when the listing itself fails
        try:
            return _session(  # type: ignore[no-any-return]
                ctx,
                lambda b: [_tab_info(p, timeout_title) for p in cdp.all_pages(b)],
                timeout=600.0,
            )
        except DependencyNotInstalled:
            raise
        except cdp.BrowserUnavailableError as e:
            logger.warning("open_tabs_info: %s", e)
            return []
        except Exception as e:  # noqa: BLE001 - retried, then no tabs
            logger.warning("open_tabs_info: attempt %d failed: %s", attempt + 1, e)
    return []


def get_open_tabs_info(ctx: EvalContext, config: Mapping[str, Any]) -> list[dict[str, str]]:
    """``{title, url}`` of every open tab, each once settled; ``[]`` when no browser answers.

    As OSWorld's of 2026.04: a tab that does not go network-idle within 30 s is listed with
    the title "Load timeout", one that fails otherwise with "Error encountered".
    """
    return _open_tabs_info(ctx, _LOAD_TIMEOUT)


def get_open_tabs_info_1_0_2(ctx: EvalContext, config: Mapping[str, Any]) -> list[dict[str, str]]:
    """``get_open_tabs_info()`` as desktop-env 1.0.2 has it: "Error encountered" for a timeout."""
    return _open_tabs_info(ctx, _ERROR_ENCOUNTERED)


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


def _load_page(browser: Browser, url: str, in_profile: bool, timeout_title: str) -> dict[str, str]:
    """``{title, url, content}`` of ``url`` in a new tab, of the profile or of a fresh context.

    A failed navigation raises (the caller retries); once there, a page whose title or content
    cannot be read settles for what it has, titled ``timeout_title`` when Playwright timed out
    and "Error encountered" otherwise.
    """
    fresh = None if in_profile and browser.contexts else browser.new_context()
    page = (fresh or browser.contexts[0]).new_page()
    try:
        page.set_default_timeout(_PAGE_LOAD_MS)
        page.goto(url, wait_until="networkidle", timeout=_PAGE_LOAD_MS)
        try:
            page.wait_for_load_state("networkidle", timeout=_PAGE_LOAD_MS)
            return {"title": page.title(), "url": page.url, "content": page.content()}
        except Exception as e:  # noqa: BLE001 - OSWorld keeps the page as it stands
            title = timeout_title if _is_timeout(e) else _ERROR_ENCOUNTERED
            logger.warning("page_info: %s: %s (%s)", url, e, title)
            return {"title": title, "url": page.url, "content": page.content()}
    finally:
        try:
            (fresh or page).close()
        except Exception as e:  # noqa: BLE001 - best effort: the tab may be gone already
            logger.debug("page_info: closing the tab failed: %s", e)


def _page_info(
    ctx: EvalContext, config: Mapping[str, Any], in_profile: bool, timeout_title: str
) -> dict[str, str]:
    url = config["url"]
    for attempt in range(2):
        try:
            return _session(  # type: ignore[no-any-return]
                ctx, lambda b: _load_page(b, url, in_profile, timeout_title)
            )
        except DependencyNotInstalled:
            raise
        except Exception as e:  # noqa: BLE001 - OSWorld retries any failure, then gives up
            logger.warning("page_info: attempt %d for %s failed: %s", attempt + 1, url, e)
    return {"title": "Connection failed", "url": url, "content": ""}


def get_page_info(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str]:
    """``{title, url, content}`` of ``config["url"]`` loaded in a new tab of the profile.

    As OSWorld's of 2026.04: the profile's cookies apply (a Steam cart). A page reached whose
    title or content cannot be read is returned as it stands, titled "Load timeout" (Playwright
    timed out) or "Error encountered". A navigation that fails is tried once more; then
    ``{"title": "Connection failed", "url": url, "content": ""}``.
    """
    return _page_info(ctx, config, in_profile=True, timeout_title=_LOAD_TIMEOUT)


def get_page_info_1_0_2(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str]:
    """``get_page_info()`` as desktop-env 1.0.2 has it.

    The page loads in a fresh context (``Browser.new_page``), without the profile's cookies,
    and a timeout once there is titled "Error encountered" like any other failure.
    """
    return _page_info(ctx, config, in_profile=False, timeout_title=_ERROR_ENCOUNTERED)


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


# The theme prefs 2026.04 reads from the settings page's own copy of the prefs (``settings-ui``'s
# ``prefs`` tree, each a ``{key, type, value}`` leaf), by dotted path.
_APPEARANCE_PREFS = ("browser.theme.color_scheme", "browser.theme.color_scheme2",
                     "extensions.theme.system_theme")  # fmt: skip
_SETTINGS_URL = "chrome://settings/appearance"
_SETTINGS_LOAD_MS = 30_000
# 2026.04 reads the page 2.5 s after its DOM is there; here as soon as the prefs have reached
# it, and no later than that.
_SETTINGS_READY_MS = 2_500
_PREFS_LOADED = """() => {
  const ui = document.querySelector('settings-ui');
  const prefs = ui ? ui.prefs : null;
  return Boolean(prefs && prefs.browser && prefs.browser.theme);
}"""
# The prefs' values, and the text of every selected or checked control of the page, shadow
# roots included (the settings page is made of web components).
_READ_APPEARANCE = """(names) => {
  const ui = document.querySelector('settings-ui');
  const prefs = {};
  for (const name of names) {
    let node = ui ? ui.prefs : null;
    for (const part of name.split('.')) {
      node = node !== null && typeof node === 'object' ? node[part] : undefined;
    }
    if (node !== null && typeof node === 'object'
        && Object.prototype.hasOwnProperty.call(node, 'value')) {
      prefs[name] = node.value;
    }
  }
  const roots = [document];
  for (let i = 0; i < roots.length; i++) {
    for (const element of roots[i].querySelectorAll('*')) {
      if (element.shadowRoot) roots.push(element.shadowRoot);
    }
  }
  const selected = [];
  const chosen = '[selected],[checked],[aria-checked="true"],option:checked';
  for (const root of roots) {
    for (const element of root.querySelectorAll(chosen)) {
      const text = (element.innerText || element.textContent || '').trim();
      if (text) selected.push(text);
    }
  }
  return {prefs, selected};
}"""
_SYSTEM_WORDS = ("device", "system", "default")
_PREF_TEXTS = {"0": "system", "1": "light", "2": "dark", "light": "light", "dark": "dark",
               **dict.fromkeys(_SYSTEM_WORDS, "system")}  # fmt: skip


def _mode_of_pref(name: str, value: Any) -> str | None:
    """The mode one theme pref's value says, as 2026.04's probe compares them.

    Its comparisons are JavaScript's strict ones: a boolean is no number there, and text
    counts in lower case (``"Dark"``) but not with spaces around it.
    """
    if name.endswith("system_theme"):
        # Chrome's classic theme (0) leaves pages light; the GTK theme (1) follows the desktop.
        if value in (0, "0", False):
            return "light"
        return "dark" if value in (1, "1", True) else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return next((mode for number, mode in COLOR_SCHEMES.items() if value == number), None)
    return _PREF_TEXTS.get(value.lower()) if isinstance(value, str) else None


def _mode_of_text(text: str) -> str | None:
    """The mode a selected control's text names: any mention of light, dark or the system."""
    lowered = text.lower()
    if "light" in lowered:
        return "light"
    if "dark" in lowered:
        return "dark"
    return "system" if any(word in lowered for word in _SYSTEM_WORDS) else None


def appearance_from_settings(values: Mapping[str, Any], selected: Sequence[str] = ()) -> str | None:
    """The appearance mode OSWorld reads from the settings page, or None.

    Every theme pref's value and every selected control's text that names a mode counts; light
    wins over dark, dark over system. So a classic theme (``system_theme`` 0) reads as light
    whatever the color scheme, and a selected control whose text merely contains "light" (or
    "dark", "device", "system", "default") counts as well.

    Args:
        values: Pref name (``browser.theme.color_scheme2``...) → its value.
        selected: The texts of the page's selected or checked controls.

    Example:
        >>> appearance_from_settings({"browser.theme.color_scheme2": 2})
        'dark'
        >>> appearance_from_settings({"browser.theme.color_scheme2": 2}, ["Light"])
        'light'
    """
    modes = {_mode_of_pref(name, value) for name, value in values.items()}
    modes |= {_mode_of_text(text) for text in selected}
    return next((m for m in ("light", "dark", "system") if m in modes), None)


def _read_settings_page(browser: Browser) -> Any:
    # The tab stays open, as 2026.04 leaves it: it becomes the active tab, which is what the
    # next check of chrome/93eabf48 (the active URL is the appearance page) then reads.
    page = browser.contexts[0].new_page()
    page.goto(_SETTINGS_URL, wait_until="domcontentloaded", timeout=_SETTINGS_LOAD_MS)
    try:
        page.wait_for_function(_PREFS_LOADED, timeout=_SETTINGS_READY_MS, polling=100)
    except Exception as e:
        if not _is_timeout(e):
            raise
        logger.info("chrome_appearance_mode_ui: the page's prefs did not load in time")
    return page.evaluate(_READ_APPEARANCE, list(_APPEARANCE_PREFS))


def get_chrome_appearance_mode_ui(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """Chrome's appearance mode (``light``, ``dark`` or ``system``) as its settings page has it.

    OSWorld's ``chrome_appearance_mode_ui`` of 2026.04: opens ``chrome://settings/appearance``
    in a new tab of the profile (left open), reads the theme prefs the page holds and the
    selected controls' texts (``appearance_from_settings()``). The live value matters:
    Chrome writes Preferences seconds after a change. When no browser answers, the page
    cannot be read or names no mode, the Preferences files decide
    (``get_chrome_color_scheme()``; ``system``
    without any).
    """
    try:
        found = _session(ctx, _read_settings_page, timeout=60.0)
        mode = None
        if isinstance(found, dict):
            mode = appearance_from_settings(found.get("prefs") or {}, found.get("selected") or [])
    except DependencyNotInstalled:
        raise
    except Exception as e:  # noqa: BLE001 - OSWorld falls back to the files on any failure
        logger.warning("chrome_appearance_mode_ui: settings page unreadable (%s)", e)
        mode = None
    return mode or get_chrome_color_scheme(ctx, config)


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
