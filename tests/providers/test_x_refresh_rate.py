"""The X server's fast mode under GNOME Shell (x_state.set_refresh_rate), on a real Xvfb.

A GNOME session started again on the same X server (the guest image's in-place reset) sets the
mode again: the second call must find the mode the first made (RandR refuses a second mode of
the same name with BadName).
"""

from __future__ import annotations

import collections.abc
import os
import shutil
import subprocess

import pytest

from osworld_gym.providers import x_state

pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb")


@pytest.fixture()
def display() -> collections.abc.Iterator[str]:
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "800x600x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()  # written once the server accepts clients
        assert number, "Xvfb did not start"
        yield f":{number}"
    finally:
        server.kill()
        server.wait(timeout=10)


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
