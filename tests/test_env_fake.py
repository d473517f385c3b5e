"""OSWorldEnv's episode rules on fake desktops (``fake_provider``): no X server, real HTTP to
OSWorld's guest protocol, real setup steps and a real evaluator. The same rules on real
desktops are in ``test_env.py`` (marked ``desktop``)."""

from __future__ import annotations

import collections.abc
from typing import Any

import gymnasium as gym
import pytest
from fake_provider import FAKE_SCREEN, FakeDesktop, FakeProvider
from fake_tasks import TASKS
from gymnasium.utils.env_checker import check_env

import osworld_gym  # noqa: F401 - registers the ids
from osworld_gym.env import OSWorldEnv
from osworld_gym.errors import TooManyRestartsError

CLICK = "pyautogui.click(10, 20)"
TYPE_HELLO = "pyautogui.typewrite('hello')"


def make(env_id: str = "OSWorld-v0", **kwargs: Any) -> gym.Env[Any, Any]:
    settings: dict[str, Any] = {
        "provider": FakeProvider(),
        "tasks": TASKS,
        "screen_size": FAKE_SCREEN,
        "action_format": "pyautogui",
        "settle": False,  # the fake screen never changes; settling is tested in test_env.py
    }
    settings.update(kwargs)
    return gym.make(env_id, **settings)


@pytest.fixture()
def env() -> collections.abc.Iterator[gym.Env[Any, Any]]:
    with make() as e:
        yield e


def desktop_of(env: gym.Env[Any, Any]) -> FakeDesktop:
    desktop = env.unwrapped.desktop
    assert isinstance(desktop, FakeDesktop)
    return desktop


def test_reset_runs_the_setup_and_observes(env: gym.Env[Any, Any]) -> None:
    obs, info = env.reset(options={"task_id": "type-hello"})
    assert obs["screenshot"].shape == (FAKE_SCREEN[1], FAKE_SCREEN[0], 3)
    assert obs["instruction"] == "Type hello." and obs["last_action_error"] == ""
    assert env.observation_space.contains(obs)
    assert (info["task_id"], info["step"], info["infra_error"]) == ("type-hello", 0, None)
    assert {"desktop", "setup", "observe"} <= set(info["timings"])
    home = desktop_of(env).guest.home
    assert (home / "Desktop/state.txt").read_text() == "ready", "the setup ran in the desktop"


def test_actions_reach_the_guest_and_a_reset_clears_what_they_did(
    env: gym.Env[Any, Any],
) -> None:
    env.reset(options={"task_id": "type-hello"})
    for action in (CLICK, TYPE_HELLO):
        _, reward, terminated, truncated, info = env.step(action)
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert info["parse_error"] is None and info["action_error"] is None
    desktop = desktop_of(env)
    calls = [(name, args) for name, args, _ in desktop.inputs()]
    assert calls == [("click", [10, 20]), ("write", ["hello"])]
    env.reset(options={"task_id": "type-world"})
    assert desktop_of(env) is desktop, "the desktop is reset, not relaunched"
    assert desktop.inputs() == [] and desktop.resets == 1


@pytest.mark.parametrize(("actions", "score"), [([TYPE_HELLO, "DONE"], 1.0), (["DONE"], 0.0)])
def test_the_evaluator_scores_what_the_setup_and_the_actions_left(
    env: gym.Env[Any, Any], actions: list[str], score: float
) -> None:
    env.reset(options={"task_id": "type-hello"})
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
    assert (terminated, truncated) == (True, False)
    assert reward == info["score"] == score
    assert [check.func for check in info["evaluation"].checks] == [
        "exact_match",
        "check_include_exclude",
    ]
    assert info["evaluation"].checks[0].score == 1.0, "the setup's file was read back"
    with pytest.raises(gym.error.ResetNeeded):
        env.step("DONE")


def test_the_15th_step_is_replaced_by_fail_and_scored(env: gym.Env[Any, Any]) -> None:
    assert env.unwrapped.config.max_steps == 15
    env.reset(options={"task_id": "impossible"})
    for step in range(1, 15):
        _, _, terminated, truncated, info = env.step(CLICK)
        assert not (terminated or truncated), f"step {step} ended the episode"
    _, reward, terminated, truncated, info = env.step(CLICK)
    assert (terminated, truncated, info["fail_replaced"]) == (False, True, True)
    assert info["actions"] == ["fail"]
    # OSWorld's rule: FAIL on an infeasible task scores 1, even when the limit said it.
    assert reward == info["score"] == 1.0
    assert len(desktop_of(env).inputs()) == 14, "the 15th click never ran"


def test_hard_mode_runs_the_last_step_as_is() -> None:
    with make("OSWorld-Hard-v0", max_steps=3) as env:
        assert env.unwrapped.config.hard
        env.reset(options={"task_id": "impossible"})
        for _ in range(2):
            env.step(CLICK)
        _, reward, terminated, truncated, info = env.step(CLICK)
        assert (terminated, truncated, info["fail_replaced"]) == (False, True, False)
        assert reward == info["score"] == 0.0, "no FAIL: the infeasible task is not solved"
        assert len(desktop_of(env).inputs()) == 3


def test_a_parse_error_is_a_no_op_step_reported_in_info_and_observation(
    env: gym.Env[Any, Any],
) -> None:
    env.reset(options={"task_id": "type-hello"})
    obs, reward, terminated, truncated, info = env.step("import os; os.remove('x')")
    assert info["parse_error"] and obs["last_action_error"] == info["parse_error"]
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert desktop_of(env).inputs() == []
    obs, *_ = env.step(CLICK)
    assert obs["last_action_error"] == "", "the next step's observation clears it"


def test_a_parse_error_can_end_the_episode() -> None:
    with make(parse_error_ends_episode=True) as env:
        env.reset(options={"task_id": "type-hello"})
        _, reward, terminated, truncated, info = env.step("not code at all (")
        assert info["parse_error"] and (terminated, truncated) == (True, False)
        assert reward == info["score"] == 0.0


def test_a_dead_desktop_truncates_with_infra_error_and_the_next_reset_relaunches(
    env: gym.Env[Any, Any],
) -> None:
    provider = env.unwrapped.provider
    env.reset(options={"task_id": "type-hello"})
    env.step(TYPE_HELLO)
    desktop_of(env).kill()
    obs, reward, terminated, truncated, info = env.step(CLICK)
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["infra_error"] and "score" not in info
    assert obs["last_action_error"] == info["infra_error"]
    with pytest.raises(gym.error.ResetNeeded):
        env.step(CLICK)
    env.reset(options={"task_id": "type-hello"})
    assert provider.launches == 2 and len(provider.live()) == 1
    env.step(TYPE_HELLO)
    _, reward, *_ = env.step("DONE")
    assert reward == 1.0, "the relaunched desktop runs a whole episode"


def test_launch_failures_are_retried_then_reported() -> None:
    with make(provider=FakeProvider(fail_launches=1)) as env:
        env.reset(options={"task_id": "type-hello"})
        assert env.unwrapped.provider.failed_launches == 1
    with make(provider=FakeProvider(fail_launches=3), restart_attempts=2) as env:
        with pytest.raises(TooManyRestartsError, match="after 3 attempts"):
            env.reset(options={"task_id": "type-hello"})


def test_uitars_output_is_parsed_and_scaled_to_the_screen() -> None:
    with make(action_format="uitars") as env:
        env.reset(options={"task_id": "type-hello"})
        _, _, _, _, info = env.step("Thought: type it\nAction: type(content='hello')")
        assert info["parse_error"] is None and info["thought"] == "type it"
        _, reward, terminated, _, _ = env.step("Action: finished(content='done')")
        assert terminated and reward == 1.0


def test_gymnasium_check_env_passes() -> None:
    with make(tasks=[TASKS[2]]) as env:
        check_env(env.unwrapped, skip_render_check=True)


def test_close_stops_the_desktop_and_a_step_after_close_asks_for_a_reset() -> None:
    env = make()
    env.reset(options={"task_id": "type-hello"})
    desktop = desktop_of(env)
    env.close()
    assert desktop.closed and not desktop.folder.exists()
    with pytest.raises(gym.error.ResetNeeded):
        env.step(CLICK)
    assert isinstance(env.unwrapped, OSWorldEnv)
