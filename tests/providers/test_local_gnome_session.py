"""A GNOME session laid out as OSWorld's Ubuntu VM (issue 36, item 1; ``session="gnome"``).

GNOME Shell in X11 mode on the desktop's own Xvfb, in its sandbox, with a private system bus:
the top bar, the dock on the left with OSWorld's apps, the Yaru theme, Ubuntu's ctrl+alt+t.
Read through the desktop's own tools, as an agent or a task's checks would.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from desktop_helpers import launch_desktop, wait_until

from osworld_gym.providers import gnome_session
from osworld_gym.providers.local import LocalDesktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        gnome_session.available() is not None,
        reason=f"no GNOME session here: {gnome_session.available()}",
    ),
]


def _sh(desktop: LocalDesktop, command: str) -> str:
    result = desktop.client.execute(command, shell=True)
    assert result.returncode == 0, result.error
    return result.output


@pytest.fixture(scope="module")
def desktop() -> LocalDesktop:
    with launch_desktop(session="gnome", screen_size=(1280, 720)) as launched:
        yield launched


def test_gnome_shell_manages_the_desktop_with_ubuntus_settings(desktop: LocalDesktop) -> None:
    assert _sh(desktop, "wmctrl -m | head -1") == "Name: GNOME Shell\n"
    favorites = _sh(desktop, "gsettings get org.gnome.shell favorite-apps")
    assert favorites.startswith("['google-chrome.desktop', 'thunderbird.desktop'")
    assert _sh(desktop, "gsettings get org.gnome.desktop.interface gtk-theme") == "'Yaru'\n"
    position = "gsettings get org.gnome.shell.extensions.dash-to-dock dock-position"
    assert _sh(desktop, position) == "'LEFT'\n"
    # Vendor defaults, as Ubuntu's overrides: a user's change is undone by `reset`.
    _sh(desktop, "gsettings set org.gnome.desktop.interface gtk-theme Adwaita")
    _sh(desktop, "gsettings reset org.gnome.desktop.interface gtk-theme")
    assert _sh(desktop, "gsettings get org.gnome.desktop.interface gtk-theme") == "'Yaru'\n"


def test_the_first_screen_has_the_top_bar_and_the_dock(desktop: LocalDesktop) -> None:
    frame = desktop.client.screenshot(format="raw").to_array().astype(int)
    top_bar = frame[:20, 200:1000]  # Yaru's top bar: near black across the screen
    dock = frame[100:600, :30]  # the dock on the left: dark, with the apps' icons
    wallpaper = frame[300:600, 400:1200]
    assert top_bar.mean() < 40 and dock.mean() < wallpaper.mean()
    assert dock.std() > 10  # icons, not a plain strip
    # No notification over the desktop (GNOME's one-time lock-screen warning is marked shown).
    assert np.abs(frame[20:120, 450:850] - frame[20:120, 450:451]).mean() < 5


def test_ctrl_alt_t_opens_a_terminal(desktop: LocalDesktop) -> None:
    desktop.client.actions([{"kind": "hotkey", "keys": ["ctrl", "alt", "t"]}])
    wait_until(
        lambda: "Terminal" in _sh(desktop, "wmctrl -l"), timeout=30, message="a terminal window"
    )


def test_a_reset_gives_the_same_session_again(desktop: LocalDesktop) -> None:
    _sh(desktop, "gsettings set org.gnome.shell favorite-apps \"['thunderbird.desktop']\"")
    started = time.monotonic()
    desktop.reset()
    assert time.monotonic() - started < 10
    favorites = _sh(desktop, "gsettings get org.gnome.shell favorite-apps")
    assert favorites.startswith("['google-chrome.desktop'")
    assert "Terminal" not in _sh(desktop, "wmctrl -l")
    assert _sh(desktop, "wmctrl -m | head -1") == "Name: GNOME Shell\n"
