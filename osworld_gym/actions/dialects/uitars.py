r"""The UI-TARS dialect: ``Thought: ...\nAction: click(start_box='(x,y)')`` and its variants.

Accepted (see ``docs/design/action-formats.md#ui-tars``):

* preambles ``Thought:``, ``Reflection:`` + ``Action_Summary:``, ``Action_Summary:``,
  ``<think>...</think>``, or none;
* the action section after the first ``Action:`` that starts a line (so content that itself
  contains ``Action:`` is safe), several calls separated by blank lines;
* points as ``'(x,y)'``, ``'(x1,y1,x2,y2)'`` (the centre), ``'[x,y]'``,
  ``'<|box_start|>(x,y)<|box_end|>'``, ``'<point>x y</point>'``, ``'<bbox>x1 y1 x2 y2</bbox>'``,
  under ``start_box``/``end_box``, ``point``, ``start_point``/``end_point``;
* every action of the ARPO / UI-TARS computer prompts plus ``press``, ``keydown``/``keyup``,
  ``mouse_down``/``mouse_up``, ``call_user`` (a fail) and scrolling in four directions.

Coordinates follow ``coordinates``: ``"resized"`` for UI-TARS-1.5 (pixels in the smart-resized
image; pass the image processor's ``min_pixels``/``max_pixels``), ``"relative"`` for UI-TARS 1.0
(0-1000 grid), ``"screen"`` for screen pixels.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from osworld_gym.actions import coords
from osworld_gym.actions.dialects._calls import CALL_START, Arg, Call, scan_calls
from osworld_gym.actions.keys import split_hotkey
from osworld_gym.actions.result import DEFAULT_MAX_CHARS, ParseFailure, ParseResult, guarded_parse
from osworld_gym.actions.types import (
    ACTION_KINDS,
    BUTTONS,
    MAX_SCROLL,
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

__all__ = ["DEFAULT_SCROLL_CLICKS", "UITARS_ACTIONS", "parse"]

DEFAULT_SCROLL_CLICKS = 5  # wheel clicks per UI-TARS scroll, as in ARPO's parser

_MARK_STRICT = re.compile(r"^[ \t]*Action:[ \t]*", re.M)
_MARK_LENIENT = re.compile(r"^[ \t]*[*#]*[ \t]*action[ \t]*[*]*[ \t]*:[*]*[ \t]*", re.M | re.I)
_MARK_ANYWHERE = re.compile(r"\baction[ \t]*:", re.I)
_THINK = re.compile(r"\s*<think>(.*?)</think>", re.S)
_THOUGHT = re.compile(r"(?:^|\n)[ \t]*[*]*thought[*]*[ \t]*:", re.I)
_REFLECTION = re.compile(r"\s*Reflection:(.*?)(?:Action_Summary:(.*))?\Z", re.S | re.I)
_SUMMARY = re.compile(r"\s*Action_Summary:(.*)\Z", re.S | re.I)
_TAG = re.compile(r"<\|?/?[A-Za-z_]*\|?>")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_BOX_PUNCT = re.compile(r"[\s,()\[\]]*")

# Argument names models use, mapped to the names the handlers read.
_PARAM_ALIASES = MappingProxyType(
    {
        "start_box": "start_box",
        "point": "start_box",
        "start_point": "start_box",
        "box": "start_box",
        "position": "start_box",
        "end_box": "end_box",
        "end_point": "end_box",
        "content": "content",
        "text": "content",
        "key": "key",
        "keys": "key",
        "hotkey": "key",
        "direction": "direction",
        "button": "button",
    }
)
_DIRECTIONS = MappingProxyType({"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)})


@dataclass(frozen=True, slots=True)
class _Context:
    screen_size: tuple[int, int]
    scale: tuple[float, float]
    scroll_clicks: int

    def point(self, args: dict[str, Arg], name: str, call: Call) -> tuple[int, int] | None:
        arg = args.get(name)
        if arg is None:
            return None
        numbers = _numbers(arg)
        if len(numbers) == 4:
            x, y = (numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2
        elif len(numbers) == 2:
            x, y = numbers
        else:
            raise ParseFailure(
                f"{call.name}: {name} must hold 2 numbers (a point) or 4 (a box), "
                f"got {arg.value!r}",
                arg.position,
            )
        return coords.clamp_point(x * self.scale[0], y * self.scale[1], self.screen_size)

    def required_point(self, args: dict[str, Arg], name: str, call: Call) -> tuple[int, int]:
        point = self.point(args, name, call)
        if point is None:
            raise ParseFailure(f"{call.name}(...) needs {name}", call.start)
        return point


def _numbers(arg: Arg) -> list[float]:
    value = _TAG.sub(" ", arg.value) if "<" in arg.value else arg.value
    if not _BOX_PUNCT.fullmatch(_NUMBER.sub(" ", value)):
        raise ParseFailure(f"cannot read coordinates from {arg.value!r}", arg.position)
    return [float(n) for n in _NUMBER.findall(value)]


def _text(args: dict[str, Arg], name: str) -> str | None:
    arg = args.get(name)
    return None if arg is None else arg.value


# --- one handler per UI-TARS action ----------------------------------------------------------

Handler = Callable[[Call, dict[str, Arg], _Context], Action]


def _click(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    x, y = ctx.required_point(args, "start_box", call)
    return Click(x=x, y=y)


def _double(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    x, y = ctx.required_point(args, "start_box", call)
    return DoubleClick(x=x, y=y)


def _right(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    x, y = ctx.required_point(args, "start_box", call)
    return RightClick(x=x, y=y)


def _hover(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    x, y = ctx.required_point(args, "start_box", call)
    return Move(x=x, y=y)


def _drag(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    x, y = ctx.required_point(args, "start_box", call)
    to_x, to_y = ctx.required_point(args, "end_box", call)
    return Drag(x=x, y=y, to_x=to_x, to_y=to_y)


def _scroll(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    point = ctx.point(args, "start_box", call)
    direction = (_text(args, "direction") or "").strip().strip("'\"").lower()
    if direction not in _DIRECTIONS:
        raise ParseFailure(
            f"scroll: direction must be one of {list(_DIRECTIONS)}, got {direction!r}", call.start
        )
    sx, sy = _DIRECTIONS[direction]
    x, y = point if point else (None, None)
    return Scroll(x=x, y=y, dx=sx * ctx.scroll_clicks, dy=sy * ctx.scroll_clicks)


def _type(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    text = _text(args, "content")
    if not text:
        raise ParseFailure("type(...) needs non-empty content", call.start)
    if text.endswith("\\n"):  # a doubly escaped trailing newline still means Enter
        text = text[:-2] + "\n"
    return TypeText(text=text)


def _keys(call: Call, args: dict[str, Arg]) -> tuple[str, ...]:
    value = _text(args, "key")
    if not value:
        raise ParseFailure(f"{call.name}(...) needs key", call.start)
    try:
        return split_hotkey(value)
    except ActionError as e:
        raise ParseFailure(f"{call.name}: {e}", args["key"].position) from e


def _single_key(call: Call, args: dict[str, Arg]) -> str:
    keys = _keys(call, args)
    if len(keys) != 1:
        raise ParseFailure(f"{call.name}(...) takes one key, got {list(keys)}", call.start)
    return keys[0]


def _hotkey(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    return Hotkey(keys=_keys(call, args))


def _press(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    return Press(key=_single_key(call, args))


def _key_down(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    return KeyDown(key=_single_key(call, args))


def _key_up(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    return KeyUp(key=_single_key(call, args))


def _mouse(cls: type[MouseDown] | type[MouseUp]) -> Handler:
    def handler(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
        point = ctx.point(args, "start_box", call)
        button = (_text(args, "button") or "left").strip().lower()
        if button not in BUTTONS:
            raise ParseFailure(f"{call.name}: button must be one of {BUTTONS}", call.start)
        x, y = point if point else (None, None)
        return cls(x=x, y=y, button=button)  # type: ignore[arg-type]

    return handler


def _wait(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    return Wait()


def _finished(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    return Done(answer=_text(args, "content") or None)


def _call_user(call: Call, args: dict[str, Arg], ctx: _Context) -> Action:
    detail = _text(args, "content")
    return Fail(reason=f"{call.name}: {detail}" if detail else call.name)


# name -> (handler, positional parameter order, kind produced)
_TABLE: dict[str, tuple[Handler, tuple[str, ...], str]] = {
    "click": (_click, ("start_box",), "click"),
    "left_single": (_click, ("start_box",), "click"),
    "left_click": (_click, ("start_box",), "click"),
    "left_double": (_double, ("start_box",), "double_click"),
    "double_click": (_double, ("start_box",), "double_click"),
    "right_single": (_right, ("start_box",), "right_click"),
    "right_click": (_right, ("start_box",), "right_click"),
    "hover": (_hover, ("start_box",), "move"),
    "move_to": (_hover, ("start_box",), "move"),
    "mouse_move": (_hover, ("start_box",), "move"),
    "drag": (_drag, ("start_box", "end_box"), "drag"),
    "select": (_drag, ("start_box", "end_box"), "drag"),
    "scroll": (_scroll, ("start_box", "direction"), "scroll"),
    "type": (_type, ("content",), "type"),
    "hotkey": (_hotkey, ("key",), "hotkey"),
    "press": (_press, ("key",), "press"),
    "keydown": (_key_down, ("key",), "key_down"),
    "key_down": (_key_down, ("key",), "key_down"),
    "keyup": (_key_up, ("key",), "key_up"),
    "key_up": (_key_up, ("key",), "key_up"),
    "release": (_key_up, ("key",), "key_up"),
    "mouse_down": (_mouse(MouseDown), ("start_box", "button"), "mouse_down"),
    "mouse_up": (_mouse(MouseUp), ("start_box", "button"), "mouse_up"),
    "wait": (_wait, (), "wait"),
    "finished": (_finished, ("content",), "done"),
    "call_user": (_call_user, ("content",), "fail"),
    "error_env": (_call_user, ("content",), "fail"),
}
assert {kind for _, _, kind in _TABLE.values()} == set(ACTION_KINDS), "UI-TARS table drifted"
#: UI-TARS action name -> the kind it produces (the dialect's name table).
UITARS_ACTIONS = MappingProxyType({name: kind for name, (_, _, kind) in _TABLE.items()})


def _bind(call: Call, order: tuple[str, ...], strict: bool) -> dict[str, Arg]:
    bound: dict[str, Arg] = {}
    for index, arg in enumerate(call.args):
        if arg.name is None:
            if index >= len(order) or any(a.name is not None for a in call.args[:index]):
                raise ParseFailure(f"{call.name}: unexpected positional argument", arg.position)
            name = order[index]
        else:
            name = _PARAM_ALIASES.get(arg.name.lower(), "")
            if name not in order:
                if strict:
                    raise ParseFailure(f"{call.name}: unknown argument {arg.name!r}", arg.position)
                continue
        if name in bound:
            raise ParseFailure(f"{call.name}: {name} given twice", arg.position)
        bound[name] = arg
    return bound


def _find_action_section(text: str, strict: bool) -> tuple[int, int, int]:
    """Return (preamble start, preamble end, action section start)."""
    begin = 0
    think = _THINK.match(text)
    if think:
        begin = think.end()
    mark = (_MARK_STRICT if strict else _MARK_LENIENT).search(text, begin)
    if mark is None and not strict:
        mark = _MARK_ANYWHERE.search(text, begin)
    if mark is None:
        if strict:
            raise ParseFailure("no 'Action:' line in the model output", len(text))
        return begin, begin, begin
    return begin, mark.start(), mark.end()


def _set_thoughts(result: ParseResult, text: str, pre_start: int, pre_end: int) -> None:
    think = _THINK.match(text)
    preamble = text[pre_start:pre_end]
    reflection = _REFLECTION.match(preamble)
    if reflection:
        result.reflection = reflection.group(1).strip() or None
        result.thought = (reflection.group(2) or "").strip() or None
    elif summary := _SUMMARY.match(preamble):
        result.thought = summary.group(1).strip() or None
    elif thought := _THOUGHT.search(preamble):
        result.thought = preamble[thought.end() :].strip() or None
    else:
        result.thought = preamble.strip() or None
    if think and not result.thought:
        result.thought = think.group(1).strip() or None


def parse(
    text: object,
    *,
    screen_size: tuple[int, int] = (1920, 1080),
    strict: bool = False,
    coordinates: coords.CoordinateSystem = "resized",
    factor: int = coords.IMAGE_FACTOR,
    min_pixels: int = coords.MIN_PIXELS,
    max_pixels: int = coords.MAX_PIXELS,
    scroll_clicks: int = DEFAULT_SCROLL_CLICKS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ParseResult:
    r"""Parse one UI-TARS response into typed actions.

    Args:
        text: The model output.
        screen_size: ``(width, height)`` of the screen, in pixels.
        strict: Raise ``ActionParseError`` instead of reporting, and
            reject prose around the calls and unknown arguments.
        coordinates: ``"resized"`` (UI-TARS-1.5), ``"relative"`` (UI-TARS 1.0, 0-1000) or
            ``"screen"``.
        factor: Smart-resize factor of the image processor.
        min_pixels: The image processor's ``min_pixels``.
        max_pixels: The image processor's ``max_pixels``.
        scroll_clicks: Wheel clicks for one ``scroll(direction=...)``.
        max_chars: Longer outputs are rejected.

    Returns:
        The parse result.

    Raises:
        ActionParseError: in strict mode, when the text does not parse.
        ValueError: bad options (coordinate system, smart-resize bounds).

    Example:
        >>> parse("Thought: open it\nAction: click(start_box='(1188,554)')").actions
        [Click(x=1181, y=548, button='left', clicks=1)]
    """
    if isinstance(scroll_clicks, bool) or not isinstance(scroll_clicks, int):
        raise ValueError(f"scroll_clicks must be an integer, got {scroll_clicks!r}")
    if not 1 <= scroll_clicks <= MAX_SCROLL:
        raise ValueError(f"scroll_clicks must be in [1, {MAX_SCROLL}], got {scroll_clicks}")
    size = (int(screen_size[0]), int(screen_size[1]))
    scale = coords.scale_factors(size, coordinates, factor, min_pixels, max_pixels)
    ctx = _Context(size, scale, scroll_clicks)
    result = ParseResult(raw=text, dialect="uitars")

    def run(out: ParseResult) -> None:
        if not isinstance(text, str):
            raise ParseFailure(f"expected a string, got {type(text).__name__}")
        pre_start, pre_end, section = _find_action_section(text, strict)
        if section == pre_start:  # no Action: marker: the thought is what precedes a call
            pre_end = next(
                (m.start() for m in CALL_START.finditer(text, section) if m[1].lower() in _TABLE),
                len(text),
            )
        _set_thoughts(out, text, pre_start, pre_end)
        calls = scan_calls(text, section, _TABLE, strict=strict)
        for call in calls:
            handler, order, _ = _TABLE[call.name]
            try:
                out.actions.append(handler(call, _bind(call, order, strict), ctx))
            except ActionError as e:
                raise ParseFailure(f"{call.name}: {e}", call.start) from e

    return guarded_parse(result, run, strict=strict, max_chars=max_chars)
