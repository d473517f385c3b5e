"""OSWorld's own `chrome` tasks on a sandboxed local desktop, on pages served over loopback.

Each task file is read from shared/osworld_tasks; its live sites are rewritten to pages of an
HTTP server this module starts on 127.0.0.1 (the desktop has no network). The tasks start
Chromium as OSWorld starts Chrome (``google-chrome --remote-debugging-port=1337`` and ``socat``
from 9222, through the desktop's wrappers); their setup opens the tabs over CDP, and their checks
read the browser (its open tabs over CDP, its Bookmarks file after a restart). The solutions are
written here as an agent would act: keys and clicks on the 1280x720 screen.
"""

from __future__ import annotations

import collections.abc
import http.server
from typing import Any

import pytest
from desktop_helpers import run_episode
from fixture_marks import needs
from http_helpers import loopback_server, port_of
from real_tasks import kind_marks, real_env, real_provider, real_task, task_id, with_urls

from osworld_gym.actions import Click, Done, Hotkey, Wait
from osworld_gym.env import OSWorldEnv

pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.desktop, pytest.mark.apps, pytest.mark.osworld_tasks, *kind_marks()]

REOPEN_CLOSED_TAB = "06fe7178"  # chrome_open_tabs x3, chrome_close_tabs x1; open_tabs_info
BOOKMARK_TO_BAR = "7a5a7856"  # chrome_open_tabs x2; bookmarks after pkill chrome + relaunch
DELETE_DATA_ON_CLOSE = "99146c54"  # checks that Preferences has default content settings


class _Pages(http.server.BaseHTTPRequestHandler):
    """Any path is a small page titled with its path."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        name = self.path.strip("/") or "home"
        body = f"<title>{name}</title><h1>{name}</h1>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> collections.abc.Iterator[str]:
    with loopback_server(_Pages) as url:
        yield url


@pytest.fixture(scope="module")
@needs("desktop", "apps")
def env(
    site: str, tmp_path_factory: pytest.TempPathFactory
) -> collections.abc.Iterator[OSWorldEnv]:
    sites = {
        "https://www.lonelyplanet.com": f"{site}/lonelyplanet",
        "https://www.airbnb.com": f"{site}/airbnb",
        "https://www.tripadvisor.com": f"{site}/tripadvisor",
        "https://blog.eleuther.ai/": f"{site}/eleuther/",
        "https://jalammar.github.io/": f"{site}/jalammar/",
    }
    ids = (REOPEN_CLOSED_TAB, BOOKMARK_TO_BAR, DELETE_DATA_ON_CLOSE)
    tasks = [with_urls(real_task("chrome", t), sites) for t in ids]
    cache = tmp_path_factory.mktemp("cache")
    # The desktop's own network reaches the page server's port and nothing else of the host.
    provider = real_provider(host_ports=(port_of(site),))
    with real_env(tasks, cache_dir=str(cache), provider=provider) as environment:
        yield environment


def test_reopen_the_tab_the_setup_closed(env: OSWorldEnv) -> None:
    task = task_id(env, REOPEN_CLOSED_TAB)
    # Ctrl+Shift+T brings back the tab chrome_close_tabs closed over CDP.
    steps = [Hotkey(keys=("ctrl", "shift", "t")), Wait(seconds=1.0), Done()]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [Done()]) == 0.0  # two of the three tabs open


def test_bookmark_the_page_on_the_bookmarks_bar(env: OSWorldEnv) -> None:
    task = task_id(env, BOOKMARK_TO_BAR)
    steps = [
        Hotkey(keys=("ctrl", "d")),  # the star's bubble: Chromium files it in "Other bookmarks"
        Wait(seconds=1.0),
        Click(x=1062, y=208),  # its Folder list
        Wait(seconds=0.5),
        Click(x=1048, y=247),  # "Bookmarks bar"
        Wait(seconds=0.5),
        Click(x=1129, y=271),  # "Done"
        # Chrome writes its Bookmarks file a moment after a change, and the task's postconfig
        # kills Chrome at once: wait as an agent would for the screen to settle.
        Wait(seconds=3.0),
        Done(),
    ]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [Done()]) == 0.0  # an empty bookmarks bar


def test_the_browser_starts_with_no_content_settings_of_its_own(env: OSWorldEnv) -> None:
    """Chromium 156's Local Network Access checks (off, as OSWorld's older Chrome has none)
    write profile.default_content_setting_values at its first start: the key the check reads."""
    assert run_episode(env, task_id(env, DELETE_DATA_ON_CLOSE), [Done()]) == 0.0
