"""OSWorldEnv on real local desktops: episode semantics, scoring, faults, Gymnasium conformance."""

from __future__ import annotations

import collections.abc
import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from desktop_helpers import wait_until
from fixture_marks import needs
from gymnasium.utils.env_checker import check_env

import osworld_gym  # noqa: F401 - registers the ids
from osworld_gym.actions import Done, Fail, TypeText, Wait
from osworld_gym.env import OSWorldEnv
from osworld_gym.env_config import EnvConfig
from osworld_gym.errors import (
    DependencyNotInstalled,
    DesktopDiedError,
    EvaluatorError,
    GuestHTTPError,
    UnknownTaskError,
)
from osworld_gym.providers import Desktop, processes

pytestmark = pytest.mark.desktop
SCREEN = (800, 600)

HELLO = {
    "id": "write-hello",
    "instruction": "Write the word hello into ~/Desktop/hello.txt using the open terminal.",
    "config": [
        {"type": "launch", "parameters": {"command": ["xterm", "-title", "term"]}},
        {
            "type": "execute",
            "parameters": {
                "command": "wmctrl -l | grep -q term",
                "shell": True,
                "until": {"returncode": 0},
            },
        },
        {"type": "activate_window", "parameters": {"window_name": "term"}},
    ],
    "evaluator": {
        "func": "exact_match",
        "result": {"type": "vm_command_line", "command": "cat ~/Desktop/hello.txt", "shell": True},
        "expected": {"type": "rule", "rules": {"expected": "hello\n"}},
    },
}
IMPOSSIBLE = {
    "id": "impossible",
    "instruction": "Turn this desktop into a toaster.",
    "config": [],
    "evaluator": {"func": "infeasible"},
}
STILL = {  # a static first screen, for Gymnasium's determinism checks
    "id": "still",
    "instruction": "Do nothing.",
    "config": [],
    "evaluator": {"func": "infeasible"},
}
ORACLE = "Action: type(content='echo hello > ~/Desktop/hello.txt\\n')"


def make_env(**kwargs: object) -> OSWorldEnv:
    settings: dict[str, object] = {"tasks": [HELLO, IMPOSSIBLE], "screen_size": SCREEN}
    settings.update(kwargs)
    return OSWorldEnv(**settings)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
@needs("desktop")
def env() -> collections.abc.Iterator[OSWorldEnv]:
    with make_env(max_steps=3) as e:
        yield e


@pytest.fixture(scope="module")
@needs("desktop")
def hard_env() -> collections.abc.Iterator[OSWorldEnv]:
    with make_env(max_steps=2, hard=True) as e:
        yield e


def test_reset_observation_and_info(env: OSWorldEnv) -> None:
    obs, info = env.reset(seed=0, options={"task_id": "write-hello"})
    assert obs in env.observation_space
    assert (
        obs["screenshot"].shape == (SCREEN[1], SCREEN[0], 3) and obs["screenshot"].dtype == np.uint8
    )
    assert obs["instruction"] == HELLO["instruction"] and obs["last_action_error"] == ""
    assert info["task_id"] == "write-hello" and info["step"] == 0
    assert {"desktop", "setup", "observe"} <= set(info["timings"])


def test_oracle_scores_one_and_terminates(env: OSWorldEnv) -> None:
    env.reset(options={"task_id": "write-hello"})
    obs, reward, terminated, truncated, info = env.step(ORACLE)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["parse_error"] is None and info["actions"] == ["type"]
    obs, reward, terminated, truncated, info = env.step("Action: finished(content='done')")
    assert (reward, terminated, truncated, info["score"]) == (1.0, True, False, 1.0)
    assert {"action", "settle", "observe", "evaluate"} <= set(info["timings"])
    with pytest.raises(gym.error.ResetNeeded):
        env.step(ORACLE)


def test_steps_settle_on_events_by_default(env: OSWorldEnv) -> None:
    # The default settle mode ends each wait on X events, and says so: a quiet end with
    # what it saw, well under the poll mode's 0.2 s quiet period alone.
    env.reset(options={"task_id": "write-hello"})
    _, _, _, _, info = env.step(ORACLE)
    assert (info["settle_end"], info["settle_pending"]) == ("quiet", ())
    assert info["timings"]["settle"] < 1.0


def test_settle_settings_are_checked_and_resolved_per_mode() -> None:
    config = EnvConfig()
    assert (config.settle_mode, config.quiet("events"), config.quiet("poll")) == (
        "events",
        0.03,
        0.2,
    )
    assert (config.quiet("events", reset=True), config.quiet("poll", reset=True)) == (0.1, 0.6)
    assert EnvConfig(settle_quiet=0.5).quiet("events") == 0.5
    # After a setup that started an app (it may still draw in phases): longer.
    assert config.quiet("events", reset=True, launched=True) == 0.75
    assert config.quiet("events", launched=True) == 0.03  # a step's: unchanged
    assert EnvConfig(reset_settle_quiet=0.2).quiet("events", reset=True, launched=True) == 0.2
    for bad in ({"settle_launch_timeout": 1.0}, {"settle_quiet": -1.0}, {"settle_timeout": 0}):
        with pytest.raises(ValueError, match="settle_"):
            EnvConfig(**bad)


@pytest.mark.parametrize("frame_format", ["png", "jpeg"])
def test_encoded_frames_observe_the_same_screen(frame_format: str) -> None:
    # Desktops across a network take encoded frames: PNG is the raw frame exactly, JPEG close.
    with make_env(tasks=[STILL], frame_format=frame_format, frame_quality=90) as encoded:
        obs, _ = encoded.reset()
        raw = encoded._desktop.client.screenshot(format="raw").to_array()  # noqa: SLF001
    assert obs["screenshot"].shape == raw.shape
    error = np.abs(obs["screenshot"].astype(np.int16) - raw).mean()
    if frame_format == "png":
        assert error == 0
    else:
        assert 0 < error < 3


def test_frame_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="frame_format must be one of"):
        EnvConfig(frame_format="webp")
    with pytest.raises(ValueError, match="frame_quality"):
        EnvConfig(frame_quality=0)


def test_doing_nothing_scores_zero_with_fail_replacement(env: OSWorldEnv) -> None:
    env.reset(options={"task_id": "write-hello"})
    for _ in (1, 2):
        _, reward, terminated, truncated, info = env.step("Action: wait()")
        assert (reward, terminated, truncated, info["fail_replaced"]) == (0.0, False, False, False)
    _, reward, terminated, truncated, info = env.step(ORACLE)  # step 3 of 3: replaced by FAIL
    assert info["fail_replaced"] is True and info["actions"] == ["fail"]
    assert (reward, terminated, truncated) == (0.0, False, True)


def test_hard_mode_runs_and_scores_the_last_action(hard_env: OSWorldEnv) -> None:
    hard_env.reset(options={"task_id": "write-hello"})
    hard_env.step("Action: wait()")
    _, reward, terminated, truncated, info = hard_env.step(ORACLE)  # the last allowed step
    assert info["fail_replaced"] is False
    assert (reward, terminated, truncated) == (1.0, False, True)


def test_standard_mode_same_actions_score_zero() -> None:
    with make_env(max_steps=2) as standard:
        standard.reset(options={"task_id": "write-hello"})
        standard.step("Action: wait()")
        _, reward, _, truncated, info = standard.step(ORACLE)
        assert info["fail_replaced"] is True and (reward, truncated) == (0.0, True)


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        (["Action: finished(content='no')"], 0.0),
        (["Action: call_user()"], 1.0),
        (
            ["Action: wait()", "Action: wait()", "Action: wait()"],
            1.0,
        ),  # FAIL replacement at the limit
    ],
)
def test_infeasible_rule(env: OSWorldEnv, actions: list[str], expected: float) -> None:
    env.reset(options={"task_id": "impossible"})
    for text in actions:
        _, reward, terminated, truncated, info = env.step(text)
    assert terminated or truncated
    assert reward == expected and info["score"] == expected


def test_infeasible_in_hard_mode_needs_an_explicit_fail(hard_env: OSWorldEnv) -> None:
    hard_env.reset(options={"task_id": "impossible"})
    hard_env.step("Action: wait()")
    _, reward, _, truncated, _ = hard_env.step("Action: wait()")
    assert truncated and reward == 0.0


def test_parse_error_is_a_noop_step_reported_in_info_and_observation(env: OSWorldEnv) -> None:
    env.reset(options={"task_id": "write-hello"})
    obs, reward, terminated, truncated, info = env.step("I think I should click somewhere")
    assert info["parse_error"] and obs["last_action_error"] == info["parse_error"]
    assert (reward, terminated, truncated, info["step"]) == (0.0, False, False, 1)
    obs, *_ = env.step("Action: wait()")
    assert obs["last_action_error"] == ""


def test_accessibility_tree_observation() -> None:
    with make_env(accessibility_tree=True, tasks=[STILL]) as a11y_env:
        a11y_env.reset()
        a11y_env._desktop.client.launch(["mousepad"])
        obs, *_ = a11y_env.step("Action: wait()")
        assert obs in a11y_env.observation_space
        assert obs["accessibility_tree"].startswith("<desktop-frame")


def test_parse_error_can_end_the_episode() -> None:
    with make_env(parse_error_ends_episode=True) as arpo_style:
        arpo_style.reset(options={"task_id": "write-hello"})
        _, reward, terminated, truncated, info = arpo_style.step("no action here")
        assert info["parse_error"] and terminated and not truncated and reward == 0.0


def test_structured_actions(env: OSWorldEnv) -> None:
    with make_env(action_format="structured") as structured:
        structured.reset(options={"task_id": "write-hello"})
        structured.step([TypeText(text="echo hello > ~/Desktop/hello.txt\n"), Wait(seconds=0.1)])
        _, reward, terminated, *_ = structured.step(Done())
        assert terminated and reward == 1.0
        structured.reset(options={"task_id": "impossible"})
        _, reward, terminated, *_ = structured.step({"kind": "fail"})
        assert terminated and reward == 1.0
        assert Fail().kind == "fail"


def test_action_the_guest_refuses_is_reported_not_an_infra_fault(
    env: OSWorldEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    env.reset(options={"task_id": "write-hello"})
    client = env._desktop.client

    def refuse(actions: object) -> None:
        raise GuestHTTPError("/actions", 422, {"message": "actions[0] failed: no keysym"})

    monkeypatch.setattr(client, "actions", refuse)
    obs, reward, terminated, truncated, info = env.step(ORACLE)
    assert info["infra_error"] is None and "no keysym" in info["action_error"]
    assert obs["last_action_error"] == info["action_error"] and not (terminated or truncated)


@pytest.mark.parametrize("component", ["xvfb", "guest"])
def test_dead_desktop_truncates_with_infra_error_and_reset_recovers(
    env: OSWorldEnv, component: str
) -> None:
    """Killed from the host (the desktop's own programs cannot reach either)."""
    env.reset(options={"task_id": "write-hello"})
    desktop = env._desktop
    assert desktop is not None
    os.kill(desktop.component_pid(component), signal.SIGKILL)
    wait_until(lambda: _broken(desktop), message=f"{component} to die")
    obs, reward, terminated, truncated, info = env.step(ORACLE)
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["infra_error"] and obs in env.observation_space
    restarts = env.restarts
    env.reset(options={"task_id": "write-hello"})
    assert env.restarts == restarts + 1
    env.step(ORACLE)
    assert env.step("Action: finished()")[1] == 1.0


@pytest.mark.parametrize("component", ["wm", pytest.param("dbus", marks=pytest.mark.slow)])
def test_a_session_part_killed_mid_episode_is_restarted_and_the_episode_scored(
    env: OSWorldEnv, component: str
) -> None:
    """The desktop's own programs can kill these: the episode goes on, scored as usual."""
    env.reset(options={"task_id": "write-hello"})
    desktop = env._desktop
    assert desktop is not None
    old = desktop.component_pid(component)
    os.kill(old, signal.SIGKILL)
    _, _, terminated, truncated, info = env.step(ORACLE)
    assert info["infra_error"] is None and not (terminated or truncated)
    assert desktop.component_pid(component) != old
    assert env.step("Action: finished()")[1] == 1.0


def test_evaluation_folder_is_recorded_as_the_envs_and_removed_on_close() -> None:
    with make_env(tasks=[STILL]) as still:
        still.reset()
        still.step("Action: finished()")  # scored: files fetched for it would go there
        folder = still._eval_dir
        assert folder is not None and folder.name.startswith("osworld-gym-eval-")
        record = processes.read_owner(folder)
        # What lets a later sweep remove it once this process is gone (a SIGKILL skips close).
        assert record is not None and record["pid"] == os.getpid()
    assert not folder.exists()


def _broken(desktop: Desktop) -> bool:
    try:
        desktop.check()
    except DesktopDiedError:
        return True
    return False


def test_unscorable_task_is_refused_at_reset_and_broken_evaluation_has_no_score() -> None:
    unscorable = {
        "id": "drive",
        "instruction": "x",
        "config": [],
        "evaluator": {
            "func": "compare_pdfs",
            "result": {"type": "googledrive_file"},
            "expected": {"type": "rule", "rules": {}},
        },
    }
    broken_post = {
        "id": "broken-post",
        "instruction": "x",
        "config": [],
        "evaluator": {
            "func": "exact_match",
            "postconfig": [{"type": "open", "parameters": {"path": "~/none.txt"}}],
            "result": {"type": "vm_command_line", "command": "true"},
            "expected": {"type": "rule", "rules": {"expected": ""}},
        },
    }
    with make_env(tasks=[unscorable, broken_post]) as e:
        with pytest.raises(EvaluatorError, match="googledrive_file"):
            e.reset(options={"task_id": "drive"})
        e.reset(options={"task_id": "broken-post"})
        _, reward, terminated, _, info = e.step("Action: finished()")
        # No score, not a zero; the reward stays a float for Gymnasium.
        assert terminated and reward == 0.0 and isinstance(reward, float)
        assert info["score"] is None and "none.txt" in info["evaluation_error"]


def test_missing_metric_library_is_an_evaluation_error_not_a_zero() -> None:
    # What a core-only install meets on a LibreOffice task: the metric's library is missing.
    def needs_openpyxl(*args: object, **options: object) -> float:
        raise DependencyNotInstalled(
            "this metric needs the 'openpyxl' package, which is not installed: "
            "pip install 'osworld-gym[eval]'"
        )

    task = {
        "id": "needs-library",
        "instruction": "x",
        "config": [],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": "true"},
            "expected": {"type": "rule", "rules": {"expected": ""}},
        },
    }
    with make_env(tasks=[task]) as e:
        e.evaluator.metrics["exact_match"] = needs_openpyxl
        e.reset(options={"task_id": "needs-library"})
        _, reward, terminated, truncated, info = e.step("Action: finished()")
        assert terminated and not truncated and reward == 0.0 and isinstance(reward, float)
        assert info["score"] is None and info["infra_error"] is None
        assert info["evaluation_error"].startswith("DependencyNotInstalled: ")
        assert "pip install 'osworld-gym[eval]'" in info["evaluation_error"]
        # The env stays usable: the next episode resets and steps as usual.
        e.reset(options={"task_id": "needs-library"})
        assert e.step("Action: wait()")[4]["step"] == 1


def test_unknown_task_id_suggests(env: OSWorldEnv) -> None:
    with pytest.raises(UnknownTaskError, match="write-hello"):
        env.reset(options={"task_id": "write-helo"})


def test_seeded_sampling_is_reproducible(env: OSWorldEnv) -> None:
    first = [env.reset(seed=7)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(3)]
    again = [env.reset(seed=7)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(3)]
    assert first == again


@pytest.mark.parametrize("env_id", ["OSWorld-v0", "OSWorld-Hard-v0"])
def test_check_env(env_id: str) -> None:
    env = gym.make(env_id, tasks=[STILL], screen_size=SCREEN)
    try:
        assert env.unwrapped.config.hard is (env_id == "OSWorld-Hard-v0")
        check_env(env.unwrapped, skip_render_check=False)
        env.close()
        env.close()  # idempotent
    finally:
        env.close()


def test_gym_make_env_works_after_a_first_reset_that_failed() -> None:
    # Gymnasium 1.4's passive checker would make every later step raise TypeError here.
    env = gym.make("OSWorld-v0", tasks=[STILL], screen_size=SCREEN, action_format="structured")
    try:
        with pytest.raises(UnknownTaskError):
            env.reset(options={"task_id": "no-such-task"})
        obs, info = env.reset()
        assert info["task_id"] == STILL["id"]
        _, reward, terminated, truncated, info = env.step(Done())
        assert terminated and not truncated and isinstance(reward, float)
    finally:
        env.close()


def test_bad_reset_options_and_a_step_after_close_get_clear_errors() -> None:
    env = OSWorldEnv(tasks=[STILL], screen_size=SCREEN, action_format="structured")
    try:
        with pytest.raises(TypeError, match="mapping"):
            env.reset(options="x")  # type: ignore[arg-type]
        env.reset()
        env.close()
        with pytest.raises(gym.error.ResetNeeded, match="reset"):
            env.step(Done())
    finally:
        env.close()


def test_gym_make_by_module_string() -> None:
    env = gym.make("osworld_gym:OSWorld-v0", tasks=[STILL], screen_size=SCREEN)
    try:
        assert isinstance(env.unwrapped, OSWorldEnv)
    finally:
        env.close()


@pytest.mark.parametrize("vector_cls", [gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv])
def test_vector_envs(vector_cls: type) -> None:
    fns = [lambda: OSWorldEnv(tasks=[HELLO], screen_size=SCREEN, max_steps=2) for _ in range(2)]
    vec = vector_cls(fns)
    try:
        obs, info = vec.reset(seed=1)
        assert obs["screenshot"].shape == (2, SCREEN[1], SCREEN[0], 3)
        obs, reward, terminated, truncated, info = vec.step([ORACLE, "Action: wait()"])
        obs, reward, terminated, truncated, info = vec.step(
            ["Action: finished()", "Action: wait()"]
        )
        assert list(reward) == [1.0, 0.0]
        assert list(terminated) == [True, False] and list(truncated) == [False, True]
    finally:
        vec.close()
