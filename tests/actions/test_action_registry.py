"""The public entry point, the dialect registry, the unsafe pass-through and the doctests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys

import pytest

import osworld_gym
import osworld_gym.actions
from osworld_gym.actions import (
    ParseResult,
    Wait,
    available_dialects,
    get_dialect,
    parse_action,
    register_dialect,
)
from osworld_gym.actions.registry import _REGISTERED
from osworld_gym.actions.unsafe import unsafe_passthrough_code
from osworld_gym.errors import ActionError, ActionParseError, OSWorldGymError


def test_public_entry_point_is_reexported() -> None:
    assert osworld_gym.parse_action is parse_action
    result = osworld_gym.parse_action("Action: click(start_box='(1188,554)')")
    (action,) = result.actions
    assert (action.kind, action.x, action.y, result.error) == ("click", 1181, 548, None)


def test_defaults() -> None:
    result = parse_action("Action: wait()")
    assert isinstance(result, ParseResult)
    assert result.dialect == "uitars" and result.ok and result.actions == [Wait()]


def test_parse_error_is_an_action_error() -> None:
    assert issubclass(ActionParseError, ActionError)
    assert issubclass(ActionError, OSWorldGymError)
    with pytest.raises(ActionParseError) as info:
        parse_action("Action: nope()", strict=True)
    assert info.value.position == 8
    assert "at position 8" in str(info.value)


def test_builtin_dialects() -> None:
    assert available_dialects()[:4] == ("uitars", "pyautogui", "computer_13", "structured")


@pytest.mark.parametrize(("name", "hint"), [("uitar", "uitars"), ("computer13", "computer_13")])
def test_unknown_dialect_suggests(name: str, hint: str) -> None:
    with pytest.raises(ValueError, match=f"did you mean '{hint}'"):
        parse_action("x", name)


@pytest.mark.parametrize("size", [(0, 10), (10,), "1920x1080", (1920.0, 1080), (True, 5), None])
def test_bad_screen_size(size: object) -> None:
    with pytest.raises(ValueError, match="screen_size"):
        parse_action("Action: wait()", screen_size=size)


def test_register_dialect() -> None:
    def shout(text, *, screen_size, strict=False):
        return ParseResult(actions=[Wait()], raw=text, dialect="shout")

    try:
        register_dialect("shout", shout)
        register_dialect("shout", shout)  # the same parser again is fine
        assert get_dialect("shout") is shout
        assert parse_action("HEY", "shout").actions == [Wait()]
        assert "shout" in available_dialects()
        with pytest.raises(ValueError, match="already registered"):
            register_dialect("shout", lambda text, **kw: None)
        with pytest.raises(ValueError, match="built in"):
            register_dialect("uitars", shout)
    finally:
        _REGISTERED.pop("shout", None)


def test_lenient_mode_survives_a_dialect_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    from osworld_gym.actions.dialects import uitars

    def boom(*args, **kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(uitars, "scan_calls", boom)
    result = parse_action("Action: wait()")
    assert result.actions == [] and "internal parser error" in result.error
    with pytest.raises(ActionParseError):
        parse_action("Action: wait()", strict=True)


@pytest.mark.heavy  # a fresh interpreter
def test_parsing_does_not_load_the_spaces_module() -> None:
    # `import osworld_gym` imports gymnasium to register the env ids; parsing itself must not
    # pull in the spaces module (and what it registers with gymnasium's vector utilities).
    code = (
        "import sys, osworld_gym.actions as a; a.parse_action('Action: wait()');"
        "print('osworld_gym.actions.spaces' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


UNSAFE = [
    ("WAIT", ["WAIT"]),
    ("```python\nimport os\nos.getcwd()\n```", ["import os\nos.getcwd()"]),
    ("```python\npyautogui.click(1, 2)\nDONE\n```", ["pyautogui.click(1, 2)", "DONE"]),
    ("```\nFAIL\n```", ["FAIL"]),
    ("pyautogui.click(1, 2)", []),  # OSWorld's agent only takes fenced code
    ("a\n```python\nx()\n```\nb\n```python\ny()\n```", ["x()", "y()"]),
]


@pytest.mark.parametrize(("text", "expected"), UNSAFE)
def test_unsafe_passthrough_returns_code_verbatim(text: str, expected: list[str]) -> None:
    assert unsafe_passthrough_code(text) == expected


def test_unsafe_passthrough_is_not_exported() -> None:
    assert not any("unsafe" in name for name in osworld_gym.actions.__all__)
    assert not hasattr(osworld_gym.actions, "unsafe_passthrough_code")


def _modules() -> list[str]:
    package = osworld_gym.actions
    names = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        names.append(info.name)
    return names


@pytest.mark.parametrize("name", _modules())
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
