"""The guest image's GNOME session (``OSWORLD_SESSION=gnome``): its in-place reset.

The session itself, and OSWorld's tasks that need it, are tested with OSWorld's task files on
local desktops and in containers alike (tests/tasks/test_osworld_gnome_tasks.py, with
``OSWORLD_TASKS_DESKTOP=docker``). Here: ``reset_mode="session"`` starts the whole session
again, so nothing of an episode's shell, settings, time zone or HOME reaches the next.
"""

from __future__ import annotations

import collections.abc
import time

import numpy as np
import pytest
from desktop_helpers import wait_until

from osworld_gym.providers.docker.provider import (
    DockerDesktop,
    DockerProvider,
    DockerProviderConfig,
)

# The desktop icons' program ("[d]": not the shell that runs pgrep, whose command line names it).
ICONS_PROGRAM = "pgrep -f '[d]ing@rastersoft.com/ding.js'"


@pytest.fixture()
def gnome_desktop(
    guest_image: str, our_containers: object
) -> collections.abc.Iterator[DockerDesktop]:
    config = DockerProviderConfig(
        image=guest_image, screen_size=(1024, 768), session="gnome", reset_mode="session"
    )
    with DockerProvider(config).launch() as desktop:
        yield desktop  # type: ignore[misc]


def test_an_in_place_reset_starts_a_new_gnome_session(gnome_desktop: DockerDesktop) -> None:
    client = gnome_desktop.client

    def shell(command: str) -> str:
        return client.execute(command, shell=True).output

    def shell_pid() -> str:
        return shell("pgrep -x gnome-shell").strip()

    # The system bus's folder (the user's), as a new container has it: names, modes, owners.
    bus_folder = "stat -c '%n %A %U' /run/dbus/*"
    fresh = {
        "theme": shell("gsettings get org.gnome.desktop.interface gtk-theme"),
        "zone": shell("timedatectl show -p Timezone --value"),
        "bus folder": shell(bus_folder),
    }
    assert fresh["theme"] == "'Yaru'\n" and fresh["zone"] == "Asia/Hong_Kong\n", fresh
    assert "/run/dbus/system_bus_socket" in fresh["bus folder"]
    first_shell = shell_pid()
    assert first_shell, "no GNOME Shell"
    first_icons = shell(ICONS_PROGRAM).split()
    assert len(first_icons) == 1, "no desktop icons' program"
    # What a policy could plant for the next episode: settings, the time zone, HOME's GNOME
    # files (the settings database itself), a terminal left open.
    shell(
        "gsettings set org.gnome.desktop.interface gtk-theme Adwaita; "
        "gsettings set org.gnome.shell favorite-apps \"['vim.desktop']\"; "
        "timedatectl set-timezone Etc/UTC; echo planted >> ~/.config/dconf/user; "
        "echo planted > /run/dbus/planted; mv /run/dbus/containers /run/dbus/moved"
    )
    client.launch(["gnome-terminal"])
    wait_until(lambda: "Terminal" in shell("wmctrl -l"), interval=0.1, message="a terminal window")

    name = gnome_desktop.container_name
    start = time.perf_counter()
    gnome_desktop.reset()
    elapsed = time.perf_counter() - start
    assert gnome_desktop.container_name == name, "the reset fell back to a new container"
    assert elapsed < 15, f"the in-place reset took {elapsed:.1f} s"

    assert shell_pid() not in ("", first_shell), "GNOME Shell was not started again"
    assert shell("gsettings get org.gnome.desktop.interface gtk-theme") == fresh["theme"]
    assert "'google-chrome.desktop'" in shell("gsettings get org.gnome.shell favorite-apps")
    assert shell("timedatectl show -p Timezone --value") == fresh["zone"]
    assert "planted" not in shell("cat ~/.config/dconf/user")
    assert shell(bus_folder) == fresh["bus folder"]
    assert "Terminal" not in shell("wmctrl -l")
    assert "240.00*" in shell("xrandr")
    frame = client.screenshot().to_array()
    assert frame.shape[:2] == (768, 1024)
    assert frame[:20, 200:800].astype(int).mean() < 40, "no top bar after the reset"
    # The desktop icons: Home alone, in the bottom-right corner, drawn by a new program.
    assert shell(ICONS_PROGRAM).split() not in ([], first_icons)
    corner, middle = frame[660:760, 930:1020].astype(int), frame[300:400, 400:500].astype(int)
    assert np.abs(corner - middle.mean(axis=(0, 1))).mean() > 10, "no Home icon"
