"""A local desktop's window manager seen from the X server: is a kept one as fresh as new?

A light reset keeps the window manager when it is (a restart costs ~40-60 ms of its CPU, the X
server's work for it and a sandbox start). These functions read what a window manager shows on
the X server (its selection, its own windows, the EWMH root properties, the root cursor, what
is mapped) and compare it with what it showed when new; the desktop restarts it on any
difference.
"""

from __future__ import annotations

import select
import time
from dataclasses import dataclass
from typing import Any

from Xlib.error import XError

ANSWER_SECONDS = 2.0  # a kept window manager that takes longer to answer is replaced
_PROBE_REPEAT = 0.05  # seconds between requests while a window manager does not answer
# Root-window properties that a window manager keeps and a task can change (EWMH desktops).
# (Not _NET_ACTIVE_WINDOW: openbox leaves it naming the last focused window after that one is
# gone, whether kept or new; with no client left it names nothing that exists.)
WM_PROPERTIES = (
    "_NET_NUMBER_OF_DESKTOPS",
    "_NET_CURRENT_DESKTOP",
    "_NET_SHOWING_DESKTOP",
    "_NET_DESKTOP_NAMES",
    "_NET_DESKTOP_LAYOUT",
    "_NET_WORKAREA",
    "_NET_CLIENT_LIST",
)
# Desktop settings a starting window manager takes over from the root window (openbox keeps the
# desktops' number, names and the current one over its restarts): deleted before one starts on
# a used X server, so it starts from its configuration, as on a new desktop. The work area goes
# too: a killed window manager leaves its own, which would read as the new one's layout.
_INHERITED_PROPERTIES = (
    "_NET_NUMBER_OF_DESKTOPS",
    "_NET_CURRENT_DESKTOP",
    "_NET_DESKTOP_NAMES",
    "_NET_DESKTOP_LAYOUT",
    "_NET_SHOWING_DESKTOP",
    "_NET_ACTIVE_WINDOW",
    "_NET_WORKAREA",
)


@dataclass(frozen=True)
class WindowManagerState:
    """What a window manager shows on the X server, compared to tell a kept one is fresh.

    Attributes:
        owner: The window that owns ``WM_S0``.
        windows: Its own top-level windows (those of the owner's X client): frames, menus,
            popups. Openbox makes new ones when it reconfigures.
        properties: The root window's ``WM_PROPERTIES`` (absent, empty and 0 alike).
        cursor_serial: XFixes serial of the cursor shown with the pointer over the root
            (0 without XFixes).
        shown: Windows mapped on screen (of any client).
    """

    owner: int
    windows: tuple[int, ...]
    properties: tuple[tuple[str, object], ...]
    cursor_serial: int
    shown: tuple[int, ...]


def selection_owner(conn: Any, selection: str = "WM_S0") -> int:
    """The window owning ``selection`` (by default the window manager's), 0 when none does."""
    owner = conn.get_selection_owner(conn.intern_atom(selection))
    return owner if isinstance(owner, int) else int(owner.id)  # X.NONE comes as 0


def _property_value(conn: Any, window: Any, name: str) -> object:
    from Xlib import X

    prop = window.get_full_property(conn.intern_atom(name), X.AnyPropertyType)
    if prop is None:
        return ()
    value = prop.value
    if isinstance(value, (bytes, str)):
        return value
    values = tuple(int(v) for v in value)
    return () if values in ((), (0,)) else values  # 0 and absent alike (desktop 0, not showing)


def read_state(conn: Any) -> WindowManagerState:
    """The window manager's state as seen on ``conn``'s X server (see the class)."""
    from Xlib import X

    root = conn.screen().root
    owner = selection_owner(conn)
    client = ~conn.display.info.resource_id_mask  # resource ids of one client share the rest
    children = root.query_tree().children
    windows = tuple(sorted(w.id for w in children if owner and (w.id & client) == (owner & client)))
    width, height = conn.screen().width_in_pixels, conn.screen().height_in_pixels
    shown = []
    for window in children:
        try:
            if window.get_attributes().map_state != X.IsViewable:
                continue
            geometry = window.get_geometry()
        except XError:  # destroyed meanwhile (its client just died): not shown
            continue
        if (
            geometry.x < width
            and geometry.y < height
            and (geometry.x + geometry.width > 0 and geometry.y + geometry.height > 0)
        ):
            shown.append(window.id)
    properties = root_properties(conn)
    serial = 0
    if conn.has_extension("XFIXES"):
        conn.xfixes_query_version()
        serial = int(conn.xfixes_get_cursor_image(root).cursor_serial)
    return WindowManagerState(owner, windows, properties, serial, tuple(sorted(shown)))


def root_properties(conn: Any) -> tuple[tuple[str, object], ...]:
    """The root window's ``WM_PROPERTIES``, by name (absent, empty and 0 alike)."""
    root = conn.screen().root
    return tuple((name, _property_value(conn, root, name)) for name in WM_PROPERTIES)


def answers(conn: Any, deadline: float) -> bool:
    """Whether the window manager handles a request before ``deadline``.

    ``_NET_REQUEST_FRAME_EXTENTS`` on a window that is never mapped: the window manager sets
    ``_NET_FRAME_EXTENTS`` on it, nothing is shown, and every event it got before is handled.
    The request is sent again every ``_PROBE_REPEAT`` seconds: a window manager that
    has just taken ``WM_S0`` may not listen on the root window yet, and misses it.
    """
    from Xlib import X
    from Xlib.protocol import event

    root = conn.screen().root
    probe = root.create_window(0, 0, 1, 1, 0, X.CopyFromParent, event_mask=X.PropertyChangeMask)
    extents = conn.intern_atom("_NET_FRAME_EXTENTS")
    request = event.ClientMessage(
        window=probe,
        client_type=conn.intern_atom("_NET_REQUEST_FRAME_EXTENTS"),
        data=(32, [0, 0, 0, 0, 0]),
    )
    mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
    try:
        resend = 0.0
        while True:
            now = time.monotonic()
            if now >= resend:
                root.send_event(request, event_mask=mask)
                conn.flush()
                resend = now + _PROBE_REPEAT
            while conn.pending_events():
                e = conn.next_event()
                if e.type == X.PropertyNotify and e.window.id == probe.id and e.atom == extents:
                    return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            select.select([conn], [], [], min(remaining, max(resend - time.monotonic(), 0)))
    finally:
        probe.destroy()
        conn.sync()


def grabs_free(conn: Any) -> bool:
    """Whether no client holds the pointer or keyboard (our grabs succeed and are let go)."""
    from Xlib import X

    root = conn.screen().root
    pointer = root.grab_pointer(
        False, X.ButtonPressMask, X.GrabModeAsync, X.GrabModeAsync, X.NONE, X.NONE, X.CurrentTime
    )
    keyboard = root.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)
    conn.ungrab_pointer(X.CurrentTime)
    conn.ungrab_keyboard(X.CurrentTime)
    conn.sync()
    return pointer == X.GrabSuccess and keyboard == X.GrabSuccess


def difference(fresh: WindowManagerState, now: WindowManagerState) -> str | None:
    """How ``now`` differs from the ``fresh`` state, or None."""
    if now.owner != fresh.owner:
        return "another window manager owns WM_S0"
    # Windows it destroyed since are no sign of staleness: openbox drops a window of its
    # startup moments after it first answers. New ones are: a menu or popup left open, or a
    # reconfiguration, which recreates its windows.
    if not set(now.windows) <= set(fresh.windows):
        return "its windows changed (reconfigured, or a menu or popup was left)"
    for (name, value), (_, was) in zip(now.properties, fresh.properties, strict=True):
        if value != was:
            return f"{name} is {value!r}, was {was!r}"
    if now.cursor_serial != fresh.cursor_serial:
        return "the root cursor changed (a busy cursor: a launch still pending)"
    if not set(now.shown) <= set(fresh.shown):
        return f"windows still shown: {[hex(w) for w in set(now.shown) - set(fresh.shown)]}"
    return None


def forget_desktop_settings(conn: Any) -> None:
    """Delete the root properties a starting window manager would take over."""
    root = conn.screen().root
    for name in _INHERITED_PROPERTIES:
        root.delete_property(conn.intern_atom(name))
    conn.sync()
