"""Property-based fuzzing: 10,000 generated and mutated strings per dialect (issue 3).

For every input: lenient mode returns (never raises) a result whose actions are declared
kinds with on-screen points, or an error and no actions; strict mode either agrees with
lenient mode or raises ActionParseError -- never anything else. For pyautogui, whatever
parses compiles to code that calls only allowlisted functions.
"""

from __future__ import annotations

import ast
from typing import Any

import pytest
from actions_support import (
    COMPUTER13_SEEDS,
    FUZZ,
    FUZZ_EXAMPLES,
    PYAUTOGUI_SEEDS,
    SCREEN,
    STRUCTURED_SEEDS,
    UITARS_SEEDS,
    fuzz_inputs,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from osworld_gym.actions import ACTION_KINDS, ACTION_TYPES, Action, parse_action, to_pyautogui_code
from osworld_gym.actions.dialects.pyautogui import ALLOWED_CALLS
from osworld_gym.errors import ActionParseError

pytestmark = pytest.mark.heavy  # fuzzing: tens of seconds

SEEDS = {
    "uitars": UITARS_SEEDS,
    "pyautogui": PYAUTOGUI_SEEDS,
    "computer_13": COMPUTER13_SEEDS,
    "structured": STRUCTURED_SEEDS,
}


def _check_action(action: Any) -> None:
    assert isinstance(action, Action)
    assert action.kind in ACTION_KINDS
    assert type(action) is ACTION_TYPES[action.kind]
    for x_name, y_name in (("x", "y"), ("to_x", "to_y")):
        x, y = getattr(action, x_name, None), getattr(action, y_name, None)
        assert (x is None) == (y is None)
        if x is not None:
            assert 0 <= x < SCREEN[0] and 0 <= y < SCREEN[1]


def _check_allowlisted(actions: list[Action]) -> None:
    code = to_pyautogui_code(actions, prefix=False)
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call):
            func = node.func
            assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            assert func.value.id == "pyautogui"
            assert func.attr in ALLOWED_CALLS["pyautogui"]
        assert not isinstance(node, (ast.Import, ast.ImportFrom))


def check_text(dialect: str, text: Any) -> None:
    result = parse_action(text, dialect, SCREEN)  # must not raise
    assert result.raw is text
    assert result.dialect == dialect
    if result.error is None:
        assert result.actions
    else:
        assert isinstance(result.error, str) and result.error
        assert result.actions == []
    for action in result.actions:
        _check_action(action)
    if dialect == "pyautogui":
        _check_allowlisted(result.actions)
    try:
        strict = parse_action(text, dialect, SCREEN, strict=True)
    except ActionParseError as e:
        assert e.position is None or 0 <= e.position <= max(len(str(text)), 0) + 1
    else:
        assert strict.error is None and strict.actions
        assert strict.actions == result.actions


@pytest.mark.parametrize("dialect", sorted(SEEDS))
def test_fuzz_dialect(dialect: str) -> None:
    seen = 0

    @FUZZ
    @given(text=fuzz_inputs(dialect, SEEDS[dialect]))
    def run(text: str) -> None:
        nonlocal seen
        seen += 1
        check_text(dialect, text)

    run()
    assert seen >= FUZZ.max_examples >= FUZZ_EXAMPLES


# JSON-like values: what a structured agent might hand over without serialising.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["kind", "x", "y", "text", "keys", "key", "action_type", "parameters"])
            | st.text(max_size=5),
            children,
            max_size=5,
        )
    ),
    max_leaves=6,
)
kinds_dicts = st.fixed_dictionaries(
    {"kind": st.sampled_from([*ACTION_KINDS, "clik", ""])},
    optional={"x": json_values, "y": json_values, "text": json_values, "keys": json_values},
)


@pytest.mark.parametrize("dialect", ["structured", "computer_13"])
def test_fuzz_objects(dialect: str) -> None:
    @settings(FUZZ, max_examples=max(200, FUZZ.max_examples // 20))
    @given(value=st.one_of(json_values, kinds_dicts, st.lists(kinds_dicts, max_size=3)))
    def run(value: Any) -> None:
        check_text(dialect, value)

    run()
