"""GRPO outcome advantages: each trajectory's reward normalised within its task group.

``A_i = (r_i - mean_g) / (std_g + eps)`` with ``std_g`` the unbiased (N-1) standard deviation,
as ``torch.std`` computes it in ARPO. Where the group carries no signal -- a group of one, or a
group whose rewards are all equal -- the advantage is exactly 0. (verl instead gives a group of
one mean 0 and std 1, i.e. ``A = r``; a lone rollout has no baseline to compare with, so we
treat it like a flat group.)
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence

import torch

logger = logging.getLogger(__name__)

ADV_EPS = 1e-6
"""ARPO's epsilon in the advantage denominator."""


def group_index(group_ids: torch.Tensor | Sequence[Hashable]) -> tuple[torch.Tensor, int]:
    """Map arbitrary group ids to dense indices ``0 .. G-1``.

    Args:
        group_ids: ``[B]`` ids: a 1-D tensor, or a sequence of hashables (task id strings).

    Returns:
        ``(index, G)``: a ``[B]`` int64 tensor of dense indices (on the ids' device for a
        tensor, on the CPU otherwise) and the number of distinct groups.

    Example:
        >>> group_index(["b", "a", "b"])
        (tensor([0, 1, 0]), 2)
    """
    if isinstance(group_ids, torch.Tensor):
        if group_ids.dim() != 1:
            raise ValueError(f"group_ids must be 1-D, got shape {tuple(group_ids.shape)}")
        uniques, index = torch.unique(group_ids, return_inverse=True)
        return index.to(torch.int64), int(uniques.numel())
    dense: dict[Hashable, int] = {}
    index_list = [dense.setdefault(gid, len(dense)) for gid in group_ids]
    return torch.tensor(index_list, dtype=torch.int64), len(dense)


def grpo_advantages(
    rewards: torch.Tensor,
    group_ids: torch.Tensor | Sequence[Hashable],
    *,
    eps: float = ADV_EPS,
    norm_by_std: bool = True,
) -> torch.Tensor:
    """Per-trajectory GRPO advantages.

    Args:
        rewards: ``[B]`` scalar rewards, one per trajectory.
        group_ids: ``[B]`` group of each trajectory (the task id); see ``group_index()``.
        eps: Added to the group std in the denominator.
        norm_by_std: Divide by ``std_g + eps``; False gives mean-centred rewards only (Dr. GRPO
            style), which does not up-weight groups whose rewards barely differ.

    Returns:
        ``[B]`` advantages, detached, in the rewards' floating dtype (float32 for integer
        rewards) and on their device.

    Raises:
        ValueError: On shape mismatches or non-finite rewards.

    Example:
        >>> grpo_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), ["a", "b", "b", "a"])
        tensor([ 0.7071,  0.0000,  0.0000, -0.7071])
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D [B], got shape {tuple(rewards.shape)}")
    if len(group_ids) != rewards.numel():
        raise ValueError(f"{len(group_ids)} group ids for {rewards.numel()} rewards")
    if not bool(torch.isfinite(rewards).all()):
        raise ValueError(f"rewards must be finite, got {rewards.tolist()}")
    out_dtype = rewards.dtype if rewards.is_floating_point() else torch.get_default_dtype()
    index, n_groups = group_index(group_ids)
    index = index.to(rewards.device)
    # float64 keeps the sums exact enough that a flat group's mean equals its members.
    r = rewards.detach().to(torch.float64)
    zeros = torch.zeros(n_groups, dtype=torch.float64, device=r.device)
    counts = zeros.index_add(0, index, torch.ones_like(r))
    centred = r - (zeros.index_add(0, index, r) / counts)[index]
    # Flatness is decided on the raw rewards, not on std == 0: rounding in the mean can leave
    # a tiny non-zero residue that eps alone would blow up to a large advantage.
    g_max = zeros.scatter_reduce(0, index, r, "amax", include_self=False)
    g_min = zeros.scatter_reduce(0, index, r, "amin", include_self=False)
    flat = (g_max == g_min)[index]
    if norm_by_std:
        var = zeros.index_add(0, index, centred.square()) / (counts - 1).clamp(min=1)
        centred = centred / (var.sqrt()[index] + eps)
    advantages = torch.where(flat, torch.zeros_like(centred), centred)
    logger.debug("advantages over %d groups of %d trajectories", n_groups, r.numel())
    return advantages.to(out_dtype)
