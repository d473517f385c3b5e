"""Chrome setup steps and getters against a real Chromium on a real `local` desktop.

Pages come from a loopback HTTP server this module starts. Chromium runs in the desktop as
OSWorld's tasks start it (``google-chrome --remote-debugging-port=1337`` and ``socat`` from 9222),
through the desktop's wrappers: OSWorld's profile folder (``~/.config/google-chrome``) and the
desktop's own ports. One browser serves the whole module (~15 s).
"""

from __future__ import annotations

import collections.abc
import http.server
import shutil
from pathlib import Path
from typing import Any

import pytest
from desktop_helpers import launch_desktop, wait_until
from fixture_marks import needs
from http_helpers import loopback_server, port_of

from osworld_gym.evaluation.getters import GETTERS, EvalContext
from osworld_gym.evaluation.metrics import get_metric
from osworld_gym.task_setup import cdp
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.task_setup.interpreter import SetupContext, SetupInterpreter

pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium")

PAGES = {
    "/a.html": "<title>Page A</title><p>first page</p>",
    "/search.html": "<title>Search</title><p>results</p>",
    "/shop.html": (
        "<title>Shop</title><div class='route'>SEA<span class='x'></span>NYC</div>"
        "<p class='tag'>Black</p><p class='tag'>On sale</p>"
        "<form><input id='name' value='James Smith'></form>"
    ),
}
AGO = "visit_time_from_now_in_seconds"
HISTORY = [
    {"url": "https://www.youtube.com/watch?v=1", "title": "Y", AGO: 60},
    {"url": "https://www.nytimes.com/", "title": "NYT", AGO: 300},
]


class _Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        body = PAGES.get(self.path.split("?")[0])
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write((body or "not found").encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> collections.abc.Iterator[str]:
    with loopback_server(_Pages) as url:
        yield url


class Browser:
    """A desktop with Chromium listening for CDP, and contexts to drive it."""

    def __init__(self, desktop: Any, endpoint: str, tmp: Path) -> None:
        self.desktop = desktop
        self.endpoint = endpoint
        cache = AssetCache(tmp / "cache")
        services = {"cdp": endpoint}
        self.setup = SetupInterpreter(
            SetupContext(client=desktop.client, task_id="chrome", cache=cache, services=services)
        )
        self.eval = EvalContext(
            client=desktop.client, task_id="chrome", cache=cache, scratch=tmp, services=services
        )

    def get(self, getter: str, **config: Any) -> Any:
        return GETTERS[getter](self.eval, {"type": getter, **config})


@pytest.fixture(scope="module")
@needs("desktop", "apps")
def browser(
    site: str, tmp_path_factory: pytest.TempPathFactory
) -> collections.abc.Iterator[Browser]:
    # The desktop's own network reaches the page server's port and nothing else of the host.
    with launch_desktop(host_ports=(port_of(site),)) as desktop:
        client = desktop.client
        endpoint = desktop.service_urls["cdp"]
        chrome = Browser(desktop, endpoint, tmp_path_factory.mktemp("chrome"))
        # OSWorld's task 44ee5668 writes the history before Chrome starts
        chrome.setup.run([{"type": "update_browse_history", "parameters": {"history": HISTORY}}])
        # As OSWorld's Chrome tasks start it: the desktop's wrappers put Chromium on this
        # desktop's own ports, with Chrome's profile folder.
        client.launch(["google-chrome", "--remote-debugging-port=1337"])
        client.launch("socat tcp-listen:9222,fork tcp:localhost:1337", shell=True)
        wait_until(lambda: _answers(endpoint), timeout=60, message="Chromium's CDP endpoint")
        yield chrome


def _answers(endpoint: str) -> bool:
    try:
        return bool(cdp.list_pages(endpoint, timeout=2))
    except cdp.BrowserUnavailableError:
        return False


def _bring_to_front(chrome: Browser, url: str) -> None:
    def act(browser: Any) -> None:
        next(p for p in cdp.all_pages(browser) if p.url == url).bring_to_front()

    cdp.with_browser(chrome.endpoint, act)
    wait_until(lambda: cdp.active_tab(chrome.endpoint)["url"] == url, message="tab switch")


def test_chrome_tabs_getters_and_metrics(browser: Browser, site: str) -> None:
    a, search, shop = f"{site}/a.html", f"{site}/search.html?q=drip+coffee&x=1", f"{site}/shop.html"
    report = browser.setup.run(
        [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": [a, search, shop]}}]
    )
    assert report.warnings == []
    tabs = browser.get("open_tabs_info")
    assert sorted(tabs, key=lambda tab: tab["title"]) == [
        {"title": "Page A", "url": a},
        {"title": "Search", "url": search},
        {"title": "Shop", "url": shop},
    ]  # in no set order; the New Tab page Chromium started with was closed
    expected_tabs = get_metric("is_expected_tabs")
    assert expected_tabs(tabs, {"type": "url", "urls": [shop, a, search]}) == 1.0
    assert expected_tabs(tabs, {"type": "url", "urls": [a, shop]}) == 0.0

    # The last opened tab is active; the address bar hides http:// and the prefix puts it back.
    assert browser.get("active_url_from_accessTree", goto_prefix="http://") == shop
    assert browser.get("active_url_from_accessTree") == shop.replace("http://", "https://")
    active = get_metric("is_expected_active_tab")
    url = browser.get("active_url_from_accessTree", goto_prefix="http://")
    assert active(url, {"type": "url", "url": shop}) == 1.0
    assert active(url, {"type": "url", "url": a}) == 0.0
    pattern = get_metric("is_expected_url_pattern_match")
    assert pattern(url, {"expected": [r"/shop\.html$"]}) == 1.0
    assert pattern(url, {"expected": [r"/a\.html$"]}) == 0.0

    parsed = browser.get(
        "active_tab_html_parse",
        goto_prefix="http://",
        category="class",
        class_multiObject_child={"route": {"0": "start", "1": "end"}},
        class_multiObject_search_exist={"tag": ["Black", "On sale", "is_other_exist"]},
        class_singleObject={"tag": "first", "missing": "none"},
    )
    assert parsed == {
        "start": "SEA",
        "end": "NYC",
        "Black": True,
        "On sale": True,
        "is_other_exist": False,
        "first": "Black",
        "none": "",
    }
    json_object = get_metric("check_direct_json_object")
    assert json_object(parsed, {"expected": {"start": "SEA", "end": "NYC"}}) == 1.0
    assert json_object(parsed, {"expected": {"start": "NYC"}}) == 0.0
    inputs = browser.get(
        "active_tab_html_parse",
        goto_prefix="http://",
        category="input",
        inputObject={"//input[@id='name']": "name"},
    )
    assert inputs == {"name": "James Smith"}
    # OSWorld's "https://" default names no open tab: OSWorld's {} (the check scores 0)
    assert browser.get("active_tab_html_parse", category="class") == {}

    _bring_to_front(browser, search)
    query = browser.get("active_tab_url_parse", goto_prefix="http://", parse_keys=["q", "z"])
    assert query == {"q": "drip coffee", "z": ""}
    renamed = browser.get(
        "active_tab_url_parse", goto_prefix="http://", parse_keys=["x"], replace={"x": "time"}
    )
    assert renamed == {"time": "1"}
    part = browser.get(
        "url_dashPart", goto_prefix="http://", partIndex=-1, needDeleteId=True, returnType="json",
        key="page",
    )  # fmt: skip
    assert part == {"page": "search.html"}
    info = browser.get("active_tab_info", goto_prefix="http://")
    assert info["title"] == "Search" and info["url"] == search and "results" in info["content"]
    assert (
        get_metric("is_expected_search_query")(
            info, {"expect": {"pattern": r"search\.html\?q=drip"}}
        )
        == 1.0
    )
    page = browser.get("page_info", url=a)
    assert page["title"] == "Page A" and "first page" in page["content"]
    assert get_metric("is_added_to_steam_cart")(page, {"items": ["first page"]}) == 1.0

    browser.setup.run([{"type": "chrome_close_tabs", "parameters": {"urls_to_close": [search]}}])
    assert sorted(tab["url"] for tab in browser.get("open_tabs_info")) == [a, shop]


def test_history_written_before_chrome_started_is_kept(browser: Browser) -> None:
    rows = browser.get("history", dest="History")
    # Chromium kept the file (no rebuild) and went on recording the pages it visited
    assert [(url, title) for url, title, _ in rows[:2]] == [
        ("https://www.youtube.com/watch?v=1", "Y"),
        ("https://www.nytimes.com/", "NYT"),
    ]
    deleted = get_metric("check_history_deleted")
    assert deleted(rows, {"type": "keywords", "keywords": ["youtube"]}) == 0.0
    assert deleted(rows, {"type": "keywords", "keywords": ["wikipedia"]}) == 1.0


def test_profile_getters_read_the_running_profile(browser: Browser) -> None:
    # Chromium writes its Preferences a moment after it starts
    preferences = browser.desktop.home / ".config" / "google-chrome" / "Default" / "Preferences"
    wait_until(preferences.exists, timeout=30, message="Chromium's Preferences file")
    assert browser.get("chrome_appearance_mode_ui") in ("light", "dark", "system")
    assert browser.get("profile_name")  # Chromium names a fresh profile
    assert browser.get("new_startup_page") in ("true", "false")
    assert browser.get("bookmarks") == []  # no Bookmarks file until one is added
