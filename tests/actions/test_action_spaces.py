"""Gymnasium conformance of the text and structured action spaces."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from osworld_gym.actions import (
    ACTION_KINDS,
    Click,
    StructuredActionSpace,
    TextActionSpace,
    parse_action,
)

SPACES = [
    TextActionSpace(),
    TextActionSpace(max_length=10, min_length=2),
    TextActionSpace(dialect="uitars"),
    TextActionSpace(dialect="pyautogui"),
    TextActionSpace(dialect="computer_13"),
    TextActionSpace(dialect="structured"),
    StructuredActionSpace(),
    StructuredActionSpace((800, 600), kinds=["click", "type", "done"]),
]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_samples_are_members(space: gym.Space) -> None:
    space.seed(0)
    for _ in range(200):
        assert space.contains(space.sample())


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_seeding_is_reproducible(space: gym.Space) -> None:
    a, b = copy.deepcopy(space), copy.deepcopy(space)
    a.seed(42)
    b.seed(42)
    assert [a.sample() for _ in range(20)] == [b.sample() for _ in range(20)]
    other = copy.deepcopy(space)
    other.seed(43)
    assert [a.sample() for _ in range(20)] != [other.sample() for _ in range(20)]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_pickle_and_copy(space: gym.Space) -> None:
    space.seed(7)
    restored = pickle.loads(pickle.dumps(space))
    assert restored == space and hash(restored) == hash(space)
    assert restored.sample() == space.sample()  # the generator state travels too
    assert copy.deepcopy(space) == space


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_jsonable_round_trip(space: gym.Space) -> None:
    samples = [space.sample() for _ in range(10)]
    jsonable = space.to_jsonable(samples)
    json.dumps(jsonable)
    assert space.from_jsonable(json.loads(json.dumps(jsonable))) == samples


def test_spaces_are_gymnasium_spaces() -> None:
    for space in SPACES:
        assert isinstance(space, gym.spaces.Space)
        assert space.is_np_flattenable is False
        with pytest.raises(NotImplementedError):
            space.sample(mask=1)


REAL_OUTPUTS = [
    "Thought: I'll open the File menu (top-left).\nAction: click(start_box='(24,12)')",
    "```python\npyautogui.hotkey('ctrl', 's')\n```",
    '{"action_type": "TYPING", "parameters": {"text": "naïve café — 中文 😀"}}',
    "",
    "WAIT",
]


def test_text_space_accepts_real_model_output() -> None:
    space = TextActionSpace()
    for text in REAL_OUTPUTS:
        assert text in space
    assert "x" * 40_000 not in space
    assert b"bytes" not in space and None not in space and 5 not in space
    assert "a" not in TextActionSpace(min_length=2)


@pytest.mark.parametrize("dialect", ["uitars", "pyautogui", "computer_13", "structured"])
def test_dialect_samples_parse(dialect: str) -> None:
    space = TextActionSpace(dialect=dialect, seed=5)
    for _ in range(100):
        result = parse_action(space.sample(), dialect, (1920, 1080), strict=True)
        assert result.actions and result.error is None


def test_structured_space_membership() -> None:
    space = StructuredActionSpace((800, 600), kinds=["click"])
    assert Click(x=799, y=599) in space
    assert Click(x=800, y=0) not in space
    assert Click() in space
    assert {"kind": "click"} not in space
    sampled = {s.kind for s in (StructuredActionSpace(seed=i).sample() for i in range(200))}
    assert sampled == set(ACTION_KINDS)


@pytest.mark.parametrize(
    "make",
    [
        lambda: StructuredActionSpace(kinds=["nope"]),
        lambda: StructuredActionSpace(kinds=[]),
        lambda: TextActionSpace(max_length=1, min_length=2),
        lambda: TextActionSpace(dialect="klingon"),
    ],
)
def test_bad_space_arguments(make) -> None:
    with pytest.raises(ValueError):
        make()


class _TextEnv(gym.Env[np.ndarray, Any]):
    """A minimal env whose step parses its action: what OSWorldEnv does, without a desktop."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, action_space: gym.Space, dialect: str) -> None:
        self.action_space = action_space
        self.observation_space = gym.spaces.Box(0, 255, (4, 4, 3), np.uint8)
        self.dialect = dialect

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return self.observation_space.sample() * 0, {}

    def step(self, action: Any):
        result = parse_action(action, self.dialect, (1920, 1080))
        obs = np.full((4, 4, 3), len(result.actions), np.uint8)
        return obs, 0.0, False, False, {"parse_error": result.error}


@pytest.mark.parametrize(
    ("space", "dialect"),
    [
        (TextActionSpace(), "uitars"),
        (TextActionSpace(dialect="uitars"), "uitars"),
        (StructuredActionSpace(), "structured"),
    ],
    ids=repr,
)
def test_check_env_accepts_the_spaces(space: gym.Space, dialect: str) -> None:
    check_env(_TextEnv(space, dialect), skip_render_check=True)
