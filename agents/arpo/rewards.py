"""Trajectory rewards: the evaluator's score plus a weighted format term (ARPO's reward).

ARPO scores a whole trajectory once: ``reward = score + 0.5 * format_reward`` where
``format_reward`` is -1 when the model's final response could not be parsed, else 0. The reward
is sparse (no per-step shaping, no discount).

An episode the evaluator never scored (``score is None``: the reset failed or an infrastructure
fault cut it) has no meaningful reward. ``trajectory_reward()`` still returns a number for it
(the score counts as 0.0) so that code which must fill a tensor never meets ``None``, but such
episodes say nothing about the policy: callers should drop them with ``is_trainable()``
before grouping, as the collector already re-runs infrastructure-cut attempts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from osworld_gym.pool.trajectory import Trajectory

logger = logging.getLogger(__name__)

FORMAT_COEF = 0.5
"""ARPO's weight on the format term."""

FORMAT_PENALTY = -1.0
"""ARPO's format reward for an unparsable final response."""

MISSING_SCORE = 0.0
"""Score used for an unscored episode (see the module docstring)."""


def score_or_default(trajectory: Trajectory, default: float = MISSING_SCORE) -> float:
    """The evaluator's score, or ``default`` when the episode was never scored.

    Args:
        trajectory: The episode.
        default: The value for ``score is None``.

    Returns:
        The score as a float.
    """
    return default if trajectory.score is None else float(trajectory.score)


def format_reward(
    trajectory: Trajectory, *, penalty: float = FORMAT_PENALTY, last_step_only: bool = True
) -> float:
    """The format term: ``penalty`` if the model's output failed to parse, else 0.

    ARPO ends an episode at the first unparsable response, so "the final step failed" and "some
    step failed" coincide there. Our env keeps the episode going after a parse error (the error
    goes into the observation), so the two differ; ``last_step_only=True`` keeps ARPO's rule.

    Args:
        trajectory: The episode.
        penalty: The value when a parse failure counts (ARPO: -1).
        last_step_only: Look only at the final step (ARPO); otherwise any step's failure counts.

    Returns:
        ``penalty`` or 0.0. An episode with no steps gets 0.0: the model produced nothing to
        judge.
    """
    steps = trajectory.steps[-1:] if last_step_only else trajectory.steps
    return float(penalty) if any(step.parse_error is not None for step in steps) else 0.0


def trajectory_reward(
    trajectory: Trajectory,
    *,
    format_coef: float = FORMAT_COEF,
    format_penalty: float = FORMAT_PENALTY,
    last_step_only: bool = True,
    missing_score: float = MISSING_SCORE,
) -> float:
    """The scalar training reward ``score + format_coef * format_reward``.

    Args:
        trajectory: The episode.
        format_coef: Weight on the format term (ARPO: 0.5; 0 turns it off).
        format_penalty: Format reward of an unparsable response (ARPO: -1).
        last_step_only: See ``format_reward()``.
        missing_score: Score used when the episode was never scored.

    Returns:
        The reward.

    Example:
        >>> from osworld_gym.pool import StepRecord
        >>> t = Trajectory("t", 0, steps=[StepRecord(None, None, parse_error="bad")], score=1.0)
        >>> trajectory_reward(t)
        0.5
    """
    fmt = format_reward(trajectory, penalty=format_penalty, last_step_only=last_step_only)
    return score_or_default(trajectory, missing_score) + format_coef * fmt


def is_trainable(trajectory: Trajectory) -> bool:
    """Whether an episode can enter a GRPO group: it ran to its end and was scored.

    Args:
        trajectory: The episode.

    Returns:
        False for episodes that could not start, were cut by an infrastructure fault, have no
        score, or have no steps (nothing to train on); True otherwise.
    """
    return (
        trajectory.error is None
        and trajectory.infra_error is None
        and trajectory.score is not None
        and bool(trajectory.steps)
    )


def trajectory_rewards(
    trajectories: Iterable[Trajectory],
    *,
    format_coef: float = FORMAT_COEF,
    format_penalty: float = FORMAT_PENALTY,
    last_step_only: bool = True,
    missing_score: float = MISSING_SCORE,
) -> list[float]:
    """``trajectory_reward()`` of each episode, in order.

    Args:
        trajectories: The episodes.
        format_coef: See ``trajectory_reward()``.
        format_penalty: See ``trajectory_reward()``.
        last_step_only: See ``format_reward()``.
        missing_score: See ``trajectory_reward()``.

    Returns:
        One reward per episode.
    """
    rewards = []
    for trajectory in trajectories:
        if trajectory.score is None:
            logger.debug("task %s rollout %d is unscored", trajectory.task_id, trajectory.rollout)
        rewards.append(
            trajectory_reward(
                trajectory,
                format_coef=format_coef,
                format_penalty=format_penalty,
                last_step_only=last_step_only,
                missing_score=missing_score,
            )
        )
    return rewards
