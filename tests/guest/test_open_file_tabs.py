"""``/setup/open_file`` returns as soon as the file shows, also when the app opens it as a tab.

mousepad opens a second file as a tab of its window, which it retitles: no new window
appears. The route must take the retitled window at once instead of waiting out its timeout.
"""

from __future__ import annotations

import time

import pytest
from desktop_helpers import launch_desktop

from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = [pytest.mark.desktop, pytest.mark.apps]

OPEN_TIMEOUT = 60.0  # the route's default wait: a miss would take this long
QUICK = 15.0  # seconds an open may take here (mousepad starts in about a second)


def _titles(desktop: LocalDesktop) -> list[str]:
    """The titles of the desktop's windows (``wmctrl -l``: id, desktop, host, title)."""
    rows = [
        line.split(None, 3) for line in desktop.client.execute(["wmctrl", "-l"]).output.splitlines()
    ]
    return [row[3] for row in rows if len(row) == 4]


def test_second_file_opened_as_a_tab_returns_quickly() -> None:
    with launch_desktop() as desktop:
        client = desktop.client
        client.upload("~/Documents/first.txt", b"one\n")
        client.upload("~/Documents/second.txt", b"two\n")
        start = time.monotonic()
        client.open_file("~/Documents/first.txt", timeout=OPEN_TIMEOUT)
        first = time.monotonic() - start
        windows = [t for t in _titles(desktop) if "Mousepad" in t]
        assert len(windows) == 1 and "first.txt" in windows[0], windows
        start = time.monotonic()
        client.open_file("~/Documents/second.txt", timeout=OPEN_TIMEOUT)
        second = time.monotonic() - start
        windows = [t for t in _titles(desktop) if "Mousepad" in t]
        print(f"open_file: first {first:.2f} s (new window), second {second:.2f} s (tab)")
        assert len(windows) == 1, f"mousepad opened a window, not a tab: {windows}"
        assert "second.txt" in windows[0]
        assert second < QUICK, f"the second open took {second:.1f} s"
