"""The pyautogui dialect: OSWorld's ``pyautogui`` action space, parsed -- never executed.

Code comes fenced (```` ```python ... ``` ````) or bare; ``WAIT``, ``DONE`` and ``FAIL`` are
accepted alone or as lines of the code. The code is parsed with ``ast`` and every statement
must be on the allowlist: calls in ``ALLOWED_CALLS`` (``pyautogui.click``, ``time.sleep``,
...) with literal arguments, ``import pyautogui`` / ``import time`` (optionally ``as`` a name),
``pyautogui.FAILSAFE`` / ``pyautogui.PAUSE`` settings, docstrings and ``pass``. Anything else --
other modules, ``exec``, ``open``, names, attribute chains, comprehensions, loops -- rejects the
whole program, with the line and column of the offending node.

What one typed action compiles to reads back as that action (``.compile``): a ``moveTo``
followed by ``dragTo`` or ``scroll`` is one drag or scroll, ``scroll`` + ``hscroll`` one
scroll, and ``hotkey('shift', ',')`` -- OSWorld's way of typing ``<`` on X11 -- is typed text
``<``, joined to the text around it. Timing arguments are dropped; ``time.sleep`` is a wait.

In lenient mode, text that is not valid Python as a whole (prose around code) is searched for
``pyautogui.<name>(...)`` and ``time.sleep(...)`` calls, each checked the same way. For
OSWorld's unsafe run-the-code-as-is behaviour, see ``osworld_gym.actions.unsafe``.
"""

from __future__ import annotations

import ast
import logging
import re
import textwrap
import warnings
from typing import Any

from osworld_gym.actions.coords import ScreenSize
from osworld_gym.actions.dialects._pyautogui_calls import ALLOWED_CALLS, build_actions
from osworld_gym.actions.result import DEFAULT_MAX_CHARS, ParseFailure, ParseResult, guarded_parse
from osworld_gym.actions.types import Action, Done, Drag, Fail, Move, Scroll, TypeText, Wait
from osworld_gym.errors import ActionError

logger = logging.getLogger(__name__)

__all__ = ["ALLOWED_CALLS", "TOKENS", "extract_code", "parse"]

#: OSWorld's special actions and what they become.
TOKENS = {"WAIT": Wait, "DONE": Done, "FAIL": Fail}
_SETTINGS = frozenset({"FAILSAFE", "PAUSE"})
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_CODE_TAGS = frozenset({"", "python", "py", "python3"})
_SNIPPET = re.compile(
    r"(?<![\w.])(?:pyautogui\.[A-Za-z_]\w*|time\.sleep)[ \t]*\(|^[ \t]*(WAIT|DONE|FAIL)[ \t]*$",
    re.M,
)
_MAX_LITERAL_DEPTH = 3
_MAX_SNIPPET_TRIES = 64


def extract_code(text: str, strict: bool) -> list[tuple[str, int]]:
    """Return the code blocks of ``text`` with their offsets: fenced blocks, or the whole text.

    Raises:
        ParseFailure: in strict mode, when prose surrounds the fenced blocks.
    """
    blocks, last = [], 0
    for match in _FENCE.finditer(text):
        if strict and text[last : match.start()].strip():
            raise ParseFailure("unexpected text outside the code block", last)
        last = match.end()
        if strict and not match.group(0).endswith("```"):
            raise ParseFailure("unterminated code fence", match.start())
        if match.group(1).lower() in _CODE_TAGS:
            blocks.append((match.group(2), match.start(2)))
    if not blocks and last == 0:
        return [(text, 0)]
    if strict and text[last:].strip():
        raise ParseFailure("unexpected text after the code block", last)
    return blocks


def _offset(code: str, base: int, node: ast.AST | None) -> int:
    """Character offset in the model output of an AST node (col_offset counts UTF-8 bytes)."""
    # Only some node classes carry positions (expressions, statements, keywords, ...).
    lineno: int | None = getattr(node, "lineno", None)
    if lineno is None:
        return base
    col_offset: int = getattr(node, "col_offset", 0)
    lines = code.splitlines(keepends=True)
    start = sum(len(line) for line in lines[: lineno - 1])
    line = lines[lineno - 1] if lineno - 1 < len(lines) else ""
    column = len(line.encode("utf-8")[:col_offset].decode("utf-8", "ignore"))
    return base + start + column


class _Program:
    """Turns one parsed module into actions, enforcing the allowlist."""

    def __init__(self, code: str, base: int, screen: ScreenSize) -> None:
        self.code, self.base, self.screen = code, base, screen
        self.modules: dict[str, str] = {}  # local name -> allowlisted module

    def fail(self, message: str, node: ast.AST | None) -> ParseFailure:
        return ParseFailure(message, _offset(self.code, self.base, node))

    def run(self, tree: ast.Module) -> list[Action]:
        actions: list[Action] = []
        for statement in tree.body:
            actions.extend(self.statement(statement))
        return actions

    def statement(self, node: ast.stmt) -> list[Action]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_CALLS:
                    raise self.fail(f"import of {alias.name!r} is not allowed", node)
                self.modules[alias.asname or alias.name] = alias.name
            return []
        if isinstance(node, ast.Expr):
            value = node.value
            if isinstance(value, ast.Name) and value.id in TOKENS:
                return [TOKENS[value.id]()]
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return []  # a docstring or a bare comment string
            if isinstance(value, ast.Call):
                return self.call(value)
        if isinstance(node, ast.Assign) and self.is_setting(node):
            return []
        if isinstance(node, ast.Pass):
            return []
        raise self.fail(
            f"{type(node).__name__} statement not allowed: only pyautogui calls, time.sleep, "
            "imports of pyautogui/time and WAIT/DONE/FAIL are accepted",
            node,
        )

    def is_setting(self, node: ast.Assign) -> bool:
        target = node.targets[0] if len(node.targets) == 1 else None
        return (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and self.modules.get(target.value.id) == "pyautogui"
            and target.attr in _SETTINGS
            and isinstance(node.value, ast.Constant)
        )

    def call(self, node: ast.Call) -> list[Action]:
        func = node.func
        if isinstance(func, ast.Name):
            raise self.fail(f"{func.id}(...) is not allowed: only pyautogui.* calls and "
                            "time.sleep are", node)  # fmt: skip
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            raise self.fail("only module.function(...) calls are allowed", node)
        module = self.modules.get(func.value.id, func.value.id)
        spec = ALLOWED_CALLS.get(module, {}).get(func.attr)
        if spec is None:
            raise self.fail(f"{func.value.id}.{func.attr} is not on the allowlist", node)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise self.fail("*args and **kwargs are not allowed", node)
        positional = [self.literal(a, 0) for a in node.args]
        keywords: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg in keywords:
                raise self.fail(f"argument {keyword.arg!r} given twice", keyword)
            keywords[str(keyword.arg)] = self.literal(keyword.value, 0)
        try:
            return build_actions(spec, positional, keywords, self.screen)
        except ActionError as e:
            raise self.fail(f"{module}.{func.attr}: {e}", node) from e

    def literal(self, node: ast.expr, depth: int) -> Any:
        if isinstance(node, ast.Constant):
            value = node.value
            if value is None or isinstance(value, (str, int, float)):
                return value
        elif (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, (ast.USub, ast.UAdd))
            and isinstance(node.operand, ast.Constant)
            # Numbers only: bool is an int subclass, and -True is not a literal the model wrote.
            and isinstance(node.operand.value, (int, float))
            and not isinstance(node.operand.value, bool)
        ):
            value = node.operand.value
            return -value if isinstance(node.op, ast.USub) else value
        elif isinstance(node, (ast.List, ast.Tuple)) and depth < _MAX_LITERAL_DEPTH:
            items = [self.literal(item, depth + 1) for item in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        raise self.fail(f"only literal arguments are allowed, got {type(node).__name__}", node)


def _parse_module(code: str, base: int) -> ast.Module:
    try:
        # Model text often has invalid escapes ('\,'); Python warns about each (a
        # SyntaxWarning printed by default from 3.12). They are the model's, not the user's.
        # catch_warnings swaps the process-wide filter list for the duration of one parse;
        # a filter another thread installs in that instant could be lost, a price worth
        # paying over printing model noise or changing the filters for the whole process.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return ast.parse(code, mode="exec")
    except SyntaxError as e:
        line, column = (e.lineno or 1), max((e.offset or 1) - 1, 0)
        lines = code.splitlines(keepends=True)
        position = base + sum(len(x) for x in lines[: line - 1]) + column
        raise ParseFailure(f"invalid Python: {e.msg}", position) from e
    except (ValueError, MemoryError, RecursionError) as e:  # NUL bytes, absurd nesting
        raise ParseFailure(f"invalid Python: {type(e).__name__}", base) from e


def _snippets(text: str) -> list[tuple[str, int]]:
    """Find allowlisted-looking calls in prose (lenient mode), each as parseable code."""
    found, pos = [], 0
    while match := _SNIPPET.search(text, pos):
        if match.group(1):
            found.append((match.group(1), match.start(1)))
            pos = match.end()
            continue
        end, tries = match.end() - 1, 0
        while (end := text.find(")", end + 1)) >= 0 and tries < _MAX_SNIPPET_TRIES:
            tries += 1
            candidate = text[match.start() : end + 1]
            try:
                _parse_module(candidate, 0)
            except ParseFailure:  # not a complete call yet: try the next ')'
                continue
            found.append((candidate, match.start()))
            break
        else:
            raise ParseFailure("unterminated or malformed call", match.start())
        pos = end + 1
    return found


def _merge(actions: list[Action]) -> list[Action]:
    """Rejoin what one typed action compiles to (see compile.py).

    That is move+drag, move+scroll, scroll+hscroll, and text split around ``<``.
    """
    out: list[Action] = []
    for action in actions:
        prev = out[-1] if out else None
        if isinstance(prev, Move) and isinstance(action, (Drag, Scroll)) and action.x is None:
            out[-1] = _with_point(action, prev.x, prev.y)
        elif (
            isinstance(prev, Scroll)
            and isinstance(action, Scroll)
            and action.x is None
            and ((prev.dx == 0 and action.dy == 0) or (prev.dy == 0 and action.dx == 0))
        ):
            out[-1] = Scroll(x=prev.x, y=prev.y, dx=prev.dx + action.dx, dy=prev.dy + action.dy)
        elif (
            isinstance(prev, TypeText)
            and isinstance(action, TypeText)
            and (action.text == "<" or prev.text.endswith("<"))
        ):
            out[-1] = TypeText(text=prev.text + action.text)
        else:
            out.append(action)
    return out


def _with_point(action: Drag | Scroll, x: int, y: int) -> Action:
    if isinstance(action, Drag):
        return Drag(x=x, y=y, to_x=action.to_x, to_y=action.to_y, button=action.button)
    return Scroll(x=x, y=y, dx=action.dx, dy=action.dy)


def _token(text: str, strict: bool) -> Action | None:
    stripped = text.strip()
    name = stripped if strict else stripped.upper()
    cls = TOKENS.get(name)
    return cls() if cls else None


def parse(
    text: object,
    *,
    screen_size: ScreenSize = (1920, 1080),
    strict: bool = False,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ParseResult:
    r"""Parse pyautogui code (OSWorld's ``pyautogui`` action space) into typed actions.

    Args:
        text: The model output.
        screen_size: ``(width, height)``; points are clamped to it.
        strict: Raise instead of reporting; no prose around the code.
        max_chars: Longer outputs are rejected.

    Returns:
        The parse result; ``thought`` holds the prose before the first code block, if any.

    Raises:
        ActionParseError: in strict mode, when the text does not parse or leaves the allowlist.

    Example:
        >>> parse("```python\npyautogui.click(100, 200)\n```").actions
        [Click(x=100, y=200, button='left', clicks=1)]
    """
    result = ParseResult(raw=text, dialect="pyautogui")

    def run(out: ParseResult) -> None:
        if not isinstance(text, str):
            raise ParseFailure(f"expected a string, got {type(text).__name__}")
        token = _token(text, strict)
        if token is not None:
            out.actions.append(token)
            return
        blocks = extract_code(text, strict)
        if blocks and blocks[0][1] > 0:
            out.thought = text[: blocks[0][1]].rsplit("```", 1)[0].strip() or None
        actions: list[Action] = []
        for code, base in blocks:
            actions.extend(_parse_block(code, base, screen_size, strict))
        out.actions.extend(_merge(actions))

    return guarded_parse(result, run, strict=strict, max_chars=max_chars)


def _parse_block(code: str, base: int, screen: ScreenSize, strict: bool) -> list[Action]:
    if not strict:
        code = textwrap.dedent(code)  # offsets in errors become approximate; fine when lenient
    try:
        tree = _parse_module(code, base)
    except ParseFailure:
        if strict:
            raise
        # Not Python as a whole: pick the calls out of the prose. Only a syntax error leads
        # here; a program that parses but leaves the allowlist is rejected whole, below.
        actions: list[Action] = []
        for snippet, offset in _snippets(code):
            if snippet in TOKENS:
                actions.append(TOKENS[snippet]())
            else:
                program = _Program(snippet, base + offset, screen)
                actions.extend(program.run(_parse_module(snippet, base + offset)))
        return actions
    return _Program(code, base, screen).run(tree)
