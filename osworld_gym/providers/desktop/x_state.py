"""The X server state an episode can change, read and restored on a ``local`` light reset.

A light reset keeps the desktop's X server. Whatever a program of the last episode set on it
would otherwise reach the next one: a keymap change (``xmodmap``, ``setxkbmap``) that turns
``banana`` into ``bbnbnb``, swapped mouse buttons, ``xset`` settings, X resources (``xrdb``),
cut buffers and other root-window properties, an opened access list (``xhost +``), a changed
font path. ``read()`` takes all of it in a few round trips; ``restore()`` puts back what a
request can, and names what it could not (the caller then starts a new X server);
``release_input()`` lets go of held keys and buttons first, ``centre_pointer()`` puts the
pointer where a new server has it.

Not covered: XKB's own controls and state beyond the core mapping (python-xlib has no XKB),
which a program changes only through XKB requests. The screen size (``xrandr --fb``) is set
back through RandR.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from typing import Any

logger = logging.getLogger(__name__)

# Root-window properties the window manager and the session keep (the window manager's are
# compared by its own freshness check, and the session rewrites its own when it restarts).
_SESSION_PREFIXES = ("_NET_", "_OB_", "WM_", "_XKB_RULES_NAMES")
# Selections a program of the last episode may still own through a kept client.
_SELECTIONS = ("PRIMARY", "SECONDARY", "CLIPBOARD")


@dataclass(frozen=True)
class XServerState:
    """What an episode can change on an X server (see the module doc).

    Attributes:
        keyboard_mapping: Keysyms of every keycode.
        modifier_mapping: Keycodes of each modifier.
        pointer_mapping: Logical button of each physical one.
        keyboard_control: Key click, bell, global and per-key auto-repeat, LEDs.
        pointer_control: Acceleration and threshold.
        screen_saver: Timeout, interval, blanking and exposures.
        font_path: The server's font path.
        access: Whether access control is on, and the hosts let in.
        screen_size: Width and height of the screen in pixels.
        crtcs: Each RandR CRTC's (id, x, y, mode, rotation, outputs): ``xrandr --output
            screen --off`` turns the only one off (empty when the server has no RandR).
        root_properties: Root-window properties other than the session's, by name:
            (type, format, value).
        selection_owners: Owner window of each selection (0: none).
    """

    keyboard_mapping: tuple[tuple[int, ...], ...]
    modifier_mapping: tuple[tuple[int, ...], ...]
    pointer_mapping: tuple[int, ...]
    keyboard_control: tuple[Any, ...]
    pointer_control: tuple[int, int, int]
    screen_saver: tuple[int, int, int, int]
    font_path: tuple[str, ...]
    access: tuple[int, tuple[tuple[int, bytes], ...]]
    screen_size: tuple[int, int]
    crtcs: tuple[tuple[int, int, int, int, int, tuple[int, ...]], ...]
    root_properties: tuple[tuple[str, tuple[int, int, Any]], ...]
    selection_owners: tuple[int, ...]

    def differences(self, other: XServerState) -> list[str]:
        """Names of the fields in which ``other`` differs from this state."""
        return [f.name for f in fields(self) if getattr(self, f.name) != getattr(other, f.name)]


def _is_session_property(name: str) -> bool:
    return name.startswith(_SESSION_PREFIXES) or name == "AT_SPI_BUS"


def _value(raw: Any) -> Any:
    if isinstance(raw, (bytes, str)):
        return raw
    return tuple(int(v) for v in raw)


def _root_properties(conn: Any) -> tuple[tuple[str, tuple[int, int, Any]], ...]:
    from Xlib import X

    root = conn.screen().root
    found = []
    for atom in root.list_properties():
        name = conn.get_atom_name(atom)
        if _is_session_property(name):
            continue
        prop = root.get_full_property(atom, X.AnyPropertyType)
        if prop is not None:
            found.append((name, (int(prop.property_type), int(prop.format), _value(prop.value))))
    return tuple(sorted(found))


def read(conn: Any) -> XServerState:
    """The state of ``conn``'s X server (a dozen round trips, a few ms)."""
    setup = conn.display.info
    first = setup.min_keycode
    count = setup.max_keycode - first + 1
    keyboard = conn.get_keyboard_control()
    pointer = conn.get_pointer_control()
    saver = conn.get_screen_saver()
    hosts = conn.list_hosts()
    screen = conn.screen()
    return XServerState(
        keyboard_mapping=tuple(tuple(k) for k in conn.get_keyboard_mapping(first, count)),
        modifier_mapping=tuple(tuple(m) for m in conn.get_modifier_mapping()),
        pointer_mapping=tuple(conn.get_pointer_mapping()),
        keyboard_control=(
            keyboard.global_auto_repeat,
            keyboard.key_click_percent,
            keyboard.bell_percent,
            keyboard.bell_pitch,
            keyboard.bell_duration,
            keyboard.led_mask,
            tuple(keyboard.auto_repeats),
        ),
        pointer_control=(pointer.accel_num, pointer.accel_denom, pointer.threshold),
        screen_saver=(saver.timeout, saver.interval, saver.prefer_blanking, saver.allow_exposures),
        font_path=tuple(conn.get_font_path()),
        access=(
            int(hosts.mode),
            tuple(sorted((int(h.family), bytes(h.name)) for h in hosts.hosts)),
        ),
        # The root's geometry, not the connection's setup: the size may have changed since.
        screen_size=_screen_size(screen.root),
        crtcs=_crtcs(conn),
        root_properties=_root_properties(conn),
        selection_owners=tuple(
            _owner_id(conn.get_selection_owner(conn.intern_atom(name))) for name in _SELECTIONS
        ),
    )


def _owner_id(owner: Any) -> int:
    return owner if isinstance(owner, int) else int(owner.id)


@dataclass(frozen=True)
class Restoration:
    """What ``restore()`` did.

    Attributes:
        changed: The fields that differed from the fresh state.
        left: Those that still differ (empty when the server is as fresh).
    """

    changed: list[str]
    left: list[str]


def restore(conn: Any, fresh: XServerState) -> Restoration:
    """Put ``conn``'s X server back into the ``fresh`` state where a request can.

    Held keys and buttons must be released first (a modifier mapping does not change while one
    of its keys is down).
    """
    now = read(conn)
    changed = fresh.differences(now)
    if not changed:
        return Restoration([], [])
    logger.info("restoring the X server's %s", ", ".join(changed))
    for name in changed:
        _RESTORERS.get(name, _nothing)(conn, fresh, now)
    conn.sync()
    return Restoration(changed, fresh.differences(read(conn)))


def _nothing(conn: Any, fresh: XServerState, now: XServerState) -> None:
    """Fields no request restores: the caller restarts the server."""


def _screen_size(root: Any) -> tuple[int, int]:
    geometry = root.get_geometry()
    return geometry.width, geometry.height


def _crtcs(conn: Any) -> tuple[tuple[int, int, int, int, int, tuple[int, ...]], ...]:
    if not conn.has_extension("RANDR"):
        return ()
    from Xlib.ext import randr  # noqa: F401 - registers the RandR requests on the connection

    resources = conn.screen().root.xrandr_get_screen_resources()
    found = []
    for crtc in resources.crtcs:
        info = conn.xrandr_get_crtc_info(crtc, resources.config_timestamp)
        found.append((crtc, info.x, info.y, info.mode, info.rotation, tuple(info.outputs)))
    return tuple(found)


def _crtcs_restore(conn: Any, fresh: XServerState, now: XServerState) -> None:
    """Set each CRTC as it was (after the screen size, which a CRTC must fit in)."""
    timestamp = conn.screen().root.xrandr_get_screen_resources().config_timestamp
    for crtc, x, y, mode, rotation, outputs in fresh.crtcs:
        conn.xrandr_set_crtc_config(crtc, timestamp, x, y, mode, rotation, list(outputs))


def set_refresh_rate(conn: Any, hz: int) -> bool:
    """Show the screen through a mode of its own size refreshed ``hz`` times a second.

    Xvfb's own mode has no refresh rate, and a compositing window manager (GNOME Shell) then
    paints at most 60 frames a second: a change waits up to 17 ms for the next frame. There is
    no display to keep up with, so a faster mode only shortens that wait. The mode is part of
    the server's fresh state (``crtcs``), restored after an episode changed it.

    Returns:
        False where the server has no RandR, or no CRTC to set.
    """
    if not conn.has_extension("RANDR"):
        return False
    from Xlib.ext import randr  # noqa: F401 - registers the RandR requests on the connection

    root = conn.screen().root
    width, height = _screen_size(root)
    resources = root.xrandr_get_screen_resources()
    crtcs = [
        (crtc, info)
        for crtc in resources.crtcs
        if (info := conn.xrandr_get_crtc_info(crtc, resources.config_timestamp)).outputs
    ]
    if not crtcs:
        return False
    name = f"{width}x{height}_{hz}"
    # Made once per server: a session started again on it (an image's reset) finds it there.
    mode = _mode_named(resources, name)
    if mode is None:
        mode = _create_mode(root, name, width, height, hz)
    crtc, info = crtcs[0]
    for output in info.outputs:
        conn.xrandr_add_output_mode(output, mode)
    conn.xrandr_set_crtc_config(
        crtc, resources.config_timestamp, info.x, info.y, mode, info.rotation, list(info.outputs)
    )
    conn.sync()
    return True


def _mode_named(resources: Any, name: str) -> int | None:
    """The ID of the server's mode called ``name`` (the names are one string, in mode order)."""
    offset = 0
    for mode in resources.modes:
        if resources.mode_names[offset : offset + mode.name_length] == name:
            return int(mode.id)
        offset += mode.name_length
    return None


def _create_mode(root: Any, name: str, width: int, height: int, hz: int) -> int:
    h_total, v_total = width + 80, height + 20  # some blanking, as a real mode has
    return root.xrandr_create_mode(
        {
            "id": 0,
            "width": width,
            "height": height,
            "dot_clock": h_total * v_total * hz,
            "h_sync_start": width + 10,
            "h_sync_end": width + 20,
            "h_total": h_total,
            "h_skew": 0,
            "v_sync_start": height + 5,
            "v_sync_end": height + 10,
            "v_total": v_total,
            "name_length": len(name),
            "flags": 0,
        },
        name,
    ).mode


# The desktop's X server runs at 96 dpi (LocalDesktop._start_xvfb): RandR wants the size in
# millimetres with a new screen size, rounded as Xvfb rounds it when it starts.
_DPI = 96


def _millimetres(pixels: int) -> int:
    return (pixels * 254 + _DPI * 5) // (_DPI * 10)


def _screen_size_restore(conn: Any, fresh: XServerState, now: XServerState) -> None:
    from Xlib.ext import randr  # noqa: F401 - registers the RandR requests on the connection

    width, height = fresh.screen_size
    conn.screen().root.xrandr_set_screen_size(
        width, height, _millimetres(width), _millimetres(height)
    )


def _keyboard_mapping(conn: Any, fresh: XServerState, now: XServerState) -> None:
    """Rewrite the keycodes that differ, one by one.

    The keys the guest mapped to type characters the keymap lacks (spare keycodes, empty when
    fresh) come back exactly; a remapped key of the layout may not (XKB derives the core map
    again), and the caller then starts a new server.
    """
    first = conn.display.info.min_keycode
    for index, (was, row) in enumerate(
        zip(fresh.keyboard_mapping, now.keyboard_mapping, strict=True)
    ):
        if was != row:
            conn.change_keyboard_mapping(first + index, [was])


def _modifier_mapping(conn: Any, fresh: XServerState, now: XServerState) -> None:
    conn.set_modifier_mapping([list(keys) for keys in fresh.modifier_mapping])


def _pointer_mapping(conn: Any, fresh: XServerState, now: XServerState) -> None:
    conn.set_pointer_mapping(list(fresh.pointer_mapping))


def _keyboard_control(conn: Any, fresh: XServerState, now: XServerState) -> None:
    from Xlib import X

    repeat, click, bell, pitch, duration, leds, _per_key = fresh.keyboard_control
    conn.change_keyboard_control(
        key_click_percent=click,
        bell_percent=bell,
        bell_pitch=pitch,
        bell_duration=duration,
        auto_repeat_mode=X.AutoRepeatModeOn if repeat else X.AutoRepeatModeOff,
    )
    for led in range(1, 33):
        mode = X.LedModeOn if leds & (1 << (led - 1)) else X.LedModeOff
        conn.change_keyboard_control(led=led, led_mode=mode)
    # Per-key auto-repeat is left as it is: when it differs the caller restarts the server.


def _pointer_control(conn: Any, fresh: XServerState, now: XServerState) -> None:
    numerator, denominator, threshold = fresh.pointer_control
    conn.change_pointer_control(accel=(numerator, denominator), threshold=threshold)


def _screen_saver(conn: Any, fresh: XServerState, now: XServerState) -> None:
    conn.set_screen_saver(*fresh.screen_saver)


def _font_path(conn: Any, fresh: XServerState, now: XServerState) -> None:
    conn.set_font_path(list(fresh.font_path))


def _access(conn: Any, fresh: XServerState, now: XServerState) -> None:
    from Xlib import X

    mode, hosts = fresh.access
    conn.set_access_control(X.EnableAccess if mode else X.DisableAccess)
    for family, name in set(now.access[1]) - set(hosts):
        conn.change_hosts(X.HostDelete, family, name)
    for family, name in set(hosts) - set(now.access[1]):
        conn.change_hosts(X.HostInsert, family, name)


def _root_properties_restore(conn: Any, fresh: XServerState, now: XServerState) -> None:
    root = conn.screen().root
    wanted = dict(fresh.root_properties)
    for name, value in now.root_properties:
        if name not in wanted:
            root.delete_property(conn.intern_atom(name))
        elif wanted[name] != value:
            kind, size, data = wanted[name]
            root.change_property(conn.intern_atom(name), kind, size, data)
    for name, (kind, size, data) in wanted.items():
        if name not in dict(now.root_properties):
            root.change_property(conn.intern_atom(name), kind, size, data)


def _selection_owners(conn: Any, fresh: XServerState, now: XServerState) -> None:
    from Xlib import X
    from Xlib.protocol import request

    for name, owner in zip(_SELECTIONS, fresh.selection_owners, strict=True):
        if owner == 0:
            request.SetSelectionOwner(
                display=conn.display,
                window=X.NONE,
                selection=conn.intern_atom(name),
                time=X.CurrentTime,
            )


_RESTORERS = {
    "keyboard_mapping": _keyboard_mapping,
    "modifier_mapping": _modifier_mapping,
    "pointer_mapping": _pointer_mapping,
    "keyboard_control": _keyboard_control,
    "pointer_control": _pointer_control,
    "screen_saver": _screen_saver,
    "font_path": _font_path,
    "access": _access,
    "root_properties": _root_properties_restore,
    "selection_owners": _selection_owners,
    "screen_size": _screen_size_restore,
    "crtcs": _crtcs_restore,
}


def release_input(conn: Any) -> None:
    """Release held keys and buttons, clear the root background.

    What ``osworld_gym.guest.x11.X11Session.release_all()`` does, on the reset's connection:
    an ``X11Session`` of its own costs ~10 ms of CPU (its keyboard-mapping scan).
    """
    from Xlib import X
    from Xlib.ext import xtest

    screen = conn.screen()
    root = screen.root
    for index, byte in enumerate(conn.query_keymap()):
        for bit in range(8):
            if byte & (1 << bit):
                xtest.fake_input(conn, X.KeyRelease, index * 8 + bit)
    mask = root.query_pointer().mask
    for number, button in enumerate((X.Button1Mask, X.Button2Mask, X.Button3Mask), 1):
        if mask & button:
            xtest.fake_input(conn, X.ButtonRelease, number)
    root.change_attributes(background_pixel=screen.black_pixel)
    root.clear_area()
    conn.sync()


def centre_pointer(conn: Any) -> None:
    """Move the pointer to the middle of the screen as it is now (after ``restore()``).

    The size comes from the root's geometry: the connection's own record is the size the
    screen had when it was opened, which an episode may have changed (``xrandr --fb``).
    """
    from Xlib import X
    from Xlib.ext import xtest

    width, height = _screen_size(conn.screen().root)
    xtest.fake_input(conn, X.MotionNotify, x=width // 2, y=height // 2)
    conn.sync()
