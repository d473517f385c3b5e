"""Typed actions: one frozen dataclass per action kind, declared once.

Each class names its ``kind``, documents itself in its docstring, and documents each field in
the field's metadata (``doc`` and a JSON-schema fragment). The name table
``ACTION_TYPES``, the prompt text and the JSON schema (``osworld_gym.actions.schema``)
are all derived from these declarations. Constructing an action validates it: keys are
canonical pyautogui names, points are integer pixels given as a pair, buttons and counts are
in range. Screen bounds are not known here; dialects clamp points to the screen.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar, Literal, TypeAlias, get_args

from osworld_gym.actions._checks import (
    BUTTONS,
    MAX_SCROLL,
    check_button,
    check_coord,
    check_int,
    check_optional_text,
    check_point,
)
from osworld_gym.actions.keys import normalize_key, normalize_keys
from osworld_gym.errors import ActionError
from osworld_gym.guest.protocol import MAX_PRESSES, MAX_TEXT_CHARS

__all__ = [
    "ACTION_KINDS",
    "ACTION_TYPES",
    "BUTTONS",
    "Action",
    "ActionKind",
    "Button",
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
    "Press",
    "RightClick",
    "Scroll",
    "TypeText",
    "Wait",
    "action_from_dict",
]

ActionKind: TypeAlias = Literal[
    "click",
    "double_click",
    "right_click",
    "move",
    "drag",
    "scroll",
    "type",
    "hotkey",
    "press",
    "key_down",
    "key_up",
    "mouse_down",
    "mouse_up",
    "wait",
    "done",
    "fail",
]
Button: TypeAlias = Literal["left", "middle", "right"]
assert get_args(Button) == BUTTONS, "Button and BUTTONS disagree"
MAX_WAIT_SECONDS = 600.0

_INT = {"type": "integer"}
_OPT_INT = {"type": ["integer", "null"]}
_BUTTON = {"type": "string", "enum": list(BUTTONS)}
_KEY = {"type": "string", "description": "a pyautogui key name"}


def _field(doc: str, schema: Mapping[str, Any], default: Any = MISSING) -> Any:
    return field(default=default, metadata={"doc": doc, "schema": dict(schema)})


def _x(doc: str = "Screen x in pixels; omit both x and y to use the pointer position.") -> Any:
    return _field(doc, _OPT_INT, None)


def _y(doc: str = "Screen y in pixels.") -> Any:
    return _field(doc, _OPT_INT, None)


def _button() -> Any:
    return _field("Mouse button.", _BUTTON, "left")


# --- declarations ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """Base class of typed actions. ``kind`` names the action; see ``ACTION_TYPES``."""

    kind: ClassVar[str] = ""
    #: Whether the guest executes it (False for wait/done/fail, which the host handles).
    executes_on_guest: ClassVar[bool] = True

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"kind": ..., field: value, ...}`` with JSON-compatible values.

        Example:
            >>> Hotkey(keys=("ctrl", "c")).to_dict()
            {'kind': 'hotkey', 'keys': ['ctrl', 'c']}
        """
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Click(Action):
    """Click a mouse button at a point, once or several times."""

    kind: ClassVar[str] = "click"
    x: int | None = _x()
    y: int | None = _y()
    button: Button = _button()
    clicks: int = _field("Number of clicks, 1 to 3.", {"type": "integer", "minimum": 1}, 1)

    def __post_init__(self) -> None:
        check_point(self.kind, self.x, self.y)
        check_button(self.kind, self.button)
        check_int(self.kind, "clicks", self.clicks, 1, 3)


@dataclass(frozen=True, slots=True, kw_only=True)
class DoubleClick(Action):
    """Double-click a mouse button at a point."""

    kind: ClassVar[str] = "double_click"
    x: int | None = _x()
    y: int | None = _y()
    button: Button = _button()

    def __post_init__(self) -> None:
        check_point(self.kind, self.x, self.y)
        check_button(self.kind, self.button)


@dataclass(frozen=True, slots=True, kw_only=True)
class RightClick(Action):
    """Click the right mouse button at a point (opens context menus)."""

    kind: ClassVar[str] = "right_click"
    x: int | None = _x()
    y: int | None = _y()

    def __post_init__(self) -> None:
        check_point(self.kind, self.x, self.y)


@dataclass(frozen=True, slots=True, kw_only=True)
class Move(Action):
    """Move the pointer to a point without clicking (hover)."""

    kind: ClassVar[str] = "move"
    x: int = _field("Screen x in pixels.", _INT)
    y: int = _field("Screen y in pixels.", _INT)

    def __post_init__(self) -> None:
        check_point(self.kind, self.x, self.y, optional=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Drag(Action):
    """Press a button at the start point, move to the end point and release it there."""

    kind: ClassVar[str] = "drag"
    x: int | None = _x("Start x in pixels; omit x and y to start at the pointer.")
    y: int | None = _y("Start y in pixels.")
    to_x: int = _field("End x in pixels.", _INT)
    to_y: int = _field("End y in pixels.", _INT)
    button: Button = _button()

    def __post_init__(self) -> None:
        check_point(self.kind, self.x, self.y)
        check_coord(self.kind, "to_x", self.to_x, False)
        check_coord(self.kind, "to_y", self.to_y, False)
        check_button(self.kind, self.button)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scroll(Action):
    """Scroll the wheel at a point: ``dy`` > 0 scrolls up, ``dx`` > 0 scrolls right."""

    kind: ClassVar[str] = "scroll"
    x: int | None = _x()
    y: int | None = _y()
    dx: int = _field("Horizontal wheel clicks, > 0 right, < 0 left.", _INT, 0)
    dy: int = _field("Vertical wheel clicks, > 0 up, < 0 down.", _INT, 0)

    def __post_init__(self) -> None:
        check_point(self.kind, self.x, self.y)
        check_int(self.kind, "dx", self.dx, -MAX_SCROLL, MAX_SCROLL)
        check_int(self.kind, "dy", self.dy, -MAX_SCROLL, MAX_SCROLL)
        if not (self.dx or self.dy):
            raise ActionError("scroll: dx or dy must be non-zero")

    @property
    def direction(self) -> str:
        """The dominant direction: ``"up"``, ``"down"``, ``"left"`` or ``"right"``."""
        if abs(self.dy) >= abs(self.dx):
            return "up" if self.dy > 0 else "down"
        return "right" if self.dx > 0 else "left"


@dataclass(frozen=True, slots=True, kw_only=True)
class TypeText(Action):
    r"""Type text; ``"\n"`` presses Enter and ``"\t"`` presses Tab."""

    kind: ClassVar[str] = "type"
    text: str = _field("The text to type (non-empty).", {"type": "string", "minLength": 1})

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not 0 < len(self.text) <= MAX_TEXT_CHARS:
            raise ActionError(f"type: text must be a string of 1 to {MAX_TEXT_CHARS} characters")


@dataclass(frozen=True, slots=True, kw_only=True)
class Hotkey(Action):
    """Press keys together: down in order, up in reverse (``ctrl``+``c``)."""

    kind: ClassVar[str] = "hotkey"
    keys: tuple[str, ...] = _field(
        "Key names, pressed in order.", {"type": "array", "items": _KEY, "minItems": 1}
    )

    def __post_init__(self) -> None:
        if isinstance(self.keys, str) or not hasattr(self.keys, "__iter__"):
            raise ActionError(f"hotkey: keys must be a list of key names, got {self.keys!r}")
        object.__setattr__(self, "keys", normalize_keys(self.keys))


@dataclass(frozen=True, slots=True, kw_only=True)
class Press(Action):
    """Press and release one key, possibly several times."""

    kind: ClassVar[str] = "press"
    key: str = _field("Key name.", _KEY)
    presses: int = _field("How many times.", {"type": "integer", "minimum": 1}, 1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", normalize_key(self.key))
        check_int(self.kind, "presses", self.presses, 1, MAX_PRESSES)


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyDown(Action):
    """Hold a key down (release it later with ``key_up``)."""

    kind: ClassVar[str] = "key_down"
    key: str = _field("Key name.", _KEY)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", normalize_key(self.key))


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyUp(Action):
    """Release a key held with ``key_down``."""

    kind: ClassVar[str] = "key_up"
    key: str = _field("Key name.", _KEY)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", normalize_key(self.key))


@dataclass(frozen=True, slots=True, kw_only=True)
class MouseDown(Action):
    """Press a mouse button at a point and hold it."""

    kind: ClassVar[str] = "mouse_down"
    x: int | None = _x()
    y: int | None = _y()
    button: Button = _button()

    def __post_init__(self) -> None:
        check_point(self.kind, self.x, self.y)
        check_button(self.kind, self.button)


@dataclass(frozen=True, slots=True, kw_only=True)
class MouseUp(Action):
    """Release a mouse button at a point."""

    kind: ClassVar[str] = "mouse_up"
    x: int | None = _x()
    y: int | None = _y()
    button: Button = _button()

    def __post_init__(self) -> None:
        check_point(self.kind, self.x, self.y)
        check_button(self.kind, self.button)


@dataclass(frozen=True, slots=True, kw_only=True)
class Wait(Action):
    """Do nothing for a while, then look at the screen again."""

    kind: ClassVar[str] = "wait"
    executes_on_guest: ClassVar[bool] = False
    seconds: float | None = _field(
        "How long; omit for the environment's default pause.", {"type": ["number", "null"]}, None
    )

    def __post_init__(self) -> None:
        s = self.seconds
        if s is None:
            return
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
            raise ActionError(f"wait: seconds must be a finite number, got {s!r}")
        if not 0 <= s <= MAX_WAIT_SECONDS:
            raise ActionError(f"wait: seconds must be in [0, {MAX_WAIT_SECONDS:g}], got {s!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Done(Action):
    """Declare the task complete, optionally with an answer."""

    kind: ClassVar[str] = "done"
    executes_on_guest: ClassVar[bool] = False
    answer: str | None = _field(
        "The answer, for tasks that ask a question.", {"type": ["string", "null"]}, None
    )

    def __post_init__(self) -> None:
        check_optional_text(self.kind, "answer", self.answer)
        if self.answer == "":
            object.__setattr__(self, "answer", None)  # an empty answer is no answer


@dataclass(frozen=True, slots=True, kw_only=True)
class Fail(Action):
    """Declare the task infeasible (or ask for a human), ending the episode."""

    kind: ClassVar[str] = "fail"
    executes_on_guest: ClassVar[bool] = False
    reason: str | None = _field("Why.", {"type": ["string", "null"]}, None)

    def __post_init__(self) -> None:
        check_optional_text(self.kind, "reason", self.reason)
        if self.reason == "":
            object.__setattr__(self, "reason", None)


# --- derived tables --------------------------------------------------------------------------


def _build_table(*classes: type[Action]) -> Mapping[str, type[Action]]:
    table: dict[str, type[Action]] = {}
    for cls in classes:
        if cls.kind in table:
            raise TypeError(f"duplicate action kind {cls.kind!r}: {table[cls.kind]} and {cls}")
        table[cls.kind] = cls
    if set(table) != set(get_args(ActionKind)):
        raise TypeError(f"ActionKind and the declared classes disagree: {sorted(table)}")
    return MappingProxyType(table)


#: kind -> class, in declaration order.
ACTION_TYPES: Mapping[str, type[Action]] = _build_table(
    Click, DoubleClick, RightClick, Move, Drag, Scroll, TypeText, Hotkey, Press,
    KeyDown, KeyUp, MouseDown, MouseUp, Wait, Done, Fail,
)  # fmt: skip
ACTION_KINDS: tuple[str, ...] = tuple(ACTION_TYPES)


def action_from_dict(data: Mapping[str, Any]) -> Action:
    """Build a typed action from ``{"kind": ..., field: value}`` (the ``Action.to_dict()`` form).

    Raises:
        ActionError: unknown kind (with suggestions), unknown or missing fields, bad values.

    Example:
        >>> action_from_dict({"kind": "click", "x": 10, "y": 20})
        Click(x=10, y=20, button='left', clicks=1)
    """
    kind = data.get("kind")
    cls = ACTION_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ActionError(_unknown_kind_message(kind))
    names = {f.name for f in fields(cls)}
    unknown = sorted(str(k) for k in data if k != "kind" and k not in names)
    if unknown:
        raise ActionError(
            f"{kind}: unexpected field(s) {unknown}; expected some of {sorted(names)}"
        )
    kwargs = {k: v for k, v in data.items() if k != "kind"}
    if "keys" in kwargs and isinstance(kwargs["keys"], list):
        kwargs["keys"] = tuple(kwargs["keys"])
    try:
        return cls(**kwargs)
    except TypeError as e:  # a required field is missing
        raise ActionError(f"{kind}: {e}") from e


def _unknown_kind_message(kind: object) -> str:
    close = difflib.get_close_matches(str(kind), ACTION_KINDS, n=3) if kind is not None else []
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    return f"unknown action kind {kind!r}{hint} (expected one of {list(ACTION_KINDS)})"
