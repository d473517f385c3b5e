"""Table tests of the pyautogui dialect: accepted forms, the allowlist, tokens, malformed code."""

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
from osworld_gym.actions.dialects.pyautogui import ALLOWED_CALLS
from osworld_gym.errors import ActionParseError


def parse(text: str, **options: object):
    return parse_action(text, "pyautogui", (1920, 1080), **options)


FORMS = [
    ("pyautogui.click(100, 200)", [Click(x=100, y=200)]),
    (
        "pyautogui.click(x=100, y=200, button='right', clicks=2)",
        [Click(x=100, y=200, button="right", clicks=2)],
    ),
    ("pyautogui.click()", [Click()]),
    ("pyautogui.click((100, 200))", [Click(x=100, y=200)]),
    ("pyautogui.click(100.6, 200.4)", [Click(x=101, y=200)]),
    ("pyautogui.click(5000, -3)", [Click(x=1919, y=0)]),
    ("pyautogui.click(100, 200, 1, 0.0, 'middle')", [Click(x=100, y=200, button="middle")]),
    ("pyautogui.doubleClick(10, 20)", [DoubleClick(x=10, y=20)]),
    ("pyautogui.tripleClick(10, 20)", [Click(x=10, y=20, clicks=3)]),
    ("pyautogui.rightClick(10, 20)", [RightClick(x=10, y=20)]),
    ("pyautogui.middleClick()", [Click(button="middle")]),
    ("pyautogui.moveTo(10, 20, duration=0.5)", [Move(x=10, y=20)]),
    ("pyautogui.dragTo(30, 40, duration=1.0, button='left')", [Drag(to_x=30, to_y=40)]),
    ("pyautogui.moveTo(10, 20); pyautogui.dragTo(30, 40)", [Drag(x=10, y=20, to_x=30, to_y=40)]),
    ("pyautogui.dragTo(30, 40, mouseDownUp=False)", [Move(x=30, y=40)]),
    ("pyautogui.scroll(-3)", [Scroll(dy=-3)]),
    ("pyautogui.scroll(5, x=10, y=20)", [Scroll(x=10, y=20, dy=5)]),
    ("pyautogui.vscroll(2)", [Scroll(dy=2)]),
    ("pyautogui.hscroll(-4)", [Scroll(dx=-4)]),
    (
        "pyautogui.moveTo(1, 2); pyautogui.scroll(3); pyautogui.hscroll(4)",
        [Scroll(x=1, y=2, dx=4, dy=3)],
    ),
    ("pyautogui.write('hello')", [TypeText(text="hello")]),
    ("pyautogui.write('hello\\n', interval=0.1)", [TypeText(text="hello\n")]),
    ("pyautogui.typewrite('x')", [TypeText(text="x")]),
    ("pyautogui.typewrite(['a', 'enter'])", [Press(key="a"), Press(key="enter")]),
    (
        "pyautogui.write('a'); pyautogui.hotkey('shift', ','); pyautogui.write('b')",
        [TypeText(text="a<b")],
    ),
    ("pyautogui.press('enter')", [Press(key="enter")]),
    ("pyautogui.press('Tab', presses=3)", [Press(key="tab", presses=3)]),
    ("pyautogui.press(['left', 'left'])", [Press(key="left"), Press(key="left")]),
    ("pyautogui.hotkey('ctrl', 'c')", [Hotkey(keys=("ctrl", "c"))]),
    ("pyautogui.hotkey('ctrl', 'shift', 't', interval=0.1)", [Hotkey(keys=("ctrl", "shift", "t"))]),
    ("pyautogui.hotkey(['ctrl', 'v'])", [Hotkey(keys=("ctrl", "v"))]),
    (
        "pyautogui.keyDown('shift'); pyautogui.keyUp('Shift')",
        [KeyDown(key="shift"), KeyUp(key="shift")],
    ),
    ("pyautogui.mouseDown(button='primary')", [MouseDown()]),
    ("pyautogui.mouseUp(10, 20, button='secondary')", [MouseUp(x=10, y=20, button="right")]),
    ("time.sleep(0.5)", [Wait(seconds=0.5)]),
    ("time.sleep(2)", [Wait(seconds=2.0)]),
    # tokens, alone and inside code
    ("WAIT", [Wait()]),
    ("DONE", [Done()]),
    ("FAIL", [Fail()]),
    ("  DONE \n", [Done()]),
    ("pyautogui.click(1, 2)\nDONE", [Click(x=1, y=2), Done()]),
    ("```python\npyautogui.hotkey('ctrl', 'c')\nDONE\n```", [Hotkey(keys=("ctrl", "c")), Done()]),
    ("```\nWAIT\n```", [Wait()]),
    # fences, imports, OSWorld's prefix, aliases, docstrings
    ("```python\npyautogui.click(100, 200)\n```", [Click(x=100, y=200)]),
    (
        "```py\npyautogui.click(1, 2)\n```\n```python\npyautogui.press('a')\n```",
        [Click(x=1, y=2), Press(key="a")],
    ),
    ("import pyautogui, time\npyautogui.click(1, 2)", [Click(x=1, y=2)]),
    (
        "import pyautogui; pyautogui.FAILSAFE = False; pyautogui.PAUSE = 0; pyautogui.click(1, 2)",
        [Click(x=1, y=2)],
    ),
    ("import pyautogui as pg\npg.doubleClick(5, 5)", [DoubleClick(x=5, y=5)]),
    ('"""Observation: a window.\nThought: click."""\npyautogui.click(1, 2)', [Click(x=1, y=2)]),
    ("pass\n# a comment\npyautogui.click(1, 2)", [Click(x=1, y=2)]),
]


@pytest.mark.parametrize(("text", "expected"), FORMS)
def test_form(text: str, expected: list) -> None:
    result = parse(text)
    assert result.error is None
    assert result.actions == expected
    assert parse(text, strict=True).actions == expected


LENIENT_ONLY = [
    (
        "Sure! pyautogui.click(100, 200) and then pyautogui.press('enter').",
        [Click(x=100, y=200), Press(key="enter")],
    ),
    ("I'm done.\nDONE", [Done()]),
    ("done", [Done()]),
    ("I will click.\n```python\npyautogui.click(1, 2)\n```\nThat should work.", [Click(x=1, y=2)]),
    (
        "```python\n    pyautogui.click(1, 2)\n    pyautogui.press('a')\n```",
        [Click(x=1, y=2), Press(key="a")],
    ),
    ("```python\npyautogui.click(1, 2)", [Click(x=1, y=2)]),  # truncated fence
    ("pyautogui.click(1, 2) pyautogui.click(3, 4)", [Click(x=1, y=2), Click(x=3, y=4)]),
    ("\x00pyautogui.click(1, 2)", [Click(x=1, y=2)]),
]


@pytest.mark.parametrize(("text", "expected"), LENIENT_ONLY)
def test_lenient_extracts_from_prose(text: str, expected: list) -> None:
    assert parse(text).actions == expected
    with pytest.raises(ActionParseError):
        parse(text, strict=True)


def test_thought_is_the_prose_before_the_fence() -> None:
    result = parse("Let me click it.\n```python\npyautogui.click(1, 2)\n```")
    assert result.thought == "Let me click it."


# --- the allowlist ---------------------------------------------------------------------------

REJECTED = [
    ("import os\nos.system('rm -rf /')", "import of 'os'"),
    ("import subprocess", "import of 'subprocess'"),
    ("from os import system", "ImportFrom"),
    ("pyautogui.click(1, 2); import shutil", "import of 'shutil'"),
    ("exec('print(1)')", "exec(...) is not allowed"),
    ("eval('1')", "eval(...) is not allowed"),
    ("open('/etc/passwd')", "open(...) is not allowed"),
    ("__import__('os').system('x')", "only module.function"),
    ("os.system('ls')", "os.system is not on the allowlist"),
    ("subprocess.run(['ls'])", "subprocess.run is not on the allowlist"),
    ("pyautogui.screenshot()", "pyautogui.screenshot is not on the allowlist"),
    ("pyautogui.locateOnScreen('a.png')", "not on the allowlist"),
    ("pyautogui.os.system('x')", "only module.function"),
    ("time.time()", "time.time is not on the allowlist"),
    ("pyautogui.click(x)", "only literal arguments"),
    ("pyautogui.click(1 + 2, 3)", "only literal arguments"),
    ("pyautogui.click(100, 200, tween=pyautogui.easeInQuad)", "only literal arguments"),
    ("pyautogui.write(open('f').read())", "only literal arguments"),
    ("pyautogui.write(f'{x}')", "only literal arguments"),
    ("pyautogui.click(*args)", "*args"),
    ("pyautogui.click(**kw)", "**kwargs"),
    ("[pyautogui.click(i, i) for i in range(3)]", "Expr statement not allowed"),
    ("for i in range(3):\n    pyautogui.click(1, 2)", "For statement not allowed"),
    ("x = 1", "Assign statement not allowed"),
    ("pyautogui.FAILSAFE = os.getcwd()", "Assign statement not allowed"),
    ("def f():\n    pass", "FunctionDef statement not allowed"),
    ("lambda: 0", "Expr statement not allowed"),
    ("with open('f') as f:\n    pass", "With statement not allowed"),
    ("import pyautogui as os\nimport os", "import of 'os'"),
    ("pyautogui.click(1, 2) if True else None", "Expr statement not allowed"),
    ("WAIT = 1", "Assign statement not allowed"),
]


@pytest.mark.parametrize(("text", "message"), REJECTED)
def test_allowlist_rejects_whole_program(text: str, message: str) -> None:
    result = parse(text)
    assert result.actions == []
    assert message in result.error
    with pytest.raises(ActionParseError):
        parse(text, strict=True)


def test_fenced_program_with_a_bad_statement_runs_nothing() -> None:
    text = "```python\npyautogui.click(1, 2)\nimport os\nos.remove('x')\n```"
    result = parse(text)
    assert result.actions == []
    assert result.error_position == text.index("import os")


def test_allowlist_names() -> None:
    assert set(ALLOWED_CALLS) == {"pyautogui", "time"}
    assert set(ALLOWED_CALLS["time"]) == {"sleep"}
    assert {"click", "doubleClick", "rightClick", "moveTo", "dragTo", "scroll", "hscroll",
            "vscroll", "write", "typewrite", "press", "hotkey", "keyDown", "keyUp",
            "mouseDown", "mouseUp"} <= set(ALLOWED_CALLS["pyautogui"])  # fmt: skip


# --- malformed code --------------------------------------------------------------------------

MALFORMED = [
    ("", "no action"),
    ("```python\n```", "no action"),
    ("pyautogui.click(100, 200", "malformed call"),
    ("```python\npyautogui.click(100, 200\n```", "malformed call"),
    ("pyautogui.click(1e999, 5)", "finite number"),
    ("pyautogui.click('button.png')", "locating an image"),
    ("pyautogui.click(1)", "both x and y"),
    ("pyautogui.click(1, 2, clicks=9)", "clicks"),
    ("pyautogui.click(1, 2, button='side')", "button"),
    ("pyautogui.click(1, 2, colour='red')", "unexpected keyword"),
    ("pyautogui.click(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)", "too many positional"),
    ("pyautogui.click(x=1, x=2)", "given twice"),
    ("pyautogui.click(1, 2, x=3)", "given twice"),
    ("pyautogui.moveTo()", "both x and y"),
    ("pyautogui.scroll()", "scroll needs clicks"),
    ("pyautogui.scroll(0)", "dx or dy"),
    ("pyautogui.scroll(1.5)", "whole number"),
    ("pyautogui.press('entr')", "did you mean 'enter'"),
    ("pyautogui.hotkey()", "1 to 8 keys"),
    ("pyautogui.hotkey('ctrl', 5)", "key name"),
    ("pyautogui.keyDown(['a', 'b'])", "one key name"),
    ("pyautogui.write(b'bytes')", "literal"),
    ("pyautogui.write(5)", "key name"),
    ("time.sleep(-1)", "seconds"),
    ("time.sleep(1e9)", "seconds"),
    ("pyautogui.click(" + "[" * 50 + "]" * 50 + ")", "literal"),
    ("-" * 30000 + "1", "invalid Python"),
    ("pyautogui.click(1, 2)" + " " * 40000, "too long"),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed(text: str, message: str) -> None:
    result = parse(text)
    assert result.actions == []
    assert result.error is not None
    with pytest.raises(ActionParseError) as info:
        parse(text, strict=True)
    assert message in result.error or message in str(info.value)


@pytest.mark.parametrize("value", [None, 42, b"WAIT"])
def test_non_string_input(value: object) -> None:
    assert "expected a string" in parse(value).error


def test_strict_error_position() -> None:
    text = "pyautogui.click(1, 2)\npyautogui.click(x)"
    with pytest.raises(ActionParseError) as info:
        parse(text, strict=True)
    assert text[info.value.position :] == "x)"
