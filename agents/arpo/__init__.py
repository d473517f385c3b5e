"""The ARPO algorithm core: rewards, GRPO advantages, the clipped policy loss, replay, selection.

* ``rewards`` -- trajectory reward = score + 0.5 * format reward.
* ``advantages`` -- GRPO advantages per task group (torch).
* ``loss`` -- clip-higher, dual-clip PPO loss; micro-batch-exact
  aggregation (torch).
* ``replay`` -- the bounded, switchable success replay buffer.
* ``selection`` -- task selection from a baseline pass and per-task
  rollout counts.

The torch-based names are imported on first access, so the replay buffer and task selection
work (and load quickly) without torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from osworld_agents.arpo.replay import Injection, ReplayBuffer, ReplayConfig, needs_replay
from osworld_agents.arpo.rewards import (
    format_reward,
    is_trainable,
    score_or_default,
    trajectory_reward,
    trajectory_rewards,
)
from osworld_agents.arpo.selection import (
    SelectionRule,
    TaskSelection,
    TaskStats,
    load_selection,
    rollout_count,
    rollout_counts,
    save_selection,
    select_tasks,
)

if TYPE_CHECKING:
    from osworld_agents.arpo.advantages import group_index, grpo_advantages
    from osworld_agents.arpo.loss import (
        AggMode,
        PolicyLossOutput,
        TokenLoss,
        aggregate_loss,
        clipped_policy_loss,
        kl_penalty,
        loss_normalizer,
        policy_loss,
    )

_LAZY = {
    "grpo_advantages": "advantages",
    "group_index": "advantages",
    "AggMode": "loss",
    "PolicyLossOutput": "loss",
    "TokenLoss": "loss",
    "aggregate_loss": "loss",
    "clipped_policy_loss": "loss",
    "kl_penalty": "loss",
    "loss_normalizer": "loss",
    "policy_loss": "loss",
}

__all__ = [
    "AggMode",
    "Injection",
    "PolicyLossOutput",
    "ReplayBuffer",
    "ReplayConfig",
    "SelectionRule",
    "TaskSelection",
    "TaskStats",
    "TokenLoss",
    "aggregate_loss",
    "clipped_policy_loss",
    "format_reward",
    "group_index",
    "grpo_advantages",
    "is_trainable",
    "kl_penalty",
    "load_selection",
    "loss_normalizer",
    "needs_replay",
    "policy_loss",
    "rollout_count",
    "rollout_counts",
    "save_selection",
    "score_or_default",
    "select_tasks",
    "trajectory_reward",
    "trajectory_rewards",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
