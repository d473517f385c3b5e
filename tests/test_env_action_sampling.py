"""``env.action_space.sample()`` gives actions the env parses, in its own dialect (issue 21),
and the registered ids spell out the env's defaults.

No desktop is started: the spaces and the parser are what is under test; ``_parse`` is the
env's own step-time parsing (the same call ``step`` makes).
"""

from __future__ import annotations

import inspect

import gymnasium as gym
import pytest

import osworld_gym  # noqa: F401  (registers the ids)
from osworld_gym.actions import Action, StructuredActionSpace, TextActionSpace
from osworld_gym.env import OSWorldEnv
from osworld_gym.registration import DEFAULT_KWARGS, ENV_IDS

DRAWS = 1_000


def _env(**kwargs) -> OSWorldEnv:
    return OSWorldEnv(tasks="ui-basics", **kwargs)


@pytest.mark.parametrize("action_format", ["uitars", "pyautogui", "computer_13", "structured"])
def test_samples_parse_a_thousand_times_in_a_row(action_format: str) -> None:
    env = _env(action_format=action_format, screen_size=(1280, 720))
    try:
        env.action_space.seed(21)
        kinds = set()
        for i in range(DRAWS):
            sample = env.action_space.sample()
            assert sample in env.action_space
            actions, error, _ = env._parse(sample)
            assert error is None, f"draw {i}: {sample!r} -> {error}"
            assert actions, f"draw {i}: {sample!r} parsed to no action"
            for action in actions:
                assert isinstance(action, Action)
                for axis, limit in (("x", 1280), ("y", 720)):
                    value = getattr(action, axis, None)
                    assert value is None or 0 <= value < limit, (sample, action)
                kinds.add(action.kind)
        # Sampling explores the action vocabulary, not one kind.
        assert len(kinds) >= 8, kinds
    finally:
        env.close()


def test_the_space_matches_the_dialect_and_screen() -> None:
    text = _env(action_format="pyautogui", screen_size=(800, 600))
    typed = _env(action_format="structured", screen_size=(800, 600))
    try:
        assert isinstance(text.action_space, TextActionSpace)
        assert (text.action_space.dialect, text.action_space.screen_size) == (
            "pyautogui",
            (800, 600),
        )
        assert isinstance(typed.action_space, StructuredActionSpace)
        assert typed.action_space.screen_size == (800, 600)
    finally:
        text.close()
        typed.close()


def test_samples_follow_the_space_rng() -> None:
    first, second = _env(), _env()
    try:
        first.action_space.seed(7)
        second.action_space.seed(7)
        draws = [first.action_space.sample() for _ in range(20)]
        assert draws == [second.action_space.sample() for _ in range(20)]
        second.action_space.seed(8)
        assert draws != [second.action_space.sample() for _ in range(20)]
    finally:
        first.close()
        second.close()


def test_uitars_samples_are_written_for_the_env_parser_options() -> None:
    """With UI-TARS 1.0's relative coordinates, a sampled click lands where it was drawn."""
    options = {"coordinates": "relative"}
    space = TextActionSpace(dialect="uitars", screen_size=(1000, 500), dialect_options=options)
    space.seed(3)
    plain = TextActionSpace(dialect="uitars", screen_size=(1000, 500), seed=3)
    env = _env(screen_size=(1000, 500), dialect_options=options)
    try:
        env.action_space.seed(3)
        for _ in range(200):
            text = env.action_space.sample()
            assert text == space.sample()
            actions, error, _ = env._parse(text)
            assert error is None and actions
        # The options change what is written (relative 0-1000 grid vs the resized image's).
        assert [space.sample() for _ in range(50)] != [plain.sample() for _ in range(50)]
    finally:
        env.close()


def test_samples_respect_a_tight_length_bound_and_still_parse() -> None:
    """Only the shortest computer_13 actions fit 25 characters: draws that do not are redrawn."""
    from osworld_gym.actions import parse_action

    space = TextActionSpace(max_length=25, dialect="computer_13", seed=0)
    drawn = {space.sample() for _ in range(200)}
    assert all(text in space for text in drawn)
    assert all(parse_action(text, dialect="computer_13").error is None for text in drawn)
    assert len(drawn) >= 2


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_registered_kwargs_are_the_env_defaults(env_id: str) -> None:
    spec = gym.spec(env_id)
    defaults = {
        name: p.default
        for name, p in inspect.signature(OSWorldEnv).parameters.items()
        if name in DEFAULT_KWARGS
    }
    assert {k: v for k, v in spec.kwargs.items() if k != "hard"} == defaults == DEFAULT_KWARGS
    assert spec.kwargs["hard"] is ENV_IDS[env_id]


def test_env_spec_shows_what_make_was_given() -> None:
    env = gym.make("OSWorld-v0", tasks="ui-basics", action_format="pyautogui")
    try:
        assert env.spec is not None
        assert env.spec.kwargs["tasks"] == "ui-basics"
        assert env.spec.kwargs["action_format"] == "pyautogui"
        assert env.spec.kwargs["max_steps"] == 15 and env.spec.kwargs["hard"] is False
        assert env.action_space.dialect == "pyautogui"
    finally:
        env.close()
