"""Gymnasium's conventions, as generic runners use them: ``max_episode_steps``, ``spec``,
``make_vec``, ``RecordVideo`` and the standard image wrappers, on real local desktops."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import osworld_gym  # noqa: F401 - registers the ids
from osworld_gym.actions import Wait
from osworld_gym.pool import PoolVectorEnv
from osworld_gym.wrappers import ScreenshotObservation

SCREEN = (800, 600)
# Infeasible: doing nothing until the limit is scored 1.0 (the last step becomes FAIL), so a
# reward of 1.0 shows that the episode was scored at that step.
IMPOSSIBLE = {
    "id": "impossible",
    "instruction": "Turn this desktop into a toaster.",
    "config": [],
    "evaluator": {"func": "infeasible"},
}
MAKE = {"tasks": [IMPOSSIBLE], "screen_size": SCREEN, "action_format": "structured"}


def test_spec_says_the_envs_step_limit_and_rebuilds_the_env() -> None:
    env = gym.make("OSWorld-v0", **MAKE)
    try:
        assert env.spec is not None and env.spec.max_episode_steps == 15
        assert env.unwrapped.config.max_steps == 15
        again = gym.make(env.spec)  # TimeLimit(15) from the spec: the env's own limit
        try:
            assert again.unwrapped.config.max_steps == 15 and again.spec.max_episode_steps == 15
        finally:
            again.close()
    finally:
        env.close()
    shorter = gym.make("OSWorld-v0", **MAKE, max_steps=4)
    try:
        assert shorter.spec.max_episode_steps == 4
    finally:
        shorter.close()


def test_max_episode_steps_becomes_the_step_limit() -> None:
    env = gym.make("OSWorld-v0", **MAKE, max_episode_steps=3)
    try:
        assert env.unwrapped.config.max_steps == 3 and env.spec.max_episode_steps == 3
        assert isinstance(env, gym.wrappers.TimeLimit)
    finally:
        env.close()
    unwrapped = gym.make("OSWorld-v0", **MAKE, max_episode_steps=-1)  # no TimeLimit
    try:
        assert unwrapped.unwrapped.config.max_steps == 15
    finally:
        unwrapped.close()


def test_max_episode_steps_and_another_max_steps_are_refused() -> None:
    with pytest.raises(ValueError, match="max_steps=5 and max_episode_steps=3"):
        gym.make("OSWorld-v0", **MAKE, max_steps=5, max_episode_steps=3)
    with pytest.raises(ValueError, match="max_steps=5 and max_episode_steps=3"):
        gym.make_vec("OSWorld-v0", num_envs=1, **MAKE, max_steps=5, max_episode_steps=3)


@pytest.mark.desktop
def test_an_episode_cut_by_max_episode_steps_is_scored_at_its_last_step() -> None:
    env = gym.make("OSWorld-v0", **MAKE, max_episode_steps=3)
    try:
        env.reset()
        for step in (1, 2):
            _, reward, terminated, truncated, info = env.step(Wait(seconds=0.1))
            assert not (terminated or truncated) and info["step"] == step
        _, reward, terminated, truncated, info = env.step(Wait(seconds=0.1))
        assert truncated and info["step"] == 3 and info["fail_replaced"]
        assert info["score"] == 1.0 and reward == 1.0
    finally:
        env.close()


@pytest.mark.desktop
def test_make_vec_builds_the_pools_vector_env() -> None:
    venv = gym.make_vec(
        "OSWorld-v0", num_envs=2, vectorization_mode="vector_entry_point", **MAKE,
        max_episode_steps=2,
    )  # fmt: skip
    try:
        assert isinstance(venv.unwrapped, PoolVectorEnv)
        assert venv.unwrapped.spec.kwargs["vectorization_mode"] == "vector_entry_point"
        obs, info = venv.reset(seed=0)
        assert obs["screenshot"].shape == (2, SCREEN[1], SCREEN[0], 3)
        _, reward, terminated, truncated, _ = venv.step([Wait(seconds=0.1)] * 2)
        assert not truncated.any() and not terminated.any()
        _, reward, terminated, truncated, info = venv.step([Wait(seconds=0.1)] * 2)
        assert truncated.all() and reward.tolist() == [1.0, 1.0]  # scored at step 2
    finally:
        venv.close()


@pytest.mark.desktop
def test_record_video_writes_each_episode(tmp_path: Path) -> None:
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg", reason="the video extra")
    env = gym.make("OSWorld-v0", **MAKE, max_episode_steps=2, render_mode="rgb_array")
    env = gym.wrappers.RecordVideo(env, str(tmp_path / "videos"), episode_trigger=lambda _: True)
    try:
        env.reset(seed=0)
        env.step(Wait(seconds=0.1))
        env.step(Wait(seconds=0.1))
    finally:
        env.close()
    (video,) = (tmp_path / "videos").glob("*.mp4")
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(video))
    assert frames == 3  # the reset's frame and each step's


@pytest.mark.desktop
def test_screenshot_observation_takes_the_standard_image_wrappers() -> None:
    env = ScreenshotObservation(gym.make("OSWorld-v0", **MAKE))
    env = gym.wrappers.GrayscaleObservation(gym.wrappers.ResizeObservation(env, (96, 128)))
    try:
        assert env.observation_space.shape == (96, 128)
        obs, info = env.reset(seed=0)
        assert obs.shape == (96, 128) and obs.dtype == np.uint8 and obs in env.observation_space
        assert info["instruction"] == IMPOSSIBLE["instruction"]
        obs, _, _, _, info = env.step(Wait(seconds=0.1))
        assert obs.shape == (96, 128) and info["last_action_error"] == ""
    finally:
        env.close()


def test_screenshot_observation_needs_the_envs_dict() -> None:
    with pytest.raises(TypeError, match="'screenshot' Box"):
        ScreenshotObservation(gym.make("CartPole-v1"))
