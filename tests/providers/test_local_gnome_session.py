"""A GNOME session laid out as OSWorld's Ubuntu VM (issue 36, item 1; ``session="gnome"``).

GNOME Shell in X11 mode on the desktop's own Xvfb, in its sandbox, with a private system bus:
the top bar, the dock on the left with OSWorld's apps, the Yaru theme, Ubuntu's ctrl+alt+t.
Read through the desktop's own tools, as an agent or a task's checks would.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest
from desktop_helpers import launch_desktop, wait_until
from desktop_helpers import shell_output as _sh
from fixture_marks import needs

from osworld_gym.errors import ProviderError
from osworld_gym.providers.desktop import gnome_session
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        gnome_session.available() is not None,
        reason=f"no GNOME session here: {gnome_session.available()}",
    ),
]


@pytest.fixture(scope="module")
@needs("desktop")
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


def _zone_line(desktop: LocalDesktop) -> str:
    return _sh(desktop, "timedatectl status").split("\n")[3].strip()


def test_timedatectl_talks_to_the_desktops_own_timedated(desktop: LocalDesktop) -> None:
    zone = gnome_session.TIME_ZONE
    assert _zone_line(desktop) == f"Time zone: {zone} (HKT, +0800)"
    _sh(desktop, "timedatectl set-timezone UTC")
    assert _zone_line(desktop) == "Time zone: UTC (UTC, +0000)"
    wrong = desktop.client.execute("timedatectl set-timezone Nowhere/Land", shell=True)
    assert wrong.returncode == 1 and "Invalid or not installed time zone" in wrong.error
    assert zone in _sh(desktop, "timedatectl list-timezones")
    # The desktop's programs keep the host's zone (dates agree with the evaluator's).
    assert _sh(desktop, "date +%z") == "+0000\n"
    desktop.reset()
    assert _zone_line(desktop).startswith(f"Time zone: {zone} ")
    # Written behind the service's back, as an agent could: the reset writes it anew too.
    planted = '{"timezone": "UTC"}'
    _sh(desktop, f"cd $XDG_RUNTIME_DIR && echo '{planted}' > new && mv new timedate.json")
    assert _zone_line(desktop).startswith("Time zone: UTC ")
    desktop.reset()
    assert _zone_line(desktop).startswith(f"Time zone: {zone} ")


def _current_mode(desktop: LocalDesktop) -> str:
    return next(line for line in _sh(desktop, "xrandr").splitlines() if "*" in line).split()[0]


def test_gnome_shell_paints_at_the_x_servers_fast_rate_and_resets_keep_it(
    desktop: LocalDesktop,
) -> None:
    fast = f"1280x720_{gnome_session.REFRESH_HZ}"
    assert _current_mode(desktop) == fast
    _sh(desktop, "xrandr --output screen --mode 1280x720")  # Xvfb's own: 60 frames a second
    assert _current_mode(desktop) == "1280x720"
    desktop.reset()
    assert _current_mode(desktop) == fast


def _titles(desktop: LocalDesktop) -> str:
    return _sh(desktop, "wmctrl -l")


@pytest.mark.apps
def test_ctrl_s_saves_a_docx_with_no_keep_format_question(desktop: LocalDesktop) -> None:
    """LibreOffice saves in Microsoft's formats by default, as on OSWorld's VM."""
    import io

    import docx

    document = docx.Document()
    document.add_paragraph("first line")
    buffer = io.BytesIO()
    document.save(buffer)
    desktop.client.upload("/home/user/Documents/note.docx", buffer.getvalue())
    desktop.client.launch(["libreoffice", "--writer", "/home/user/Documents/note.docx"])
    active = "xdotool getactivewindow getwindowname 2>/dev/null || true"
    wait_until(
        lambda: _sh(desktop, active) == "note.docx - LibreOffice Writer\n",
        timeout=60,
        message="Writer's window, focused",
    )
    # Until Writer has loaded and drawn the document, it drops keys: wait as the env does.
    desktop.client.screenshot(format="raw", settle=True, settle_mode="events", settle_timeout=20)
    desktop.client.actions(
        [
            {"kind": "hotkey", "keys": ["ctrl", "end"]},
            {"kind": "type", "text": " added"},
            {"kind": "hotkey", "keys": ["ctrl", "s"]},
        ]
    )

    def saved() -> bool:
        data = desktop.client.download("/home/user/Documents/note.docx")
        text = "\n".join(p.text for p in docx.Document(io.BytesIO(data)).paragraphs)
        return "added" in text

    wait_until(saved, timeout=30, message="the document saved as .docx")
    assert "Keep current format" not in _titles(desktop)
    desktop.reset()


@pytest.mark.apps
def test_vlc_starts_without_its_privacy_question(desktop: LocalDesktop) -> None:
    desktop.client.launch(["vlc", "--no-audio"])
    wait_until(lambda: "VLC media player" in _titles(desktop), timeout=60, message="VLC's window")
    time.sleep(1.0)  # the question comes right after the main window when it comes
    assert "Privacy and Network Access Policy" not in _titles(desktop)
    desktop.reset()


def _programs_once_quiet(desktop: LocalDesktop, quiet: float = 2.0) -> set[str]:
    """The desktop's programs (command names) once none has come or gone for ``quiet`` s."""
    programs: set[str] = set()
    since = deadline = time.monotonic()
    deadline += 60
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, f"the desktop's programs never settled: {programs}"
        now = set(_sh(desktop, "ps -eo comm=").split()) - {"ps", "sh"}
        if now != programs:
            programs, since = now, time.monotonic()
        time.sleep(0.2)  # a poll interval: services start on their own
    return programs


def test_the_first_episode_runs_the_programs_a_later_one_runs() -> None:
    """GNOME Shell's start has the session bus start services (the dock's: Files, Tracker,
    GVfs's trash and volume monitors), and writes files in the runtime folder; a reset stops
    the services and empties the folder. The first episode starts as a later one: from a reset.
    """
    with launch_desktop(session="gnome", screen_size=(1280, 720)) as fresh:
        runtime = _sh(fresh, 'ls "$XDG_RUNTIME_DIR"').split()
        first = _programs_once_quiet(fresh)
        fresh.reset()
        later = _programs_once_quiet(fresh)
    assert first == later
    assert "gnome-shell-disable-extensions" not in runtime, runtime


def test_a_failed_reset_before_the_first_episode_starts_the_desktop_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    tries = []

    def fails(self: LocalDesktop) -> None:
        tries.append(self)
        raise ProviderError("planted")

    monkeypatch.setattr(LocalDesktop, "_as_after_a_reset", fails)
    with caplog.at_level(logging.WARNING, logger="osworld_gym.providers.local.provider"):
        desktop = launch_desktop(session="gnome")
    with desktop:
        assert len(tries) == 1
        assert "the reset before the first episode failed (planted)" in caplog.text
        assert _sh(desktop, "echo up") == "up\n"  # a whole desktop, started again
        assert "gnome-shell" in _sh(desktop, "ps -eo comm=").split()
