"""The ``computer_13`` dialect: OSWorld's JSON action dicts.

The format: ``docs/design/action-formats.md#computer-13``.

An action is ``{"action_type": "CLICK", "parameters": {"x": 10, "y": 20}}`` or the same with
the parameters inline; a response may hold one dict, a list of them, fenced ```` ```json ````
blocks, or be ``WAIT``/``DONE``/``FAIL`` (as a string or as ``{"action_type": "DONE"}``).
Coordinates are screen pixels and are clamped to the screen. Key names are checked
case-insensitively against pyautogui's list, with suggestions.
"""

from __future__ import annotations

import difflib
import logging
import math
from collections.abc import Callable
from typing import Any

from osworld_gym.actions.coords import ScreenSize, clamp_point
from osworld_gym.actions.dialects._json import find_json_values, find_token, find_token_line
from osworld_gym.actions.result import DEFAULT_MAX_CHARS, ParseFailure, ParseResult, guarded_parse
from osworld_gym.actions.types import (
    Action,
    Click,
    Done,
    DoubleClick,
    Drag,
    Fail,
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

logger = logging.getLogger(__name__)

__all__ = ["COMPUTER13_ACTIONS", "parse"]

_TOKENS = frozenset({"WAIT", "DONE", "FAIL"})
_TOKEN_ACTIONS: dict[str, type[Action]] = {"WAIT": Wait, "DONE": Done, "FAIL": Fail}

Params = dict[str, Any]
Builder = Callable[[Params, ScreenSize], Action]


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ActionError(f"{name} must be a finite number, got {value!r}")
    return value


def _point(p: Params, screen: ScreenSize, required: bool) -> tuple[Any, Any]:
    x, y = p.get("x"), p.get("y")
    if x is None and y is None and not required:
        return None, None
    if x is None or y is None:
        raise ActionError("needs both x and y" if required else "give both x and y, or neither")
    return clamp_point(_number("x", x), _number("y", y), screen)


def _whole(name: str, value: Any, default: int) -> int:
    if value is None:
        return default
    number = _number(name, value)
    if number != int(number):
        raise ActionError(f"{name} must be a whole number, got {value!r}")
    return int(number)


def _button(p: Params) -> str:
    button = p.get("button", "left")
    return button.lower() if isinstance(button, str) else button


def _text(p: Params, name: str) -> str:
    value = p.get(name)
    if not isinstance(value, str):
        raise ActionError(f"needs {name} as a string, got {value!r}")
    return value


def _click(p: Params, screen: ScreenSize) -> Action:
    x, y = _point(p, screen, False)
    clicks = _whole("num_clicks", p.get("num_clicks"), 1)
    return Click(x=x, y=y, button=_button(p), clicks=clicks)  # type: ignore[arg-type]


def _scroll(p: Params, screen: ScreenSize) -> Action:
    if p.get("dx") is None and p.get("dy") is None:
        raise ActionError("needs dx or dy")
    x, y = _point(p, screen, False)
    return Scroll(x=x, y=y, dx=_whole("dx", p.get("dx"), 0), dy=_whole("dy", p.get("dy"), 0))


def _hotkey(p: Params, screen: ScreenSize) -> Action:
    keys = p.get("keys")
    if not isinstance(keys, list):
        raise ActionError(f"needs keys as a list, got {keys!r}")
    return Hotkey(keys=tuple(keys))


def _at(cls: Callable[..., Action]) -> Builder:
    def build(p: Params, screen: ScreenSize) -> Action:
        x, y = _point(p, screen, False)
        return cls(x=x, y=y)

    return build


def _mouse(cls: type[MouseDown] | type[MouseUp]) -> Builder:
    def build(p: Params, screen: ScreenSize) -> Action:
        x, y = _point(p, screen, False)
        return cls(x=x, y=y, button=_button(p))  # type: ignore[arg-type]

    return build


def _move(p: Params, screen: ScreenSize) -> Action:
    x, y = _point(p, screen, True)
    return Move(x=x, y=y)


def _drag(p: Params, screen: ScreenSize) -> Action:
    x, y = _point(p, screen, True)
    return Drag(to_x=x, to_y=y)


# action_type -> (builder, the parameters OSWorld defines for it)
_TABLE: dict[str, tuple[Builder, frozenset[str]]] = {
    "MOVE_TO": (_move, frozenset({"x", "y"})),
    "CLICK": (_click, frozenset({"button", "x", "y", "num_clicks"})),
    "MOUSE_DOWN": (_mouse(MouseDown), frozenset({"button", "x", "y"})),
    "MOUSE_UP": (_mouse(MouseUp), frozenset({"button", "x", "y"})),
    "RIGHT_CLICK": (_at(RightClick), frozenset({"x", "y"})),
    "DOUBLE_CLICK": (_at(DoubleClick), frozenset({"x", "y"})),
    "DRAG_TO": (_drag, frozenset({"x", "y"})),
    "SCROLL": (_scroll, frozenset({"dx", "dy", "x", "y"})),
    "TYPING": (lambda p, s: TypeText(text=_text(p, "text")), frozenset({"text"})),
    "PRESS": (lambda p, s: Press(key=_text(p, "key")), frozenset({"key"})),
    "KEY_DOWN": (lambda p, s: KeyDown(key=_text(p, "key")), frozenset({"key"})),
    "KEY_UP": (lambda p, s: KeyUp(key=_text(p, "key")), frozenset({"key"})),
    "HOTKEY": (_hotkey, frozenset({"keys"})),
    "WAIT": (lambda p, s: Wait(), frozenset()),
    "DONE": (lambda p, s: Done(), frozenset()),
    "FAIL": (lambda p, s: Fail(), frozenset()),
}
#: The action types of OSWorld's computer_13 space (the dialect's name table).
COMPUTER13_ACTIONS = tuple(_TABLE)


def _params(value: dict[str, Any], strict: bool) -> Params:
    nested = value.get("parameters", {})
    if nested is None:
        nested = {}
    if not isinstance(nested, dict):
        raise ActionError(f"parameters must be an object, got {type(nested).__name__}")
    inline = {k: v for k, v in value.items() if k not in ("action_type", "parameters")}
    if strict and inline and nested:
        raise ActionError("give parameters either inline or under 'parameters', not both")
    return {**inline, **nested}


def _action(value: Any, strict: bool, screen: ScreenSize) -> Action:
    if isinstance(value, str):
        name = value if strict else value.strip().upper()
        if name in _TOKENS:
            return _TOKEN_ACTIONS[name]()
        raise ActionError(f"a string action must be WAIT, DONE or FAIL, got {value[:40]!r}")
    if not isinstance(value, dict):
        raise ActionError(f"an action must be an object, got {type(value).__name__}")
    kind = value.get("action_type")
    if not isinstance(kind, str):
        raise ActionError("an action needs 'action_type' (a string)")
    name = kind if strict else kind.strip().upper()
    if name not in _TABLE:
        close = difflib.get_close_matches(name.upper(), COMPUTER13_ACTIONS, n=2)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ActionError(f"unknown action_type {kind[:40]!r}{hint}")
    build, allowed = _TABLE[name]
    params = _params(value, strict)
    unknown = sorted(set(params) - allowed)
    if unknown and strict:
        raise ActionError(f"{name}: unexpected parameter(s) {unknown}")
    try:
        return build(params, screen)
    except ActionError as e:
        raise ActionError(f"{name}: {e}") from e


def _actions_of(value: Any, position: int, strict: bool, screen: ScreenSize) -> list[Action]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ParseFailure("an empty list of actions", position)
    actions = []
    for item in items:
        try:
            actions.append(_action(item, strict, screen))
        except ActionError as e:
            raise ParseFailure(str(e), position) from e
    return actions


def _looks_like_actions(value: Any) -> bool:
    """Lenient mode skips JSON that is not meant as actions (``[100, 200]`` in prose)."""
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(
        (isinstance(item, dict) and "action_type" in item)
        or (isinstance(item, str) and item.strip().upper() in _TOKENS)
        for item in items
    )


def parse(
    text: object,
    *,
    screen_size: ScreenSize = (1920, 1080),
    strict: bool = False,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ParseResult:
    """Parse OSWorld ``computer_13`` output (JSON action dicts) into typed actions.

    Args:
        text: The model output: JSON text, or an already decoded dict or list.
        screen_size: ``(width, height)``; points are clamped to it.
        strict: Raise instead of reporting; no prose around the JSON, no unknown parameters.
        max_chars: Longer outputs are rejected.

    Returns:
        The parse result.

    Raises:
        ActionParseError: in strict mode, when the text does not parse.

    Example:
        >>> parse('{"action_type": "CLICK", "x": 5, "y": 6, "num_clicks": 2}').actions
        [Click(x=5, y=6, button='left', clicks=2)]
    """
    result = ParseResult(raw=text, dialect="computer_13")

    def run(out: ParseResult) -> None:
        if isinstance(text, (dict, list)):
            out.actions.extend(_actions_of(text, 0, strict, screen_size))
            return
        if not isinstance(text, str):
            raise ParseFailure(f"expected a string, dict or list, got {type(text).__name__}")
        token = find_token(text, _TOKENS, strict)
        if token is not None:
            out.actions.append(_TOKEN_ACTIONS[token]())
            return
        values = find_json_values(text, strict)
        for value, position in values:
            if strict or _looks_like_actions(value):
                out.actions.extend(_actions_of(value, position, strict, screen_size))
        if not out.actions and not strict and (line := find_token_line(text)):
            out.actions.append(_TOKEN_ACTIONS[line[0]]())
        elif not out.actions and values:
            raise ParseFailure("no action object in the JSON", values[0][1])

    return guarded_parse(result, run, strict=strict, max_chars=max_chars)
