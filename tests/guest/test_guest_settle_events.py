"""The events settle on a real local desktop: fast after typing, holds for launches, bounded."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import requests
from desktop_helpers import wait_until
from Xlib import X, display, xobject
from Xlib.protocol import rq

from osworld_gym.env_config import EnvConfig
from osworld_gym.guest import settle
from osworld_gym.guest.client import GuestClient, Screenshot
from osworld_gym.guest.settle import _startup_field
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop

EVENTS_QUIET = 0.03
XC_WATCH = 150  # the "watch" glyph of X's cursor font


def _xterm(desktop: LocalDesktop, title: str) -> GuestClient:
    client = desktop.client
    client.launch(["xterm", "-title", title, "-geometry", "80x24+0+0"])
    wait_until(lambda: title in client.execute(["wmctrl", "-l"]).output, message=title)
    client.activate_window(title)
    client.actions([{"kind": "click", "x": 100, "y": 100}])
    return client


def _events(
    client: GuestClient,
    timeout: float = 3.0,
    quiet: float = EVENTS_QUIET,
    launch_timeout: float | None = None,
) -> Screenshot:
    return client.screenshot(
        format="raw",
        cursor=False,
        settle=True,
        settle_timeout=timeout,
        settle_quiet=quiet,
        settle_mode="events",
        settle_launch_timeout=launch_timeout if launch_timeout is not None else timeout,
    )


def _still_frame(client: GuestClient) -> np.ndarray:
    """A frame once the screen was still for half a second (the reference to compare with)."""
    shot = client.screenshot(
        format="raw", cursor=False, settle=True, settle_timeout=10, settle_quiet=0.5
    )
    assert shot.settled
    return shot.to_array()


def _changed_share(before: np.ndarray, after: np.ndarray) -> float:
    return float((before != after).any(axis=2).mean())


def test_events_settle_is_fast_and_complete_after_typing(clean_desktop: LocalDesktop) -> None:
    client = _xterm(clean_desktop, "events-typing")
    before = _still_frame(client)
    for n in range(3):
        client.actions([{"kind": "type", "text": f"echo typed-{n}\n"}])
        shot = _events(client)
        assert (shot.settled, shot.settle_end, shot.settle_pending) == (True, "quiet", ())
        # Well under the poll mode's 0.2 s quiet period alone.
        assert shot.settle_seconds < 0.15, shot
        observed = shot.to_array()
        assert _changed_share(before, observed) > 0  # the typed text is on it
        np.testing.assert_array_equal(observed, _still_frame(client))  # and nothing was left
        before = observed


def test_events_settle_waits_for_a_launched_app_window(clean_desktop: LocalDesktop) -> None:
    client = _xterm(clean_desktop, "events-launch")
    before = _still_frame(client)
    client.actions([{"kind": "type", "text": "soffice --calc &\n"}])
    shot = _events(client, timeout=60)
    windows = client.execute(["wmctrl", "-l"]).output
    assert shot.settled, shot
    assert "process" in shot.settle_seen
    # The poll settle at 0.2 s returns while the screen is still and LibreOffice loads
    # (issue 20); this one returned only once Calc's window was up and on the observation.
    assert "LibreOffice Calc" in windows or "Untitled 1" in windows, windows
    assert _changed_share(before, shot.to_array()) > 0.2


def test_events_settle_reports_a_busy_new_process(clean_desktop: LocalDesktop) -> None:
    client = _xterm(clean_desktop, "events-cpu")
    # A new process that uses CPU and draws nothing: the poll settle calls the screen settled.
    client.actions([{"kind": "type", "text": "python3 -c 'while True: pass' & clear\n"}])
    try:
        shot = _events(client, timeout=0.5)
        assert (shot.settled, shot.settle_end) == (False, "timeout"), shot
        assert "process" in shot.settle_pending
        assert 0.5 <= shot.settle_seconds < 1.0
        poll = client.screenshot(format="raw", settle=True, settle_timeout=3, settle_quiet=0.2)
        assert poll.settled  # blind to it
    finally:
        client.actions([{"kind": "type", "text": "kill $!\n"}])
    wait_until(lambda: _events(client, timeout=1.0).settled, message="settled after the kill")


# An app that, like LibreOffice building a dialog, works silently on a key press before it
# draws: its main thread computes for BUSY_SECONDS, then it paints its window a new colour.
_SILENT_APP = """
import sys, time
from Xlib import X, display
conn = display.Display()
screen = conn.screen()
window = screen.root.create_window(
    0, 0, 400, 300, 0, screen.root_depth, event_mask=X.KeyPressMask | X.ExposureMask,
    background_pixel=screen.white_pixel,
)
window.set_wm_name("silent-app")
window.map()
gc = window.create_gc()
colour = 0x0000FF
while True:
    event = conn.next_event()
    if event.type == X.KeyPress:
        end = time.monotonic() + float(sys.argv[1])
        while time.monotonic() < end:
            pass
        colour ^= 0xFF00FF
        gc.change(foreground=colour)
        window.fill_rectangle(gc, 0, 0, 400, 300)
        conn.flush()
"""
BUSY_SECONDS = 0.8


def _silent_app(client: GuestClient) -> None:
    client.launch([sys.executable, "-c", _SILENT_APP, str(BUSY_SECONDS)])
    wait_until(lambda: "silent-app" in client.execute(["wmctrl", "-l"]).output, message="app")
    client.activate_window("silent-app")


def _app_colour(shot: Screenshot | np.ndarray) -> tuple[int, ...]:
    frame = shot if isinstance(shot, np.ndarray) else shot.to_array()
    return tuple(int(v) for v in frame[150, 200])


def test_events_settle_waits_for_an_app_that_works_before_it_draws(
    clean_desktop: LocalDesktop,
) -> None:
    client = clean_desktop.client
    _silent_app(client)
    _still_frame(client)
    colours = []
    for _ in range(2):
        client.actions([{"kind": "press", "key": "a"}])
        shot = _events(client)
        assert (shot.settled, shot.settle_end) == (True, "quiet"), shot
        assert "app_busy" in shot.settle_seen, shot
        assert shot.settle_seconds >= BUSY_SECONDS * 0.9
        colours.append(_app_colour(shot))
        np.testing.assert_array_equal(shot.to_array(), _still_frame(client))
    assert colours == [(255, 0, 0), (0, 0, 255)], colours
    # The poll settle sees a still screen while the app works: it observes too early.
    client.actions([{"kind": "press", "key": "a"}])
    early = client.screenshot(format="raw", cursor=False, settle=True, settle_quiet=0.2)
    assert early.settled and _app_colour(early) == colours[-1]
    wait_until(lambda: _app_colour(_still_frame(client)) == colours[0], message="the late drawing")


def test_events_settle_ignores_an_app_busy_before_the_action(clean_desktop: LocalDesktop) -> None:
    client = _xterm(clean_desktop, "events-background")
    client.actions([{"kind": "type", "text": "python3 -c 'while True: pass' & clear\n"}])
    try:
        # Its first observation waits for the new process (it is the action's doing) ...
        assert "process" in _events(client, timeout=0.5).settle_pending
        _still_frame(client)  # ... then it spins between observations: background
        for n in range(2):
            client.actions([{"kind": "type", "text": f"echo typed-{n}\n"}])
            shot = _events(client)
            assert (shot.settled, shot.settle_end) == (True, "quiet"), shot
            assert shot.settle_seconds < 0.5, shot
    finally:
        client.actions([{"kind": "type", "text": "kill $!\n"}])


def test_events_settle_waits_past_its_timeout_for_a_slow_launch(
    clean_desktop: LocalDesktop,
) -> None:
    client = _xterm(clean_desktop, "events-slow-launch")
    # A launch that works 2 s without drawing, then opens its window: longer than the
    # screen's timeout (0.5 s), shorter than the launch timeout.
    command = (
        "python3 -c 'import time\nt = time.monotonic()\nwhile time.monotonic() - t < 2: pass'"
        " && xterm -title late-window &\n"
    )
    client.actions([{"kind": "type", "text": command}])
    shot = _events(client, timeout=0.5, launch_timeout=20)
    assert (shot.settled, shot.settle_end) == (True, "quiet"), shot
    assert {"process", "windows"} <= set(shot.settle_seen), shot
    assert shot.settle_seconds >= 2.0
    assert "late-window" in client.execute(["wmctrl", "-l"]).output
    np.testing.assert_array_equal(shot.to_array(), _still_frame(client))


def _animate(display_name: str, stop: threading.Event) -> None:
    """Repaint a window in a new colour every 10 ms until ``stop`` is set."""
    conn = display.Display(display_name)
    try:
        screen = conn.screen()
        window = screen.root.create_window(300, 300, 200, 200, 0, screen.root_depth)
        window.map()
        gc = window.create_gc()
        colour = 0
        while not stop.wait(0.01):  # the animation's frame rate, not a wait for a condition
            colour = (colour + 0x10305) & 0xFFFFFF
            gc.change(foreground=colour)
            window.fill_rectangle(gc, 0, 0, 200, 200)
            conn.sync()
        window.destroy()
        conn.sync()
    finally:
        conn.close()


def test_events_settle_honours_timeout_on_a_changing_screen(desktop: LocalDesktop) -> None:
    # An acting request first: what earlier tests started is then no launch of this one.
    desktop.client.actions([{"kind": "move", "x": 5, "y": 5}])
    stop = threading.Event()
    animation = threading.Thread(target=_animate, args=(desktop.display, stop), daemon=True)
    animation.start()
    try:
        # 10 ms frames, and a quiet period that a loaded host's scheduling gaps cannot fill.
        shot = _events(desktop.client, timeout=0.6, quiet=0.2)
        assert (shot.settled, shot.settle_end) == (False, "timeout"), shot
        assert shot.settle_pending == ("screen",)
        assert 0.6 <= shot.settle_seconds < 1.0
    finally:
        stop.set()
        animation.join(timeout=5)
    wait_until(lambda: _events(desktop.client, timeout=1.0).settled, message="a still screen")


class _SetCursorName(rq.Request):
    """XFixes SetCursorName (python-xlib lacks it): toolkits name the cursors they load."""

    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(23),
        rq.RequestLength(),
        rq.Cursor("cursor"),
        rq.LengthOf("name", 2),
        rq.Pad(2),
        rq.String8("name"),
    )


# A dialog that, like xmessage, answers a click by exiting: its window goes only once the X
# server closes its connection. Here a child keeps that connection open CLOSE_AFTER seconds
# (longer than a new process's own hold), so the server closes it well after the exit, as a
# starved X server can (it showed in one frame of about 5,000 in a training run).
_EXITING_DIALOG = """
import os, sys, time
from Xlib import X, display
conn = display.Display()
screen = conn.screen()
window = screen.root.create_window(
    0, 0, 400, 300, 0, screen.root_depth, override_redirect=True,
    event_mask=X.ButtonPressMask | X.ButtonReleaseMask,
    background_pixel=0xFF0000,
)
window.map()
conn.sync()
while conn.next_event().type != X.ButtonRelease:
    pass
if os.fork() == 0:  # the child holds the connection, sleeping (it uses no CPU)
    time.sleep(float(sys.argv[1]))
os._exit(0)
"""
CLOSE_AFTER = 0.4


def test_events_settle_waits_for_the_server_to_close_an_exited_dialog(
    clean_desktop: LocalDesktop,
) -> None:
    client = clean_desktop.client
    client.launch([sys.executable, "-c", _EXITING_DIALOG, str(CLOSE_AFTER)])
    wait_until(lambda: _app_colour(_still_frame(client)) == (255, 0, 0), message="the dialog")
    client.actions([{"kind": "click", "x": 200, "y": 150}])
    shot = _events(client)
    assert (shot.settled, shot.settle_end) == (True, "quiet"), shot
    assert "closing_client" in shot.settle_seen, shot
    assert shot.settle_seconds >= CLOSE_AFTER * 0.9, shot
    # The dialog is gone from the observation, and nothing changed after it.
    assert _app_colour(shot) != (255, 0, 0)
    np.testing.assert_array_equal(shot.to_array(), _still_frame(client))


# The dialog's CPU is taken by a real-time busy loop (root only) from before the click until
# STARVE seconds after it: the click's events wait in the dialog's socket and the dialog waits in
# the run queue, neither drawing nor working, as on a host whose cores are all busy (it showed
# in one frame of a training run beside a test suite).
_CPU_HOG = """
import select, sys, time
print("hogging", flush=True)
while not select.select([sys.stdin], [], [], 0)[0]:
    pass
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
"""
STARVE = 0.15


@pytest.mark.skipif(os.geteuid() != 0, reason="a real-time busy loop needs root")
def test_events_settle_waits_for_a_starved_dialog_woken_by_the_click(
    clean_desktop: LocalDesktop,
) -> None:
    client = clean_desktop.client
    cpu = str(max(os.sched_getaffinity(0)))
    client.launch(["taskset", "-c", cpu, sys.executable, "-c", _EXITING_DIALOG, "0"])
    wait_until(lambda: _app_colour(_still_frame(client)) == (255, 0, 0), message="the dialog")
    hog = subprocess.Popen(
        ["chrt", "-f", "1", "taskset", "-c", cpu, sys.executable, "-c", _CPU_HOG, str(STARVE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert hog.stdin is not None and hog.stdout is not None
    try:
        assert hog.stdout.readline() == b"hogging\n"
        client.actions([{"kind": "click", "x": 200, "y": 150}])
    finally:
        hog.stdin.close()  # the dialog's CPU stays taken STARVE seconds more
    shot = _events(client)
    hog.wait(timeout=10)
    assert shot.settled, shot
    assert _app_colour(shot) != (255, 0, 0), f"the click's dialog is in the observation: {shot}"
    np.testing.assert_array_equal(shot.to_array(), _still_frame(client))


def test_events_settle_holds_an_ended_process_without_windows_at_most_its_grace(
    clean_desktop: LocalDesktop,
) -> None:
    client = _xterm(clean_desktop, "events-ended")
    client.actions([{"kind": "type", "text": "cat > /dev/null\n"}])
    _events(client)
    _still_frame(client)
    client.actions([{"kind": "hotkey", "keys": ["ctrl", "d"]}])  # cat reads the end and exits
    shot = _events(client)
    assert (shot.settled, shot.settle_end) == (True, "quiet"), shot
    assert "closing_client" in shot.settle_seen, shot  # no X client closed: the grace ends it
    assert shot.settle_seconds < settle.CLOSING_GRACE + 0.5, shot
    assert "cat" not in client.execute(["ps", "-eo", "comm"]).output
    again = _events(client)  # the same action observed again: its end was waited for once
    assert "closing_client" not in again.settle_seen and again.settle_seconds < 0.3, again


@pytest.mark.xfail(
    reason="no XFixes cursor notification arrived on Xvfb here (open issue); the guest's "
    "handling is untested on a real busy cursor",
    strict=True,
)
def test_events_settle_reports_the_busy_cursor(clean_desktop: LocalDesktop) -> None:
    client = clean_desktop.client
    client.actions([{"kind": "move", "x": 640, "y": 600}])  # over the bare root window
    _events(client)  # starts the guest's event thread before the cursor changes
    conn = display.Display(clean_desktop.display)
    try:
        root = conn.screen().root
        font: xobject.fontable.Font = conn.open_font("cursor")
        watch = font.create_glyph_cursor(font, XC_WATCH, XC_WATCH + 1, (0, 0, 0), (65535,) * 3)
        conn.xfixes_query_version()
        _SetCursorName(
            display=conn.display,
            opcode=conn.display.get_extension_major("XFIXES"),
            cursor=watch,
            name="watch",
        )
        root.change_attributes(cursor=watch)
        conn.sync()
        shot = _events(client, timeout=0.4)
        assert (shot.settled, shot.settle_end) == (False, "timeout"), shot
        assert "busy_cursor" in shot.settle_pending
        root.change_attributes(cursor=X.NONE)
        conn.sync()
        wait_until(lambda: _events(client, timeout=1.0).settled, message="the arrow back")
    finally:
        conn.close()


def test_bad_settle_mode_is_refused(desktop: LocalDesktop) -> None:
    for value in ("bogus", "", "events;poll"):
        response = requests.get(
            f"{desktop.endpoint}/screenshot?settle=1&settle_mode={value}",
            headers={"Authorization": f"Bearer {desktop.token}"},
            timeout=10,
        )
        assert response.status_code == 400, (value, response.text)
        assert "settle_mode" in response.json()["message"]
    with pytest.raises(ValueError, match="settle_mode"):
        EnvConfig(settle_mode="bogus")


def test_poll_mode_reports_its_end_too(desktop: LocalDesktop) -> None:
    shot = desktop.client.screenshot(settle=True, settle_timeout=2.0, settle_quiet=0.05)
    assert (shot.settled, shot.settle_end, shot.settle_pending) == (True, "quiet", ())
    assert desktop.client.screenshot().settle_end is None


def test_startup_notification_fields() -> None:
    message = r'ID=app-1_TIME123 NAME="Lib re" SCREEN=0 DESC=a\ b'
    assert _startup_field(message, "ID") == "app-1_TIME123"
    assert _startup_field(message, "NAME") == "Lib re"
    assert _startup_field(message, "DESC") == "a b"
    assert _startup_field(message, "WMCLASS") is None
