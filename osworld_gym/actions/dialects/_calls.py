"""A tolerant scanner for Python-like calls with keyword string arguments (UI-TARS style).

``name(key='value', key2="value", (1, 2))`` -- no evaluation, no ``ast``: models write
unescaped apostrophes (``finished(content='I've done it')``), real newlines inside strings and
box tokens, all of which a Python parser rejects. Closing a string:

* a quote followed by ``, key=`` or ``, '`` (the next argument), or by ``)`` at the end of a
  line, of the text or before the next call, closes it;
* a quote followed by ``,``, ``)``, the end of the text or ``key=`` only *may* close it: a
  later closing quote on the same line wins unless another call or argument starts in
  between, so ``type(content='print('hi')')`` keeps its inner quotes;
* any other quote (``I've``) is content.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass, field

from osworld_gym.actions.result import ParseFailure

__all__ = ["Arg", "Call", "scan_calls", "unescape"]

CALL_START = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_KWARG = re.compile(r"([A-Za-z_]\w*)[ \t]*=(?!=)\s*")
_SPACE = re.compile(r"\s*")
_NEXT_ARG = re.compile(r"\s*,\s*(?:[A-Za-z_]\w*[ \t]*=(?!=)|['\"])")
_GAP_STOP = re.compile(r"[A-Za-z_]\w*(?:\(|[ \t]*=)|\n")
_END_OF_CALL = re.compile(r"\s*\)[ \t]*(?:\r?\n|\Z|```|[A-Za-z_]\w*\()")
_MAYBE_END = re.compile(r"\s*(?:[,)]|\Z)|\s+[A-Za-z_]\w*[ \t]*=")  # the last: a missing comma
_BARE = re.compile(r"[^,()\[\]{}'\"]*")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "\\": "\\"}
_PAIRS = {"(": ")", "[": "]", "{": "}"}


@dataclass(slots=True)
class Arg:
    """One argument: ``name`` is None for a positional one; ``value`` is unescaped text."""

    name: str | None
    value: str
    quoted: bool
    position: int


@dataclass(slots=True)
class Call:
    """One call found in the text, with character offsets ``[start, end)``."""

    name: str
    start: int
    end: int = 0
    args: list[Arg] = field(default_factory=list)


def _escaped(text: str, index: int) -> bool:
    count = 0
    while index > 0 and text[index - 1] == "\\":
        count += 1
        index -= 1
    return count % 2 == 1


def _replace_escape(match: re.Match[str]) -> str:
    body = match.group(1)
    if len(body) == 5:
        return chr(int(body[1:], 16))
    return _ESCAPES.get(body, match.group(0))


def unescape(text: str) -> str:
    r"""Undo Python-style escapes (``\n \t \r \' \" \\ \uXXXX``); others stay as written.

    Example:
        >>> unescape(r"it\'s\ndone \d")
        "it's\ndone \\d"
    """
    return _ESCAPE.sub(_replace_escape, text) if "\\" in text else text


def _read_string(text: str, start: int) -> tuple[str, int]:
    """Read the quoted string at ``start``; return its unescaped value and the end offset."""
    quote = text[start]
    search, candidate = start + 1, -1
    while True:
        k = text.find(quote, search)
        if k < 0:
            break
        if candidate >= 0:
            gap = text[search - 1 : k]
            if _GAP_STOP.search(gap):
                break  # a later quote belongs to another line, call or argument
        search = k + 1
        if _escaped(text, k):
            continue
        if _NEXT_ARG.match(text, k + 1) or _END_OF_CALL.match(text, k + 1):
            return unescape(text[start + 1 : k]), k + 1
        if candidate < 0 and _MAYBE_END.match(text, k + 1):
            candidate = k
    if candidate >= 0:
        return unescape(text[start + 1 : candidate]), candidate + 1
    raise ParseFailure("unterminated string (no closing quote)", start)


def _read_bare(text: str, start: int) -> tuple[str, int]:
    """Read an unquoted value up to a top-level ``,`` or ``)``: ``(1, 2)``, ``[3,4]``, ``5``."""
    i, n, closers = start, len(text), []
    while i < n:
        i = _BARE.match(text, i).end()  # type: ignore[union-attr]
        if i >= n:
            break
        c = text[i]
        if c in _PAIRS:
            closers.append(_PAIRS[c])
        elif closers and c == closers[-1]:
            closers.pop()
        elif not closers and c in ",)":
            break
        elif c in "'\"" or c in ")]}":
            raise ParseFailure(f"unexpected {c!r} in an unquoted argument", i)
        i += 1
    if closers:
        raise ParseFailure(f"unbalanced brackets in an argument (missing {closers[-1]!r})", start)
    return text[start:i].strip(), i


def _read_call(text: str, name: str, start: int, open_end: int) -> Call:
    """Read the arguments of the call whose ``(`` ends at ``open_end``."""
    call = Call(name, start)
    i, n = open_end, len(text)
    while True:
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
        if i >= n:
            raise ParseFailure(f"{name}(...) is not closed (missing ')')", start)
        if text[i] == ")":
            call.end = i + 1
            return call
        key, arg_start = None, i
        match = _KWARG.match(text, i)
        if match:
            key, i = match.group(1), match.end()
        if i < n and text[i] in "'\"":
            value, i = _read_string(text, i)
            quoted = True
        else:
            value, i = _read_bare(text, i)
            quoted = False
            if not value:
                raise ParseFailure(f"{name}(...): missing argument value", i)
        call.args.append(Arg(key, value, quoted, arg_start))
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
        if i < n and text[i] == ",":
            i += 1
        elif i < n and text[i] != ")":
            raise ParseFailure(f"{name}(...): expected ',' or ')' after an argument", i)


def _at_line_start(text: str, index: int, floor: int) -> bool:
    line_start = max(text.rfind("\n", floor, index) + 1, floor)
    return not text[line_start:index].strip()


def scan_calls(
    text: str, start: int, known: Container[str], *, strict: bool, end: int | None = None
) -> list[Call]:
    """Find the calls in ``text[start:end]``.

    Args:
        text: The whole model output (offsets in errors refer to it).
        start: Where the action section begins.
        known: Lower-case call names that are actions.
        strict: Reject anything but white space between calls, and unknown names.
        end: Where the section ends (default: the end of the text).

    Returns:
        The calls, in order.

    Raises:
        ParseFailure: a call to a known name is malformed; in strict mode also prose or an
            unknown name; in lenient mode an unknown name that starts a line.
    """
    end = len(text) if end is None else end
    calls: list[Call] = []
    pos = start
    while True:
        match = CALL_START.search(text, pos, end)
        gap_end = match.start() if match else end
        if strict and text[pos:gap_end].strip():
            raise ParseFailure("unexpected text outside an action call", pos + _lead(text, pos))
        if match is None:
            return calls
        name = match.group(1)
        if name.lower() not in known:
            if strict or _at_line_start(text, match.start(), start):
                raise ParseFailure(f"unknown action {name!r}", match.start())
            pos = match.end()
            continue
        call = _read_call(text, name.lower(), match.start(), match.end())
        if call.end > end:
            raise ParseFailure(f"{name}(...) runs past the action section", match.start())
        calls.append(call)
        pos = call.end


def _lead(text: str, pos: int) -> int:
    return len(text) - pos - len(text[pos:].lstrip())
