"""Finding JSON values in model output: fenced blocks, the whole text, or (lenient) prose."""

from __future__ import annotations

import json
import re
from typing import Any

from osworld_gym.actions.result import ParseFailure

__all__ = ["find_json_values", "find_token", "find_token_line"]

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_JSON_TAGS = frozenset({"", "json", "json5", "python"})
_OPEN = re.compile(r"[\[{]")
_TOKEN_LINE = re.compile(r"^[ \t]*(WAIT|DONE|FAIL)[ \t.]*$", re.M | re.I)
_MAX_DECODE_TRIES = 256  # bounds the cost of prose full of brackets
_DECODER = json.JSONDecoder()


def find_token(text: str, tokens: frozenset[str], strict: bool) -> str | None:
    """Return ``WAIT``/``DONE``/``FAIL`` when the whole text is that token."""
    stripped = text.strip()
    name = stripped if strict else stripped.rstrip(".").upper()
    return name if name in tokens else None


def find_token_line(text: str) -> tuple[str, int] | None:
    """Return the last line that is only a token (lenient mode), with its offset."""
    found = None
    for match in _TOKEN_LINE.finditer(text):
        found = (match.group(1).upper(), match.start(1))
    return found


def _loads(text: str, base: int) -> Any:
    try:
        return json.loads(text)
    except RecursionError as e:
        raise ParseFailure("JSON nested too deeply", base) from e
    except ValueError as e:
        position = base + getattr(e, "pos", 0)
        raise ParseFailure(f"invalid JSON: {getattr(e, 'msg', e)}", position) from e


def _scan(text: str, base: int) -> list[tuple[Any, int]]:
    found: list[tuple[Any, int]] = []
    pos, tries = 0, 0
    while tries < _MAX_DECODE_TRIES and (match := _OPEN.search(text, pos)):
        tries += 1
        try:
            value, end = _DECODER.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            pos = match.start() + 1
            continue
        found.append((value, base + match.start()))
        pos = end
    return found


def find_json_values(text: str, strict: bool) -> list[tuple[Any, int]]:
    """Return the JSON values in ``text`` with their offsets.

    Fenced blocks (```` ```json ````) are read first; otherwise the whole text must be JSON.
    In lenient mode, a block or text that is not JSON is searched for objects and arrays.

    Raises:
        ParseFailure: in strict mode, invalid JSON or prose around the blocks.
    """
    blocks, last = [], 0
    for match in _FENCE.finditer(text):
        if strict and text[last : match.start()].strip():
            raise ParseFailure("unexpected text outside the code block", last)
        last = match.end()
        if match.group(1).lower() in _JSON_TAGS:
            blocks.append((match.group(2), match.start(2)))
    if strict and last and text[last:].strip():
        raise ParseFailure("unexpected text after the code block", last)
    if not blocks:
        blocks = [(text, 0)]
    values: list[tuple[Any, int]] = []
    for block, base in blocks:
        if strict:
            values.append((_loads(block, base), base + len(block) - len(block.lstrip())))
            continue
        try:
            values.append((json.loads(block), base))
        except (ValueError, RecursionError):
            values.extend(_scan(block, base))
    return values
