"""Trajectory rewards: score + 0.5 x format reward, unscored episodes, trainability."""

from __future__ import annotations

import subprocess
import sys

import pytest
from osworld_agents.arpo import (
    format_reward,
    is_trainable,
    score_or_default,
    trajectory_reward,
    trajectory_rewards,
)

from osworld_gym.pool import StepRecord, Trajectory


def make_trajectory(
    score: float | None, parse_errors: tuple[str | None, ...] = (None,), **fields: object
) -> Trajectory:
    steps = [StepRecord(None, "click", parse_error=err) for err in parse_errors]
    return Trajectory("task", 0, steps=steps, score=score, terminated=True, **fields)


@pytest.mark.parametrize(
    ("score", "parse_errors", "expected"),
    [
        (1.0, (None,), 1.0),
        (1.0, ("bad",), 0.5),  # 1 + 0.5 * -1
        (0.0, (None, "bad"), -0.5),
        (0.25, (None, None), 0.25),
        (0.0, ("bad", None), 0.0),  # only the final step counts by default
    ],
)
def test_reward_is_score_plus_half_format_penalty(
    score: float, parse_errors: tuple[str | None, ...], expected: float
) -> None:
    assert trajectory_reward(make_trajectory(score, parse_errors)) == pytest.approx(expected)


def test_format_penalty_configurable() -> None:
    traj = make_trajectory(1.0, ("bad",))
    assert format_reward(traj) == -1.0
    assert format_reward(traj, penalty=-2.0) == -2.0
    assert trajectory_reward(traj, format_coef=0.25, format_penalty=-2.0) == pytest.approx(0.5)
    assert trajectory_reward(traj, format_coef=0.0) == 1.0


def test_any_step_scope_penalises_earlier_parse_errors() -> None:
    traj = make_trajectory(1.0, ("bad", None))
    assert format_reward(traj) == 0.0
    assert format_reward(traj, last_step_only=False) == -1.0
    assert trajectory_reward(traj, last_step_only=False) == pytest.approx(0.5)


def test_no_steps_no_format_penalty() -> None:
    assert format_reward(make_trajectory(0.0, ())) == 0.0


def test_unscored_episode_counts_as_zero_and_is_not_trainable() -> None:
    traj = make_trajectory(None, ("bad",), infra_error="guest unreachable")
    assert score_or_default(traj) == 0.0
    assert score_or_default(traj, default=-1.0) == -1.0
    assert trajectory_reward(traj) == pytest.approx(-0.5)
    assert trajectory_reward(traj, missing_score=0.3) == pytest.approx(-0.2)
    assert not is_trainable(traj)


@pytest.mark.parametrize(
    ("fields", "trainable"),
    [
        ({}, True),
        ({"infra_error": "vm crashed"}, False),
        ({"error": "reset failed"}, False),
        ({"score": None}, False),
        ({"parse_errors": ()}, False),
    ],
)
def test_is_trainable(fields: dict[str, object], trainable: bool) -> None:
    score = fields.pop("score", 0.0)
    parse_errors = fields.pop("parse_errors", (None,))
    assert is_trainable(make_trajectory(score, parse_errors, **fields)) is trainable


def test_trajectory_rewards_in_order() -> None:
    trajs = [make_trajectory(1.0), make_trajectory(0.0, ("bad",)), make_trajectory(None)]
    assert trajectory_rewards(trajs) == pytest.approx([1.0, -0.5, 0.0])


@pytest.mark.heavy  # a fresh interpreter
def test_package_imports_without_torch() -> None:
    code = "import sys, osworld_agents.arpo; assert 'torch' not in sys.modules, 'torch imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
