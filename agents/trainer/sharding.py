"""Sharded training with FSDP2: parameters, gradients and optimizer state split over the ranks.

``shard_model()`` applies ``torch.distributed.fsdp.fully_shard`` to every vision-tower block
and every decoder layer of a Qwen2.5-VL policy, then to the root (embeddings, merger, final
norm, head), so a rank holds ``1 / world_size`` of each and gathers one layer at a time for its
forward and backward. The policy keeps its dtype (bf16 for UI-TARS, as ARPO trains it);
gradients are reduced in fp32 and *summed* over ranks, not averaged: the update's loss shares
are already normalised over all ranks (``osworld_agents.trainer.update``), exactly as the
unsharded path's one all-reduce sums them.

Under FSDP every forward and backward issues collectives, so all ranks must run the same
number of them: ``update`` pads the ranks with fewer micro-batches.
Every rank must also run the same submodules (a micro-batch without images skips the vision
tower); the trainer's episodes all carry screenshots.

Runs on CUDA with nccl and on CPU with gloo (how the tests run it); a world of one gets a
single-process group of its own so FSDP has one to shard over.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

import torch
import torch.distributed as dist
from osworld_agents.trainer.distributed import DistContext, ensure_process_group
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import (
    CPUOffloadPolicy,
    FSDPModule,
    MixedPrecisionPolicy,
    OffloadPolicy,
    fully_shard,
)
from torch.distributed.tensor import DTensor

logger = logging.getLogger(__name__)

__all__ = [
    "clip_grad_norm",
    "full_tensor",
    "is_sharded",
    "shard_model",
    "sharded_blocks",
]


def sharded_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules that become FSDP units of their own: vision blocks, then decoder layers.

    Found by attribute (``model.visual.blocks``, ``model.language_model.layers`` of a
    ``Qwen2_5_VLForConditionalGeneration``); a model with neither is sharded as one unit.
    """
    inner = getattr(model, "model", model)
    blocks: list[torch.nn.Module] = []
    visual = getattr(inner, "visual", None)
    if visual is not None:
        blocks.extend(getattr(visual, "blocks", []))
    language = getattr(inner, "language_model", inner)
    blocks.extend(getattr(language, "layers", []))
    return blocks


def shard_model(
    model: torch.nn.Module,
    ctx: DistContext,
    *,
    cpu_offload: bool = False,
) -> torch.nn.Module:
    """Shard ``model`` in place over every rank with FSDP2; returns the same object.

    The ranks' weights must already be identical (each rank keeps its slice of its own copy).
    Activation checkpointing, when wanted, is enabled on the model before this call
    (transformers' ``gradient_checkpointing_enable``): its per-layer checkpoint wraps the FSDP
    unit's call, so a recomputation gathers the layer again.

    Args:
        model: The policy, on ``ctx.device``, in the dtype it computes in.
        ctx: The rank's context; a world of one gets a single-process group here.
        cpu_offload: Keep the sharded parameters, gradients and optimizer state in host memory
            (the optimizer steps on the CPU); every layer is copied to the device to run.

    Returns:
        ``model``, now an ``FSDPModule`` whose parameters are ``DTensor`` shards.
    """
    ensure_process_group(ctx)
    mesh = init_device_mesh(ctx.device.type, (dist.get_world_size(),))
    dtype = next(model.parameters()).dtype
    # Compute in the model's own dtype; reduce gradients in fp32 (bf16 sums lose bits).
    mp_policy = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
    offload: OffloadPolicy = (
        CPUOffloadPolicy(pin_memory=ctx.device.type == "cuda") if cpu_offload else OffloadPolicy()
    )
    blocks = sharded_blocks(model)
    for block in blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp_policy, offload_policy=offload)
    fully_shard(model, mesh=mesh, mp_policy=mp_policy, offload_policy=offload)
    for module in _fsdp_modules(model):
        # Sum, not average: the loss shares carry the global normaliser already. Forcing
        # plain SUM collectives also keeps gloo (no AVG / PREMUL_SUM) usable.
        module.set_gradient_divide_factor(1.0)
        module.set_force_sum_reduction_for_comms(True)
    # A parameter one rank's micro-batch did not reach still takes part (with zeros), so the
    # ranks' reduce-scatters keep the same shapes.
    model.set_reduce_scatter_unused_params(True)  # type: ignore[operator]
    if cpu_offload and ctx.device.type != "cpu":
        _keep_compute_device(model, ctx.device)
    logger.info(
        "FSDP2 over %d rank(s): %d block(s) + root, %s compute, fp32 reduce%s",
        dist.get_world_size(),
        len(blocks),
        dtype,
        ", CPU offload" if cpu_offload else "",
    )
    return model


def _fsdp_modules(model: torch.nn.Module) -> Iterator[FSDPModule]:
    for module in model.modules():
        if isinstance(module, FSDPModule):
            yield module


def _keep_compute_device(model: torch.nn.Module, device: torch.device) -> None:
    """Make ``model.device`` the compute device although the offloaded shards live on the CPU.

    transformers' ``device`` is the first parameter's, and the update moves its batches there;
    FSDP computes on ``device``. ``fully_shard`` gave the model a class of its own
    (``FSDP<Class>``), so the override touches no unsharded model.
    """
    cls = type(model)
    if cls.__name__.startswith("FSDP"):
        cls.device = property(lambda self: device)  # type: ignore[assignment,method-assign]


def is_sharded(model: torch.nn.Module) -> bool:
    """The model was sharded by ``shard_model()`` (its parameters are DTensor shards)."""
    return isinstance(model, FSDPModule)


def full_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """A DTensor's full value (a collective: every rank calls it); other tensors as they are."""
    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor


def clip_grad_norm(parameters: Iterable[torch.nn.Parameter], max_norm: float) -> float:
    """Clip the gradients to ``max_norm`` in total; their norm before clipping, as a float.

    Works on plain and on DTensor gradients: for shards, the norm is reduced over the ranks
    (every rank gets the same value), and clipping scales each shard by the same factor.
    """
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return 0.0
    grads = [p.grad for p in params]
    # The total of DTensor shards is a partial sum: reduce it before scaling, so every rank
    # clips by the same global factor (and skips the same non-finite steps).
    norm = full_tensor(torch.nn.utils.get_total_norm(grads))
    torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)
    return float(norm)
