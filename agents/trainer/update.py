"""The policy update: PPO (ARPO/GRPO) or NLL (SFT) over whole-episode samples.

One iteration is one epoch over this rank's samples, cut into ``steps`` mini-batches (ARPO's 2
optimizer steps per iteration), each cut into micro-batches of ``micro_batch_size`` episodes
whose gradients accumulate. Every micro-batch loss is a *share*: a sum divided by the
normaliser of the whole mini-batch over all ranks (:func:`osworld_agents.arpo.loss_normalizer`
counts), so the accumulated, rank-summed gradient is the full mini-batch's gradient whatever
the micro-batch size or the number of ranks.

Old log-probs are either recomputed right before the update by the same model (ARPO: the
ratio is 1 at the first mini-batch and moves at the second) or taken from the rollout engine.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from osworld_agents.arpo.loss import AggMode, aggregate_loss, policy_loss
from osworld_agents.engines.chat_encoding import ChatBatch, QwenChatEncoder
from osworld_agents.engines.hf import sequence_logprobs
from osworld_agents.trainer.distributed import (
    DistContext,
    all_reduce_gradients,
    all_reduce_sum,
)
from osworld_agents.trainer.metrics import MetricSums
from osworld_agents.trainer.samples import TrainSample

logger = logging.getLogger(__name__)

__all__ = [
    "LossSettings",
    "accumulate_gradients",
    "compute_logprobs",
    "encode_batch",
    "micro_batches",
    "optimizer_step",
    "train_epoch",
]

LogprobField = Literal["old_logprobs", "ref_logprobs"]


@dataclass(frozen=True)
class LossSettings:
    """What the update minimises.

    Attributes:
        kind: ``"ppo"`` (clipped policy loss; ARPO, GRPO) or ``"nll"`` (SFT).
        mode: Loss aggregation (``seq-mean-token-mean``: ARPO; ``token-mean``: DAPO).
        temperature: Log-probs are scored at the rollouts' sampling temperature.
        clip_low: PPO's lower clip range.
        clip_high: PPO's upper clip range.
        dual_clip: Dual-clip constant for negative advantages.
        kl_coef: Weight of the k3 KL term to the reference policy (needs ``ref_logprobs``).
    """

    kind: Literal["ppo", "nll"] = "ppo"
    mode: AggMode = "seq-mean-token-mean"
    temperature: float = 1.0
    clip_low: float = 0.2
    clip_high: float = 0.3
    dual_clip: float = 3.0
    kl_coef: float = 0.0

    @property
    def share_keys(self) -> tuple[str, ...]:
        """Metrics that are shares of the mini-batch loss: summed, not averaged."""
        if self.kind == "nll":
            return ("losses/nll",)
        return (
            ("losses/policy_loss", "losses/kl_loss")
            if self.kl_coef > 0
            else ("losses/policy_loss",)
        )


def micro_batches(samples: Sequence[TrainSample], size: int) -> list[list[TrainSample]]:
    """Consecutive chunks of at most ``size`` samples."""
    return [list(samples[i : i + size]) for i in range(0, len(samples), size)]


def encode_batch(samples: Sequence[TrainSample], encoder: QwenChatEncoder) -> ChatBatch:
    """The samples' episodes encoded (pixels included) and left-padded into one batch."""
    return encoder.collate([encoder.encode_episode(s.conversation) for s in samples])


def _scatter(values: Sequence[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    """Per-sample ``[loss_tokens]`` values placed at their rows' loss positions of ``mask``."""
    out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    out[mask] = torch.cat([v.to(mask.device, torch.float32) for v in values])
    return out


def compute_logprobs(
    model: torch.nn.Module,
    encoder: QwenChatEncoder,
    samples: Sequence[TrainSample],
    *,
    micro_batch_size: int,
    temperature: float,
    field: LogprobField = "old_logprobs",
) -> None:
    """Score every sample's loss tokens under ``model`` (no gradient), into ``field``."""
    with torch.no_grad():
        for chunk in micro_batches(samples, micro_batch_size):
            batch = encode_batch(chunk, encoder)
            logp = sequence_logprobs(model, batch, temperature)
            mask = batch.loss_mask.to(logp.device).bool()
            for row, sample in enumerate(chunk):
                setattr(sample, field, logp[row][mask[row]].float().cpu())


def _micro_batch_loss(
    model: torch.nn.Module,
    encoder: QwenChatEncoder,
    chunk: Sequence[TrainSample],
    settings: LossSettings,
    normalizer: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor], int]:
    """One micro-batch's loss share, its metrics, and its loss-token count."""
    batch = encode_batch(chunk, encoder)
    logp = sequence_logprobs(model, batch, settings.temperature)
    mask = batch.loss_mask.to(logp.device).bool()
    tokens = int(mask.sum())
    if settings.kind == "nll":
        loss = aggregate_loss(-logp, mask, settings.mode, normalizer=normalizer)
        token_nll = -(logp * mask).sum() / max(tokens, 1)
        return loss, {"losses/nll": loss.detach(), "losses/token_nll": token_nll.detach()}, tokens
    if any(s.old_logprobs is None for s in chunk):
        raise ValueError("PPO needs old log-probs: call compute_logprobs first")
    ref = None
    if settings.kl_coef > 0:
        ref = _scatter([s.ref_logprobs for s in chunk], mask)  # type: ignore[misc]
    out = policy_loss(
        logp,
        _scatter([s.old_logprobs for s in chunk], mask),  # type: ignore[misc]
        torch.tensor([s.advantage for s in chunk], dtype=torch.float32, device=logp.device),
        mask,
        mode=settings.mode,
        normalizer=normalizer,
        clip_low=settings.clip_low,
        clip_high=settings.clip_high,
        dual_clip=settings.dual_clip,
        ref_logp=ref,
        kl_coef=settings.kl_coef,
    )
    return out.loss, out.metrics, tokens


def accumulate_gradients(
    model: torch.nn.Module,
    encoder: QwenChatEncoder,
    samples: Sequence[TrainSample],
    *,
    settings: LossSettings,
    normalizer: float,
    micro_batch_size: int,
) -> tuple[dict[str, float], MetricSums]:
    """Forward and backward every micro-batch, adding into ``.grad``.

    Args:
        model: The policy (in train mode).
        encoder: The model's chat encoder.
        samples: This rank's mini-batch.
        settings: The loss.
        normalizer: The mini-batch's normaliser summed over ranks.
        micro_batch_size: Samples per forward pass.

    Returns:
        This rank's sums of the loss shares (``settings.share_keys``) and its token-weighted
        metrics.
    """
    shares = dict.fromkeys(settings.share_keys, 0.0)
    metrics = MetricSums()
    for chunk in micro_batches(samples, micro_batch_size):
        loss, values, tokens = _micro_batch_loss(model, encoder, chunk, settings, normalizer)
        loss.backward()
        for key, value in values.items():
            if key in shares:
                shares[key] += float(value)
            else:
                metrics.add(key, float(value), weight=tokens)
    return shares, metrics


def optimizer_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    ctx: DistContext,
    *,
    max_grad_norm: float,
) -> float:
    """Sum gradients over ranks, clip, and step unless the norm is not finite.

    Returns:
        The gradient norm before clipping (identical on every rank); the step was skipped
        when it is not finite.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    all_reduce_gradients(params, ctx)
    norm = float(torch.nn.utils.clip_grad_norm_(params, max_grad_norm))
    if np.isfinite(norm):
        optimizer.step()
    else:
        logger.warning("skipping an optimizer step: gradient norm is %s", norm)
    optimizer.zero_grad(set_to_none=True)
    return norm


def train_epoch(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    encoder: QwenChatEncoder,
    samples: Sequence[TrainSample],
    *,
    settings: LossSettings,
    steps: int,
    micro_batch_size: int,
    max_grad_norm: float,
    rng: np.random.Generator,
    ctx: DistContext,
) -> MetricSums:
    """One pass over this rank's samples in ``steps`` shuffled mini-batches.

    Every rank takes ``steps`` optimizer steps (with zero local samples, too), so the
    collectives line up. A mini-batch that is empty on every rank is skipped everywhere.

    Args:
        model: The policy (in train mode).
        optimizer: Its optimizer.
        encoder: The model's chat encoder.
        samples: This rank's samples (old log-probs computed for PPO).
        settings: The loss.
        steps: Optimizer steps (mini-batches).
        micro_batch_size: Samples per forward pass.
        max_grad_norm: Gradient clipping.
        rng: Shuffles the samples into mini-batches (the loop owns it).
        ctx: The rank's context.

    Returns:
        Metrics: loss shares summed per step and averaged over steps, token-weighted metrics,
        ``losses/grad_norm`` (finite steps) and ``losses/skipped_step_frac``.
    """
    metrics = MetricSums()
    optimizer.zero_grad(set_to_none=True)
    order = rng.permutation(len(samples))
    for indices in np.array_split(order, steps):
        chunk = [samples[i] for i in indices]
        normalizer = float(all_reduce_sum([sum(s.norm_count(settings.mode) for s in chunk)], ctx))
        if normalizer == 0:
            continue
        shares, token_metrics = accumulate_gradients(
            model,
            encoder,
            chunk,
            settings=settings,
            normalizer=normalizer,
            micro_batch_size=micro_batch_size,
        )
        norm = optimizer_step(model, optimizer, ctx, max_grad_norm=max_grad_norm)
        totals = all_reduce_sum(list(shares.values()), ctx).tolist()
        for key, total in zip(shares, totals, strict=True):
            metrics.add(key, total)
        metrics.update(token_metrics)
        finite = bool(np.isfinite(norm))
        metrics.add("losses/skipped_step_frac", float(not finite))
        metrics.add("losses/grad_norm", norm if finite else 0.0, weight=float(finite))
    return metrics
