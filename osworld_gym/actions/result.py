"""The result of parsing model output, and the lenient/strict guard every dialect runs under."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from osworld_gym.actions.types import Action
from osworld_gym.errors import ActionError, ActionParseError

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_MAX_CHARS", "ParseFailure", "ParseResult", "guarded_parse"]

#: Longer model outputs are rejected outright: no real response is this long, and the bound
#: keeps the worst case of every dialect's scanning cheap.
DEFAULT_MAX_CHARS = 32_768


@dataclass(slots=True)
class ParseResult:
    """What a dialect made of one model output.

    Attributes:
        actions: The typed actions, in order. Parsing is all or nothing: when ``error`` is set
            this list is empty, so a half-understood response never runs half-way.
        raw: The text (or object) that was parsed.
        thought: The model's reasoning (``Thought:``, ``Action_Summary:`` or ``<think>``), when
            the dialect has one and the text gave it.
        reflection: UI-TARS's ``Reflection:`` text, when given.
        error: ``None``, or why the text did not parse.
        error_position: Character offset in ``raw`` where parsing failed, when known.
        dialect: The dialect that parsed it.
    """

    actions: list[Action] = field(default_factory=list)
    raw: Any = ""
    thought: str | None = None
    reflection: str | None = None
    error: str | None = None
    error_position: int | None = None
    dialect: str = ""

    @property
    def ok(self) -> bool:
        """True when the text parsed without error."""
        return self.error is None


class ParseFailure(Exception):
    """Raised inside dialects; ``guarded_parse()`` turns it into a result or a public error.

    Attributes:
        message: Why parsing failed.
        position: Character offset of the failure, when known.
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def guarded_parse(
    result: ParseResult,
    parse: Callable[[ParseResult], None],
    *,
    strict: bool,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ParseResult:
    """Run ``parse(result)``, which fills ``result``, under the lenient/strict contract.

    Lenient mode never raises: any failure, including a bug in a dialect, becomes
    ``result.error`` with no actions. Strict mode raises ``ActionParseError``.

    Args:
        result: A result holding ``raw`` and ``dialect``; ``parse`` fills the rest.
        parse: The dialect's parsing function.
        strict: Raise instead of reporting.
        max_chars: Longest string accepted.

    Returns:
        ``result``, filled.

    Raises:
        ActionParseError: in strict mode, when the text does not parse.
    """
    try:
        if isinstance(result.raw, str) and len(result.raw) > max_chars:
            raise ParseFailure(f"model output too long: {len(result.raw)} > {max_chars} characters")
        parse(result)
        if not result.actions:
            raise ParseFailure("no action found in the model output")
        return result
    except ParseFailure as e:
        message, position = e.message, e.position
        cause: Exception = e
    except ActionError as e:  # an action that parsed but is invalid (bad key, button, ...)
        message, position, cause = str(e), None, e
    except Exception as e:  # a dialect bug must not take down a training run
        logger.warning("internal error in the %s dialect", result.dialect, exc_info=True)
        message, position, cause = f"internal parser error: {type(e).__name__}: {e}", None, e
    if strict:
        text = result.raw if isinstance(result.raw, str) else repr(result.raw)
        raise ActionParseError(
            f"{result.dialect}: {message}", position=position, text=text
        ) from cause
    result.actions = []
    result.error = message
    result.error_position = position
    return result
