"""Rollouts for the trainer: the env spec, the policies, collection, and rollout metrics.

Reproducibility: with ``seeded_rollouts`` each request samples with a seed derived from (run
seed, iteration, rank, task, rollout, step), so what an episode samples does not depend on
which env ran it or which requests shared a batch (the engine samples each row from its own
seed) -- a resumed run re-collects the same episodes. Without it, the run's engine is reseeded
at each iteration from (run seed, iteration, rank) -- what a fresh engine would draw -- and each
call samples from one seed, which leaves the sample-to-seed mapping to the envs' timing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from osworld_agents.arpo import is_trainable, trajectory_rewards
from osworld_agents.engines.hf import TransformersEngine
from osworld_agents.models import PolicyModel
from osworld_agents.trainer.config import TrainConfig
from osworld_agents.trainer.distributed import DistContext, all_reduce_sum
from osworld_agents.trainer.rollout_engine import TrainerEngine

from osworld_gym.policies.uitars import UITARSAgent, UITARSConfig
from osworld_gym.policies.uitars.agent import EVALUATION_SAMPLING, TRAINING_SAMPLING
from osworld_gym.pool import (
    CollectionStats,
    CollectorConfig,
    EnvPool,
    EnvSpec,
    RolloutCollector,
    TrajectoryGroup,
)
from osworld_gym.pool.policy import Policy

logger = logging.getLogger(__name__)

__all__ = [
    "Collection",
    "collect_groups",
    "derive_seed",
    "drop_untrainable",
    "env_spec",
    "eval_agent",
    "load_demo_policy",
    "rollout_agent",
    "rollout_metrics",
]


def derive_seed(*parts: object) -> int:
    """A 31-bit seed from any parts (stable across processes, unlike ``hash``).

    Example:
        >>> derive_seed(1, "rollout", 3) == derive_seed(1, "rollout", 3)
        True
    """
    key = "\0".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") & 0x7FFF_FFFF


def _agent_config(config: TrainConfig, *, training: bool) -> UITARSConfig:
    base = TRAINING_SAMPLING if training else EVALUATION_SAMPLING
    sampling = dataclasses.replace(
        base,
        temperature=config.temperature if training else config.eval_temperature,
        top_p=base.top_p if training else config.eval_top_p,
        max_new_tokens=config.max_new_tokens,
    )
    return UITARSConfig(
        sampling=sampling,
        history_images=config.history_images,
        min_pixels=config.min_pixels,
        max_pixels=config.max_pixels,
    )


def rollout_agent(
    engine: TrainerEngine | PolicyModel, config: TrainConfig, *, iteration: int, rank: int
) -> UITARSAgent:
    """The training-rollout agent of one iteration (see the module docstring on seeds).

    Args:
        engine: The run's rollout engine
            (``make_rollout_engine()``), reseeded here
            from (run seed, iteration, rank) -- what a fresh engine of this iteration would
            draw; its weights and version are whatever the last push left. A
            ``PolicyModel`` instead gets a fresh engine over its model at weight version
            ``iteration`` (one-off callers: the baseline).
        config: Sampling settings.
        iteration: The training iteration.
        rank: This rank.
    """
    engine_seed = derive_seed(config.seed, "engine", iteration, rank)
    if isinstance(engine, PolicyModel):
        engine = _fresh_engine(engine, seed=engine_seed, version=iteration)
    else:
        engine.reseed(engine_seed)
    seed = derive_seed(config.seed, "rollout", iteration, rank) if config.seeded_rollouts else None
    return UITARSAgent(engine, _agent_config(config, training=True), seed=seed)


def eval_agent(engine: TrainerEngine | PolicyModel, config: TrainConfig) -> UITARSAgent:
    """The evaluation agent: temperature ``eval_temperature``, the same seeds every time.

    ``engine`` as for ``rollout_agent()``, reseeded from ``eval_seed``.
    """
    if isinstance(engine, PolicyModel):
        engine = _fresh_engine(engine, seed=config.eval_seed, version=0)
    else:
        engine.reseed(config.eval_seed)
    return UITARSAgent(engine, _agent_config(config, training=False), seed=config.eval_seed)


def _fresh_engine(policy: PolicyModel, *, seed: int, version: int) -> TransformersEngine:
    engine = TransformersEngine(policy.model, policy.tokenizer, policy.image_processor, seed=seed)
    engine.weight_version = version
    return engine


def env_spec(config: TrainConfig, agent: UITARSAgent) -> EnvSpec:
    """The env every pool worker builds: the suite, the screen, and the agent's dialect."""
    provider: Any = config.provider
    if config.provider == "local":
        from osworld_gym.providers.local.provider import LocalProviderConfig

        provider = LocalProviderConfig(screen_size=config.screen_size, work_dir=config.work_dir)
    kwargs = {
        "tasks": config.suite,
        "provider": provider,
        "screen_size": config.screen_size,
        "max_steps": config.max_steps,
        "parse_error_ends_episode": config.parse_error_ends_episode,
        **agent.env_kwargs(),
    }
    return EnvSpec(config.env_entry_point, kwargs)


def load_demo_policy(reference: str) -> Policy:
    """The demonstration policy ``module:attr``; a class is instantiated with no arguments.

    Raises:
        ValueError: The reference is not ``module:attr``.
    """
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise ValueError(f"demo_policy must be 'module:attr', got {reference!r}")
    target = getattr(importlib.import_module(module_name), attr)
    return target() if isinstance(target, type) else target


class Collection(NamedTuple):
    """What one ``collect_groups()`` call brought back."""

    groups: list[TrajectoryGroup]
    requeued: int
    """Episodes re-run after infrastructure faults."""
    stats: CollectionStats
    """Utilization, occupancy and counts of the collection."""


def collect_groups(
    pool: EnvPool,
    policy: Policy,
    tasks: Sequence[str],
    *,
    group_size: int | Sequence[int],
    seed: int,
    max_policy_batch: int | None,
) -> Collection:
    """Run ``group_size`` episodes of every task; return the groups in task order.

    ``group_size`` is one number for every task, or one per task (DART's budgets).

    Groups complete in any order; sorting them back makes everything downstream (samples,
    mini-batches, replay draws) independent of the envs' timing.

    Returns:
        The groups, the episodes re-run after infrastructure faults, and where the desktops'
        time went.
    """
    # The trainer's agents generate in process, one batch at a time under the engine's lock:
    # more calls in flight would only queue in smaller batches, while one call in flight lets
    # the envs that become ready meanwhile go together in the next.
    collector = RolloutCollector(
        pool,
        policy,
        CollectorConfig(
            seed=seed,
            screenshot_format="png",
            max_policy_batch=max_policy_batch,
            policy_concurrency=1,
        ),
    )
    sizes = [group_size] * len(tasks) if isinstance(group_size, int) else list(group_size)
    groups = collector.collect(list(tasks), sizes)
    position = {task: i for i, task in reversed(list(enumerate(tasks)))}
    groups.sort(key=lambda g: position[g.task_id])
    return Collection(groups, collector.requeued, collector.stats)


def drop_untrainable(groups: Sequence[TrajectoryGroup]) -> tuple[list[TrajectoryGroup], int]:
    """Groups without episodes that cannot be trained on (no start, fault, no score, no step).

    Returns:
        The filtered groups (empty ones removed) and how many episodes were dropped.
    """
    kept, dropped = [], 0
    for group in groups:
        good = [t for t in group.trajectories if is_trainable(t)]
        dropped += len(group.trajectories) - len(good)
        if good:
            kept.append(TrajectoryGroup(group.task_id, good, list(group.discarded)))
    if dropped:
        logger.warning("dropped %d untrainable episode(s): faults, failed resets", dropped)
    return kept, dropped


def group_success_rates(
    groups: Sequence[TrajectoryGroup],
    task_ids: Sequence[str],
    *,
    threshold: float,
    ctx: DistContext,
) -> dict[str, float]:
    """Each rolled-out task's success rate this iteration, over all ranks' groups.

    A collective: every rank calls it, and every rank gets the same rates.

    Args:
        groups: This rank's groups (trainable episodes).
        task_ids: All training tasks, identical on every rank (the vector's layout).
        threshold: A score above it is a success.
        ctx: The rank's context.
    """
    index = {task: i for i, task in enumerate(task_ids)}
    counts = [0.0] * (2 * len(task_ids))
    for group in groups:
        i = index[group.task_id]
        counts[i] += sum(float((t.score or 0.0) > threshold) for t in group.trajectories)
        counts[len(task_ids) + i] += len(group.trajectories)
    total = all_reduce_sum(counts, ctx).tolist()
    n = len(task_ids)
    return {task: total[i] / total[n + i] for task, i in index.items() if total[n + i] > 0}


def rollout_metrics(
    groups: Sequence[TrajectoryGroup], *, format_coef: float, success_threshold: float
) -> dict[str, tuple[float, float]]:
    """Per-iteration rollout statistics as ``key: (value, weight)`` for ``MetricSums``.

    Args:
        groups: The collected groups (trainable episodes, before replay injection).
        format_coef: Weight of the format term in the reward.
        success_threshold: A score above it is a success.
    """
    episodes = [t for g in groups for t in g.trajectories]
    steps = [s for t in episodes for s in t.steps]
    group_rewards = [trajectory_rewards(g.trajectories, format_coef=format_coef) for g in groups]
    rewards = [r for rs in group_rewards for r in rs]
    group_stds = [float(np.std(rs)) for rs in group_rewards]
    scores = [t.score or 0.0 for t in episodes]

    def mean(values: Sequence[float]) -> tuple[float, float]:
        return (float(np.mean(values)) if len(values) else 0.0, float(len(values)))

    return {
        "rollout/reward_mean": mean(rewards),
        "rollout/reward_std": (float(np.std(rewards)) if rewards else 0.0, 1.0),
        "rollout/group_reward_std": mean(group_stds),
        # ARPO's num_invalid_group: groups whose rewards barely differ carry no GRPO signal.
        "rollout/flat_group_frac": mean([float(s < 0.01) for s in group_stds]),
        "rollout/score_mean": mean(scores),
        "rollout/success_rate": mean([float(s > success_threshold) for s in scores]),
        "rollout/parse_error_rate": mean([float(s.parse_error is not None) for s in steps]),
        "rollout/episode_steps": mean([float(len(t.steps)) for t in episodes]),
        "rollout/truncated_frac": mean([float(t.truncated) for t in episodes]),
        "timing/policy_per_step": mean([s.timings.get("policy", 0.0) for s in steps]),
        "timing/env_per_step": mean([s.timings.get("env", 0.0) for s in steps]),
    }
