"""The guest image's GNOME start helper (``gnome_image start``) on a real Xvfb.

At an in-place reset the killed shell's settings stay on the root window; the helper must wait
until that shell let the X server go, remove what it left, and only then take a shell's layout
as ready: a new shell that has not laid out yet must not read as ready from the old work area.
"""

from __future__ import annotations

import collections.abc
import io
import threading
import time
from pathlib import Path

import pytest
from desktop_helpers import bare_display
from fixture_marks import needs

from osworld_gym.providers.desktop import gnome_image, gnome_session

pytestmark = pytest.mark.skipif(
    gnome_session.available() is not None, reason=f"{gnome_session.available()}"
)


@pytest.fixture()
@needs("desktop")
def display() -> collections.abc.Iterator[str]:
    from Xlib import display as xdisplay

    with bare_display("800x600") as name:
        # The guest's connection: the X server resets when its last client goes, which the
        # image's never does (and a reset would clear the root window for the helper).
        guest = xdisplay.Display(name)
        try:
            yield name
        finally:
            guest.close()


@pytest.fixture()
def environ(tmp_path: Path, display: str) -> dict[str, str]:
    home, runtime = tmp_path / "home", tmp_path / "runtime"
    home.mkdir()
    runtime.mkdir()
    gnome_image.install(tmp_path / "state", home, str(runtime))
    return {"HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "DISPLAY": display}


class _Shell:
    """An X client standing for a window manager: owns ``WM_S0``; ``laid_out``: and has set the
    work area of one desktop below a 32-pixel top bar."""

    def __init__(self, display: str, *, laid_out: bool = True) -> None:
        from Xlib import X
        from Xlib import display as xdisplay

        self.conn = xdisplay.Display(display)
        root = self.conn.screen().root
        self.window = root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        self.window.set_selection_owner(self.conn.intern_atom("WM_S0"), X.CurrentTime)
        if laid_out:
            cardinal = self.conn.intern_atom("CARDINAL")
            desktops = self.conn.intern_atom("_NET_NUMBER_OF_DESKTOPS")
            root.change_property(desktops, cardinal, 32, [1])
            area = self.conn.intern_atom("_NET_WORKAREA")
            root.change_property(area, cardinal, 32, [0, 32, 800, 568])
        self.conn.sync()

    def dies(self) -> None:
        self.conn.close()  # its selection goes with its connection; root properties stay


def _root_properties(display: str) -> dict[str, object]:
    from Xlib import display as xdisplay

    from osworld_gym.providers.desktop import window_manager

    conn = xdisplay.Display(display)
    try:
        return dict(window_manager.root_properties(conn))
    finally:
        conn.close()


def test_start_waits_for_the_last_shell_and_forgets_its_layout(
    display: str, environ: dict[str, str], tmp_path: Path
) -> None:
    last = _Shell(display)
    assert gnome_session.laid_out(_root_properties(display))
    threading.Timer(0.5, last.dies).start()
    out = io.StringIO()
    began = time.monotonic()
    # No shell starts: the helper prepares (after the last shell is gone), says so, then times out.
    missing = gnome_image.start(tmp_path / "state", environ, 2.0, out)
    assert missing == "no window manager owns WM_S0"
    assert out.getvalue() == f"{gnome_image.PREPARED}\n"
    assert time.monotonic() - began >= 0.5
    assert not gnome_session.laid_out(_root_properties(display))
    assert (Path(environ["HOME"]) / gnome_session.USER_DATABASE).is_file()


def test_a_new_shell_is_ready_only_once_it_has_laid_out(
    display: str, environ: dict[str, str], tmp_path: Path
) -> None:
    last = _Shell(display)
    last.dies()
    gnome_image.prepare(
        tmp_path / "state",
        Path(environ["HOME"]),
        Path(environ["XDG_RUNTIME_DIR"]),
        display,
        time.monotonic() + 5,
    )
    new = _Shell(display, laid_out=False)
    try:
        missing = gnome_image.wait_ready(display, time.monotonic() + 0.3)
        assert missing is not None and missing.startswith("the desktop is not laid out")
    finally:
        new.dies()


def test_start_gives_up_when_the_last_shell_never_goes(
    display: str, environ: dict[str, str], tmp_path: Path
) -> None:
    last = _Shell(display)
    try:
        out = io.StringIO()
        with pytest.raises(TimeoutError, match="still holds"):
            gnome_image.start(tmp_path / "state", environ, 0.5, out)
        assert out.getvalue() == ""  # the session script then fails the start
    finally:
        last.dies()
