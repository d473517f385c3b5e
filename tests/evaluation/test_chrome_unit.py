"""Chrome and VLC support without a desktop: URL rules, metrics, profile-file getters, History.

Expected values are OSWorld's, worked out from its getters and metrics (desktop_env 1.0.2 and
the current repository): the same inputs must give the same scores.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from osworld_gym.errors import GuestHTTPError, TaskSetupError
from osworld_gym.evaluation.getters import GETTERS, EvalContext
from osworld_gym.evaluation.getters.browser import appearance_from_settings
from osworld_gym.evaluation.getters.chrome import color_scheme_from_preferences
from osworld_gym.evaluation.metrics import chrome as chrome_metrics
from osworld_gym.evaluation.metrics import get_metric
from osworld_gym.evaluation.metrics._urls import accessibility_tree_url, compare_urls, omnibox_text
from osworld_gym.task_setup import cdp
from osworld_gym.task_setup import chrome as chrome_setup
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.task_setup.interpreter import NEEDS, SUPPORTED_STEP_TYPES

PREFS = "~/.config/google-chrome/Default/Preferences"


class FakeClient:
    """A guest client whose desktop holds the given files."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def download(self, path: str) -> bytes:
        if path not in self.files:
            raise GuestHTTPError("/file", 404, {"error": "File not found"})
        return self.files[path]


def _ctx(tmp_path: Path, files: dict[str, bytes], **services: str) -> EvalContext:
    return EvalContext(
        client=FakeClient(files),  # type: ignore[arg-type]
        task_id="t",
        cache=AssetCache(tmp_path / "cache"),
        scratch=tmp_path / "scratch",
        services=services,
    )


# --- URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "text"),
    [
        ("https://www.drugs.com/npc/", "drugs.com/npc/"),
        ("https://www.nfl.com/scores/2019/post4", "nfl.com/scores/2019/post4"),
        ("https://scholar.google.com/citations?hl=en", "scholar.google.com/citations?hl=en"),
        ("http://127.0.0.1:8000/", "127.0.0.1:8000"),
        ("https://example.org/?q=1", "example.org/?q=1"),
        ("https://a.b/#frag", "a.b/#frag"),
        ("https://user:pw@www.x.com/p", "x.com/p"),
        ("chrome://settings/appearance", "chrome://settings/appearance"),
        ("file:///home/user/a.html", "file:///home/user/a.html"),
        ("about:blank", "about:blank"),
        ("chrome://newtab/", None),
        ("", None),
    ],
)  # fmt: skip
def test_omnibox_text(url: str, text: str | None) -> None:
    assert omnibox_text(url) == text


def test_accessibility_tree_url_adds_the_tasks_prefix() -> None:
    # chrome/0d8b7de3: goto_prefix "https://www." turns the address bar back into the URL
    assert accessibility_tree_url("https://www.drugs.com/npp/", "https://www.") == (
        "https://www.drugs.com/npp/"
    )
    # chrome/93eabf48: an empty prefix keeps chrome:// URLs as they are
    assert accessibility_tree_url("chrome://settings/appearance", "") == (
        "chrome://settings/appearance"
    )
    # OSWorld adds the prefix blindly: a site without www gains one
    assert (
        accessibility_tree_url("https://drugs.com/x", "https://www.") == "https://www.drugs.com/x"
    )
    assert accessibility_tree_url("chrome://newtab/") is None


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("https://www.airbnb.com", "https://www.airbnb.com/", True),
        ("https://www.airbnb.com", "https://airbnb.com.sg/", True),
        ("www.tripadvisor.com", "http://tripadvisor.com", True),
        ("https://www.tripadvisor.com", "http://tripadvisor.com", False),  # scheme counts
        ("https://docs.python.org/3/", "https://docs.python.org/3", False),
        ("https://github.com", "https://gist.github.com", False),
        (".amazon.com", "https://amazon.com", False),  # scheme: http vs https
        (".amazon.com", "amazon.com", True),
        ("http://127.0.0.1:8000/a", "http://127.0.0.1:9000/a", True),  # ports are dropped
        ("https://x.com/?a=1", "https://x.com/?a=2", False),
        (None, None, True),
        (None, "https://x.com", False),
    ],
)
def test_compare_urls(a: str | None, b: str | None, same: bool) -> None:
    assert compare_urls(a, b) is same


# --- metrics ------------------------------------------------------------------------------


def test_tab_metrics() -> None:
    tabs = get_metric("is_expected_tabs")
    rule = {"type": "url", "urls": ["https://www.lonelyplanet.com", "https://www.airbnb.com"]}
    open_tabs = [{"url": "https://www.airbnb.com/"}, {"url": "https://www.lonelyplanet.com/"}]
    assert tabs(open_tabs, rule) == 1.0
    assert tabs(open_tabs[:1], rule) == 0.0
    assert tabs([], rule) == 0.0
    assert tabs(open_tabs, {"type": "title"}) == 0.0
    active = get_metric("is_expected_active_tab")
    want = {"type": "url", "url": "https://www.babycenter.com/baby-names/details/carl-853"}
    assert active("https://www.babycenter.com/baby-names/details/carl-853", want) == 1.0
    assert active({"url": "https://babycenter.com/baby-names/details/carl-853"}, want) == 1.0
    assert active("https://www.babycenter.com/baby-names", want) == 0.0
    assert active(None, want) == 0.0
    approx = get_metric("is_expected_active_tab_approximate")
    want = {"type": "url", "url": "chrome://password-manager/passwords"}
    assert approx("chrome://password-manager/passwords?search=x", want) == 1.0
    assert approx("chrome://password-manager/settings", want) == 0.0


def test_url_pattern_and_search_query() -> None:
    pattern = get_metric("is_expected_url_pattern_match")
    rules = {"expected": [r"^https://(www\.)?drugs\.com/sfx/tamiflu-side-effects\.html"]}
    assert pattern("https://www.drugs.com/sfx/tamiflu-side-effects.html#x", rules) == 1.0
    assert pattern({"url": "https://www.drugs.com/tamiflu.html"}, rules) == 0.0
    assert pattern({"title": "no url"}, rules) == 0.0
    assert pattern(None, rules) == 0.0
    assert pattern("https://a.com/x", {"expected": ["a\\.com", "/y"]}) == 0.0  # all must match
    query = get_metric("is_expected_search_query")
    rules = {"expect": {"pattern": r"(?i)https?://(?:www\.)?google\.com/search\?q=nereida(?:&|$)"}}
    assert query({"url": "https://www.google.com/search?q=nereida&hl=en"}, rules) == 1.0
    assert query({"url": "https://www.google.com/search?q=other"}, rules) == 0.0


def test_bookmark_metric() -> None:
    metric = get_metric("is_expected_bookmarks")
    roots = {
        "bookmark_bar": {
            "children": [
                {"type": "folder", "name": "Favorites", "children": []},
                {"type": "url", "name": "A", "url": "https://a.org/"},
                {
                    "type": "folder",
                    "name": "Liked Authors",
                    "children": [
                        {"type": "url", "url": "https://x.org/1"},
                        {"type": "url", "url": "https://x.org/2"},
                    ],
                },
            ]
        }
    }
    folders = {"type": "bookmark_bar_folders_names", "names": ["Favorites", "Liked Authors"]}
    assert metric(roots, folders) == 1.0
    assert metric(roots, {**folders, "names": ["Favorites"]}) == 0.0
    assert metric(roots, {"type": "bookmark_bar_websites_urls", "urls": ["https://a.org/"]}) == 1.0
    choices = [["https://x.org/2", "https://x.org/9"], "https://x.org/1"]
    liked = {"type": "liked_authors_websites_urls", "urls": choices}
    assert metric(roots, liked) == 1.0
    assert metric(roots, {**liked, "urls": ["https://x.org/1"]}) == 0.0
    assert metric([], folders) == 0.0  # the getter's answer for a missing Bookmarks file
    with pytest.raises(TypeError):
        metric(roots, {"type": "other"})


def test_profile_metrics() -> None:
    font = get_metric("check_font_size")
    wider = {"type": "range", "min": 16, "max": 99999}  # chrome/af630914: strictly above 16
    assert font({"default_font_size": 16}, wider) == 0.0
    assert font({"default_font_size": 17}, wider) == 1.0
    assert font({"default_font_size": 20}, {"type": "value", "value": 20}) == 1.0
    cookies = get_metric("is_cookie_deleted")
    rows = [(0, ".google.com", "", "NID"), (0, "www.amazon.com", "", "x")]
    assert cookies(rows, {"type": "domains", "domains": [".amazon.com"]}) == 0.0
    assert cookies(rows[:1], {"type": "domains", "domains": [".amazon.com"]}) == 1.0
    assert cookies(None, {"type": "domains", "domains": [".amazon.com"]}) == 0.0
    history = get_metric("check_history_deleted")
    rules = {"type": "keywords", "keywords": ["youtube"]}
    assert history([("https://www.youtube.com/watch?v=1", "t", 1)], rules) == 0.0
    assert history([("https://www.nytimes.com/", "t", 1)], rules) == 1.0
    assert history([], rules) == 1.0
    shortcut = get_metric("is_shortcut_on_desktop")
    files = {"game.desktop": "[Desktop Entry]\nName=Play Puzzle Game 2048\nExec=x\n"}
    assert shortcut(files, {"type": "name", "name": "Play Puzzle Game 2048"}) == 1.0
    # 2026.04: a Name= value that contains the expected name or is contained in it passes
    assert shortcut(files, {"type": "name", "name": "Play Puzzle"}) == 1.0
    assert shortcut(files, {"type": "name", "name": "Tetris"}) == 0.0
    exact_line = chrome_metrics.is_shortcut_on_desktop_1_0_2
    assert exact_line(files, {"type": "name", "name": "Play Puzzle"}) == 0.0  # 1.0.2: the line
    assert shortcut(files, {"type": "exec", "exec": "x"}) == 1.0
    with pytest.raises(TypeError):
        shortcut(files, {"type": "url"})
    extensions = get_metric("is_expected_installed_extensions")
    assert extensions(["Momentum", "Google Translate", "x"], {"expected": ["Momentum"]}) == 1.0
    assert extensions(["Momentum"], {"expected": ["Momentum", "Google Translate"]}) == 0.0
    flags = get_metric("check_enabled_experiments")
    assert flags(["a@1", "b@2"], {"type": "names", "names": ["a", "b"]}) == 1.0
    assert flags(["b@2", "a@1"], {"type": "names", "names": ["a", "b"]}) == 0.0
    cart = get_metric("is_added_to_steam_cart")
    page = {"content": "<div>The Dota 2 Official Soundtrack</div>"}
    assert cart(page, {"items": ["The Dota 2 Official Soundtrack"]}) == 1.0
    assert cart({"title": "Connection failed", "content": ""}, {"items": ["x"]}) == 0.0


VLC_STATUS = """<?xml version="1.0" encoding="utf-8" standalone="yes" ?>
<root><state>{state}</state><information><category name="meta">
<info name="filename">{name}</info></category></information></root>"""


def test_is_vlc_playing(tmp_path: Path) -> None:
    metric = get_metric("is_vlc_playing")
    rick = "Rick Astley - Never Gonna Give You Up (Official Music Video).mp4"
    rule = {"type": "file_name", "file_name": rick}
    status = tmp_path / "status.xml"
    status.write_text(VLC_STATUS.format(state="playing", name=rick))
    assert metric(str(status), rule) == 1.0
    status.write_text(VLC_STATUS.format(state="paused", name=rick))
    assert metric(str(status), rule) == 0.0
    status.write_text(VLC_STATUS.format(state="playing", name="other.mp4"))
    assert metric(str(status), rule) == 0.0
    url = "https://devstreaming-cdn.apple.com/videos/streaming/examples/x/master.m3u8"
    status.write_text(VLC_STATUS.format(state="playing", name="master.m3u8"))
    assert metric(str(status), {"type": "url", "url": url}) == 1.0  # HLS shows the file name
    assert metric(None, rule) == 0.0


# --- profile-file getters -----------------------------------------------------------------


def test_preferences_getters_read_osworld_fields(tmp_path: Path) -> None:
    prefs = {
        "default_search_provider_data": {"template_url_data": {"short_name": "Bing"}},
        "profile": {"name": "Thomas", "default_content_setting_values": {"cookies": 1}},
        "webkit": {"webprefs": {"default_font_size": 20}},
        "enable_do_not_track": True,
        "safebrowsing": {"enabled": True},
        "session": {"restore_on_startup": 5},
        "extensions": {
            "settings": {
                "abc": {"path": "/home/user/Desktop/helloExtension", "manifest": {"name": "Hi"}}
            }
        },
    }
    ctx = _ctx(tmp_path, {PREFS: json.dumps(prefs).encode()})
    values = {
        name: GETTERS[name](ctx, {})
        for name in [
            "default_search_engine", "profile_name", "chrome_font_size", "enable_do_not_track",
            "enable_safe_browsing", "new_startup_page", "find_unpacked_extension_path",
            "find_installed_extension_name", "data_delete_automacally",
        ]
    }  # fmt: skip
    assert values == {
        "default_search_engine": "Bing",
        "profile_name": "Thomas",
        "chrome_font_size": {"default_font_size": 20},
        "enable_do_not_track": "true",
        "enable_safe_browsing": "true",
        "new_startup_page": "true",
        "find_unpacked_extension_path": ["/home/user/Desktop/helloExtension"],
        "find_installed_extension_name": ["Hi"],
        "data_delete_automacally": "true",
    }


@pytest.mark.parametrize("content", [None, b"{not json", b"[1, 2]"])
def test_missing_or_malformed_preferences_give_osworlds_defaults(
    tmp_path: Path, content: bytes | None
) -> None:
    ctx = _ctx(tmp_path, {} if content is None else {PREFS: content})
    defaults = {
        "default_search_engine": "Google",
        "profile_name": None,
        "chrome_font_size": {"default_fixed_font_size": 13, "default_font_size": 16},
        "enable_do_not_track": "false",
        "enable_safe_browsing": "false",
        "new_startup_page": "Google",
        "find_unpacked_extension_path": "Google",
        "find_installed_extension_name": "Google",
        "data_delete_automacally": "Google",
        "chrome_language": "en-US",
        "enabled_experiments": [],
        "bookmarks": [],
        "history": None,
        "cookie_data": None,
    }
    for name, default in defaults.items():
        if name == "bookmarks" and content is not None:
            continue
        assert GETTERS[name](ctx, {"dest": "db"}) == default, name


def test_an_empty_profile_reads_as_chromes_defaults(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, {PREFS: b"{}"})
    assert GETTERS["new_startup_page"](ctx, {}) == "true"  # no session: a fresh start
    assert GETTERS["enable_do_not_track"](ctx, {}) == "false"
    assert GETTERS["data_delete_automacally"](ctx, {}) == "Google"  # no "profile": KeyError
    assert GETTERS["chrome_font_size"](ctx, {})["default_font_size"] == 16


def test_malformed_bookmarks_raise_a_clear_error(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, {"~/.config/google-chrome/Default/Bookmarks": b"{oops"})
    with pytest.raises(ValueError):
        GETTERS["bookmarks"](ctx, {})


def test_color_scheme_rules() -> None:
    assert color_scheme_from_preferences({}) == "system"
    assert color_scheme_from_preferences({"browser": {"theme": {"color_scheme": 1}}}) == "light"
    scheme = {"browser": {"theme": {"color_scheme": 1, "color_scheme2": 2}}}
    assert color_scheme_from_preferences(scheme) == "dark"  # color_scheme2 wins
    classic = {**scheme, "extensions": {"theme": {"system_theme": 0}}}
    assert color_scheme_from_preferences(classic) == "light"
    assert appearance_from_settings({"browser.theme.color_scheme2": 2}) == "dark"
    assert appearance_from_settings({"browser.theme.color_scheme2": 0}) == "system"
    both = {"browser.theme.color_scheme2": 2, "extensions.theme.system_theme": 0}
    assert appearance_from_settings(both) == "light"  # light wins, as in OSWorld's probe
    assert appearance_from_settings({"browser.theme.color_scheme2": None}) is None


# --- History ------------------------------------------------------------------------------


def _rows(data: bytes, tmp_path: Path, query: str) -> list[tuple[Any, ...]]:
    path = tmp_path / "History"
    path.write_bytes(data)
    with closing(sqlite3.connect(path)) as db:
        return db.execute(query).fetchall()


def test_build_history_uses_chromes_time_base(tmp_path: Path) -> None:
    now = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
    ago = "visit_time_from_now_in_seconds"
    items = [
        {"url": "https://www.youtube.com/watch?v=1", "title": "Y", ago: 3600},
        {"url": "https://www.bbc.co.uk/", "title": "BBC", ago: 1.5},
    ]
    data = chrome_setup.build_history(items, now=now)
    urls = _rows(data, tmp_path, "SELECT id, url, title, visit_count, last_visit_time FROM urls")
    # 2024-01-01 11:00 UTC is 13348580400 s after 1601-01-01 UTC
    assert urls == [
        (1, "https://www.youtube.com/watch?v=1", "Y", 1, 13_348_580_400_000_000),
        (2, "https://www.bbc.co.uk/", "BBC", 1, 13_348_584_000_000_000 - 1_500_000),
    ]
    visits = _rows(data, tmp_path, "SELECT url, visit_time, transition FROM visits")
    assert visits == [(1, 13_348_580_400_000_000, 805306368), (2, urls[1][4], 805306368)]
    assert dict(_rows(data, tmp_path, "SELECT key, value FROM meta"))["version"] == "70"


def test_build_history_empties_an_existing_file_and_keeps_its_schema(tmp_path: Path) -> None:
    first = chrome_setup.build_history(
        [{"url": "https://old.example/", "title": "old", "visit_time_from_now_in_seconds": 5}]
    )
    path = tmp_path / "old"
    path.write_bytes(first)
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE extra(x INTEGER)")
        db.execute("INSERT INTO extra VALUES (1)")
    new = chrome_setup.build_history(
        [{"url": "https://new.example/", "title": "new", "visit_time_from_now_in_seconds": 5}],
        existing=path.read_bytes(),
    )
    assert _rows(new, tmp_path, "SELECT id, url FROM urls") == [(1, "https://new.example/")]
    assert _rows(new, tmp_path, "SELECT count(*) FROM extra") == [(0,)]
    garbage = chrome_setup.build_history([], existing=b"not a database")
    assert _rows(garbage, tmp_path, "SELECT count(*) FROM urls") == [(0,)]


# --- no browser -----------------------------------------------------------------------------


def test_steps_are_supported() -> None:
    for kind in ("chrome_open_tabs", "chrome_close_tabs", "update_browse_history"):
        assert kind in SUPPORTED_STEP_TYPES and kind not in NEEDS


@pytest.mark.heavy  # waits out connection timeouts
def test_no_browser_listening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("playwright")
    from osworld_gym.providers.ports import reserve_port

    with reserve_port() as reservation:  # reserved and unbound: nothing listens there
        endpoint = f"http://127.0.0.1:{reservation.port}"
        monkeypatch.setattr(chrome_setup, "CONNECT_TIMEOUT", 1.0)
        with pytest.raises(TaskSetupError, match="no Chrome DevTools endpoint answered"):
            chrome_setup.open_tabs(endpoint, ["http://127.0.0.1:1/"])
        ctx = _ctx(tmp_path, {}, cdp=endpoint)
        assert GETTERS["active_url_from_accessTree"](ctx, {}) is None
        assert GETTERS["active_tab_info"](ctx, {}) is None
        assert GETTERS["active_tab_html_parse"](ctx, {"category": "class"}) is None
        assert GETTERS["open_tabs_info"](ctx, {}) == []
    with pytest.raises(cdp.BrowserUnavailableError, match="no Chrome DevTools"):
        cdp.with_browser(None, lambda browser: None)
    assert GETTERS["vlc_playing_info"](_ctx(tmp_path, {}), {"dest": "s.xml"}) is None


def test_missing_playwright_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    with pytest.raises(ImportError, match=r"osworld-gym\[chrome\]"):
        cdp.with_browser("http://127.0.0.1:1", lambda browser: None)


def test_vlc_playing_info_reads_vlcs_http_interface(tmp_path: Path) -> None:
    import base64
    import http.server
    import threading

    rick = "Rick Astley - Never Gonna Give You Up (Official Music Video).mp4"
    body = VLC_STATUS.format(state="playing", name=rick).encode()
    good = "Basic " + base64.b64encode(b":password").decode()

    class Vlc(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            ok = self.path == "/requests/status.xml" and self.headers["Authorization"] == good
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(body if ok else b"")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Vlc)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        ctx = _ctx(tmp_path, {}, vlc=f"http://127.0.0.1:{server.server_address[1]}")
        path = GETTERS["vlc_playing_info"](ctx, {"dest": "status.xml"})
        assert Path(path).read_bytes() == body
        assert get_metric("is_vlc_playing")(path, {"type": "file_name", "file_name": rick}) == 1.0
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
