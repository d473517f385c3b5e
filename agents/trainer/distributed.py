"""Data-parallel training over processes with ``torch.distributed`` (gloo on CPU, nccl on GPUs).

Each rank runs its own pool and its own share of the iteration's tasks (whole GRPO groups, so
advantages stay local), and keeps a full copy of the model. Gradients are summed with one
all-reduce per optimizer step rather than through DDP: ranks run different numbers of
micro-batches (their trajectories differ in number and length), which DDP's per-backward
collectives cannot express, and a plain sum pairs exactly with the loss normaliser that is
itself summed over ranks -- every trajectory weighs the same whichever rank trained on it.

With ``fsdp`` the model is sharded instead (``osworld_agents.trainer.sharding``): FSDP
reduces the gradients itself, inside every backward, so the ranks then run the same number of
forward passes (``osworld_agents.trainer.update.padding_passes()``) and the all-reduce here
is off.

Launch with ``torchrun --nproc_per_node N -m osworld_agents.trainer.train ...``; a plain
``python -m ...`` is a world of one, and every function here is then a cheap no-op.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

logger = logging.getLogger(__name__)

__all__ = [
    "DistContext",
    "all_gather_objects",
    "all_reduce_gradients",
    "all_reduce_sum",
    "barrier",
    "broadcast_parameters",
    "ensure_process_group",
    "init_distributed",
    "shard",
    "shutdown",
]

T = TypeVar("T")

# A single-process group this module made for FSDP in a world of one (shutdown removes it).
_solo_group = False


@dataclass(frozen=True)
class DistContext:
    """Where this process stands in the data-parallel world.

    Attributes:
        rank: This process's rank (0 .. world_size - 1).
        world_size: Number of processes.
        local_rank: Rank on this host (selects the GPU).
        device: The device this rank trains on.
        initialized: A process group was created here (world_size > 1).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    initialized: bool = False

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that writes checkpoints and logs."""
        return self.rank == 0


def init_distributed(backend: str = "auto", device: str = "auto") -> DistContext:
    """Join the process group torchrun describes, or return a world of one.

    torchrun sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
    ``MASTER_PORT``; without ``WORLD_SIZE`` (or with 1) no process group is created.

    Args:
        backend: ``"gloo"``, ``"nccl"`` or ``"auto"`` (nccl when the device is CUDA).
        device: ``"auto"`` (``cuda:<local rank>`` when CUDA is available, else cpu) or a torch
            device string.

    Returns:
        The rank's context.
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    if device == "auto":
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    target = torch.device(device)
    if target.type == "cuda":
        torch.cuda.set_device(target)
    if world_size == 1:
        return DistContext(device=target)
    if backend == "auto":
        backend = "nccl" if target.type == "cuda" else "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
    logger.info("rank %d of %d on %s (%s)", rank, world_size, target, backend)
    return DistContext(rank, world_size, local_rank, target, initialized=True)


def ensure_process_group(ctx: DistContext) -> None:
    """A process group even in a world of one (FSDP shards over one): a private one-rank group.

    The context stays a world of one (``ctx.initialized`` is False), so the helpers here stay
    no-ops; ``shutdown()`` removes the group.
    """
    global _solo_group
    if dist.is_initialized():
        return
    if ctx.initialized or ctx.world_size != 1:
        raise RuntimeError("the process group of a multi-rank context is gone")
    backend = "nccl" if ctx.device.type == "cuda" else "gloo"
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    _solo_group = True


def shutdown(ctx: DistContext) -> None:
    """Leave the process group this context created (or ``ensure_process_group()`` made)."""
    global _solo_group
    if (ctx.initialized or _solo_group) and dist.is_initialized():
        dist.destroy_process_group()
    _solo_group = False


def shard(items: Sequence[T], ctx: DistContext) -> list[T]:
    """This rank's share of a list every rank holds identically: ``items[rank::world_size]``.

    Example:
        >>> shard(["a", "b", "c"], DistContext(rank=1, world_size=2))
        ['b']
    """
    return list(items[ctx.rank :: ctx.world_size])


def barrier(ctx: DistContext) -> None:
    """Wait for every rank."""
    if ctx.initialized:
        dist.barrier()


def all_reduce_sum(values: Sequence[float] | torch.Tensor, ctx: DistContext) -> torch.Tensor:
    """Sum float64 values over ranks (float64 so counts and sums stay exact).

    Args:
        values: The local values.
        ctx: The rank's context.

    Returns:
        A float64 tensor on the CPU holding the global sums.
    """
    tensor = torch.as_tensor(values, dtype=torch.float64).detach().clone()
    if ctx.initialized:
        # nccl reduces only device tensors; gloo only host ones, or device ones where CUDA is.
        work = tensor.to(ctx.device) if ctx.device.type == "cuda" else tensor
        dist.all_reduce(work, op=dist.ReduceOp.SUM)
        tensor = work.cpu()
    return tensor


def all_reduce_gradients(parameters: Iterable[torch.Tensor], ctx: DistContext) -> None:
    """Sum every trainable parameter's gradient over ranks, in place.

    A parameter without a gradient on this rank (none of its micro-batches reached it) takes
    part with zeros, so all ranks issue the same collectives and end with the same ``.grad``.
    Gradients are flattened into one buffer per dtype: one collective, not one per tensor.
    """
    if not ctx.initialized:
        return
    params = [p for p in parameters if p.requires_grad]
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
    for p in params:
        by_dtype.setdefault(p.grad.dtype, []).append(p.grad)  # type: ignore[union-attr]
    for grads in by_dtype.values():
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()


def broadcast_parameters(model: torch.nn.Module, ctx: DistContext) -> None:
    """Make every rank's weights rank 0's (ranks must start identical)."""
    if not ctx.initialized:
        return
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            dist.broadcast(tensor.data, src=0)


def all_gather_objects(obj: Any, ctx: DistContext) -> list[Any]:
    """Every rank's ``obj`` (picklable), in rank order; ``[obj]`` in a world of one."""
    if not ctx.initialized:
        return [obj]
    gathered: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(gathered, obj)
    return gathered
