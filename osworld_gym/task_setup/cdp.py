"""Chrome DevTools (CDP) access to a desktop's own browser, through Playwright.

OSWorld's host code reaches the Chrome inside a desktop with Playwright's ``connect_over_cdp``
(``docs/design/task-format.md#setup-steps``); so do the Chrome setup steps and getters here. The
endpoint is a desktop's ``services["cdp"]`` (``http://host:port``). Playwright is an optional
dependency (``pip install 'osworld-gym[chrome]'``), imported when a browser is first used; it only
drives the desktop's browser, it never downloads one.

Every call is bounded: connecting retries until a deadline, and the whole session (connect,
work, disconnect) runs in a worker thread that the caller waits for with a deadline, so a
browser that hangs (a modal dialog blocks page scripts, for instance) cannot hang an episode.
The worker thread also keeps Playwright's synchronous API away from any asyncio loop that the
caller's thread may run.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from osworld_gym.errors import DependencyNotInstalled, OSWorldGymError
from osworld_gym.extras import install_command

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

logger = logging.getLogger(__name__)

INSTALL_HINT = install_command("chrome")

T = TypeVar("T")

# Per-attempt limit of one connect_over_cdp call, in milliseconds: Playwright's default, as in
# OSWorld's calls. A refused connection fails at once; one that is accepted can take seconds to
# set up while a just-started browser loads its first tab, and aborting it only starts over.
_CONNECT_ATTEMPT_MS = 30_000
# Pause between connection attempts while the browser is not listening yet.
_CONNECT_POLL_S = 0.25


class BrowserUnavailableError(OSWorldGymError):
    """No browser answered on the CDP endpoint in time, or the session ran past its deadline."""


def require_playwright() -> ModuleType:
    """Import ``playwright.sync_api`` or raise ``DependencyNotInstalled`` with the hint."""
    try:
        import playwright.sync_api as sync_api
    except ImportError as e:
        raise DependencyNotInstalled(
            f"Chrome support needs the 'playwright' package, which is not installed: "
            f"{INSTALL_HINT} (no browser download is needed: it drives the desktop's Chrome)"
        ) from e
    return sync_api


def _connect(playwright: Any, endpoint: str, deadline: float) -> Browser:
    attempt = 0
    while True:
        attempt += 1
        remaining_ms = (deadline - time.monotonic()) * 1000
        try:
            browser: Browser = playwright.chromium.connect_over_cdp(
                endpoint, timeout=max(1.0, min(_CONNECT_ATTEMPT_MS, remaining_ms))
            )
            return browser
        except Exception as e:  # noqa: BLE001 - Playwright raises its own Error for refusals
            if time.monotonic() + _CONNECT_POLL_S >= deadline:
                raise BrowserUnavailableError(
                    f"no Chrome DevTools endpoint answered at {endpoint} ({attempt} attempts): {e}"
                ) from e
            logger.debug("CDP connect attempt %d to %s failed: %s", attempt, endpoint, e)
        time.sleep(_CONNECT_POLL_S)  # poll the endpoint until the deadline


def with_browser(
    endpoint: str | None,
    action: Callable[[Browser], T],
    *,
    connect_timeout: float = 10.0,
    timeout: float = 120.0,
) -> T:
    """Connect to the browser at ``endpoint``, run ``action(browser)``, disconnect.

    The browser keeps running: disconnecting only drops the connection and any contexts this
    session created (Playwright's ``Browser.close`` on a CDP connection).

    Args:
        endpoint: ``http://host:port`` of the desktop's CDP service.
        action: Runs on the worker thread with the connected browser.
        connect_timeout: Seconds to keep retrying the connection (the browser may be starting).
        timeout: Seconds for the whole session, connection included.

    Returns:
        What ``action`` returned.

    Raises:
        BrowserUnavailableError: no endpoint, nothing answered in ``connect_timeout`` seconds,
            or the session ran past ``timeout``.
        DependencyNotInstalled: Playwright is not installed.
        Exception: whatever ``action`` raised.
    """
    if not endpoint:
        raise BrowserUnavailableError("this desktop exposes no Chrome DevTools (cdp) service")
    sync_api = require_playwright()
    start = time.monotonic()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            with sync_api.sync_playwright() as playwright:
                browser = _connect(playwright, endpoint, start + connect_timeout)
                try:
                    outcome["value"] = action(browser)
                finally:
                    try:
                        browser.close()
                    except Exception as e:  # noqa: BLE001 - the connection may be gone already
                        logger.debug("CDP disconnect failed: %s", e)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = e

    worker = threading.Thread(target=work, name="osworld-gym-cdp", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise BrowserUnavailableError(
            f"the Chrome DevTools session at {endpoint} did not finish within {timeout:g} s"
        )
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


def all_pages(browser: Browser) -> list[Page]:
    """Every open page (tab) of every context, in Playwright's order."""
    return [page for context in browser.contexts for page in context.pages]


def list_pages(endpoint: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The browser's tabs as its DevTools HTTP endpoint lists them (``/json/list``).

    Chrome orders this list by when each tab was last active, the active tab first; this is
    how the active tab is found (CDP has no "selected tab" query, and Playwright's focus
    emulation makes every attached page report itself visible and focused).

    Raises:
        BrowserUnavailableError: the endpoint did not answer in ``timeout`` seconds.
    """
    url = endpoint.rstrip("/") + "/json/list"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - http(s)
            targets = json.load(response)
    except (OSError, ValueError) as e:
        raise BrowserUnavailableError(f"cannot list Chrome's tabs at {url}: {e}") from e
    return [t for t in targets if isinstance(t, dict) and t.get("type") == "page"]


def active_tab(endpoint: str | None, timeout: float = 10.0) -> dict[str, Any] | None:
    """``/json/list``'s entry of the active tab (``id``, ``url``, ``title``); None if no tab.

    Raises:
        BrowserUnavailableError: no endpoint, or it did not answer.
    """
    if not endpoint:
        raise BrowserUnavailableError("this desktop exposes no Chrome DevTools (cdp) service")
    pages = list_pages(endpoint, timeout)
    return pages[0] if pages else None


def target_id(page: Page) -> str:
    """The CDP target id of a Playwright page (the ``id`` of its ``/json/list`` entry)."""
    session = page.context.new_cdp_session(page)
    try:
        return str(session.send("Target.getTargetInfo")["targetInfo"]["targetId"])
    finally:
        session.detach()


def page_by_target(browser: Browser, wanted: str) -> Page | None:
    """The open page whose CDP target id is ``wanted``."""
    for page in all_pages(browser):
        if not page.is_closed() and target_id(page) == wanted:
            return page
    return None
