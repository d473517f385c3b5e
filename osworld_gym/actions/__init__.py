r"""The action layer: typed actions, model-output dialects, compilation and action spaces.

Start with ``parse_action()``::

    >>> from osworld_gym.actions import parse_action
    >>> result = parse_action("Thought: save it\nAction: hotkey(key='ctrl s')")
    >>> result.actions, result.thought
    ([Hotkey(keys=('ctrl', 's'))], 'save it')

Declarations live in ``.types``; their prompt text and JSON schema in ``.schema``;
coordinate math in ``.coords``; key names in ``.keys``; the dialects in
``.dialects``; guest requests and pyautogui code in ``.compile``; rendering back to
model text in ``.render``; Gymnasium spaces in ``.spaces`` (loaded on first use).
The unsafe OSWorld pass-through is deliberately not exported: import
``osworld_gym.actions.unsafe`` by name.
"""

from __future__ import annotations

from typing import Any

from osworld_gym.actions.compile import (
    to_osworld_actions,
    to_pyautogui_code,
    to_wire,
    to_wire_actions,
)
from osworld_gym.actions.coords import smart_resize, to_screen
from osworld_gym.actions.keys import normalize_key, split_hotkey
from osworld_gym.actions.registry import (
    ActionParser,
    available_dialects,
    get_dialect,
    parse_action,
    register_dialect,
)
from osworld_gym.actions.render import to_computer13, to_uitars
from osworld_gym.actions.result import ParseResult
from osworld_gym.actions.schema import action_json_schema, describe_actions, tool_schemas
from osworld_gym.actions.types import (
    ACTION_KINDS,
    ACTION_TYPES,
    Action,
    ActionKind,
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
    action_from_dict,
)

__all__ = [
    "ACTION_KINDS",
    "ACTION_TYPES",
    "Action",
    "ActionKind",
    "ActionParser",
    "Click",
    "DoubleClick",
    "Done",
    "Drag",
    "Fail",
    "Hotkey",
    "KeyDown",
    "KeyUp",
    "MouseDown",
    "MouseUp",
    "Move",
    "ParseResult",
    "Press",
    "RightClick",
    "Scroll",
    "StructuredActionSpace",
    "TextActionSpace",
    "TypeText",
    "Wait",
    "action_from_dict",
    "action_json_schema",
    "available_dialects",
    "describe_actions",
    "get_dialect",
    "normalize_key",
    "parse_action",
    "register_dialect",
    "smart_resize",
    "split_hotkey",
    "to_computer13",
    "to_osworld_actions",
    "to_pyautogui_code",
    "to_screen",
    "to_uitars",
    "to_wire",
    "to_wire_actions",
    "tool_schemas",
]

_LAZY_SPACES = ("StructuredActionSpace", "TextActionSpace")


def __getattr__(name: str) -> Any:
    # The spaces import gymnasium; parsing alone should not pay for it.
    if name in _LAZY_SPACES:
        from osworld_gym.actions import spaces

        return getattr(spaces, name)
    raise AttributeError(f"module 'osworld_gym.actions' has no attribute {name!r}")
