"""The guest's wire format: validation and pyautogui translation (pure, no desktop)."""

from __future__ import annotations

import ast

import pytest

from osworld_gym.guest import protocol
from osworld_gym.guest.protocol import WireActionError, to_pyautogui_code, validate_action


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ({"kind": "click"}, {"kind": "click", "x": None, "y": None, "button": "left", "clicks": 1}),
        (
            {"kind": "click", "x": 1.6, "y": 2, "button": "right", "clicks": 3},
            {"kind": "click", "x": 2, "y": 2, "button": "right", "clicks": 3},
        ),
        (
            {"kind": "drag", "to_x": 5, "to_y": 6},
            {"kind": "drag", "to_x": 5, "to_y": 6, "x": None, "y": None, "button": "left"},
        ),
        ({"kind": "hotkey", "keys": ["Ctrl", "S"]}, {"kind": "hotkey", "keys": ["ctrl", "s"]}),
        ({"kind": "press", "key": "ENTER"}, {"kind": "press", "key": "enter", "presses": 1}),
        ({"kind": "type", "text": "é\n"}, {"kind": "type", "text": "é\n"}),
        ({"kind": "scroll", "dy": -5}, {"kind": "scroll", "x": None, "y": None, "dx": 0, "dy": -5}),
    ],
)
def test_valid_actions_are_normalised(action: dict, expected: dict) -> None:
    assert validate_action(action) == expected


@pytest.mark.parametrize(
    ("action", "fragment"),
    [
        ("click", "must be an object"),
        ({"kind": "teleport"}, "unknown action kind"),
        ({"kind": "click", "x": 1}, "both x and y"),
        ({"kind": "click", "x": True, "y": 1}, "must be a number"),
        ({"kind": "click", "x": float("nan"), "y": 1}, "out of range"),
        ({"kind": "click", "x": 1e9, "y": 1}, "out of range"),
        ({"kind": "click", "clicks": 4}, "clicks"),
        ({"kind": "click", "button": "side"}, "button"),
        ({"kind": "move", "x": 1}, "missing"),
        ({"kind": "move", "x": 1, "y": 2, "speed": 3}, "unexpected field"),
        ({"kind": "hotkey", "keys": []}, "1 to 8"),
        ({"kind": "hotkey", "keys": ["ctrl", "nokey"]}, "unknown key"),
        ({"kind": "press", "key": ""}, "non-empty"),
        ({"kind": "press", "key": "a", "presses": 0}, "presses"),
        ({"kind": "type", "text": 5}, "string"),
        ({"kind": "scroll", "dy": 1.5}, "dy"),
    ],
)
def test_invalid_actions_name_the_problem(action: object, fragment: str) -> None:
    with pytest.raises(WireActionError, match=fragment):
        validate_action(action)


def test_validate_actions_names_the_index() -> None:
    with pytest.raises(WireActionError, match=r"actions\[1\]"):
        protocol.validate_actions([{"kind": "click"}, {"kind": "nope"}])
    with pytest.raises(WireActionError):
        protocol.validate_actions({"kind": "click"})


def test_key_vocabulary_is_pyautoguis() -> None:
    assert len(protocol.KEY_NAMES) == 194 and len(set(protocol.KEY_NAMES)) == 194
    for key in ("enter", "ctrl", "f24", "num0", "pgdn", "\n", "a", "~", "optionright"):
        assert protocol.normalize_key(key) == key


def test_pyautogui_code_is_plain_calls_without_sleeps() -> None:
    actions = [
        {"kind": "click", "x": 10, "y": 20},
        {"kind": "double_click", "x": 1, "y": 2},
        {"kind": "right_click"},
        {"kind": "move", "x": 3, "y": 4},
        {"kind": "drag", "x": 1, "y": 1, "to_x": 9, "to_y": 9},
        {"kind": "scroll", "x": 5, "y": 5, "dx": 2, "dy": -3},
        {"kind": "type", "text": "a<b'\"\n"},
        {"kind": "hotkey", "keys": ["ctrl", "s"]},
        {"kind": "press", "key": "tab", "presses": 2},
        {"kind": "key_down", "key": "shift"},
        {"kind": "key_up", "key": "shift"},
        {"kind": "mouse_down", "button": "middle"},
        {"kind": "mouse_up"},
    ]
    code = to_pyautogui_code(actions)
    assert code.startswith(protocol.PYAUTOGUI_PREFIX)
    assert "sleep" not in code
    tree = ast.parse(code)
    calls = [node.value.func.attr for node in tree.body[3:]]
    assert calls == [
        "click",
        "doubleClick",
        "rightClick",
        "moveTo",
        "moveTo",
        "dragTo",
        "moveTo",
        "scroll",
        "hscroll",
        "write",
        "hotkey",
        "write",
        "hotkey",
        "press",
        "keyDown",
        "keyUp",
        "mouseDown",
        "mouseUp",
    ]
    # "<" is typed as shift+comma (pyautogui types ">" for "<" on X11).
    typed = [
        ast.literal_eval(n.value.args[0]) for n in tree.body[3:] if n.value.func.attr == "write"
    ]
    assert typed == ["a", "b'\"\n"]


def test_encode_actions_is_json_utf8() -> None:
    assert (
        protocol.encode_actions([{"kind": "type", "text": "ü"}])
        == '{"actions": [{"kind": "type", "text": "ü"}]}'.encode()
    )
