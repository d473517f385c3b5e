"""Field checks shared by the action declarations; each raises ActionError naming the field."""

from __future__ import annotations

from osworld_gym.errors import ActionError
from osworld_gym.guest.protocol import BUTTONS as _WIRE_BUTTONS
from osworld_gym.guest.protocol import MAX_COORD

BUTTONS: tuple[str, ...] = ("left", "middle", "right")
assert BUTTONS == _WIRE_BUTTONS, "the guest protocol's buttons changed"
MAX_SCROLL = 1000  # wheel clicks per axis, the guest protocol's bound


def check_coord(kind: str, name: str, value: object, optional: bool) -> None:
    """Check one integer pixel coordinate (None allowed when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ActionError(f"{kind}: {name} must be an integer pixel, got {value!r}")
    if not -MAX_COORD < value < MAX_COORD:
        raise ActionError(f"{kind}: {name} out of range: {value}")


def check_point(kind: str, x: object, y: object, optional: bool = True) -> None:
    """Check a point: both coordinates, or (when ``optional``) neither."""
    check_coord(kind, "x", x, optional)
    check_coord(kind, "y", y, optional)
    if (x is None) != (y is None):
        raise ActionError(f"{kind}: give both x and y, or neither")


def check_int(kind: str, name: str, value: object, low: int, high: int) -> None:
    """Check an integer in ``[low, high]`` (booleans are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ActionError(f"{kind}: {name} must be an integer in [{low}, {high}], got {value!r}")


def check_button(kind: str, value: object) -> None:
    """Check a mouse button name."""
    if value not in BUTTONS:
        raise ActionError(f"{kind}: button must be one of {BUTTONS}, got {value!r}")


def check_optional_text(kind: str, name: str, value: object) -> None:
    """Check a string or None."""
    if value is not None and not isinstance(value, str):
        raise ActionError(f"{kind}: {name} must be a string or None, got {type(value).__name__}")
