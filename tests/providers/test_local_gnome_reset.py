"""A light reset keeps GNOME Shell only while it is as fresh as a new one (issue 36, item 5).

The shell lives on its session bus, so a reset that keeps it keeps the buses and GNOME's settings
daemons too. Each test leaves something behind as an agent could, resets, and checks that the
next episode sees a new desktop's session: the same screen, settings and shortcuts, whether the
shell was kept (its settings reloaded, its notifications dropped) or had to be restarted (code
run inside it, the overview left open, a bus socket replaced).
"""

from __future__ import annotations

import collections.abc

import numpy as np
import pytest
from desktop_helpers import launch_desktop, settled_screen, wait_until
from desktop_helpers import shell_output as _sh
from fixture_marks import needs

from osworld_gym.providers.desktop import gnome_session
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        gnome_session.available() is not None,
        reason=f"no GNOME session here: {gnome_session.available()}",
    ),
]

SCREEN = (1280, 720)
CLOCK = (slice(0, 27), slice(560, 720))  # the top bar's clock changes by the minute


def _screen(desktop: LocalDesktop) -> np.ndarray:
    return settled_screen(desktop, CLOCK)


def _session_pids(desktop: LocalDesktop) -> dict[str, int]:
    names = ("wm", "dbus", "sysbus", "atspi", "gsd-xsettings", "gsd-media-keys")
    return {name: desktop.components.pid(name) for name in names}


@pytest.fixture(scope="module")
@needs("desktop")
def desktop() -> collections.abc.Iterator[LocalDesktop]:
    with launch_desktop(session="gnome", screen_size=SCREEN) as launched:
        yield launched


@pytest.fixture(scope="module")
def fresh_screen(desktop: LocalDesktop) -> np.ndarray:
    desktop.reset()
    return _screen(desktop)


def _assert_fresh(desktop: LocalDesktop, fresh_screen: np.ndarray) -> None:
    assert np.abs(_screen(desktop) - fresh_screen).mean() < 0.5
    favorites = _sh(desktop, "gsettings get org.gnome.shell favorite-apps")
    assert favorites.startswith("['google-chrome.desktop', 'thunderbird.desktop'")
    assert "Terminal" not in _sh(desktop, "wmctrl -l")


def test_an_untouched_session_is_kept(desktop: LocalDesktop, fresh_screen: np.ndarray) -> None:
    before = _session_pids(desktop)
    desktop.reset()
    assert _session_pids(desktop) == before
    _assert_fresh(desktop, fresh_screen)


def test_changed_settings_are_undone_in_the_kept_shell(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    _sh(desktop, "gsettings set org.gnome.shell favorite-apps \"['thunderbird.desktop']\"")
    _sh(desktop, "gsettings set org.gnome.desktop.interface gtk-theme Adwaita")
    # The shell drew the change: one app left in the dock.
    wait_until(lambda: np.abs(_screen(desktop) - fresh_screen).mean() > 0.5, message="the dock")
    before = _session_pids(desktop)
    desktop.reset()
    assert _session_pids(desktop) == before
    assert _sh(desktop, "gsettings get org.gnome.desktop.interface gtk-theme") == "'Yaru'\n"
    _assert_fresh(desktop, fresh_screen)  # the dock shows every app again
    # Ubuntu's ctrl+alt+t is a user setting: reloaded with the rest.
    desktop.client.actions([{"kind": "hotkey", "keys": ["ctrl", "alt", "t"]}])
    wait_until(lambda: "Terminal" in _sh(desktop, "wmctrl -l"), timeout=30, message="terminal")
    desktop.reset()


def test_notifications_do_not_outlive_the_episode(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    notify = (
        "gdbus call --session --dest=org.freedesktop.Notifications"
        " --object-path=/org/freedesktop/Notifications"
        " --method=org.freedesktop.Notifications.Notify"
        " planted 0 '' 'the answer is 42' 'left for the next episode' '[]' '{}' 0"
    )
    _sh(desktop, notify)
    wait_until(lambda: np.abs(_screen(desktop) - fresh_screen).mean() > 0.5, message="a banner")
    before = _session_pids(desktop)
    desktop.reset()
    assert _session_pids(desktop) == before
    _assert_fresh(desktop, fresh_screen)  # no banner, no unread dot by the clock


def test_the_overview_left_open_gives_a_fresh_shell(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    desktop.client.actions([{"kind": "press", "key": "win"}])
    wait_until(lambda: np.abs(_screen(desktop) - fresh_screen).mean() > 0.5, message="overview")
    desktop.reset()
    _assert_fresh(desktop, fresh_screen)


def test_code_run_inside_the_shell_gives_a_new_shell(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    """Looking Glass (Alt+F2, "lg") runs JavaScript in the shell: nothing of it may stay."""
    shell = desktop.components.pid("wm")
    desktop.client.actions([{"kind": "hotkey", "keys": ["alt", "f2"]}])
    wait_until(lambda: np.abs(_screen(desktop) - fresh_screen).mean() > 0.5, message="run dialog")
    desktop.client.actions([{"kind": "type", "text": "lg\n"}])
    desktop.client.screenshot(format="raw", settle=True, settle_mode="events")
    desktop.client.actions([{"kind": "press", "key": "escape"}])
    desktop.reset()
    assert desktop.components.pid("wm") != shell
    _assert_fresh(desktop, fresh_screen)


def test_a_replaced_bus_socket_gives_a_new_session(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    """A program of the desktop puts a socket of its own at the session bus's path."""
    bus = desktop.components.pid("dbus")
    planted = (
        "rm -f $XDG_RUNTIME_DIR/bus && python3 -c"
        " \"import socket; s = socket.socket(socket.AF_UNIX); s.bind('$XDG_RUNTIME_DIR/bus')\""
    )
    _sh(desktop, planted)
    desktop.reset()
    assert desktop.components.pid("dbus") != bus
    _sh(desktop, "gsettings set org.gnome.shell favorite-apps \"['thunderbird.desktop']\"")
    wait_until(lambda: np.abs(_screen(desktop) - fresh_screen).mean() > 0.5, message="the dock")
    desktop.reset()
    _assert_fresh(desktop, fresh_screen)


def test_a_change_flag_replaced_under_the_kept_programs_gives_a_new_session(
    desktop: LocalDesktop, fresh_screen: np.ndarray
) -> None:
    """dconf's change flag swapped for an unflagged copy: the kept programs, which map the old
    one, would keep the episode's settings (the dock with one app) and never see a change."""
    shell = desktop.components.pid("wm")
    _sh(desktop, "gsettings set org.gnome.shell favorite-apps \"['thunderbird.desktop']\"")
    wait_until(lambda: np.abs(_screen(desktop) - fresh_screen).mean() > 0.5, message="the dock")
    _sh(desktop, 'f="$XDG_RUNTIME_DIR/dconf/user"; cp "$f" "$f.new" && mv "$f.new" "$f"')
    desktop.reset()
    assert desktop.components.pid("wm") != shell
    _assert_fresh(desktop, fresh_screen)


def test_the_bus_keeps_the_environment_it_starts_services_with(desktop: LocalDesktop) -> None:
    result = desktop.client.execute(
        "gdbus call --session --dest=org.freedesktop.DBus --object-path=/org/freedesktop/DBus"
        " --method=org.freedesktop.DBus.UpdateActivationEnvironment"
        " \"{'XDG_CONFIG_HOME': '/tmp'}\"",
        shell=True,
    )
    assert result.returncode != 0 and "AccessDenied" in result.error


def test_services_an_episode_added_to_the_kept_bus_are_gone(desktop: LocalDesktop) -> None:
    for folder in ("$XDG_RUNTIME_DIR/dbus-1/services", "$HOME/.local/share/dbus-1/services"):
        name = "org.example.Planted" + ("Runtime" if "RUNTIME" in folder else "Home")
        service = f"[D-BUS Service]\\nName={name}\\nExec=/bin/sh -c 'touch /tmp/{name}'\\n"
        _sh(desktop, f'mkdir -p {folder} && printf "{service}" > {folder}/{name}.service')
    bus = desktop.components.pid("dbus")
    desktop.reset()
    assert desktop.components.pid("dbus") == bus  # kept
    for name in ("org.example.PlantedRuntime", "org.example.PlantedHome"):
        started = desktop.client.execute(
            "gdbus call --session --dest=org.freedesktop.DBus --object-path=/org/freedesktop/DBus"
            f" --method=org.freedesktop.DBus.StartServiceByName {name} 0",
            shell=True,
        )
        assert started.returncode != 0 and "ServiceUnknown" in started.error, started
