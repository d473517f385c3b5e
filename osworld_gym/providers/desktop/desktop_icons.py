"""GNOME's desktop icons (Desktop Icons NG, "DING"), seen from the X server and ``/proc``.

OSWorld's desktop shows one icon, Home, in the bottom-right corner: Ubuntu's desktop-icons
extension draws it. The extension's program (``gjs .../ding.js``, a child of GNOME Shell) draws
the icons into a window of its own that covers the screen, and holds an episode's state in
memory: icon positions, the selection, open menus. Starting it costs about a second, and each
start has the session bus start Files, GVfs and Tracker at their own pace, so a light reset
keeps it while it is as fresh as a new one, as it keeps GNOME Shell, and replaces it otherwise:

- the same process, running (not stopped);
- the same top-level windows of its X client (a menu, popover or dialog it opened is a new one);
- the same ``~/Desktop`` and ``~/Templates`` folders (it watches those very folders, for its
  icons and its "New Document" menu: replaced ones it no longer sees);
- the same pixels in its windows as when it was new, once it has redrawn after the reset
  (a moved or selected icon, a file an episode left, a changed setting all show there).

Its windows are read back with ``GetImage`` in strips (about 15 ms for 1920x1080; one request
for the whole window takes python-xlib ten times as long).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osworld_gym.providers import processes

EXTENSION = "ding@rastersoft.com"
# The program the extension runs, as it appears in the program's command line.
PROGRAM_SCRIPT = f"/usr/share/gnome-shell/extensions/{EXTENSION}/ding.js"
_STRIP_ROWS = 64  # rows per GetImage request (see the module doc)
# A just started program has drawn its icons once its windows' pixels stay the same this long
# (it reads the desktop folder asynchronously, then draws).
DRAWN_QUIET = 0.3
_POLL = 0.02  # seconds between looks while waiting
# The folders of HOME the program watches from its start: its icons', its "New Document" menu's.
WATCHED_FOLDERS = ("Desktop", "Templates")


@dataclass(frozen=True)
class IconsState:
    """What the icons' program shows, compared to tell a kept one is fresh.

    Attributes:
        pid: The program's process (on the host).
        started: Its start time (``processes.start_time``): a reused pid is another process.
        windows: The top-level windows of its X client, mapped or not.
        shown: The mapped ones, which it draws the icons into.
        digest: A hash of the pixels of ``shown``.
        folders: ``WATCHED_FOLDERS`` on the host, each as (device, inode, mode); zeros when
            missing.
    """

    pid: int
    started: str | None
    windows: frozenset[int]
    shown: tuple[int, ...]
    digest: bytes
    folders: tuple[tuple[int, int, int], ...]


def program(shell_pid: int | None) -> int | None:
    """The icons' program (the oldest one), None if none runs.

    Args:
        shell_pid: GNOME Shell's process, whose child it is; None: any process ``/proc``
            shows (the guest image's desktop, a container or VM of its own).
    """
    if shell_pid is not None:
        candidates = processes.children(shell_pid)
    else:
        candidates = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    for child in candidates:
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if PROGRAM_SCRIPT.encode() in argv:
            return child
    return None


def folder_identity(folder: Path) -> tuple[int, int, int]:
    """(device, inode, mode) of a real folder at ``folder``; zeros when missing or no folder."""
    try:
        info = folder.lstat()
    except OSError:
        return (0, 0, 0)
    if not stat.S_ISDIR(info.st_mode):
        return (0, 0, 0)
    return (info.st_dev, info.st_ino, info.st_mode)


def client_windows(conn: Any, pid: int) -> tuple[frozenset[int], tuple[int, ...]]:
    """The top-level windows of the X clients of process ``pid``: (all, the mapped ones).

    The X server knows each client's process (X-Resource): the server runs outside the
    desktop's sandbox, so these are host process ids.
    """
    from Xlib import X
    from Xlib.error import XError
    from Xlib.ext import res

    spec = {"client": 0, "mask": res.ClientXIDMask | res.LocalClientPIDMask}
    bases = {
        entry.spec.client
        for entry in conn.res_query_client_ids([spec]).ids
        if entry.spec.mask & res.LocalClientPIDMask and entry.value and entry.value[0] == pid
    }
    mask = conn.display.info.resource_id_mask
    windows, shown = set(), []
    for window in conn.screen().root.query_tree().children:
        if window.id & ~mask not in bases:
            continue
        windows.add(window.id)
        try:
            if window.get_attributes().map_state == X.IsViewable:
                shown.append(window.id)
        except XError:  # destroyed meanwhile
            continue
    return frozenset(windows), tuple(sorted(shown))


def digest(conn: Any, windows: tuple[int, ...]) -> bytes:
    """A hash of the pixels of ``windows`` (their own contents, under any window above them)."""
    from Xlib import X

    found = hashlib.blake2b(digest_size=16)
    for wid in windows:
        window = conn.create_resource_object("window", wid)
        geometry = window.get_geometry()
        found.update(f"{wid}:{geometry.width}x{geometry.height};".encode())
        for y in range(0, geometry.height, _STRIP_ROWS):
            rows = min(_STRIP_ROWS, geometry.height - y)
            found.update(window.get_image(0, y, geometry.width, rows, X.ZPixmap, 0xFFFFFFFF).data)
    return found.digest()


def read(conn: Any, pid: int, home: Path) -> IconsState:
    """The icons' state now (see ``IconsState``), for the desktop whose HOME is ``home``."""
    started = processes.start_time(pid)
    windows, shown = client_windows(conn, pid)
    folders = tuple(folder_identity(home / name) for name in WATCHED_FOLDERS)
    return IconsState(pid, started, windows, shown, digest(conn, shown), folders)


def wait_drawn(
    conn: Any,
    shell_pid: int | None,
    home: Path,
    deadline: float,
    check: Callable[[], None],
) -> IconsState:
    """Wait until GNOME Shell's icons' program runs and has drawn; return what it shows.

    Drawn: a window of it is mapped and its pixels stayed the same for ``DRAWN_QUIET``.

    Args:
        conn: A connection to the desktop's X server.
        shell_pid: GNOME Shell's process (see ``program()``).
        home: The desktop's HOME (on the host).
        deadline: ``time.monotonic()`` value by which they must be drawn.
        check: Raises when the desktop died (polled while waiting).

    Raises:
        TimeoutError: Not by ``deadline`` (the message says what was missing).
    """
    from Xlib.error import XError

    last: IconsState | None = None
    since = time.monotonic()
    missing = "no icons' program runs"
    while True:
        check()
        pid = program(shell_pid)
        if pid is not None:
            try:
                state = read(conn, pid, home)
            except XError:  # a window went while being read: look again
                state = None
            if state is not None and state.shown:
                if last is None or state != last:
                    last, since = state, time.monotonic()
                elif time.monotonic() - since >= DRAWN_QUIET:
                    return state
                missing = "its icons kept changing"
            else:
                missing = "its program has mapped no window"
        if time.monotonic() >= deadline:
            raise TimeoutError(f"the desktop's icons never showed: {missing}")
        time.sleep(_POLL)  # a poll interval: the program draws on its own main loop


def difference(fresh: IconsState, now: IconsState) -> str | None:
    """How ``now`` differs from the ``fresh`` state, or None."""
    if (now.pid, now.started) != (fresh.pid, fresh.started):
        return "another program draws them"
    if now.folders != fresh.folders:
        return "~/Desktop or ~/Templates was replaced, or its mode changed (it watches the old)"
    if not now.windows <= fresh.windows:
        return "a menu, popover or dialog of theirs was opened"
    if now.shown != fresh.shown:
        return "their windows are not the ones shown when new"
    if now.digest != fresh.digest:
        return "they look different (moved, selected, or another file shown)"
    return None
