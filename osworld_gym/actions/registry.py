"""The dialect registry and the public entry point ``parse_action()``."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from osworld_gym.actions.coords import ScreenSize
from osworld_gym.actions.dialects import computer13, pyautogui, structured, uitars
from osworld_gym.actions.result import ParseResult
from osworld_gym.errors import UnknownDialectError

logger = logging.getLogger(__name__)

__all__ = ["ActionParser", "available_dialects", "get_dialect", "parse_action", "register_dialect"]


class ActionParser(Protocol):
    """What a dialect is: model output (and options) in, ``ParseResult`` out.

    A lenient parser (``strict=False``) never raises for any input; a strict one raises
    ``ActionParseError``. Both may raise ``ValueError`` or
    ``TypeError`` for bad *options*, which are the caller's mistake, not the model's.

    Dialect options (what ``parse_action()`` passes on as ``**options``) are further
    keyword-only parameters with defaults, e.g. UI-TARS's ``coordinates``; a parser without
    them still matches this protocol.
    """

    def __call__(self, text: Any, *, screen_size: ScreenSize, strict: bool = False) -> ParseResult:
        """Parse one model output."""
        ...


_BUILTIN: Mapping[str, ActionParser] = {
    "uitars": uitars.parse,
    "pyautogui": pyautogui.parse,
    "computer_13": computer13.parse,
    "structured": structured.parse,
}
# Dialects added by register_dialect, in the style of Gymnasium's env registry: filled by
# explicit calls only, never replaced silently.
_REGISTERED: dict[str, ActionParser] = {}


def register_dialect(name: str, parser: ActionParser, *, override: bool = False) -> None:
    """Make ``parse_action(text, dialect=name)`` use ``parser``.

    Args:
        name: The dialect name.
        parser: A callable following ``ActionParser``.
        override: Allow replacing a dialect registered earlier under ``name``.

    Raises:
        ValueError: ``name`` is built in, or already registered to another parser and
            ``override`` is false.
    """
    if name in _BUILTIN:
        raise ValueError(f"dialect {name!r} is built in and cannot be replaced")
    previous = _REGISTERED.get(name)
    if previous is not None and previous is not parser and not override:
        raise ValueError(f"dialect {name!r} is already registered to {previous!r}")
    _REGISTERED[name] = parser
    logger.debug("registered action dialect %s", name)


def available_dialects() -> tuple[str, ...]:
    """Return the names of all dialects, built-in first."""
    return (*_BUILTIN, *sorted(_REGISTERED))


def get_dialect(name: str) -> ActionParser:
    """Return the parser of dialect ``name``.

    Raises:
        ValueError: unknown dialect; the message suggests the closest names.
    """
    parser = _BUILTIN.get(name) or _REGISTERED.get(name)
    if parser is None:
        names = available_dialects()
        close = difflib.get_close_matches(str(name), names, n=2)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise UnknownDialectError(
            f"unknown action dialect {name!r}{hint} (available: {list(names)})"
        )
    return parser


def _check_screen(screen_size: object) -> ScreenSize:
    if (
        isinstance(screen_size, (tuple, list))
        and len(screen_size) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in screen_size)
    ):
        return (screen_size[0], screen_size[1])
    raise ValueError(f"screen_size must be (width, height) in positive pixels, got {screen_size!r}")


def parse_action(
    text: Any,
    dialect: str = "uitars",
    screen_size: ScreenSize = (1920, 1080),
    *,
    strict: bool = False,
    **options: Any,
) -> ParseResult:
    """Parse one model output into typed actions.

    Args:
        text: The model output: a string, or for the ``structured`` dialect also dicts and
            typed actions.
        dialect: ``"uitars"``, ``"pyautogui"``, ``"computer_13"``, ``"structured"`` or a
            registered name.
        screen_size: ``(width, height)`` of the screen; result points are screen pixels,
            clamped to it.
        strict: Raise on malformed text instead of reporting it in ``result.error``.
        **options: Dialect options, e.g. ``coordinates="relative"`` for UI-TARS 1.0 or
            ``min_pixels``/``max_pixels`` equal to the image processor's for UI-TARS-1.5.

    Returns:
        A ``ParseResult``: ``.actions`` (each with ``.kind``; ``.x``/``.y`` where it acts
        at a point), ``.thought``, ``.raw`` and ``.error``.

    Raises:
        ActionParseError: in strict mode, when the text does not parse.
        ValueError: unknown dialect, bad screen size or option value.
        TypeError: an option the dialect does not have.

    Example:
        >>> result = parse_action("Action: click(start_box='(1188,554)')")
        >>> result.actions[0].kind, result.actions[0].x, result.actions[0].y, result.error
        ('click', 1181, 548, None)
    """
    parser = get_dialect(dialect)
    return parser(text, screen_size=_check_screen(screen_size), strict=strict, **options)
