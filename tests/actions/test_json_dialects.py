"""Table tests of the computer_13 (OSWorld JSON) and structured (typed / dict) dialects."""

from __future__ import annotations

import json

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
from osworld_gym.actions.dialects.computer13 import COMPUTER13_ACTIONS
from osworld_gym.errors import ActionParseError


def c13(value: object, **options: object):
    return parse_action(value, "computer_13", (1920, 1080), **options)


def structured(value: object, **options: object):
    return parse_action(value, "structured", (1920, 1080), **options)


def _dump(action_type: str, nested: bool = True, **params: object) -> str:
    if nested:
        return json.dumps({"action_type": action_type, "parameters": params})
    return json.dumps({"action_type": action_type, **params})


C13_FORMS = [
    (_dump("MOVE_TO", x=10, y=20), [Move(x=10, y=20)]),
    (_dump("MOVE_TO", nested=False, x=10.4, y=20.6), [Move(x=10, y=21)]),
    (_dump("CLICK"), [Click()]),
    (
        _dump("CLICK", x=5, y=6, button="right", num_clicks=2),
        [Click(x=5, y=6, button="right", clicks=2)],
    ),
    (_dump("CLICK", x=5000, y=-1), [Click(x=1919, y=0)]),
    (_dump("MOUSE_DOWN", button="left"), [MouseDown()]),
    (_dump("MOUSE_UP", button="RIGHT"), [MouseUp(button="right")]),
    (_dump("RIGHT_CLICK", x=1, y=2), [RightClick(x=1, y=2)]),
    (_dump("DOUBLE_CLICK", x=1, y=2), [DoubleClick(x=1, y=2)]),
    (_dump("DOUBLE_CLICK"), [DoubleClick()]),
    (_dump("DRAG_TO", x=100, y=200), [Drag(to_x=100, to_y=200)]),
    (_dump("SCROLL", dx=0, dy=-3), [Scroll(dy=-3)]),
    (_dump("SCROLL", dx=2), [Scroll(dx=2)]),
    (_dump("TYPING", text="hello\nworld"), [TypeText(text="hello\nworld")]),
    (_dump("PRESS", key="Enter"), [Press(key="enter")]),
    (_dump("KEY_DOWN", key="shift"), [KeyDown(key="shift")]),
    (_dump("KEY_UP", key="shift"), [KeyUp(key="shift")]),
    (_dump("HOTKEY", keys=["ctrl", "s"]), [Hotkey(keys=("ctrl", "s"))]),
    (_dump("WAIT"), [Wait()]),
    (_dump("DONE"), [Done()]),
    (_dump("FAIL"), [Fail()]),
    ("WAIT", [Wait()]),
    ("DONE", [Done()]),
    ("FAIL", [Fail()]),
    ('["WAIT"]', [Wait()]),
    ('[{"action_type": "PRESS", "parameters": {"key": "a"}}, "DONE"]', [Press(key="a"), Done()]),
    ('```json\n{"action_type": "PRESS", "parameters": {"key": "a"}}\n```', [Press(key="a")]),
    (
        '```json\n{"action_type": "PRESS", "key": "a"}\n```\n```json\n"DONE"\n```',
        [Press(key="a"), Done()],
    ),
    ('```\n[{"action_type": "TYPING", "text": "x"}]\n```', [TypeText(text="x")]),
    ({"action_type": "CLICK", "x": 1, "y": 2}, [Click(x=1, y=2)]),
    ([{"action_type": "WAIT"}, "FAIL"], [Wait(), Fail()]),
]


@pytest.mark.parametrize(("text", "expected"), C13_FORMS)
def test_computer13_form(text: object, expected: list) -> None:
    result = c13(text)
    assert result.error is None
    assert result.actions == expected
    assert c13(text, strict=True).actions == expected


C13_LENIENT = [
    ('I will click [1, 2]: {"action_type": "CLICK", "x": 1, "y": 2} ok', [Click(x=1, y=2)]),
    ('{"action_type": "click", "x": 1, "y": 2}', [Click(x=1, y=2)]),
    ("done.", [Done()]),
    ("The task is complete.\nDONE", [Done()]),
    ('{"action_type": "PRESS", "parameters": {"key": "a", "presses": 3}}', [Press(key="a")]),
    ('{"action_type": "PRESS", "key": "a", "parameters": {"key": "b"}}', [Press(key="b")]),
    ('```json\n{"action_type": "PRESS", "key": "a"}\n```\nHope it helps!', [Press(key="a")]),
]


@pytest.mark.parametrize(("text", "expected"), C13_LENIENT)
def test_computer13_lenient(text: str, expected: list) -> None:
    assert c13(text).actions == expected
    with pytest.raises(ActionParseError):
        c13(text, strict=True)


C13_MALFORMED = [
    ("", "no action"),
    ("{", "no action"),
    ('{"action_type": "CLIK"}', "did you mean 'CLICK'"),
    ('{"action_type": 5}', "action_type"),
    ('{"parameters": {}}', "no action"),
    ('{"action_type": "CLICK", "parameters": [1]}', "parameters must be an object"),
    (_dump("CLICK", x=1), "both x and y"),
    (_dump("CLICK", x="1", y=2), "finite number"),
    (_dump("CLICK", x=True, y=2), "finite number"),
    (_dump("CLICK", x=1, y=2, button="leftt"), "button"),
    (_dump("CLICK", num_clicks=7), "clicks"),
    (_dump("CLICK", num_clicks=1.5), "whole number"),
    (_dump("MOVE_TO"), "needs both x and y"),
    (_dump("DRAG_TO", x=1), "needs both x and y"),
    (_dump("SCROLL"), "needs dx or dy"),
    (_dump("SCROLL", dx=0, dy=0), "dx or dy"),
    (_dump("TYPING"), "needs text"),
    (_dump("TYPING", text=""), "text"),
    (_dump("PRESS", key="entr"), "did you mean 'enter'"),
    (_dump("PRESS", key=["a"]), "needs key"),
    (_dump("HOTKEY", keys="ctrl+s"), "needs keys as a list"),
    (_dump("HOTKEY", keys=[]), "1 to 8 keys"),
    ('["WAIT", {"action_type": "NOPE"}]', "unknown action_type"),
    ("[]", "no action"),
    ('"MAYBE"', "no action"),
    ("[" * 5000 + "]" * 5000, "no action"),
    (5, "expected a string, dict or list"),
]


@pytest.mark.parametrize(("text", "message"), C13_MALFORMED)
def test_computer13_malformed(text: object, message: str) -> None:
    result = c13(text)
    assert result.actions == []
    with pytest.raises(ActionParseError) as info:
        c13(text, strict=True)
    assert message in result.error or message in str(info.value)


def test_computer13_names() -> None:
    assert len(COMPUTER13_ACTIONS) == 16
    assert "TYPING" in COMPUTER13_ACTIONS and "DRAG_TO" in COMPUTER13_ACTIONS


# --- structured ------------------------------------------------------------------------------

STRUCTURED_FORMS = [
    (Click(x=1, y=2), [Click(x=1, y=2)]),
    (Click(x=5000, y=2), [Click(x=1919, y=2)]),
    (Drag(x=-1, y=2, to_x=3, to_y=4000), [Drag(x=0, y=2, to_x=3, to_y=1079)]),
    ({"kind": "click", "x": 1, "y": 2}, [Click(x=1, y=2)]),
    ({"kind": "hotkey", "keys": ["Ctrl", "S"]}, [Hotkey(keys=("ctrl", "s"))]),
    ([{"kind": "type", "text": "x"}, Done()], [TypeText(text="x"), Done()]),
    ((Wait(), "FAIL"), [Wait(), Fail()]),
    ('{"kind": "press", "key": "enter"}', [Press(key="enter")]),
    (
        '[{"kind": "scroll", "dy": -3}, {"kind": "done", "answer": "42"}]',
        [Scroll(dy=-3), Done(answer="42")],
    ),
    ("DONE", [Done()]),
    ('```json\n{"kind": "wait", "seconds": 2}\n```', [Wait(seconds=2)]),
]


@pytest.mark.parametrize(("value", "expected"), STRUCTURED_FORMS)
def test_structured_form(value: object, expected: list) -> None:
    result = structured(value)
    assert result.error is None
    assert result.actions == expected
    assert structured(value, strict=True).actions == expected


STRUCTURED_MALFORMED = [
    ({"kind": "clik", "x": 1, "y": 2}, "did you mean 'click'"),
    ({"kind": "click", "x": 1}, "both x and y"),
    ({"kind": "click", "x": 1.5, "y": 2}, "integer pixel"),
    ({"kind": "move", "x": 1}, "missing"),
    ({"kind": "click", "colour": "red"}, "unexpected field"),
    ({"x": 1}, "unknown action kind None"),
    ({"kind": "type", "text": ""}, "text"),
    ({"kind": "wait", "seconds": -1}, "seconds"),
    ({"kind": "hotkey", "keys": "ctrl"}, "list of key names"),
    ({"kind": "hotkey", "keys": [["ctrl"]]}, "non-empty string"),
    ({"kind": "scroll"}, "dx or dy"),
    ({"kind": "done", "answer": 5}, "answer"),
    ([], "no action"),
    (None, "expected an action"),
    (42, "expected an action"),
    ("not json", "no action"),
    ("[1, 2]", "expected an action"),
]


@pytest.mark.parametrize(("value", "message"), STRUCTURED_MALFORMED)
def test_structured_malformed(value: object, message: str) -> None:
    result = structured(value)
    assert result.actions == []
    with pytest.raises(ActionParseError) as info:
        structured(value, strict=True)
    assert message in result.error or message in str(info.value)
