"""The ``structured`` dialect: typed actions, ``{"kind": ...}`` dicts, or JSON of them.

For agents that already produce structured output (tool calls, constrained decoding). Dicts
use ``Action.to_dict()``'s shape; points are screen pixels and are clamped to the screen.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from osworld_gym.actions.coords import ScreenSize, clamp_point
from osworld_gym.actions.dialects._json import find_json_values, find_token
from osworld_gym.actions.result import DEFAULT_MAX_CHARS, ParseFailure, ParseResult, guarded_parse
from osworld_gym.actions.types import Action, Done, Fail, Wait, action_from_dict
from osworld_gym.errors import ActionError

logger = logging.getLogger(__name__)

__all__ = ["clamp_action", "parse"]

_TOKEN_ACTIONS: dict[str, type[Action]] = {"WAIT": Wait, "DONE": Done, "FAIL": Fail}
_TOKENS = frozenset(_TOKEN_ACTIONS)
_POINTS = (("x", "y"), ("to_x", "to_y"))


def clamp_action(action: Action, screen_size: ScreenSize) -> Action:
    """Return ``action`` with its points clamped to the screen (the same object if inside).

    Example:
        >>> from osworld_gym.actions.types import Drag
        >>> clamp_action(Drag(x=-5, y=10, to_x=5000, to_y=20), (1920, 1080))
        Drag(x=0, y=10, to_x=1919, to_y=20, button='left')
    """
    changes: dict[str, int] = {}
    for x_name, y_name in _POINTS:
        x, y = getattr(action, x_name, None), getattr(action, y_name, None)
        if x is None or y is None:
            continue
        cx, cy = clamp_point(x, y, screen_size)
        if (cx, cy) != (x, y):
            changes[x_name], changes[y_name] = cx, cy
    return dataclasses.replace(action, **changes) if changes else action


def _one(item: Any, position: int, screen: ScreenSize) -> Action:
    if isinstance(item, Action):
        return clamp_action(item, screen)
    if isinstance(item, str) and item.strip().upper() in _TOKENS:
        return _TOKEN_ACTIONS[item.strip().upper()]()
    if isinstance(item, Mapping):
        try:
            return clamp_action(action_from_dict(item), screen)
        except ActionError as e:
            raise ParseFailure(str(e), position) from e
    raise ParseFailure(f"expected an action, a dict or a list, got {type(item).__name__}", position)


def _items(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _looks_like_actions(value: Any) -> bool:
    items = _items(value)
    return bool(items) and all(
        (isinstance(item, Mapping) and "kind" in item)
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
    """Parse typed actions, action dicts or their JSON into a ``ParseResult``.

    Args:
        text: An ``Action``, a ``{"kind": ...}`` dict, a list of them, or JSON text.
        screen_size: ``(width, height)``; points are clamped to it.
        strict: Raise instead of reporting; JSON text must be nothing but JSON.
        max_chars: Longer strings are rejected.

    Returns:
        The parse result.

    Raises:
        ActionParseError: in strict mode, when the input is not valid actions.

    Example:
        >>> parse({"kind": "press", "key": "Enter"}).actions
        [Press(key='enter', presses=1)]
    """
    result = ParseResult(raw=text, dialect="structured")

    def run(out: ParseResult) -> None:
        if isinstance(text, str):
            token = find_token(text, _TOKENS, strict)
            if token is not None:
                out.actions.append(_TOKEN_ACTIONS[token]())
                return
            values = find_json_values(text, strict)
            if not strict:  # JSON found in prose: keep what is meant as actions
                values = [(v, p) for v, p in values if _looks_like_actions(v)]
        else:
            values = [(text, 0)]
        for value, position in values:
            out.actions.extend(_one(item, position, screen_size) for item in _items(value))

    return guarded_parse(result, run, strict=strict, max_chars=max_chars)
