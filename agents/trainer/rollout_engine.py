"""The run's rollout engine, built once, and the weight push after every update.

Which engine samples the rollouts (``rollout_engine_kind()``):

* ``shared``: a ``TransformersEngine`` over the trainer's own
  model object (no copy). Updates are visible at once; a push only sets the weight version.
  The coupled, unsharded loop (collect, then update) -- what the trainer always did.
* ``replica``: a TransformersEngine over a separate full-weight copy of the model (same dtype,
  this rank's device, eval mode, no gradients). Needed when the trainer's parameters are
  sharded (``fsdp``: a rank holds only a slice of every tensor) or change while rollouts sample
  (``async_rollouts``). Every push copies the trainer's weights in.
* ``vllm``: a ``VLLMEngine`` in this rank's process
  (``rollout_engine="vllm"``), loaded from the policy's folder; every push streams the weights
  into it.

A push (``push_weights()``) streams the trainer's named parameters and buffers one tensor at
a time: a sharded (FSDP2 ``DTensor``) parameter is gathered with ``full_tensor()``, copied into
the engine and released before the next is gathered, so no rank ever holds the whole gathered
model. The gather is a collective: every rank must push, and in the same order (they iterate
the same module tree). The engines hold their lock for the whole push, so a ``generate`` on
another thread sees the old weights or the new ones, never a mix.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import torch
from osworld_agents.engines.chat_encoding import QwenChatEncoder
from osworld_agents.engines.hf import TransformersEngine
from osworld_agents.engines.vllm_weights import normalize_trainer_name
from osworld_agents.models import PolicyModel
from osworld_agents.trainer.config import TrainConfig
from osworld_agents.trainer.distributed import DistContext
from osworld_agents.trainer.sharding import is_sharded
from torch.distributed.fsdp import FSDPModule

from osworld_gym.policies.engine import RolloutEngine

logger = logging.getLogger(__name__)

__all__ = [
    "EngineKind",
    "PushStats",
    "TrainerEngine",
    "make_rollout_engine",
    "push_weights",
    "release_for_update",
    "rollout_engine_kind",
    "trainer_weights",
    "vllm_engine_config",
]

EngineKind = Literal["shared", "replica", "vllm"]


@runtime_checkable
class TrainerEngine(RolloutEngine, Protocol):
    """What the trainer needs of its rollout engine, beyond generating: weights and seeds.

    Both ``TransformersEngine`` and ``VLLMEngine`` are one.
    """

    weight_version: int
    """The version of the weights generations come from (in every ``Generation.extra``)."""

    def update_weights(
        self,
        weights: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
        version: int | None = None,
    ) -> None:
        """Take new weights, atomically with respect to ``generate``; tag them ``version``."""
        ...

    def reseed(self, seed: int) -> None:
        """Restart the generator that seeds unseeded calls."""
        ...


@dataclass(frozen=True)
class PushStats:
    """What one ``push_weights()`` moved.

    Attributes:
        tensors: Tensors copied into the engine (0 for a shared model).
        bytes: Their total size, gathered (full) tensors counted.
        largest_bytes: The largest single tensor: what a push holds gathered at most.
        seconds: Wall time of the push, gathers included.
    """

    tensors: int = 0
    bytes: int = 0
    largest_bytes: int = 0
    seconds: float = 0.0


def rollout_engine_kind(config: TrainConfig) -> EngineKind:
    """The engine ``config`` asks for (module docstring)."""
    if config.rollout_engine == "vllm":
        return "vllm"
    if config.fsdp or config.async_rollouts:
        return "replica"
    return "shared"


def make_rollout_engine(
    config: TrainConfig, policy: PolicyModel, ctx: DistContext
) -> TrainerEngine:
    """This rank's rollout engine for the whole run, at weight version 0.

    Call it on every rank (a replica of a sharded model gathers its weights: a collective),
    after the policy is loaded (and sharded, if it is).

    Args:
        config: The run's settings (``rollout_engine``, ``fsdp``, ``async_rollouts``,
            ``vllm_*``).
        policy: The trainer's policy; its weights are the engine's initial weights.
        ctx: This rank's context (the replica's device).

    Returns:
        A ``TransformersEngine`` (shared or replica) or a ``VLLMEngine``.
    """
    kind = rollout_engine_kind(config)
    if kind == "vllm":
        from osworld_agents.engines.vllm_engine import VLLMEngine

        encoder = QwenChatEncoder(policy.tokenizer, policy.image_processor)
        # The policy's folder holds the trainer's starting weights (a resumed run's: the
        # checkpoint's model folder), so vLLM loads them itself: no push needed here.
        text_config = getattr(policy.model.config, "text_config", policy.model.config)
        positions = getattr(text_config, "max_position_embeddings", None)
        settings = vllm_engine_config(config, ctx, model_max_len=positions)
        engine: TrainerEngine = VLLMEngine(policy.source, settings, encoder=encoder)
    elif kind == "replica":
        replica = _full_replica(policy.model, ctx.device)
        engine = TransformersEngine(replica, policy.tokenizer, policy.image_processor)
        if is_sharded(policy.model):
            push_weights(engine, policy.model, 0)  # fills the uninitialised replica
    else:
        engine = TransformersEngine(policy.model, policy.tokenizer, policy.image_processor)
    engine.weight_version = 0
    logger.info("rollout engine: %s (%s)", kind, type(engine).__name__)
    return engine


def vllm_engine_config(
    config: TrainConfig, ctx: DistContext, *, model_max_len: int | None = None
) -> Any:
    """The ``VLLMEngineConfig`` of a run: ARPO's engine settings sized from the trainer's.

    One engine per rank in the rank's process; under torchrun vLLM joins the trainer's
    ``torch.distributed`` world (``external_launcher``). Images are at most the history
    length (every step's screenshot when ``history_images`` is None); a prompt plus its
    completion fits ``max_sequence_tokens + max_new_tokens`` (at most ``model_max_len``, the
    model's positions, which vLLM refuses to exceed) unless ``vllm_max_model_len`` says
    otherwise. Sleep mode is on when the loop sleeps the engine during updates.
    """
    from osworld_agents.engines.vllm_engine import VLLMEngineConfig

    max_images = config.history_images if config.history_images is not None else config.max_steps
    max_model_len = config.vllm_max_model_len
    if max_model_len is None:
        max_model_len = config.max_sequence_tokens + config.max_new_tokens
        if model_max_len is not None and max_model_len > model_max_len:
            logger.info("vLLM max_model_len %d: the model's positions", model_max_len)
            max_model_len = model_max_len
    return VLLMEngineConfig(
        max_images=max_images,
        max_model_len=max_model_len,
        gpu_memory_utilization=config.vllm_gpu_memory_utilization,
        enforce_eager=config.vllm_enforce_eager,
        dtype=config.dtype,
        seed=config.seed + ctx.rank,
        enable_sleep_mode=_sleep_level(config) is not None,
        image_size=tuple(config.screen_size),
        mm_processor_kwargs={"min_pixels": config.min_pixels, "max_pixels": config.max_pixels},
        distributed_executor_backend="external_launcher" if ctx.world_size > 1 else None,
    )


def trainer_weights(model: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """The trainer's named parameters then buffers, full tensors, gathered one at a time.

    Names lose the segments training wrappers insert (activation checkpointing, compile).
    A ``DTensor`` (FSDP2 shard) is gathered with ``full_tensor()`` on every rank -- a
    collective, so all ranks must consume this iterator to the end in step -- and the
    reference is dropped before the next gather: one gathered tensor alive at a time if the
    consumer drops its own reference too (both engines do).
    """
    named = [*model.named_parameters(), *model.named_buffers()]
    for name, tensor in named:
        full_tensor = getattr(tensor, "full_tensor", None)
        if callable(full_tensor):
            with torch.no_grad():  # no autograd record of the gather
                full = full_tensor()
        else:
            full = tensor.detach()  # a view: no copy
        yield normalize_trainer_name(name), full
        del full


def push_weights(engine: TrainerEngine, model: torch.nn.Module, version: int) -> PushStats:
    """Bring the engine to the trainer's weights, tagged ``version``.

    An engine over the trainer's own model only gets the version; otherwise every parameter
    and buffer is streamed into ``engine.update_weights`` (a collective under FSDP: call it on
    every rank). Thread-safe against a concurrent ``generate``: the engine holds its lock for
    the whole update. A ``VLLMEngine`` asleep wakes its weights for the push (its next
    ``generate`` wakes the KV cache).

    Args:
        engine: From ``make_rollout_engine()``.
        model: The trainer's model (sharded or not).
        version: The policy version after this push (the trainer's loop: iteration + 1).

    Returns:
        What was moved.
    """
    started = time.perf_counter()
    if getattr(engine, "model", None) is model:
        engine.update_weights((), version=version)
        return PushStats(seconds=time.perf_counter() - started)
    sizes: list[int] = []

    def counted() -> Iterator[tuple[str, torch.Tensor]]:
        for name, tensor in trainer_weights(model):
            sizes.append(tensor.numel() * tensor.element_size())
            yield name, tensor
            del tensor

    engine.update_weights(counted(), version=version)
    stats = PushStats(
        tensors=len(sizes),
        bytes=sum(sizes),
        largest_bytes=max(sizes, default=0),
        seconds=time.perf_counter() - started,
    )
    logger.debug("pushed weight version %d: %s", version, stats)
    return stats


def release_for_update(engine: TrainerEngine, config: TrainConfig) -> None:
    """Before an update in the coupled loop: put a vLLM engine to sleep to free GPU memory.

    A no-op for transformers engines, with ``async_rollouts`` (rollouts keep sampling), or when
    ``vllm_sleep_level`` is None. The next push wakes the weights, the next generate the rest.
    """
    level = _sleep_level(config)
    if level is None or not hasattr(engine, "sleep"):
        return
    engine.sleep(level)


# --- internals ----------------------------------------------------------------------------------


def _sleep_level(config: TrainConfig) -> int | None:
    if config.rollout_engine != "vllm" or config.async_rollouts:
        return None
    level = config.vllm_sleep_level
    return None if level is None else int(level)


def _full_replica(model: torch.nn.Module, device: torch.device | str) -> torch.nn.Module:
    """A full-weight copy of ``model`` on ``device``: frozen, eval mode.

    An unsharded model is deep-copied (weights included). A sharded one is rebuilt from its
    config on the meta device and materialised uninitialised: the caller pushes the weights.
    """
    if not is_sharded(model):
        replica = copy.deepcopy(model).to(device)
    else:
        dtype = next(model.parameters()).dtype
        cls = _unwrapped_class(model)
        with torch.device("meta"):
            replica = cls._from_config(copy.deepcopy(model.config), dtype=dtype)
        replica = replica.to_empty(device=device)
    replica.requires_grad_(False)
    replica.eval()
    return replica


def _unwrapped_class(model: torch.nn.Module) -> Any:
    """The model's own class: FSDP2 swaps in a subclass ``FSDP<Name>`` of it."""
    for cls in type(model).__mro__:
        if not issubclass(cls, FSDPModule):
            return cls
    raise TypeError(f"no unwrapped class in {type(model).__mro__}")
