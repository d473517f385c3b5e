"""A ``local`` desktop's X server: Xvfb with a cookie of its own, and its state at reset.

Xvfb picks a free display number itself (``-displayfd``) and requires this desktop's
MIT-MAGIC-COOKIE (the desktop's ``XAUTHORITY``) or the launcher's own uid (``x_auth``). A
light reset keeps the server and puts back what an episode changed on it
(``osworld_gym.providers.desktop.x_state``); what no request can put back makes the reset start a
new server.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from osworld_gym.errors import ProviderError
from osworld_gym.providers import processes
from osworld_gym.providers.desktop import x_state
from osworld_gym.providers.local import sandbox
from osworld_gym.providers.local.components import ComponentTable
from osworld_gym.providers.local.identity import HostIdentity
from osworld_gym.providers.local.x_auth import XCookie, admit_launcher

logger = logging.getLogger(__name__)


class XServer:
    """The X server of one desktop (component ``"xvfb"``).

    Args:
        components: The desktop's components.
        root: The desktop's folder (the server's own cookie file lives there, never shown
            to the desktop; the folder's ownership record names the server).
        xauthority: The desktop's ``XAUTHORITY`` file.
        screen_size: (width, height) of the screen.
        refresh_hz: Show the screen through a mode refreshed this often (a compositing window
            manager paints at most that many frames a second); None: Xvfb's own mode.

    Attributes:
        display: ``":N"`` while a server runs, else empty.
        fresh: The server's state when the desktop was new (None until then).
    """

    def __init__(
        self,
        components: ComponentTable,
        *,
        root: Path,
        xauthority: Path,
        screen_size: tuple[int, int],
        refresh_hz: int | None = None,
    ) -> None:
        self._components = components
        self._refresh_hz = refresh_hz
        self._root = root
        self.xauthority = xauthority
        self._screen_size = screen_size
        self._cookie = XCookie()
        self._server_auth = root / "x-server.auth"  # never shown to the desktop
        self.display = ""
        self.fresh: x_state.XServerState | None = None

    def start(self, identity: HostIdentity, deadline: float) -> None:
        """Start a new server; its display and cookie file are the desktop's from now on."""
        width, height = self._screen_size
        argv = [
            "Xvfb", "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp", "-dpi", "96",
            "+extension", "XTEST",
            # Without it the server resets whenever its last client leaves (the AT-SPI
            # launcher connects only briefly), dropping connections being opened then.
            "-noreset",
            # Only this desktop's programs (the cookie) and the launcher (localuser) connect.
            # (Its abstract socket stays: it is what keeps display numbers unique on the host,
            # and clients such as python-xlib try it first.)
            "-auth", str(self._server_auth),
        ]  # fmt: skip
        self._cookie.write_server_file(self._server_auth)
        number = self._components.spawn_reporting(
            "xvfb", lambda fd: [*argv, "-displayfd", str(fd)], deadline
        )
        self.display = f":{number}"
        self._record(number)
        self._cookie.write_client_file(self.xauthority, self.display)
        identity.hand_over(self.xauthority)
        admit_launcher(self.display, self.xauthority)
        if self._refresh_hz is not None:
            conn = self.connect()
            try:
                if not x_state.set_refresh_rate(conn, self._refresh_hz):
                    logger.info("%s: no RandR CRTC: the refresh rate stays", self.display)
            finally:
                conn.close()

    def _record(self, number: str) -> None:
        """Name the server's lock and socket in the folder's ownership record.

        They live in the host's ``/tmp`` (where X clients look) and the server removes them
        when it exits, unless it is killed with SIGKILL; then a sweep of the dead desktop's
        folder removes them (``osworld_gym.providers.processes.remove_dead_folders()``).
        """
        record = processes.read_owner(self._root)
        if record is None:
            return
        pid = self._components.procs["xvfb"].pid
        record["x_server"] = {
            "pid": pid,
            "start": processes.start_time(pid),
            "lock": f"/tmp/.X{number}-lock",
            "socket": f"{sandbox.X11_SOCKETS}/X{number}",
        }
        processes.write_owner(self._root, record)

    def connect(self) -> Any:
        """A new python-xlib connection to the server."""
        from Xlib import display

        return display.Display(self.display)

    def remember_fresh(self) -> None:
        """Take the server's state now as the one resets restore (a new desktop's).

        The pointer goes to the middle of the screen first, where every reset puts it: a
        window manager may move it as it starts (GNOME Shell does), and a desktop's first
        episode would then begin with the pointer elsewhere than every later one.
        """
        conn = self.connect()
        try:
            x_state.centre_pointer(conn)
            self.fresh = x_state.read(conn)
        finally:
            conn.close()

    def restore(self, conn: Any) -> x_state.Restoration:
        """Put back what an episode changed: input released, state as fresh, pointer centred.

        Raises:
            ProviderError: something could not be restored (the caller starts a new server).
        """
        x_state.release_input(conn)
        restoration = x_state.Restoration([], [])
        if self.fresh is not None:
            restoration = x_state.restore(conn, self.fresh)
            if restoration.left:
                left = ", ".join(restoration.left)
                raise ProviderError(f"the X server's {left} could not be restored")
        x_state.centre_pointer(conn)
        return restoration

    def forget(self) -> None:
        """The server is gone (stopped with the rest): no display, no fresh state."""
        self.display = ""
        self.fresh = None
