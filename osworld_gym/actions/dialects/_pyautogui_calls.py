"""The pyautogui allowlist: which calls the pyautogui dialect accepts and what each becomes.

Arguments are bound by pyautogui 0.9.54's own signatures, so positional and keyword forms
mean what they mean to pyautogui. Timing arguments (``duration``, ``interval``, ``tween``,
``_pause``, ``logScreenshot``) are accepted and dropped: the guest never sleeps for the
model. Every argument must already be a literal value (checked by the caller).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from osworld_gym.actions.coords import ScreenSize, clamp_point
from osworld_gym.actions.keys import normalize_key
from osworld_gym.actions.types import (
    Action,
    Click,
    DoubleClick,
    Drag,
    Hotkey,
    KeyDown,
    KeyUp,
    MouseDown,
    MouseUp,
    Move,
    Press,
    RightClick,
    Scroll,
    TypeText,
    Wait,
)
from osworld_gym.errors import ActionError

__all__ = ["ALLOWED_CALLS", "CallSpec", "build_actions"]

_BUTTON_NAMES = MappingProxyType(
    {"left": "left", "right": "right", "middle": "middle", "primary": "left", "secondary": "right"}
)
_IGNORED = frozenset({"duration", "interval", "tween", "_pause", "logScreenshot", "mouseDownUp"})
_PT = ("x", "y")


class CallSpec:
    """One allowlisted function: its parameters (in pyautogui's order) and its builder."""

    __slots__ = ("build", "params", "varargs")

    def __init__(
        self,
        params: tuple[str, ...],
        build: Callable[[dict[str, Any], ScreenSize], list[Action]],
        varargs: bool = False,
    ) -> None:
        self.params = params
        self.build = build
        self.varargs = varargs


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ActionError(f"{name} must be a finite number, got {value!r}")
    return value


def _point(args: dict[str, Any], screen: ScreenSize, required: bool = False) -> tuple[Any, Any]:
    x, y = args.get("x"), args.get("y")
    if isinstance(x, (list, tuple)) and y is None:  # pyautogui accepts click((x, y))
        if len(x) != 2:
            raise ActionError(f"a point needs 2 numbers, got {x!r}")
        x, y = x
    if isinstance(x, str):
        raise ActionError("locating an image on screen is not supported; give x and y")
    if x is None and y is None and not required:
        return None, None
    if x is None or y is None:
        raise ActionError("give both x and y, or neither")
    return clamp_point(_number("x", x), _number("y", y), screen)


def _button(args: dict[str, Any], default: str = "primary") -> str:
    name = args.get("button", default)
    button = _BUTTON_NAMES.get(name.lower()) if isinstance(name, str) else None
    if button is None:
        raise ActionError(f"button must be one of {sorted(_BUTTON_NAMES)}, got {name!r}")
    return button


def _count(name: str, value: Any) -> int:
    number = _number(name, value)
    if number != int(number):
        raise ActionError(f"{name} must be a whole number, got {value!r}")
    return int(number)


def _click(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
    x, y = _point(args, screen)
    clicks = _count("clicks", args.get("clicks", 1))
    return [Click(x=x, y=y, button=_button(args), clicks=clicks)]  # type: ignore[arg-type]


def _fixed_click(button: str | None, clicks: int) -> Callable[..., list[Action]]:
    def build(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
        x, y = _point(args, screen)
        chosen = button or _button(args)
        if chosen == "right" and clicks == 1:
            return [RightClick(x=x, y=y)]
        if clicks == 2:
            return [DoubleClick(x=x, y=y, button=chosen)]  # type: ignore[arg-type]
        return [Click(x=x, y=y, button=chosen, clicks=clicks)]  # type: ignore[arg-type]

    return build


def _move(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
    x, y = _point(args, screen, required=True)
    return [Move(x=x, y=y)]


def _drag(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
    to_x, to_y = _point(args, screen, required=True)
    if args.get("mouseDownUp", True) is False:
        return [Move(x=to_x, y=to_y)]  # pyautogui then only moves
    return [Drag(to_x=to_x, to_y=to_y, button=_button(args))]  # type: ignore[arg-type]


def _scroll(axis: str) -> Callable[..., list[Action]]:
    def build(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
        if "clicks" not in args:
            raise ActionError("scroll needs clicks")
        x, y = _point(args, screen)
        amount = _count("clicks", args["clicks"])
        return [Scroll(x=x, y=y, **{axis: amount})]

    return build


def _keys_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(k, str) for k in value):
        return list(value)
    raise ActionError(f"expected a key name or a list of key names, got {value!r}")


def _write(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
    message = args.get("message")
    if isinstance(message, str):
        return [TypeText(text=message)] if message else []
    return [Press(key=k) for k in _keys_of(message)]  # typewrite(['a', 'enter'])


def _press(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
    keys = _keys_of(args.get("keys"))
    presses = _count("presses", args.get("presses", 1))
    if len(keys) == 1:
        return [Press(key=keys[0], presses=presses)]
    if not 1 <= presses * len(keys) <= 100:
        raise ActionError("press: too many key presses")
    return [Press(key=k) for _ in range(presses) for k in keys]


def _hotkey(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
    keys: Sequence[Any] = args.get("*", ())
    if len(keys) == 1 and isinstance(keys[0], (list, tuple)):
        keys = keys[0]
    keys = _keys_of(list(keys))
    if [normalize_key(k) for k in keys] == ["shift", ","]:
        return [TypeText(text="<")]  # OSWorld's way of typing '<' on X11 (see compile.py)
    return [Hotkey(keys=tuple(keys))]


def _key(cls: type[KeyDown] | type[KeyUp]) -> Callable[..., list[Action]]:
    def build(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
        key = args.get("key")
        if not isinstance(key, str):
            raise ActionError(f"expected one key name, got {key!r}")
        return [cls(key=key)]

    return build


def _mouse(cls: type[MouseDown] | type[MouseUp]) -> Callable[..., list[Action]]:
    def build(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
        x, y = _point(args, screen)
        return [cls(x=x, y=y, button=_button(args))]  # type: ignore[arg-type]

    return build


def _sleep(args: dict[str, Any], screen: ScreenSize) -> list[Action]:
    return [Wait(seconds=float(_number("seconds", args.get("secs"))))]


_CLICK = ("x", "y", "clicks", "interval", "button", "duration", "tween", "logScreenshot", "_pause")
_MULTI = ("x", "y", "interval", "button", "duration", "tween", "logScreenshot", "_pause")
_SIDE = ("x", "y", "duration", "tween", "logScreenshot", "_pause")
_MOUSE = ("x", "y", "button", "duration", "tween", "logScreenshot", "_pause")
_SCROLL = ("clicks", "x", "y", "logScreenshot", "_pause")
_DRAG = (*_PT, "duration", "tween", "button", "logScreenshot", "_pause", "mouseDownUp")
_WRITE = ("message", "interval", "logScreenshot", "_pause")
_KEY = ("key", "logScreenshot", "_pause")

#: module -> function -> spec. Nothing outside this table is ever accepted.
ALLOWED_CALLS: Mapping[str, Mapping[str, CallSpec]] = MappingProxyType(
    {
        "pyautogui": MappingProxyType(
            {
                "click": CallSpec(_CLICK, _click),
                "doubleClick": CallSpec(_MULTI, _fixed_click(None, 2)),
                "tripleClick": CallSpec(_MULTI, _fixed_click(None, 3)),
                "rightClick": CallSpec(_SIDE, _fixed_click("right", 1)),
                "middleClick": CallSpec(_SIDE, _fixed_click("middle", 1)),
                "moveTo": CallSpec(_SIDE, _move),
                "dragTo": CallSpec(_DRAG, _drag),
                "scroll": CallSpec(_SCROLL, _scroll("dy")),
                "vscroll": CallSpec(_SCROLL, _scroll("dy")),
                "hscroll": CallSpec(_SCROLL, _scroll("dx")),
                "write": CallSpec(_WRITE, _write),
                "typewrite": CallSpec(_WRITE, _write),
                "press": CallSpec(
                    ("keys", "presses", "interval", "logScreenshot", "_pause"), _press
                ),
                "hotkey": CallSpec(("interval", "logScreenshot", "_pause"), _hotkey, varargs=True),
                "keyDown": CallSpec(_KEY, _key(KeyDown)),
                "keyUp": CallSpec(_KEY, _key(KeyUp)),
                "mouseDown": CallSpec(_MOUSE, _mouse(MouseDown)),
                "mouseUp": CallSpec(_MOUSE, _mouse(MouseUp)),
            }
        ),
        "time": MappingProxyType({"sleep": CallSpec(("secs",), _sleep)}),
    }
)


def build_actions(
    spec: CallSpec, positional: list[Any], keywords: dict[str, Any], screen: ScreenSize
) -> list[Action]:
    """Bind literal arguments to ``spec``'s parameters and build its actions.

    Raises:
        ActionError: too many or unknown arguments, or invalid values.
    """
    args: dict[str, Any] = {}
    if spec.varargs:
        args["*"] = positional
    elif len(positional) > len(spec.params):
        raise ActionError(f"too many positional arguments ({len(positional)})")
    else:
        args.update(zip(spec.params, positional, strict=False))
    for name, value in keywords.items():
        if name not in spec.params:
            raise ActionError(f"unexpected keyword argument {name!r}")
        if name in args:
            raise ActionError(f"argument {name!r} given twice")
        args[name] = value
    for name in _IGNORED & args.keys():
        if name != "mouseDownUp":
            del args[name]
    return spec.build(args, screen)
