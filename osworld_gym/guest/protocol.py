r"""The wire format of the guest's typed-action endpoint, shared by server and client.

The guest server executes these dicts in-process (``POST /actions``); against an official
OSWorld guest, which lacks that endpoint, the client turns the same dicts into pyautogui code
for ``/execute``. Stdlib only: this module runs inside desktops.

A wire action is a JSON object with a ``kind`` and the fields below (``?`` = optional; points
are integer screen pixels; omitted points mean "where the pointer is")::

    click        x?, y?, button ("left"|"middle"|"right"), clicks (1-3)
    double_click x?, y?, button
    right_click  x?, y?
    move         x, y
    drag         x?, y? (start), to_x, to_y (end), button
    scroll       x?, y?, dx (int, >0 right), dy (int, >0 up)  -- pyautogui's sign convention
    type         text (any Unicode; "\n" is Enter, "\t" is Tab)
    hotkey       keys (list of key names, pressed in order, released in reverse)
    press        key, presses (1-100)
    key_down     key
    key_up       key
    mouse_down   x?, y?, button
    mouse_up     x?, y?, button

Key names are pyautogui's (``KEY_NAMES``), matched case-insensitively.

One request's work is bounded (``ActionLimits``): a batch may hold so many actions and
press so many keys in all, and the guest stops between actions once its time budget is spent.
Each guest advertises its limits in ``/health``; the client refuses a batch over them.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

PROTOCOL_VERSION = 1

BUTTONS = ("left", "middle", "right")

# pyautogui 0.9.54's KEY_NAMES, the key vocabulary of OSWorld's pyautogui action space.
KEY_NAMES: tuple[str, ...] = tuple(
    list("\t\n\r !\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~")
    + """accept add alt altleft altright apps backspace browserback browserfavorites
    browserforward browserhome browserrefresh browsersearch browserstop capslock clear convert
    ctrl ctrlleft ctrlright decimal del delete divide down end enter esc escape execute f1 f10
    f11 f12 f13 f14 f15 f16 f17 f18 f19 f2 f20 f21 f22 f23 f24 f3 f4 f5 f6 f7 f8 f9 final fn
    hanguel hangul hanja help home insert junja kana kanji launchapp1 launchapp2 launchmail
    launchmediaselect left modechange multiply nexttrack nonconvert num0 num1 num2 num3 num4
    num5 num6 num7 num8 num9 numlock pagedown pageup pause pgdn pgup playpause prevtrack print
    printscreen prntscrn prtsc prtscr return right scrolllock select separator shift shiftleft
    shiftright sleep space stop subtract tab up volumedown volumemute volumeup win winleft
    winright yen command option optionleft optionright""".split()
)
_KEY_SET = frozenset(KEY_NAMES)

MAX_TEXT_CHARS = 100_000
MAX_PRESSES = 100
MAX_COORD = 1 << 15  # X11 coordinates are 16-bit signed

# kind -> (required fields, optional fields with defaults)
ACTION_FIELDS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "click": ((), {"x": None, "y": None, "button": "left", "clicks": 1}),
    "double_click": ((), {"x": None, "y": None, "button": "left"}),
    "right_click": ((), {"x": None, "y": None}),
    "move": (("x", "y"), {}),
    "drag": (("to_x", "to_y"), {"x": None, "y": None, "button": "left"}),
    "scroll": ((), {"x": None, "y": None, "dx": 0, "dy": 0}),
    "type": (("text",), {}),
    "hotkey": (("keys",), {}),
    "press": (("key",), {"presses": 1}),
    "key_down": (("key",), {}),
    "key_up": (("key",), {}),
    "mouse_down": ((), {"x": None, "y": None, "button": "left"}),
    "mouse_up": ((), {"x": None, "y": None, "button": "left"}),
}
ACTION_KINDS = tuple(ACTION_FIELDS)


class WireActionError(ValueError):
    """A wire action is malformed; the message names the field."""


def normalize_key(key: object) -> str:
    """Return the canonical (lower-case) pyautogui name of ``key``.

    Example:
        >>> normalize_key("Enter")
        'enter'
        >>> normalize_key("C")
        'c'

    Raises:
        WireActionError: ``key`` is not a pyautogui key name.
    """
    if not isinstance(key, str) or not key:
        raise WireActionError(f"key must be a non-empty string, got {key!r}")
    # Case-insensitive like OSWorld's check: "Ctrl", "ENTER" and "C" (in ctrl+C) are accepted.
    name = key if key in _KEY_SET else key.lower()
    if name not in _KEY_SET:
        raise WireActionError(f"unknown key {key!r}; expected a pyautogui key name")
    return name


def _coord(name: str, value: object, optional: bool) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WireActionError(f"{name} must be a number, got {value!r}")
    if value != value or abs(value) >= MAX_COORD:  # NaN or off any X screen
        raise WireActionError(f"{name} out of range: {value!r}")
    return int(round(value))


def _int_in(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise WireActionError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    return value


def validate_action(action: object) -> dict[str, Any]:
    """Check one wire action and return it normalised (defaults filled, keys canonical).

    Example:
        >>> validate_action({"kind": "click", "x": 10.4, "y": 20})
        {'kind': 'click', 'x': 10, 'y': 20, 'button': 'left', 'clicks': 1}

    Raises:
        WireActionError: the action is malformed; the message names the field.
    """
    if not isinstance(action, dict):
        raise WireActionError(f"an action must be an object, got {type(action).__name__}")
    kind = action.get("kind")
    if not isinstance(kind, str) or kind not in ACTION_FIELDS:
        raise WireActionError(f"unknown action kind {kind!r}; expected one of {list(ACTION_KINDS)}")
    required, optional = ACTION_FIELDS[kind]
    unknown = set(action) - {"kind", *required, *optional}
    if unknown:
        raise WireActionError(f"{kind}: unexpected field(s) {sorted(unknown)}")
    missing = [name for name in required if name not in action]
    if missing:
        raise WireActionError(f"{kind}: missing field(s) {missing}")
    out: dict[str, Any] = {"kind": kind}
    for name in (*required, *optional):
        value = action.get(name, optional.get(name))
        out[name] = _validate_field(kind, name, value)
    if (out.get("x") is None) != (out.get("y") is None):
        raise WireActionError(f"{kind}: give both x and y, or neither")
    return out


def _validate_field(kind: str, name: str, value: object) -> Any:
    if name in ("x", "y", "to_x", "to_y"):
        return _coord(name, value, optional=name in ("x", "y") and kind != "move")
    if name == "button":
        if value not in BUTTONS:
            raise WireActionError(f"{kind}: button must be one of {BUTTONS}, got {value!r}")
        return value
    if name == "clicks":
        return _int_in("clicks", value, 1, 3)
    if name == "presses":
        return _int_in("presses", value, 1, MAX_PRESSES)
    if name in ("dx", "dy"):
        return _int_in(name, value, -1000, 1000)
    if name == "text":
        if not isinstance(value, str) or len(value) > MAX_TEXT_CHARS:
            raise WireActionError(f"type: text must be a string of at most {MAX_TEXT_CHARS} chars")
        return value
    if name == "keys":
        if not isinstance(value, list) or not value or len(value) > 8:
            raise WireActionError("hotkey: keys must be a list of 1 to 8 key names")
        return [normalize_key(k) for k in value]
    if name == "key":
        return normalize_key(value)
    raise AssertionError(f"unhandled field {name}")  # ACTION_FIELDS and this function disagree


@dataclass(frozen=True)
class ActionLimits:
    """What one ``POST /actions`` request may ask of the guest.

    The defaults are generous for agents (UI-TARS emits a handful of actions a step, a model's
    whole answer is at most 32,768 characters; a press of every key name is 194 actions) and
    keep one request to seconds: typing costs about 0.12 ms a key through XTEST and a hotkey
    52 ms (its hold), so 50,000 typed keys take about 6 s and 256 hotkeys 13 s on an idle X
    server, within the 30 s budget.

    Attributes:
        max_actions: Actions in one batch at most.
        max_keys: Key presses in one batch at most (``count_keys()``: typed characters,
            hotkey keys, presses, key downs and ups).
        max_seconds: Wall-clock budget of one batch: once spent, the guest runs no further
            action and answers how many ran. Checked between actions, so the last action
            started may end past it (by at most one action's time).
    """

    max_actions: int = 256
    max_keys: int = 50_000
    max_seconds: float = 30.0

    def __post_init__(self) -> None:
        for name in ("max_actions", "max_keys"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        seconds = self.max_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise ValueError(f"max_seconds must be a number, got {seconds!r}")
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(f"max_seconds must be a finite positive number, got {seconds!r}")

    def to_json(self) -> dict[str, Any]:
        """The limits as ``/health`` advertises them."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> ActionLimits:
        """Limits read from ``/health`` (missing fields keep their defaults).

        Raises:
            ValueError: ``data`` is not an object of valid limits.
        """
        if not isinstance(data, dict):
            raise ValueError(f"action limits must be an object, got {type(data).__name__}")
        known = {k: v for k, v in data.items() if k in ("max_actions", "max_keys", "max_seconds")}
        return cls(**known)


class ActionLimitError(WireActionError):
    """A batch asks for more than the guest's ``ActionLimits`` allow.

    Attributes:
        limit: The name of the limit exceeded (``"max_actions"`` or ``"max_keys"``).
        maximum: Its value.
        requested: What the batch asked for.
    """

    def __init__(self, limit: str, maximum: int, requested: int) -> None:
        what = "actions" if limit == "max_actions" else "key presses"
        super().__init__(
            f"the batch holds {requested} {what}; the guest takes at most {maximum} "
            f"({limit}): send fewer"
        )
        self.limit = limit
        self.maximum = maximum
        self.requested = requested


def count_keys(action: dict[str, Any]) -> int:
    """Key presses a validated wire action makes (0 for pointer actions).

    Example:
        >>> count_keys({"kind": "press", "key": "a", "presses": 3})
        3
    """
    kind = action["kind"]
    if kind == "type":
        return len(action["text"])
    if kind == "hotkey":
        return len(action["keys"])
    if kind == "press":
        return int(action["presses"])
    return 1 if kind in ("key_down", "key_up") else 0


def check_limits(batch: list[dict[str, Any]], limits: ActionLimits) -> None:
    """Refuse a validated batch that asks for more than ``limits`` allow.

    Raises:
        ActionLimitError: too many actions, or too many key presses in all.
    """
    if len(batch) > limits.max_actions:
        raise ActionLimitError("max_actions", limits.max_actions, len(batch))
    keys = sum(count_keys(action) for action in batch)
    if keys > limits.max_keys:
        raise ActionLimitError("max_keys", limits.max_keys, keys)


def validate_actions(actions: object) -> list[dict[str, Any]]:
    """Validate a list of wire actions; the error message names the index of the bad one.

    Raises:
        WireActionError: the list or one of its actions is malformed.
    """
    if not isinstance(actions, list):
        raise WireActionError("actions must be a list")
    result = []
    for index, action in enumerate(actions):
        try:
            result.append(validate_action(action))
        except WireActionError as e:
            raise WireActionError(f"actions[{index}]: {e}") from e
    return result


# --- pyautogui code, for guests that only have /execute -------------------------------------

DRAG_SECONDS = 0.5
PYAUTOGUI_PREFIX = "import pyautogui; pyautogui.FAILSAFE = False; pyautogui.PAUSE = 0; "


def _point_args(action: dict[str, Any]) -> list[str]:
    return [] if action.get("x") is None else [repr(action["x"]), repr(action["y"])]


def _call(func: str, *args: str, **kwargs: Any) -> str:
    parts = list(args) + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"pyautogui.{func}({', '.join(parts)})"


def _type_lines(text: str) -> list[str]:
    # pyautogui types "<" as ">" on X11 (both share a keycode and it presses without shift);
    # OSWorld's agents work around it with shift+comma. Non-ASCII characters have no key in
    # pyautogui and are skipped by it: that is a limit of the official guest, stated here.
    lines = []
    for index, chunk in enumerate(text.split("<")):
        if index:
            lines.append(_call("hotkey", repr("shift"), repr(",")))
        if chunk:
            lines.append(_call("write", repr(chunk)))
    return lines


def _fix_less_than(keys: list[str]) -> list[str]:
    """Spell ``<`` as shift+comma in a key chord (see ``_type_lines()``)."""
    fixed: list[str] = []
    for key in keys:
        fixed.extend(("shift", ",") if key == "<" else (key,))
    return fixed


def action_to_pyautogui(action: dict[str, Any]) -> list[str]:
    """Translate one validated wire action into pyautogui statements (no sleeps).

    Example:
        >>> action_to_pyautogui({"kind": "hotkey", "keys": ["ctrl", "s"]})
        ["pyautogui.hotkey('ctrl', 's')"]
    """
    kind = action["kind"]
    point = _point_args(action)
    if kind == "click":
        return [_call("click", *point, clicks=action["clicks"], button=action["button"])]
    if kind == "double_click":
        return [_call("doubleClick", *point, button=action["button"])]
    if kind == "right_click":
        return [_call("rightClick", *point)]
    if kind == "move":
        return [_call("moveTo", *point)]
    if kind == "drag":
        start = [_call("moveTo", *point)] if point else []
        end = [repr(action["to_x"]), repr(action["to_y"])]
        # A drag needs motion events in between for toolkits to see it (OSWorld uses 1 s).
        return start + [_call("dragTo", *end, duration=DRAG_SECONDS, button=action["button"])]
    if kind == "scroll":
        lines = [_call("moveTo", *point)] if point else []
        if action["dy"]:
            lines.append(_call("scroll", repr(action["dy"])))
        if action["dx"]:
            lines.append(_call("hscroll", repr(action["dx"])))
        return lines
    if kind == "type":
        return _type_lines(action["text"])
    if kind == "hotkey":
        return [_call("hotkey", *(repr(k) for k in _fix_less_than(action["keys"])))]
    if kind == "press":
        if action["key"] == "<":
            return [_call("hotkey", repr("shift"), repr(","))] * action["presses"]
        return [_call("press", repr(action["key"]), presses=action["presses"])]
    if kind in ("key_down", "key_up"):
        return [_call("keyDown" if kind == "key_down" else "keyUp", repr(action["key"]))]
    func = "mouseDown" if kind == "mouse_down" else "mouseUp"
    return [_call(func, *point, button=action["button"])]


def to_pyautogui_code(actions: list[dict[str, Any]], *, prefix: bool = True) -> str:
    """Translate wire actions into one pyautogui script, validated first.

    Args:
        actions: Wire actions (validated here).
        prefix: Start with the import and ``FAILSAFE``/``PAUSE`` settings, as OSWorld's
            controller does, so the code runs as one ``python -c`` program.

    Raises:
        WireActionError: an action is malformed.
    """
    lines = [line for a in validate_actions(actions) for line in action_to_pyautogui(a)]
    body = "; ".join(lines)
    return PYAUTOGUI_PREFIX + body if prefix else body


def encode_actions(actions: list[dict[str, Any]]) -> bytes:
    """Encode wire actions as the JSON body of ``POST /actions``."""
    return json.dumps({"actions": actions}, ensure_ascii=False).encode("utf-8")
