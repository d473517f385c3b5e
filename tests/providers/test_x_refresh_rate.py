"""The X server's fast mode under GNOME Shell (x_state.set_refresh_rate), on a real Xvfb.

A GNOME session started again on the same X server (the guest image's in-place reset) sets the
mode again: the second call must find the mode the first made (RandR refuses a second mode of
the same name with BadName).
"""

from __future__ import annotations

import collections.abc
import subprocess

import pytest
from desktop_helpers import bare_display
from fixture_marks import needs

from osworld_gym.providers.desktop import x_state


@pytest.fixture()
@needs("desktop")
def display() -> collections.abc.Iterator[str]:
    with bare_display("800x600") as name:
        yield name


def _current_rate(name: str) -> str:
    listing = subprocess.run(
        ["xrandr", "--display", name], capture_output=True, text=True, check=True
    ).stdout
    (current,) = [line for line in listing.splitlines() if "*" in line]
    return current


def test_the_mode_is_made_once_and_set_again(display: str) -> None:
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    try:
        assert "240.00*" not in _current_rate(display)
        assert x_state.set_refresh_rate(conn, 240)
        assert "240.00*" in _current_rate(display)
        # The session changes the mode back (an episode's xrandr), then starts again.
        subprocess.run(["xrandr", "--display", display, "-s", "800x600", "-r", "0"], check=False)
        assert x_state.set_refresh_rate(conn, 240)
        assert "240.00*" in _current_rate(display)
        resources = conn.screen().root.xrandr_get_screen_resources()
        assert resources.mode_names.count("800x600_240") == 1
    finally:
        conn.close()
