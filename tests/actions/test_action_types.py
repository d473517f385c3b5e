"""The declarations and what derives from them: validation, dicts, schema, prompt text, keys."""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import get_args

import pytest

from osworld_gym.actions import (
    ACTION_KINDS,
    ACTION_TYPES,
    Action,
    ActionKind,
    Click,
    Done,
    Drag,
    Fail,
    Hotkey,
    Move,
    Press,
    Scroll,
    TypeText,
    Wait,
    action_from_dict,
    action_json_schema,
    describe_actions,
    normalize_key,
    split_hotkey,
    tool_schemas,
)
from osworld_gym.actions.dialects.uitars import UITARS_ACTIONS
from osworld_gym.actions.keys import KEY_ALIASES
from osworld_gym.errors import ActionError
from osworld_gym.guest.protocol import ACTION_FIELDS, KEY_NAMES

CONTRACT_KINDS = [
    "click", "double_click", "right_click", "move", "drag", "scroll", "type", "hotkey", "press",
    "key_down", "key_up", "mouse_down", "mouse_up", "wait", "done", "fail",
]  # fmt: skip


def test_kinds_are_exactly_the_public_contract() -> None:
    assert list(ACTION_KINDS) == CONTRACT_KINDS
    assert set(get_args(ActionKind)) == set(CONTRACT_KINDS)
    assert all(cls.kind == kind for kind, cls in ACTION_TYPES.items())


def test_guest_kinds_mirror_the_wire_format() -> None:
    for kind, cls in ACTION_TYPES.items():
        names = {f.name for f in dataclasses.fields(cls)}
        if cls.executes_on_guest:
            required, optional = ACTION_FIELDS[kind]
            assert names == {*required, *optional}
        else:
            assert kind in ("wait", "done", "fail")


def test_uitars_name_table_derives_from_kinds() -> None:
    assert set(UITARS_ACTIONS.values()) == set(ACTION_KINDS)
    assert UITARS_ACTIONS["left_double"] == "double_click"
    assert UITARS_ACTIONS["call_user"] == "fail"


def test_actions_are_frozen_hashable_and_picklable() -> None:
    action = Hotkey(keys=["Ctrl", "C"])
    assert action.keys == ("ctrl", "c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        action.keys = ("a",)  # type: ignore[misc]
    assert {action, Hotkey(keys=("ctrl", "c"))} == {action}
    assert pickle.loads(pickle.dumps(action)) == action


def test_point_attributes() -> None:
    assert (Click(x=1, y=2).x, Click(x=1, y=2).y) == (1, 2)
    assert Drag(x=1, y=2, to_x=3, to_y=4).x == 1
    assert Scroll(dx=-3).direction == "left" and Scroll(dy=-3).direction == "down"


INVALID = [
    (lambda: Click(x=1), "both x and y"),
    (lambda: Click(x=1.5, y=2), "integer pixel"),
    (lambda: Click(x=True, y=2), "integer pixel"),
    (lambda: Click(x=40_000, y=2), "out of range"),
    (lambda: Click(clicks=4), "clicks"),
    (lambda: Click(button="side"), "button"),
    (lambda: Move(x=None, y=None), "integer pixel"),
    (lambda: Scroll(), "dx or dy"),
    (lambda: Scroll(dy=1001), "dy"),
    (lambda: TypeText(text=""), "text"),
    (lambda: TypeText(text=5), "text"),
    (lambda: Hotkey(keys="ctrl"), "list of key names"),
    (lambda: Hotkey(keys=()), "1 to 8"),
    (lambda: Hotkey(keys=("a",) * 9), "1 to 8"),
    (lambda: Press(key="entr"), "did you mean 'enter'"),
    (lambda: Press(key="a", presses=0), "presses"),
    (lambda: Wait(seconds=float("nan")), "finite"),
    (lambda: Wait(seconds=601), "seconds"),
    (lambda: Done(answer=5), "answer"),
]


@pytest.mark.parametrize(("make", "message"), INVALID)
def test_invalid_actions_raise_action_error(make, message: str) -> None:
    with pytest.raises(ActionError, match=message):
        make()


def test_empty_answer_and_reason_mean_none() -> None:
    assert Done(answer="") == Done() and Fail(reason="") == Fail()


@pytest.mark.parametrize("cls", list(ACTION_TYPES.values()))
def test_to_dict_from_dict_json(cls: type[Action]) -> None:
    from osworld_gym.actions import StructuredActionSpace

    action = StructuredActionSpace(kinds=[cls.kind], seed=3).sample()
    data = json.loads(json.dumps(action.to_dict()))
    assert data["kind"] == cls.kind
    assert action_from_dict(data) == action


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "clik"}, "did you mean 'click'"),
        ({"kind": None}, "unknown action kind"),
        ({"kind": "move", "x": 1}, "missing"),
        ({"kind": "click", "z": 1}, "unexpected field"),
    ],
)
def test_from_dict_errors(data: dict, message: str) -> None:
    with pytest.raises(ActionError, match=message):
        action_from_dict(data)


# --- derived documents -----------------------------------------------------------------------


def test_describe_lists_every_kind_and_field() -> None:
    text = describe_actions()
    for kind, cls in ACTION_TYPES.items():
        assert f"\n{kind}(" in f"\n{text}"
        for f in dataclasses.fields(cls):
            assert f"    {f.name}: " in text
    assert describe_actions(["press"]).startswith("press(key, presses=1)")
    with pytest.raises(ValueError, match="unknown action kind"):
        describe_actions(["nope"])


def test_json_schema_matches_declarations() -> None:
    schema = action_json_schema()
    assert [v["properties"]["kind"]["const"] for v in schema["oneOf"]] == list(ACTION_KINDS)
    move = schema["oneOf"][ACTION_KINDS.index("move")]
    assert move["required"] == ["kind", "x", "y"]
    assert move["additionalProperties"] is False
    click = schema["oneOf"][0]["properties"]
    assert click["button"]["enum"] == ["left", "middle", "right"]
    assert click["clicks"]["default"] == 1
    json.dumps(schema)  # serialisable


@pytest.mark.heavy  # hypothesis against the JSON schema
def test_json_schema_validates_to_dict_output() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from osworld_gym.actions import StructuredActionSpace

    space = StructuredActionSpace(seed=0)
    schema = action_json_schema()
    for _ in range(50):
        jsonschema.validate(space.sample().to_dict(), schema)


def test_tool_schemas() -> None:
    tools = tool_schemas()
    assert [t["function"]["name"] for t in tools] == list(ACTION_KINDS)
    hotkey = tools[ACTION_KINDS.index("hotkey")]["function"]
    assert hotkey["parameters"]["properties"]["keys"]["type"] == "array"
    assert hotkey["description"].startswith("Press keys together")


# --- keys ------------------------------------------------------------------------------------

KEYS = [
    ("enter", "enter"),
    ("Enter", "enter"),
    ("RETURN", "return"),
    ("A", "a"),
    ("!", "!"),
    (" ", " "),
    ("ArrowLeft", "left"),
    ("Control", "ctrl"),
    ("cmd", "command"),
    ("Page_Down", "pagedown"),
    ("page-up", "pageup"),
    ("super", "win"),
    ("f12", "f12"),
]


@pytest.mark.parametrize(("name", "key"), KEYS)
def test_normalize_key(name: str, key: str) -> None:
    assert normalize_key(name) == key
    assert key in KEY_NAMES


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("entr", "'enter'"), ("ctrll", "'ctrl'"), ("escpe", "'escape'"), ("pgdwn", "'pgdn'")],
)
def test_unknown_key_suggests(name: str, suggestion: str) -> None:
    with pytest.raises(ActionError, match="did you mean") as info:
        normalize_key(name)
    assert suggestion in str(info.value)


@pytest.mark.parametrize("name", ["", "é", "nokey", 5, None])
def test_not_a_key(name: object) -> None:
    with pytest.raises(ActionError):
        normalize_key(name)


def test_aliases_point_at_pyautogui_keys() -> None:
    assert set(KEY_ALIASES.values()) <= set(KEY_NAMES)


HOTKEYS = [
    ("ctrl c", ("ctrl", "c")),
    ("Ctrl+C", ("ctrl", "c")),
    ("ctrl + shift + t", ("ctrl", "shift", "t")),
    ("ctrl++", ("ctrl", "+")),
    ("ctrl shift +", ("ctrl", "shift", "+")),
    ("+", ("+",)),
    ("  alt   f4 ", ("alt", "f4")),
]


@pytest.mark.parametrize(("text", "keys"), HOTKEYS)
def test_split_hotkey(text: str, keys: tuple[str, ...]) -> None:
    assert split_hotkey(text) == keys
