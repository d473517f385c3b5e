"""The run's components built from its config: policy, reference, optimizer, pool, replay.

Each builder takes the config and returns one object; ``train.main`` calls them in order.
"""

from __future__ import annotations

import copy
import logging
import random
from pathlib import Path
from typing import Any

import torch
from osworld_agents.arpo import ReplayBuffer, ReplayConfig
from osworld_agents.models import PolicyModel, build_tiny_qwen, load_policy_model
from osworld_agents.trainer.config import TrainConfig
from osworld_agents.trainer.distributed import DistContext, barrier, broadcast_parameters
from osworld_agents.trainer.rollout import env_spec
from osworld_agents.trainer.sharding import is_sharded, shard_model
from osworld_agents.trainer.update import LossSettings

from osworld_gym.policies.uitars import UITARSAgent
from osworld_gym.pool import EnvPool, PoolConfig

logger = logging.getLogger(__name__)

__all__ = [
    "learning_rate",
    "load_policy",
    "loss_settings",
    "make_optimizer",
    "make_pool",
    "make_replay",
    "reference_model",
]


def load_policy(config: TrainConfig, resume_from: Path | None, ctx: DistContext) -> PolicyModel:
    """The policy: the checkpoint's model when resuming, else ``config.model``.

    ``model="tiny"`` builds the tiny Qwen2.5-VL into the output dir (rank 0, once). With
    ``config.fsdp`` the model comes back sharded over the ranks (every rank loads the full
    weights first, then keeps its slice).
    """
    if resume_from is not None:
        source: Any = resume_from / "model"
    elif config.model == "tiny":
        source = Path(config.output_dir) / "tiny-model"
        if ctx.is_main and not (source / "config.json").is_file():
            width = config.tiny_hidden_size
            build_tiny_qwen(
                source, seed=config.seed, hidden_size=width, intermediate_size=2 * width
            )
        barrier(ctx)
    else:
        source = config.model
    policy = load_policy_model(
        source,
        config.dtype,
        ctx.device,
        image_backend=config.image_backend,
        attn_implementation=config.attn_implementation,
    )
    broadcast_parameters(policy.model, ctx)
    if config.gradient_checkpointing:
        policy.model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )
    if config.fsdp:  # after checkpointing: its per-layer wrapper then re-gathers on recompute
        shard_model(policy.model, ctx, cpu_offload=config.fsdp_cpu_offload)
    return policy


def reference_model(
    config: TrainConfig, policy: PolicyModel, resumed: bool, ctx: DistContext | None = None
) -> Any:
    """A frozen copy of the *initial* policy for the KL term (None when ``kl_coef == 0``).

    A sharded policy gets a sharded reference, loaded from the starting weights (``ctx`` is
    then required).
    """
    if config.kl_coef <= 0:
        return None
    if is_sharded(policy.model):
        if ctx is None:
            raise ValueError("a sharded policy's reference model needs the rank's context")
        source = Path(config.output_dir) / "tiny-model" if config.model == "tiny" else config.model
        model = load_policy_model(source, config.dtype, ctx.device).model
        model.requires_grad_(False)
        return shard_model(model, ctx, cpu_offload=config.fsdp_cpu_offload)
    if resumed:  # the live model has moved: reload the starting weights
        source = Path(config.output_dir) / "tiny-model" if config.model == "tiny" else config.model
        model = load_policy_model(source, config.dtype, policy.model.device).model
    else:
        model = copy.deepcopy(policy.model)
    model.requires_grad_(False)
    return model


def make_optimizer(config: TrainConfig, model: torch.nn.Module) -> torch.optim.Optimizer:
    """AdamW (or SGD, ``config.optimizer``) over the trainable parameters.

    Build it after sharding: over a sharded model it holds (and steps) only this rank's
    slices, on the CPU with ``fsdp_cpu_offload``.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, weight_decay=config.weight_decay)
    return torch.optim.AdamW(
        params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay
    )


def learning_rate(config: TrainConfig, iteration: int) -> float:
    """Linear warm-up over ``warmup_iterations``, then constant (ARPO: constant).

    A pure function of the iteration rather than a scheduler object: nothing to checkpoint,
    and iterations without an optimizer step (no sample anywhere) do not shift it.
    """
    warmup = config.warmup_iterations
    return config.lr * (min(1.0, (iteration + 1) / warmup) if warmup > 0 else 1.0)


def loss_settings(config: TrainConfig) -> LossSettings:
    """The update's loss from the config."""
    return LossSettings(
        kind="nll" if config.is_sft else "ppo",
        mode=config.loss_agg_mode,
        temperature=config.temperature,
        clip_low=config.clip_low,
        clip_high=config.clip_high,
        dual_clip=config.dual_clip,
        kl_coef=config.kl_coef,
    )


def make_pool(config: TrainConfig, agent: UITARSAgent) -> EnvPool:
    """This rank's pool of ``num_envs`` envs, screenshots stored as PNG in trajectories."""
    return EnvPool(
        env_spec(config, agent),
        num_envs=config.num_envs,
        config=PoolConfig(
            screenshot_format="png", max_concurrent_resets=config.max_concurrent_resets
        ),
    )


def make_replay(config: TrainConfig, rng: random.Random) -> ReplayBuffer:
    """The replay buffer (a no-op unless ARPO with ``replay``), drawing from ``rng``."""
    return ReplayBuffer(
        ReplayConfig(
            enabled=config.uses_replay,
            success_threshold=config.success_threshold,
            capacity_per_task=config.replay_capacity,
            max_bytes=config.replay_max_bytes,
            eviction=config.replay_eviction,
        ),
        rng=rng,
    )
