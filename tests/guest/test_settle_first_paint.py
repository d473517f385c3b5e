"""The events settle waits for a newly mapped window's first paint, bounded by a grace."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from desktop_helpers import wait_until

from osworld_gym.guest.client import GuestClient, Screenshot
from osworld_gym.guest.settle import SIGNAL_UNPAINTED, UNPAINTED_GRACE
from osworld_gym.providers.local import LocalDesktop

pytestmark = pytest.mark.desktop

# An app that, like LibreOffice asking "Keep current format?", maps a dialog on a key press and
# draws into it later: the dialog has no background (the server paints nothing on map), so
# until the app draws, the screen shows the window manager's frame over what lay beneath. Key
# "a" draws after PAINT_DELAY seconds of sleep (no CPU: no process signal sees it), "b" at once,
# "c" never. Each key closes the previous dialog first. (Test code: the sleep is the point.)
_LATE_PAINTER = """
import sys, time
from Xlib import X, XK, display
conn = display.Display()
screen = conn.screen()
main = screen.root.create_window(
    0, 0, 500, 400, 0, screen.root_depth, event_mask=X.KeyPressMask,
    background_pixel=screen.white_pixel,
)
main.set_wm_name("late-painter")
main.map()
delays = {XK.XK_a: float(sys.argv[1]), XK.XK_b: 0.0, XK.XK_c: None}
dialog = None
while True:
    event = conn.next_event()
    if event.type != X.KeyPress:
        continue
    delay = delays.get(conn.keycode_to_keysym(event.detail, 0), -1)
    if delay == -1:
        continue
    if dialog is not None:
        dialog.destroy()
    dialog = screen.root.create_window(
        100, 100, 300, 200, 0, screen.root_depth, event_mask=X.KeyPressMask | X.ExposureMask,
    )
    dialog.set_wm_name("late-painter-dialog")
    dialog.set_wm_transient_for(main)
    dialog.map()
    conn.flush()
    if delay is None:
        continue
    # Drawing counts once the window manager has mapped it: an app paints on Expose.
    while not (event.type == X.Expose and event.window == dialog):
        event = conn.next_event()
    time.sleep(delay)
    gc = dialog.create_gc(foreground=0x00FF00)
    dialog.fill_rectangle(gc, 0, 0, 300, 200)
    conn.flush()
"""
PAINT_DELAY = 0.6
GREEN = (0, 255, 0)
DIALOG_PIXELS = 300 * 200


def _events(client: GuestClient) -> Screenshot:
    return client.screenshot(
        format="raw",
        cursor=False,
        settle=True,
        settle_timeout=3.0,
        settle_quiet=0.03,
        settle_mode="events",
        settle_launch_timeout=3.0,
    )


def _green_pixels(frame: np.ndarray) -> int:
    return int((frame == np.array(GREEN, dtype=frame.dtype)).all(axis=2).sum())


def _still_frame(client: GuestClient) -> np.ndarray:
    shot = client.screenshot(
        format="raw", cursor=False, settle=True, settle_timeout=10, settle_quiet=0.5
    )
    assert shot.settled
    return shot.to_array()


@pytest.fixture()
def painter(clean_desktop: LocalDesktop) -> GuestClient:
    client = clean_desktop.client
    client.launch([sys.executable, "-c", _LATE_PAINTER, str(PAINT_DELAY)])
    wait_until(lambda: "late-painter" in client.execute(["wmctrl", "-l"]).output, message="app")
    client.activate_window("late-painter")
    _still_frame(client)
    _events(client)  # starts the settle's event thread, as an env's first observation does
    return client


def _press(client: GuestClient, key: str) -> Screenshot:
    client.actions([{"kind": "press", "key": key}])
    return _events(client)


def test_settle_waits_for_a_dialog_painted_late(painter: GuestClient) -> None:
    for _ in range(2):
        shot = _press(painter, "a")
        assert (shot.settled, shot.settle_end) == (True, "quiet"), shot
        assert SIGNAL_UNPAINTED in shot.settle_seen, shot
        # Not before the paint, and soon after it.
        assert PAINT_DELAY * 0.9 <= shot.settle_seconds < PAINT_DELAY + 0.5, shot
        observed = shot.to_array()
        assert _green_pixels(observed) >= DIALOG_PIXELS * 0.95
        np.testing.assert_array_equal(observed, _still_frame(painter))


def test_settle_is_not_slowed_by_a_dialog_painted_at_once(painter: GuestClient) -> None:
    for _ in range(3):
        shot = _press(painter, "b")
        assert (shot.settled, shot.settle_end) == (True, "quiet"), shot
        assert shot.settle_seconds < 0.4, shot  # well under the grace
        assert _green_pixels(shot.to_array()) >= DIALOG_PIXELS * 0.95


def test_settle_gives_up_on_a_dialog_that_never_paints(painter: GuestClient) -> None:
    _press(painter, "b")  # a painted dialog first: its replacement maps over a still screen
    _still_frame(painter)
    shot = _press(painter, "c")
    assert (shot.settled, shot.settle_end) == (True, "quiet"), shot
    assert SIGNAL_UNPAINTED in shot.settle_seen, shot
    assert UNPAINTED_GRACE * 0.9 <= shot.settle_seconds < UNPAINTED_GRACE + 0.6, shot
