"""Key names: pyautogui's vocabulary, common aliases, and hotkey splitting.

Every key that reaches a typed action is a canonical pyautogui name from
``osworld_gym.guest.protocol.KEY_NAMES`` (lower case; single characters as themselves), so
the guest, the pyautogui code generator and OSWorld's ``computer_13`` checker all accept it.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from osworld_gym.errors import ActionError
from osworld_gym.guest.protocol import KEY_NAMES

logger = logging.getLogger(__name__)

__all__ = ["KEY_ALIASES", "KEY_NAMES", "MAX_HOTKEY_KEYS", "normalize_key", "split_hotkey"]

MAX_HOTKEY_KEYS = 8  # the guest protocol's bound on one chord

_KEYS = frozenset(KEY_NAMES)

# Names that models write for keys pyautogui spells differently (browser `KeyboardEvent.key`
# names, X11 keysyms, spelled-out punctuation). Every target must be a pyautogui name.
KEY_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "arrowup": "up",
        "arrowdown": "down",
        "arrowleft": "left",
        "arrowright": "right",
        "arrow_up": "up",
        "arrow_down": "down",
        "arrow_left": "left",
        "arrow_right": "right",
        "control": "ctrl",
        "ctrl_l": "ctrlleft",
        "ctrl_r": "ctrlright",
        "alt_l": "altleft",
        "alt_r": "altright",
        "shift_l": "shiftleft",
        "shift_r": "shiftright",
        "cmd": "command",
        "super": "win",
        "meta": "win",
        "windows": "win",
        "page_up": "pageup",
        "page_down": "pagedown",
        "spacebar": "space",
        "ins": "insert",
        "caps_lock": "capslock",
        "num_lock": "numlock",
        "scroll_lock": "scrolllock",
        "print_screen": "printscreen",
        "plus": "+",
        "minus": "-",
        "comma": ",",
        "period": ".",
        "slash": "/",
        "backslash": "\\",
        "semicolon": ";",
        "equal": "=",
        "equals": "=",
    }
)
assert set(KEY_ALIASES.values()) <= _KEYS, "every alias must name a pyautogui key"

_SUGGESTION_POOL = tuple(sorted({k for k in KEY_NAMES if len(k) > 1} | set(KEY_ALIASES)))
_PLUS_SEPARATED = re.compile(r"\S\+|\+\S| \+ ")
_PLUS_SPLIT = re.compile(r"\s*\+\s*")


def normalize_key(name: object) -> str:
    """Return the canonical pyautogui name of a key.

    Case does not matter for named keys; a single upper-case ASCII letter means its key (the
    chord ``ctrl+A`` is ``ctrl+a``). Aliases such as ``ArrowLeft`` or ``Control`` are mapped.

    Args:
        name: The key as a model or user wrote it.

    Returns:
        The pyautogui key name.

    Raises:
        ActionError: ``name`` is not a key; the message suggests the closest names.

    Example:
        >>> normalize_key("Enter"), normalize_key("ArrowLeft"), normalize_key("A")
        ('enter', 'left', 'a')
    """
    if not isinstance(name, str) or not name:
        raise ActionError(f"a key must be a non-empty string, got {name!r}")
    if len(name) == 1:
        key = name.lower() if name.isascii() and name.isalpha() else name
        if key in _KEYS:
            return key
    lowered = name.strip().lower()
    if lowered in _KEYS:
        return lowered
    alias = KEY_ALIASES.get(lowered.replace("-", "_").replace(" ", "_"))
    if alias is not None:
        return alias
    raise ActionError(_unknown_key_message(name))


def _unknown_key_message(name: str) -> str:
    close = difflib.get_close_matches(name.strip().lower(), _SUGGESTION_POOL, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    shown = name if len(name) <= 40 else name[:37] + "..."
    return (
        f"unknown key {shown!r}{hint} (keys are pyautogui key names, "
        "see osworld_gym.guest.protocol.KEY_NAMES)"
    )


def normalize_keys(names: Iterable[object]) -> tuple[str, ...]:
    """Normalise a chord of keys, checking its size.

    Raises:
        ActionError: a key is unknown, or the chord has no key or more than
            ``MAX_HOTKEY_KEYS``.

    Example:
        >>> normalize_keys(["Ctrl", "Shift", "T"])
        ('ctrl', 'shift', 't')
    """
    keys = tuple(normalize_key(name) for name in names)
    if not 1 <= len(keys) <= MAX_HOTKEY_KEYS:
        raise ActionError(f"a hotkey needs 1 to {MAX_HOTKEY_KEYS} keys, got {len(keys)}")
    return keys


def split_hotkey(text: str) -> tuple[str, ...]:
    """Split a chord written as one string (``'ctrl c'``, ``'Ctrl+Shift+T'``) into keys.

    Keys are separated by white space, or by ``+`` when the string uses it as a separator (a
    lone ``+``, or one at the end after a separator, is the plus key itself).

    Raises:
        ActionError: a key is unknown or the chord is empty or too long.

    Example:
        >>> split_hotkey("ctrl c"), split_hotkey("Ctrl+Shift+T"), split_hotkey("ctrl++")
        (('ctrl', 'c'), ('ctrl', 'shift', 't'), ('ctrl', '+'))
    """
    stripped = text.strip()
    if len(stripped) > 1 and _PLUS_SEPARATED.search(stripped):
        parts: list[str] = []
        for piece in _PLUS_SPLIT.split(stripped):
            if piece:
                parts.extend(piece.split())
            elif not parts or parts[-1] != "+":
                parts.append("+")  # an empty piece: this '+' is the key, not a separator
    else:
        parts = stripped.split() or ([text] if text else [])
    return normalize_keys(parts)
