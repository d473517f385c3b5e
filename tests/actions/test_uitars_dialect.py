"""Table tests of the UI-TARS dialect: every form of issue 3, on a 1920x1080 screen.

UI-TARS-1.5 points are in the 1932x1092 smart-resized image: x_screen = x * 1920 / 1932,
y_screen = y * 1080 / 1092, rounded half up and clamped.
"""

from __future__ import annotations

import pytest

from osworld_gym.actions import (
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
    parse_action,
)
from osworld_gym.errors import ActionParseError

# --- well-formed responses -------------------------------------------------------------------

FORMS = [
    # coordinate forms (1.5: resized-image pixels)
    ("Action: click(start_box='(1188,554)')", [Click(x=1181, y=548)]),
    ("Action: click(start_box='(100,200)')", [Click(x=99, y=198)]),
    ("Action: click(start_box='( 100 , 200 )')", [Click(x=99, y=198)]),
    ("Action: click(start_box='(100.5,200.5)')", [Click(x=100, y=198)]),
    ("Action: click(start_box='(100,200,300,400)')", [Click(x=199, y=297)]),
    ("Action: click(start_box='[12,34]')", [Click(x=12, y=34)]),
    ("Action: click(start_box='<|box_start|>(100,200)<|box_end|>')", [Click(x=99, y=198)]),
    ("Action: click(start_box='<|box_start|>(100,200,300,400)<|box_end|>')", [Click(x=199, y=297)]),
    ("Action: click(point='<point>100 200</point>')", [Click(x=99, y=198)]),
    ("Action: click(start_box='<bbox>10 20 30 40</bbox>')", [Click(x=20, y=30)]),
    ("Action: click(start_box=(100,200))", [Click(x=99, y=198)]),
    ('Action: click(start_box="(100,200)")', [Click(x=99, y=198)]),
    ("Action: click('(100,200)')", [Click(x=99, y=198)]),
    ("Action: left_single(start_box='(100,200)')", [Click(x=99, y=198)]),
    ("Action: click(start_box='(1932,1092)')", [Click(x=1919, y=1079)]),
    ("Action: click(start_box='(-5,-5)')", [Click(x=0, y=0)]),
    ("Action: click(start_box='(99999,5)')", [Click(x=1919, y=5)]),
    # every action of the ARPO prompt, and the extras
    ("Action: left_double(start_box='(960,540)')", [DoubleClick(x=954, y=534)]),
    ("Action: right_single(start_box='(960,540)')", [RightClick(x=954, y=534)]),
    ("Action: hover(start_box='(960,540)')", [Move(x=954, y=534)]),
    (
        "Action: drag(start_box='(1,2)', end_box='(300,400)')",
        [Drag(x=1, y=2, to_x=298, to_y=396)],
    ),
    (
        "Action: drag(start_point='<point>1 2</point>', end_point='<point>300 400</point>')",
        [Drag(x=1, y=2, to_x=298, to_y=396)],
    ),
    (
        "Action: select(start_box='<|box_start|>(1,2)<|box_end|>', "
        "end_box='<|box_start|>(300,400)<|box_end|>')",
        [Drag(x=1, y=2, to_x=298, to_y=396)],
    ),
    ("Action: hotkey(key='ctrl c')", [Hotkey(keys=("ctrl", "c"))]),
    ("Action: hotkey(key='Ctrl+Shift+T')", [Hotkey(keys=("ctrl", "shift", "t"))]),
    ("Action: hotkey(key='arrowleft')", [Hotkey(keys=("left",))]),
    ("Action: hotkey(hotkey='alt f4')", [Hotkey(keys=("alt", "f4"))]),
    ("Action: press(key='enter')", [Press(key="enter")]),
    ("Action: press(key='Escape')", [Press(key="escape")]),
    ("Action: keydown(key='shift')", [KeyDown(key="shift")]),
    ("Action: keyup(key='shift')", [KeyUp(key="shift")]),
    ("Action: release(key='ctrl')", [KeyUp(key="ctrl")]),
    ("Action: mouse_down(start_box='(960,540)')", [MouseDown(x=954, y=534)]),
    ("Action: mouse_up(button='right')", [MouseUp(button="right")]),
    ("Action: wait()", [Wait()]),
    ("Action: call_user()", [Fail(reason="call_user")]),
    ("Action: call_user(content='need a password')", [Fail(reason="call_user: need a password")]),
    # scroll in all four directions, with and without a point
    ("Action: scroll(start_box='(960,540)', direction='down')", [Scroll(x=954, y=534, dy=-5)]),
    ("Action: scroll(start_box='(960,540)', direction='up')", [Scroll(x=954, y=534, dy=5)]),
    ("Action: scroll(start_box='(960,540)', direction='left')", [Scroll(x=954, y=534, dx=-5)]),
    ("Action: scroll(start_box='(960,540)', direction='right')", [Scroll(x=954, y=534, dx=5)]),
    ("Action: scroll(direction='Down')", [Scroll(dy=-5)]),
    (
        "Action: scroll(point='<point>960 540</point>', direction='up')",
        [Scroll(x=954, y=534, dy=5)],
    ),
    # type: escapes, trailing newline = Enter, content holding Action: and quotes
    ("Action: type(content='hello')", [TypeText(text="hello")]),
    ("Action: type(content='hello\\n')", [TypeText(text="hello\n")]),
    ("Action: type(content='hello\\\\n')", [TypeText(text="hello\n")]),
    ("Action: type(content='line1\\nline2')", [TypeText(text="line1\nline2")]),
    ("Action: type(content='real\nnewline')", [TypeText(text="real\nnewline")]),
    ("Action: type(content='it\\'s \\\"q\\\"')", [TypeText(text='it\'s "q"')]),
    ("Action: type(content='it's fine')", [TypeText(text="it's fine")]),
    (
        "Action: type(content='Action: click(start_box=\\'(1,2)\\')')",
        [TypeText(text="Action: click(start_box='(1,2)')")],
    ),
    ("Action: type(content='Action: done')", [TypeText(text="Action: done")]),
    ("Action: type(content='print('hi')')", [TypeText(text="print('hi')")]),
    ("Action: type(content='C:\\\\temp')", [TypeText(text="C:\\temp")]),
    ("Action: type(content='caf\\u00e9 中文 😀')", [TypeText(text="café 中文 😀")]),
    ("Action: type(text='alias')", [TypeText(text="alias")]),
    ("Action: type(content=\"double 'quoted'\")", [TypeText(text="double 'quoted'")]),
    # finished with quotes and apostrophes
    ("Action: finished()", [Done()]),
    (
        "Action: finished(content='I've done it, it's saved')",
        [Done(answer="I've done it, it's saved")],
    ),
    ("Action: finished(content='The answer is \"42\".')", [Done(answer='The answer is "42".')]),
    ("Action: finished(content='It\\'s 3')", [Done(answer="It's 3")]),
    ('Action: finished(content="It\'s 3")', [Done(answer="It's 3")]),
]


@pytest.mark.parametrize(("text", "expected"), FORMS)
def test_form(text: str, expected: list) -> None:
    result = parse_action(text, "uitars", (1920, 1080))
    assert result.error is None
    assert result.actions == expected
    strict = parse_action(text, "uitars", (1920, 1080), strict=True)
    assert strict.actions == expected


def test_points_are_screen_pixels() -> None:
    (action,) = parse_action("Action: click(start_box='(1188,554)')").actions
    assert (action.kind, action.x, action.y) == ("click", 1181, 548)


# --- multi-action outputs --------------------------------------------------------------------

MULTI = [
    (
        "Thought: copy it\nAction: hotkey(key='ctrl a')\n\nhotkey(key='ctrl c')",
        [Hotkey(keys=("ctrl", "a")), Hotkey(keys=("ctrl", "c"))],
    ),
    (
        "Action: click(start_box='(100,200)')\n\ntype(content='abc\\n')\n\nwait()",
        [Click(x=99, y=198), TypeText(text="abc\n"), Wait()],
    ),
    (
        "Action: drag(start_box='(1,2)', end_box='(3,4)')\nscroll(direction='left')",
        [Drag(x=1, y=2, to_x=3, to_y=4), Scroll(dx=-5)],
    ),
    (
        "Action: type(content='a, b')\n\n\n\nfinished(content='ok')",
        [TypeText(text="a, b"), Done(answer="ok")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), MULTI)
def test_multi_action(text: str, expected: list) -> None:
    assert parse_action(text).actions == expected
    assert parse_action(text, strict=True).actions == expected


# --- preambles -------------------------------------------------------------------------------

THOUGHTS = [
    ("Thought: open the menu\nAction: wait()", "open the menu", None),
    ("Thought: line one\nline two\nAction: wait()", "line one\nline two", None),
    ("Reflection: it failed\nAction_Summary: retry\nAction: wait()", "retry", "it failed"),
    ("Action_Summary: just do it\nAction: wait()", "just do it", None),
    ("<think>deep thoughts</think>\nAction: wait()", "deep thoughts", None),
    ("<think>x</think>\nThought: visible\nAction: wait()", "visible", None),
    ("Action: wait()", None, None),
    ("I think so.\nAction: wait()", "I think so.", None),
]


@pytest.mark.parametrize(("text", "thought", "reflection"), THOUGHTS)
def test_thoughts(text: str, thought: str | None, reflection: str | None) -> None:
    result = parse_action(text)
    assert result.actions == [Wait()]
    assert result.thought == thought
    assert result.reflection == reflection
    assert result.raw == text


def test_thought_kept_when_action_fails() -> None:
    result = parse_action("Thought: try this\nAction: frobnicate()")
    assert result.thought == "try this"
    assert result.actions == []
    assert result.error is not None


# --- coordinate conventions and options ------------------------------------------------------

COORDINATES = [
    ({"coordinates": "relative"}, "(500,500)", (960, 540)),
    ({"coordinates": "relative"}, "(123,456)", (236, 492)),
    ({"coordinates": "relative"}, "(1000,1000)", (1919, 1079)),
    ({"coordinates": "relative"}, "(0,0)", (0, 0)),
    ({"coordinates": "screen"}, "(100,200)", (100, 200)),
    ({"coordinates": "screen"}, "(5000,-5)", (1919, 0)),
    ({"max_pixels": 1280 * 28 * 28}, "(658,364)", (960, 540)),  # resized to 1316x728
    ({"min_pixels": 78_400, "max_pixels": 12_845_056}, "(1188,554)", (1181, 548)),
]


@pytest.mark.parametrize(("options", "box", "point"), COORDINATES)
def test_coordinate_systems(options: dict, box: str, point: tuple[int, int]) -> None:
    (action,) = parse_action(f"Action: click(start_box='{box}')", **options).actions
    assert (action.x, action.y) == point


def test_other_screen_size() -> None:
    # 1280x720 resizes to 1288x728
    (action,) = parse_action(
        "Action: click(start_box='(644,364)')", screen_size=(1280, 720)
    ).actions
    assert (action.x, action.y) == (640, 360)


def test_scroll_clicks_option() -> None:
    (action,) = parse_action("Action: scroll(direction='up')", scroll_clicks=3).actions
    assert action == Scroll(dy=3)


@pytest.mark.parametrize(
    "options",
    [{"coordinates": "polar"}, {"scroll_clicks": 0}, {"min_pixels": 10, "max_pixels": 5}],
)
def test_bad_options_raise_value_error(options: dict) -> None:
    with pytest.raises(ValueError):
        parse_action("Action: wait()", **options)


def test_unknown_option_raises_type_error() -> None:
    with pytest.raises(TypeError):
        parse_action("Action: wait()", colour="blue")


# --- lenient extraction from prose -----------------------------------------------------------

LENIENT_ONLY = [
    ("click(start_box='(100,200)')", [Click(x=99, y=198)]),
    ("I would click(start_box='(100,200)') now.", [Click(x=99, y=198)]),
    ("Action: click(start_box='(100,200)') to open it", [Click(x=99, y=198)]),
    ("Thought: x Action: wait()", [Wait()]),
    ("action: wait()", [Wait()]),
    ("**Action:** wait()", [Wait()]),
    ("Action: wait()\nAction: finished()", [Wait(), Done()]),
    ("Action: click(start_box='(100,200)', extra='ignored')", [Click(x=99, y=198)]),
    ("```\nThought: t\nAction: press(key='tab')\n```", [Press(key="tab")]),
    (
        "Action: type(content='hi') then press(key='enter')",
        [TypeText(text="hi"), Press(key="enter")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), LENIENT_ONLY)
def test_lenient_extracts_from_prose(text: str, expected: list) -> None:
    assert parse_action(text).actions == expected
    with pytest.raises(ActionParseError):
        parse_action(text, strict=True)


# --- every way a string can be malformed -----------------------------------------------------

MALFORMED = [
    ("", "no action"),
    ("   \n\t ", "no action"),
    ("Thought: only thinking", "no action"),
    ("Action:", "no action"),
    ("Action: I give up", "no action"),
    ("Action: click()", "needs start_box"),
    ("Action: left_double()", "needs start_box"),
    ("Action: click(start_box='(1,2)'", "not closed"),
    ("Action: click(start_box='(1,2)')\n\ntype(content='abc", "unterminated string"),
    ("Action: type(content=\"abc')", "unterminated string"),
    ("Action: click(start_box='(1)')", "2 numbers"),
    ("Action: click(start_box='(1,2,3)')", "2 numbers"),
    ("Action: click(start_box='(x1,y1)')", "cannot read coordinates"),
    ("Action: click(start_box='(abc,def)')", "cannot read coordinates"),
    ("Action: click(start_box='(1e5,2)')", "cannot read coordinates"),
    ("Action: click(start_box='')", "2 numbers"),
    ("Action: open_app(app_name='Chrome')", "unknown action 'open_app'"),
    ("Action: click(start_box='(1,2)')\n\nlong_press(start_box='(1,2)')", "unknown action"),
    ("Action: hotkey(key='ctrl shfit')", "did you mean 'shift'"),
    ("Action: hotkey(key='')", "needs key"),
    ("Action: hotkey()", "needs key"),
    ("Action: press(key='ctrl c')", "one key"),
    ("Action: press(key='entr')", "did you mean 'enter'"),
    ("Action: scroll(start_box='(1,2)')", "direction"),
    ("Action: scroll(direction='down or up or right or left')", "direction"),
    ("Action: drag(start_box='(1,2)')", "needs end_box"),
    ("Action: type(content='')", "non-empty"),
    ("Action: type()", "non-empty"),
    ("Action: click(start_box='(1,2)', start_box='(3,4)')", "twice"),
    ("Action: click(start_box=)", "missing argument value"),
    ("Action: click(,)", "missing argument value"),
    ("Action: click(start_box='(1,2)' end_box='(3,4)')", "expected ','"),
    ("Action: click(start_box=[1,2)", "unexpected ')'"),
    ("Action: click(start_box=(1,2)", "not closed"),
    ("Action: click('(1,2)', '(3,4)')", "positional"),
    ("Action: click(start_box='(1,2)', '(3,4)')", "positional"),
    ("Action: mouse_down(button='side')", "button"),
    ("Thought: x\nAction: drag(start_box='(1,2)', end_bo", "not closed"),
    ("Action: click(start_box=\"(1,2)')", "unterminated string"),
    ("Action: wait()" + " " * 40_000, "too long"),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed_lenient_reports(text: str, message: str) -> None:
    result = parse_action(text)
    assert result.actions == []
    assert result.error is not None
    assert message in result.error
    assert not result.ok


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed_strict_raises_with_position(text: str, message: str) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_action(text, strict=True)
    assert info.value.text == text
    position = info.value.position
    assert position is None or 0 <= position <= len(text)


@pytest.mark.parametrize("value", [None, b"Action: wait()", 42, ["Action: wait()"]])
def test_non_string_input(value: object) -> None:
    result = parse_action(value)
    assert result.actions == []
    assert "expected a string" in result.error
    with pytest.raises(ActionParseError):
        parse_action(value, strict=True)


STRICT_POSITIONS = [
    ("Action: click(start_box='(1,2)') now", "now"),
    ("Action: frob(x='1')", "frob"),
    ("Action: click(start_box='(x,y)')", "'(x,y)'"),
    ("Action: click(start_box='(1,2)', colour='red')", "colour"),
]


@pytest.mark.parametrize(("text", "at"), STRICT_POSITIONS)
def test_strict_error_position_points_at_the_problem(text: str, at: str) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_action(text, strict=True)
    assert info.value.position is not None
    assert text[info.value.position :].startswith(at) or at in text[info.value.position - 2 :]


def test_strict_needs_action_line() -> None:
    with pytest.raises(ActionParseError, match="no 'Action:' line"):
        parse_action("Thought: hmm\nclick(start_box='(1,2)')", strict=True)


def test_partial_success_is_all_or_nothing() -> None:
    result = parse_action("Action: click(start_box='(1,2)')\n\nhotkey(key='ctrl nokey')")
    assert result.actions == []
    assert "nokey" in result.error
