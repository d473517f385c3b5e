"""Rendering typed actions as model text: UI-TARS calls and OSWorld ``computer_13`` dicts.

The inverse of the dialects, for few-shot examples, sampled text actions and round-trip
tests. Only what a dialect can express renders; anything else raises ``ActionError``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from osworld_gym.actions import coords
from osworld_gym.actions.dialects.uitars import DEFAULT_SCROLL_CLICKS
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

__all__ = ["to_computer13", "to_uitars"]


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{escaped}'"


class _UITarsWriter:
    def __init__(
        self,
        screen_size: coords.ScreenSize,
        system: coords.CoordinateSystem,
        factor: int,
        min_pixels: int,
        max_pixels: int,
        scroll_clicks: int,
    ) -> None:
        self.screen_size, self.system = screen_size, system
        self.resize = {"factor": factor, "min_pixels": min_pixels, "max_pixels": max_pixels}
        self.scroll_clicks = scroll_clicks

    def box(self, x: int | None, y: int | None) -> str:
        if x is None or y is None:
            raise ActionError("UI-TARS actions need an explicit point")
        mx, my = coords.from_screen(x, y, self.screen_size, self.system, **self.resize)
        return f"'({mx},{my})'"

    def call(self, action: Action) -> str:  # noqa: C901 - one branch per kind reads best
        a: Any = action
        if isinstance(a, Click) and a.button == "left" and a.clicks == 1:
            return f"click(start_box={self.box(a.x, a.y)})"
        if isinstance(a, DoubleClick) and a.button == "left":
            return f"left_double(start_box={self.box(a.x, a.y)})"
        if isinstance(a, RightClick):
            return f"right_single(start_box={self.box(a.x, a.y)})"
        if isinstance(a, Move):
            return f"hover(start_box={self.box(a.x, a.y)})"
        if isinstance(a, Drag) and a.button == "left":
            start, end = self.box(a.x, a.y), self.box(a.to_x, a.to_y)
            return f"drag(start_box={start}, end_box={end})"
        if (
            isinstance(a, Scroll)
            and self.scroll_clicks in (abs(a.dx) + abs(a.dy),)
            and (a.dx == 0 or a.dy == 0)
        ):
            point = "" if a.x is None else f"start_box={self.box(a.x, a.y)}, "
            return f"scroll({point}direction='{a.direction}')"
        if isinstance(a, TypeText):
            return f"type(content={_quote(a.text)})"
        if isinstance(a, Hotkey) and all(k.strip() and k != "+" for k in a.keys):
            return f"hotkey(key={_quote(' '.join(a.keys))})"
        if isinstance(a, Press) and a.presses == 1 and a.key.strip():
            return f"press(key={_quote(a.key)})"
        if isinstance(a, (KeyDown, KeyUp)) and a.key.strip():
            return f"{'keydown' if isinstance(a, KeyDown) else 'keyup'}(key={_quote(a.key)})"
        if isinstance(a, (MouseDown, MouseUp)):
            name = "mouse_down" if isinstance(a, MouseDown) else "mouse_up"
            point = "" if a.x is None else f"start_box={self.box(a.x, a.y)}, "
            return f"{name}({point}button='{a.button}')"
        if isinstance(a, Wait) and a.seconds is None:
            return "wait()"
        if isinstance(a, Done):
            return "finished()" if a.answer is None else f"finished(content={_quote(a.answer)})"
        if isinstance(a, Fail) and a.reason == "call_user":
            return "call_user()"
        if isinstance(a, Fail) and a.reason and a.reason.startswith("call_user: "):
            return f"call_user(content={_quote(a.reason[len('call_user: ') :])})"
        raise ActionError(f"{action!r} has no UI-TARS form")


def to_uitars(
    actions: Iterable[Action],
    *,
    screen_size: coords.ScreenSize = (1920, 1080),
    coordinates: coords.CoordinateSystem = "resized",
    factor: int = coords.IMAGE_FACTOR,
    min_pixels: int = coords.MIN_PIXELS,
    max_pixels: int = coords.MAX_PIXELS,
    scroll_clicks: int = DEFAULT_SCROLL_CLICKS,
    thought: str | None = None,
) -> str:
    r"""Render actions as one UI-TARS response (``Thought: ...`` then ``Action: ...``).

    Arguments mirror ``osworld_gym.actions.dialects.uitars.parse()``, so parsing the text
    with the same settings gives the actions back (points within a pixel when the model's
    grid is coarser than the screen).

    Raises:
        ActionError: an action has no UI-TARS form (e.g. a middle click).

    Example:
        >>> from osworld_gym.actions.types import Click, TypeText
        >>> print(to_uitars([Click(x=1181, y=548), TypeText(text="hi\n")], thought="Go."))
        Thought: Go.
        Action: click(start_box='(1188,554)')
        <BLANKLINE>
        type(content='hi\n')
    """
    writer = _UITarsWriter(screen_size, coordinates, factor, min_pixels, max_pixels,
                           scroll_clicks)  # fmt: skip
    calls = "\n\n".join(writer.call(a) for a in actions)
    head = f"Thought: {thought}\n" if thought else ""
    return f"{head}Action: {calls}"


def _computer13_one(action: Action) -> dict[str, Any] | str:  # noqa: C901
    a: Any = action
    point = {} if getattr(a, "x", None) is None else {"x": a.x, "y": a.y}
    if isinstance(a, Click):
        params = {**point, "button": a.button, "num_clicks": a.clicks}
        return {"action_type": "CLICK", "parameters": params}
    simple = {DoubleClick: "DOUBLE_CLICK", RightClick: "RIGHT_CLICK", Move: "MOVE_TO"}
    if type(a) in simple and (not isinstance(a, DoubleClick) or a.button == "left"):
        return {"action_type": simple[type(a)], "parameters": point}
    if isinstance(a, Drag) and a.x is None and a.button == "left":
        return {"action_type": "DRAG_TO", "parameters": {"x": a.to_x, "y": a.to_y}}
    if isinstance(a, Scroll) and a.x is None:
        return {"action_type": "SCROLL", "parameters": {"dx": a.dx, "dy": a.dy}}
    if isinstance(a, (MouseDown, MouseUp)) and a.x is None:
        kind = "MOUSE_DOWN" if isinstance(a, MouseDown) else "MOUSE_UP"
        return {"action_type": kind, "parameters": {"button": a.button}}
    if isinstance(a, TypeText):
        return {"action_type": "TYPING", "parameters": {"text": a.text}}
    if isinstance(a, Press) and a.presses == 1:
        return {"action_type": "PRESS", "parameters": {"key": a.key}}
    if isinstance(a, (KeyDown, KeyUp)):
        kind = "KEY_DOWN" if isinstance(a, KeyDown) else "KEY_UP"
        return {"action_type": kind, "parameters": {"key": a.key}}
    if isinstance(a, Hotkey):
        return {"action_type": "HOTKEY", "parameters": {"keys": list(a.keys)}}
    if isinstance(a, Wait) and a.seconds is None:
        return "WAIT"
    if isinstance(a, Done) and a.answer is None:
        return "DONE"
    if isinstance(a, Fail) and a.reason is None:
        return "FAIL"
    raise ActionError(f"{action!r} has no computer_13 form")


def to_computer13(actions: Iterable[Action]) -> str:
    """Render actions as an OSWorld ``computer_13`` response: a fenced JSON list.

    Raises:
        ActionError: an action has no ``computer_13`` form (e.g. a drag from a given point).

    Example:
        >>> from osworld_gym.actions.types import Press
        >>> print(to_computer13([Press(key="enter")]))
        ```json
        [{"action_type": "PRESS", "parameters": {"key": "enter"}}]
        ```
    """
    items = [_computer13_one(a) for a in actions]
    return f"```json\n{json.dumps(items, ensure_ascii=False)}\n```"
