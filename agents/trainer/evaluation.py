"""Periodic evaluation: fixed tasks, fixed seeds, temperature ``eval_temperature``.

Each rank runs its share of the evaluation tasks on its own pool; the counts are summed over
ranks. Every evaluation samples with the same seeds (``eval_seed``), so two evaluations differ
only through the weights.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from osworld_agents.models import PolicyModel
from osworld_agents.trainer.config import TrainConfig
from osworld_agents.trainer.distributed import DistContext, shard
from osworld_agents.trainer.metrics import MetricSums
from osworld_agents.trainer.rollout import collect_groups, derive_seed, eval_agent
from osworld_agents.trainer.rollout_engine import TrainerEngine

from osworld_gym.pool import EnvPool

logger = logging.getLogger(__name__)

__all__ = ["TASK_SUCCESS_PREFIX", "evaluate"]

TASK_SUCCESS_PREFIX = "eval/task_success/"
"""Metric-name prefix of one task's evaluation success rate."""


def evaluate(
    pool: EnvPool,
    engine: TrainerEngine | PolicyModel,
    config: TrainConfig,
    tasks: Sequence[str],
    ctx: DistContext,
) -> dict[str, float]:
    """Run ``eval_rollouts`` episodes of every task and report the success rate.

    A collective under data parallelism: every rank must call it.

    Args:
        pool: This rank's pool.
        engine: The run's rollout engine, at the weights to evaluate (reseeded from
            ``eval_seed`` here); a ``PolicyModel`` evaluates its model in place.
        config: Evaluation settings (``eval_*``, ``success_threshold``).
        tasks: Evaluation tasks (identical on every rank).
        ctx: The rank's context.

    Returns:
        ``eval/score_mean``, ``eval/success_rate``, ``eval/parse_error_rate`` over scored
        episodes, ``eval/unscored_frac``: episodes that faults kept from being scored, and
        ``eval/task_success/<task id>``: each task's success rate.
    """
    local = shard(tasks, ctx)
    sums = MetricSums()
    for key in ("eval/score_mean", "eval/success_rate", "eval/parse_error_rate"):
        sums.add(key, 0.0, weight=0.0)  # every rank reports every key, even with no task
    sums.add("eval/unscored_frac", 0.0, weight=0.0)
    if local:
        agent = eval_agent(engine, config)
        groups = collect_groups(
            pool,
            agent,
            local,
            group_size=config.eval_rollouts,
            seed=derive_seed(config.eval_seed, "env", ctx.rank),
            max_policy_batch=config.policy_batch_size,
        ).groups
        for trajectory in (t for g in groups for t in g.trajectories):
            logger.debug(
                "eval %s: score %s, %d step(s)",
                trajectory.task_id, trajectory.score, len(trajectory.steps),
            )  # fmt: skip
            scored = trajectory.score is not None
            sums.add("eval/unscored_frac", float(not scored))
            if not scored:
                continue
            score = float(trajectory.score or 0.0)
            sums.add("eval/score_mean", score)
            success = float(score > config.success_threshold)
            sums.add("eval/success_rate", success)
            sums.add(f"{TASK_SUCCESS_PREFIX}{trajectory.task_id}", success)
            steps = trajectory.steps
            errors = sum(s.parse_error is not None for s in steps)
            sums.add("eval/parse_error_rate", errors / max(len(steps), 1), weight=len(steps))
    metrics = sums.means(ctx)
    logger.info(
        "evaluation: success rate %.3f, mean score %.3f over %d task(s)",
        metrics["eval/success_rate"],
        metrics["eval/score_mean"],
        len(tasks),
    )
    return metrics
