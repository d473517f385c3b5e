"""X11 access for the guest server: XTEST input, keysym mapping and EWMH windows.

Everything goes through one python-xlib connection guarded by a lock (python-xlib is not
thread-safe and input events must not interleave). XTEST injects events in-process in about
0.2 ms, against about 100 ms for an ``xdotool`` subprocess.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from Xlib import XK, X, Xatom, display, error
from Xlib.ext import xtest
from Xlib.protocol import event

logger = logging.getLogger(__name__)

_BUTTONS = {"left": 1, "middle": 2, "right": 3}
# Scroll is buttons 4/5 (up/down) and 6/7 (left/right) on X11.
_SCROLL_UP, _SCROLL_DOWN, _SCROLL_LEFT, _SCROLL_RIGHT = 4, 5, 6, 7
_DRAG_STEPS = 10  # intermediate motion events so apps see a drag, not a jump

# pyautogui key name -> X keysym name, for names that are not single characters.
_NAMED_KEYSYMS: dict[str, str] = {
    "\t": "Tab",
    "\n": "Return",
    "\r": "Return",
    " ": "space",
    "accept": "Execute",
    "add": "KP_Add",
    "alt": "Alt_L",
    "altleft": "Alt_L",
    "altright": "Alt_R",
    "apps": "Menu",
    "backspace": "BackSpace",
    "browserback": "XF86_Back",
    "browserfavorites": "XF86_Favorites",
    "browserforward": "XF86_Forward",
    "browserhome": "XF86_HomePage",
    "browserrefresh": "XF86_Refresh",
    "browsersearch": "XF86_Search",
    "browserstop": "XF86_Stop",
    "capslock": "Caps_Lock",
    "clear": "Clear",
    "convert": "Henkan",
    "ctrl": "Control_L",
    "ctrlleft": "Control_L",
    "ctrlright": "Control_R",
    "decimal": "KP_Decimal",
    "del": "Delete",
    "delete": "Delete",
    "divide": "KP_Divide",
    "down": "Down",
    "end": "End",
    "enter": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "execute": "Execute",
    "final": "Execute",
    "fn": "XF86_WakeUp",
    "hanguel": "Hangul",
    "hangul": "Hangul",
    "hanja": "Hangul_Hanja",
    "help": "Help",
    "home": "Home",
    "insert": "Insert",
    "junja": "Hangul_Jeonja",
    "kana": "Katakana",
    "kanji": "Kanji",
    "launchapp1": "XF86_Launch1",
    "launchapp2": "XF86_Launch2",
    "launchmail": "XF86_Mail",
    "launchmediaselect": "XF86_AudioMedia",
    "left": "Left",
    "modechange": "Mode_switch",
    "multiply": "KP_Multiply",
    "nexttrack": "XF86_AudioNext",
    "nonconvert": "Muhenkan",
    "numlock": "Num_Lock",
    "pagedown": "Page_Down",
    "pageup": "Page_Up",
    "pause": "Pause",
    "pgdn": "Page_Down",
    "pgup": "Page_Up",
    "playpause": "XF86_AudioPlay",
    "prevtrack": "XF86_AudioPrev",
    "print": "Print",
    "printscreen": "Print",
    "prntscrn": "Print",
    "prtsc": "Print",
    "prtscr": "Print",
    "return": "Return",
    "right": "Right",
    "scrolllock": "Scroll_Lock",
    "select": "Select",
    "separator": "KP_Separator",
    "shift": "Shift_L",
    "shiftleft": "Shift_L",
    "shiftright": "Shift_R",
    "sleep": "XF86_Sleep",
    "space": "space",
    "stop": "XF86_Stop",
    "subtract": "KP_Subtract",
    "tab": "Tab",
    "up": "Up",
    "volumedown": "XF86_AudioLowerVolume",
    "volumemute": "XF86_AudioMute",
    "volumeup": "XF86_AudioRaiseVolume",
    "win": "Super_L",
    "winleft": "Super_L",
    "winright": "Super_R",
    "yen": "yen",
    "command": "Super_L",
    "option": "Alt_L",
    "optionleft": "Alt_L",
    "optionright": "Alt_R",
}
_NAMED_KEYSYMS.update({f"f{n}": f"F{n}" for n in range(1, 25)})
_NAMED_KEYSYMS.update({f"num{n}": f"KP_{n}" for n in range(10)})


# python-xlib loads only Latin keysym names by default; the media and Hangul names that
# pyautogui keys map to live in these groups (loading is an idempotent cache fill).
for _group in ("xf86", "korean"):
    XK.load_keysym_group(_group)


def keysym_for_char(char: str) -> int:
    """Return the X keysym that types ``char`` (Latin-1 directly, else the Unicode range)."""
    code = ord(char)
    if char in "\n\r":
        return XK.string_to_keysym("Return")
    if char == "\t":
        return XK.string_to_keysym("Tab")
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


def keysym_for_key(name: str) -> int:
    """Return the keysym of a pyautogui key name (already validated by the protocol)."""
    if name in _NAMED_KEYSYMS:
        keysym = XK.string_to_keysym(_NAMED_KEYSYMS[name])
        if keysym:
            return keysym
    if len(name) == 1:
        return keysym_for_char(name)
    raise ValueError(f"no X keysym for key {name!r}")


@dataclass(frozen=True)
class WindowInfo:
    """A top-level client window as the window manager lists it."""

    window_id: int
    title: str
    wm_class: tuple[str, ...]
    width: int
    height: int


class X11Session:
    """One X connection for input injection and window queries on a display.

    Args:
        display_name: The X display, e.g. ``":3"``.
    """

    def __init__(self, display_name: str) -> None:
        self.display_name = display_name
        self._lock = threading.RLock()
        self._display = display.Display(display_name)
        if not self._display.has_extension("XTEST"):
            raise RuntimeError(f"X display {display_name} lacks the XTEST extension")
        self._root = self._display.screen().root
        self._shift_keycode = self._display.keysym_to_keycode(XK.string_to_keysym("Shift_L"))
        self._scratch: OrderedDict[int, int] = OrderedDict()  # keycode -> keysym, LRU order
        self._free_keycodes = self._find_free_keycodes()
        self.release_all()

    def release_all(self) -> None:
        """Release every pressed key and mouse button (a previous client may have left some)."""
        with self._lock:
            keymap = self._display.query_keymap()
            for byte_index, byte in enumerate(keymap):
                for bit in range(8):
                    if byte & (1 << bit):
                        xtest.fake_input(self._display, X.KeyRelease, byte_index * 8 + bit)
            mask = self._root.query_pointer().mask
            for number, button_mask in enumerate((X.Button1Mask, X.Button2Mask, X.Button3Mask), 1):
                if mask & button_mask:
                    xtest.fake_input(self._display, X.ButtonRelease, number)
            self._display.sync()

    # --- screen and pointer ------------------------------------------------------------

    def screen_size(self) -> tuple[int, int]:
        """Return the root window's (width, height) in pixels."""
        screen = self._display.screen()
        return screen.width_in_pixels, screen.height_in_pixels

    def current_screen_size(self) -> tuple[int, int]:
        """The root window's (width, height) now: a round trip (``xrandr --fb`` changes it)."""
        with self._lock:
            geometry = self._root.get_geometry()
        return geometry.width, geometry.height

    def cursor_position(self) -> tuple[int, int]:
        """Return the pointer position on the root window."""
        with self._lock:
            reply = self._root.query_pointer()
        return reply.root_x, reply.root_y

    # --- input ---------------------------------------------------------------------------

    def move(self, x: int, y: int) -> None:
        """Move the pointer to (x, y), clamped to the screen."""
        width, height = self.screen_size()
        x, y = min(max(x, 0), width - 1), min(max(y, 0), height - 1)
        with self._lock:
            xtest.fake_input(self._display, X.MotionNotify, x=x, y=y)

    def button(self, button: str | int, press: bool) -> None:
        """Press or release a mouse button (``"left"``, ``"middle"``, ``"right"`` or 1-7)."""
        number = _BUTTONS[button] if isinstance(button, str) else button
        with self._lock:
            xtest.fake_input(self._display, X.ButtonPress if press else X.ButtonRelease, number)

    def click(self, button: str | int, count: int = 1) -> None:
        """Click ``count`` times at the current pointer position."""
        for _ in range(count):
            self.button(button, True)
            self.button(button, False)

    def drag(self, start: tuple[int, int], end: tuple[int, int], button: str) -> None:
        """Press at ``start``, move to ``end`` in steps, release."""
        self.move(*start)
        self.button(button, True)
        self.sync()
        for step in range(1, _DRAG_STEPS + 1):
            x = start[0] + (end[0] - start[0]) * step // _DRAG_STEPS
            y = start[1] + (end[1] - start[1]) * step // _DRAG_STEPS
            self.move(x, y)
            self.sync()
        self.button(button, False)

    def scroll(self, dx: int, dy: int) -> None:
        """Scroll by wheel clicks: ``dy > 0`` up, ``dx > 0`` right (pyautogui's convention)."""
        vertical = _SCROLL_UP if dy > 0 else _SCROLL_DOWN
        horizontal = _SCROLL_RIGHT if dx > 0 else _SCROLL_LEFT
        for button, count in ((vertical, abs(dy)), (horizontal, abs(dx))):
            for _ in range(count):
                self.click(button)

    def key(self, keysym: int, press: bool) -> None:
        """Press or release the key that produces ``keysym`` (as a key, without shift)."""
        keycode, _ = self._keycode_for(keysym)
        with self._lock:
            xtest.fake_input(self._display, X.KeyPress if press else X.KeyRelease, keycode)

    def type_text(self, text: str) -> None:
        """Type ``text``; characters without a key get a spare keycode mapped on the fly."""
        for char in text:
            keycode, level = self._keycode_for(keysym_for_char(char))
            with self._lock:
                if level == 1:
                    xtest.fake_input(self._display, X.KeyPress, self._shift_keycode)
                xtest.fake_input(self._display, X.KeyPress, keycode)
                xtest.fake_input(self._display, X.KeyRelease, keycode)
                if level == 1:
                    xtest.fake_input(self._display, X.KeyRelease, self._shift_keycode)

    def sync(self) -> None:
        """Block until the X server has processed every request sent so far."""
        with self._lock:
            self._display.sync()

    def _find_free_keycodes(self) -> list[int]:
        info = self._display.display.info
        first, count = info.min_keycode, info.max_keycode - info.min_keycode + 1
        mapping = self._display.get_keyboard_mapping(first, count)
        return [first + i for i, syms in enumerate(mapping) if not any(syms)]

    def _keycode_for(self, keysym: int) -> tuple[int, int]:
        """Return (keycode, shift level 0/1) producing ``keysym``, remapping a spare if needed."""
        with self._lock:
            levels = [(code, idx) for code, idx in self._display.keysym_to_keycodes(keysym)]
            usable = sorted((idx, code) for code, idx in levels if idx in (0, 1))
            if usable:
                idx, code = usable[0]
                if code in self._scratch:
                    self._scratch.move_to_end(code)
                return code, idx
            return self._map_scratch(keysym), 0

    def _map_scratch(self, keysym: int) -> int:
        # Mappings are kept (not restored after each key) because clients re-read the keymap
        # lazily after MappingNotify; restoring at once can make them see the old symbol.
        if self._free_keycodes:
            keycode = self._free_keycodes.pop()
        elif self._scratch:
            keycode, _ = self._scratch.popitem(last=False)
        else:
            raise RuntimeError("no spare keycode to type a character that has no key")
        self._display.change_keyboard_mapping(keycode, [(keysym, keysym)])
        self._display.sync()
        self._scratch[keycode] = keysym
        return keycode

    # --- windows (EWMH) --------------------------------------------------------------------

    def windows(self) -> list[WindowInfo]:
        """List the window manager's client windows (``_NET_CLIENT_LIST``), oldest first."""
        with self._lock:
            atom = self._display.intern_atom("_NET_CLIENT_LIST")
            prop = self._root.get_full_property(atom, Xatom.WINDOW)
            ids = list(prop.value) if prop is not None else []
            return [info for info in map(self._window_info, ids) if info is not None]

    def _window_info(self, window_id: int) -> WindowInfo | None:
        window = self._display.create_resource_object("window", window_id)
        try:
            name_prop = window.get_full_property(
                self._display.intern_atom("_NET_WM_NAME"), self._display.intern_atom("UTF8_STRING")
            )
            title = (
                _decode(name_prop.value) if name_prop is not None else _decode(window.get_wm_name())
            )
            wm_class = tuple(window.get_wm_class() or ())
            geometry = window.get_geometry()
        except (error.BadWindow, error.BadDrawable):
            return None  # the window closed while we were looking at it
        return WindowInfo(window_id, title, wm_class, geometry.width, geometry.height)

    def find_windows(
        self, name: str, *, strict: bool = False, by_class: bool = False
    ) -> list[WindowInfo]:
        """Find windows as ``wmctrl`` does: a case-insensitive substring of the title.

        Args:
            name: Title (or class, with ``by_class``) to look for.
            strict: Match the whole string, case-sensitively (``wmctrl -F``).
            by_class: Match ``WM_CLASS`` instead of the title (``wmctrl -x``).
        """

        def matches(candidate: str) -> bool:
            return candidate == name if strict else name.lower() in candidate.lower()

        found = []
        for info in self.windows():
            candidates = info.wm_class + (".".join(info.wm_class),) if by_class else (info.title,)
            if any(matches(c) for c in candidates):
                found.append(info)
        return found

    def window_rect(self, window_id: int) -> tuple[int, int, int, int] | None:
        """(x, y, width, height) of a window on the root window; None if it is gone."""
        with self._lock:
            window = self._display.create_resource_object("window", window_id)
            try:
                geometry = window.get_geometry()
                origin = window.translate_coords(self._root, 0, 0)
            except (error.BadWindow, error.BadDrawable):
                return None
        return -origin.x, -origin.y, geometry.width, geometry.height

    def activate(self, window_id: int) -> None:
        """Ask the window manager to raise and focus a window (``_NET_ACTIVE_WINDOW``)."""
        self._client_message(window_id, "_NET_ACTIVE_WINDOW", [2, X.CurrentTime, 0, 0, 0])

    def close_window(self, window_id: int) -> None:
        """Ask the window manager to close a window politely (``_NET_CLOSE_WINDOW``)."""
        self._client_message(window_id, "_NET_CLOSE_WINDOW", [X.CurrentTime, 2, 0, 0, 0])

    def active_window(self) -> int | None:
        """Return the id of the focused client window, if the window manager reports one."""
        with self._lock:
            prop = self._root.get_full_property(
                self._display.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW
            )
        return (
            int(prop.value[0]) if prop is not None and len(prop.value) and prop.value[0] else None
        )

    def window_manager(self) -> int | None:
        """The check window of the running EWMH window manager, None when none runs.

        A window manager names a window of its own in the root's ``_NET_SUPPORTING_WM_CHECK``
        and on that window itself; the property outlives a window manager that died, the
        window does not.
        """
        with self._lock:
            atom = self._display.intern_atom("_NET_SUPPORTING_WM_CHECK")
            prop = self._root.get_full_property(atom, Xatom.WINDOW)
            if prop is None or not len(prop.value):
                return None
            window_id = int(prop.value[0])
            window = self._display.create_resource_object("window", window_id)
            try:
                own = window.get_full_property(atom, Xatom.WINDOW)
            except (error.BadWindow, error.BadDrawable):
                return None
        if own is None or not len(own.value) or int(own.value[0]) != window_id:
            return None
        return window_id

    def _client_message(self, window_id: int, message: str, data: list[int]) -> None:
        with self._lock:
            window = self._display.create_resource_object("window", window_id)
            msg = event.ClientMessage(
                window=window, client_type=self._display.intern_atom(message), data=(32, data)
            )
            mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
            self._root.send_event(msg, event_mask=mask)
            self._display.sync()

    def wait_for_window(
        self, predicate: Any, timeout: float, poll: float = 0.1
    ) -> WindowInfo | None:
        """Poll the window list until ``predicate(info)`` holds for one, or the deadline passes."""
        deadline = time.monotonic() + timeout
        while True:
            for info in self.windows():
                if predicate(info):
                    return info
            if time.monotonic() >= deadline:
                return None
            time.sleep(poll)

    def close(self) -> None:
        """Close the X connection."""
        with self._lock:
            self._display.close()


def _decode(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
