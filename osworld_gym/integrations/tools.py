"""The structured actions as function tools: OpenAI schemas and tool calls back to actions.

Tool-calling trainers (TRL's ``environment_factory``, OpenAI-style agent loops) need each action
as a named function with typed arguments. The eleven tools below cover what a GUI agent does;
their names read well to a model (``type_text`` rather than ``type``), and their coordinates are
screen pixels, the range of which each schema states.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from osworld_gym.actions.types import (
    Action,
    Click,
    Done,
    DoubleClick,
    Drag,
    Fail,
    Hotkey,
    Press,
    RightClick,
    Scroll,
    TypeText,
    Wait,
)
from osworld_gym.errors import ActionError

__all__ = ["SCROLL_DIRECTIONS", "TOOL_NAMES", "action_from_tool_call", "tool_schemas"]

TOOL_NAMES = (
    "click",
    "double_click",
    "right_click",
    "drag",
    "scroll",
    "type_text",
    "hotkey",
    "press",
    "wait",
    "done",
    "fail",
)
SCROLL_DIRECTIONS = ("up", "down", "left", "right")
_SCROLL_DELTA = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}


def _point(width: int, height: int, what: str = "") -> dict[str, Any]:
    return {
        "x": {
            "type": "integer",
            "minimum": 0,
            "maximum": width - 1,
            "description": f"{what}x in screen pixels (0 to {width - 1}, left to right).",
        },
        "y": {
            "type": "integer",
            "minimum": 0,
            "maximum": height - 1,
            "description": f"{what}y in screen pixels (0 to {height - 1}, top to bottom).",
        },
    }


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


def tool_schemas(
    screen_size: tuple[int, int], names: Iterable[str] = TOOL_NAMES
) -> list[dict[str, Any]]:
    """OpenAI function-tool schemas of the GUI actions, coordinates bounded by the screen.

    Args:
        screen_size: The screen's ``(width, height)`` in pixels.
        names: Which tools, in order (default: all of ``TOOL_NAMES``).

    Raises:
        ValueError: An unknown tool name.

    Example:
        >>> [t["function"]["name"] for t in tool_schemas((336, 224), ["click", "done"])]
        ['click', 'done']
    """
    width, height = (int(v) for v in screen_size)
    point = _point(width, height)
    start, end = _point(width, height, "Start "), _point(width, height, "End ")
    text = {"type": "string", "minLength": 1}
    catalog = {
        "click": _tool("click", "Left-click at a point on the screen.", point, ["x", "y"]),
        "double_click": _tool("double_click", "Double-click at a point.", point, ["x", "y"]),
        "right_click": _tool("right_click", "Right-click at a point.", point, ["x", "y"]),
        "drag": _tool(
            "drag",
            "Press the left button at the start point, move to the end point, release.",
            {
                "x1": start["x"],
                "y1": start["y"],
                "x2": end["x"],
                "y2": end["y"],
            },  # fmt: skip
            ["x1", "y1", "x2", "y2"],
        ),
        "scroll": _tool(
            "scroll",
            "Scroll the mouse wheel at a point.",
            {
                **point,
                "direction": {"type": "string", "enum": list(SCROLL_DIRECTIONS)},
                "amount": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "description": "Wheel clicks (default 5).",
                },
            },
            ["x", "y", "direction"],
        ),
        "type_text": _tool(
            "type_text",
            "Type text with the keyboard; a newline presses Enter.",
            {"text": {**text, "description": "The text to type."}},
            ["text"],
        ),
        "hotkey": _tool(
            "hotkey",
            "Press keys together, e.g. ['ctrl', 'c'].",
            {
                "keys": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "Key names (pyautogui's), pressed in order, released "
                    "in reverse.",
                }
            },
            ["keys"],
        ),
        "press": _tool(
            "press",
            "Press and release one key, e.g. 'enter', 'tab', 'escape'.",
            {"key": {**text, "description": "The key name (pyautogui's)."}},
            ["key"],
        ),
        "wait": _tool("wait", "Wait a moment, then look at the screen again.", {}, []),
        "done": _tool(
            "done",
            "Declare the task complete.",
            {"answer": {"type": "string", "description": "The answer, if the task asks one."}},
            [],
        ),
        "fail": _tool(
            "fail",
            "Declare the task impossible to complete.",
            {"reason": {"type": "string", "description": "Why."}},
            [],
        ),
    }
    out = []
    for name in names:
        if name not in catalog:
            raise ValueError(f"unknown tool {name!r}; expected some of {list(TOOL_NAMES)}")
        out.append(catalog[name])
    return out


def _args(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as e:
            raise ActionError(f"tool arguments are not JSON: {e}") from None
    if not isinstance(arguments, Mapping):
        raise ActionError(f"tool arguments must be an object, got {type(arguments).__name__}")
    return dict(arguments)


def _take(args: dict[str, Any], tool: str, required: tuple[str, ...], optional=()) -> list[Any]:
    unknown = sorted(set(args) - set(required) - set(optional))
    if unknown:
        raise ActionError(f"{tool}: unexpected argument(s) {unknown}")
    missing = [name for name in required if args.get(name) is None]
    if missing:
        raise ActionError(f"{tool}: missing argument(s) {missing}")
    return [args.get(name) for name in (*required, *optional)]


def _int(tool: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ActionError(f"{tool}: {name} must be an integer, got {value!r}")
    return int(value)


def action_from_tool_call(name: str, arguments: Mapping[str, Any] | str | None = None) -> Action:
    """The typed action of one tool call (name and arguments as the model emitted them).

    Args:
        name: A tool name of ``TOOL_NAMES``.
        arguments: A mapping, or its JSON text (as OpenAI's API returns it).

    Raises:
        ActionError: An unknown tool, or arguments missing, extra or of the wrong type
            (the message is fit to show the model).

    Example:
        >>> action_from_tool_call("click", '{"x": 10, "y": 20}')
        Click(x=10, y=20, button='left', clicks=1)
    """
    args = _args(arguments)
    if name in ("click", "double_click", "right_click"):
        x, y = (_int(name, k, v) for k, v in zip("xy", _take(args, name, ("x", "y")), strict=True))
        cls = {"click": Click, "double_click": DoubleClick, "right_click": RightClick}[name]
        return cls(x=x, y=y)
    if name == "drag":
        keys = ("x1", "y1", "x2", "y2")
        values = _take(args, name, keys)
        x1, y1, x2, y2 = (_int(name, k, v) for k, v in zip(keys, values, strict=True))
        return Drag(x=x1, y=y1, to_x=x2, to_y=y2)
    if name == "scroll":
        x, y, direction, amount = _take(args, name, ("x", "y", "direction"), ("amount",))
        if direction not in _SCROLL_DELTA:
            raise ActionError(f"scroll: direction must be one of {list(SCROLL_DIRECTIONS)}")
        clicks = 5 if amount is None else _int(name, "amount", amount)
        dx, dy = _SCROLL_DELTA[direction]
        return Scroll(x=_int(name, "x", x), y=_int(name, "y", y), dx=dx * clicks, dy=dy * clicks)
    if name == "type_text":
        (text,) = _take(args, name, ("text",))
        if not isinstance(text, str):
            raise ActionError(f"type_text: text must be a string, got {type(text).__name__}")
        return TypeText(text=text)
    if name == "hotkey":
        (keys,) = _take(args, name, ("keys",))
        if isinstance(keys, str):  # "ctrl+c", a common model habit
            keys = [k for k in keys.replace(" ", "+").split("+") if k]
        if not isinstance(keys, list | tuple) or not all(isinstance(k, str) for k in keys):
            raise ActionError("hotkey: keys must be a list of key names")
        return Hotkey(keys=tuple(keys))
    if name == "press":
        (key,) = _take(args, name, ("key",))
        if not isinstance(key, str):
            raise ActionError(f"press: key must be a string, got {type(key).__name__}")
        return Press(key=key)
    if name == "wait":
        _take(args, name, ())
        return Wait()
    if name == "done":
        (answer,) = _take(args, name, (), ("answer",))
        return Done(answer=None if answer is None else str(answer))
    if name == "fail":
        (reason,) = _take(args, name, (), ("reason",))
        return Fail(reason=None if reason is None else str(reason))
    raise ActionError(f"unknown tool {name!r}; expected one of {list(TOOL_NAMES)}")
