"""The policy update: PPO (ARPO/GRPO) or NLL (SFT) over whole-episode samples.

One iteration is one epoch over this rank's samples, cut into ``steps`` mini-batches (ARPO's 2
optimizer steps per iteration), each cut into micro-batches of ``micro_batch_size`` episodes
whose gradients accumulate. Every micro-batch loss is a *share*: a sum divided by the
normaliser of the whole mini-batch over all ranks (``osworld_agents.arpo.loss_normalizer()``
counts), so the accumulated, rank-summed gradient is the full mini-batch's gradient whatever
the micro-batch size or the number of ranks.

Under FSDP (``osworld_agents.trainer.sharding``) every forward and backward is a collective,
so every rank runs as many forward passes as the busiest one: the others add zero-weight passes
over a sample of theirs (or one borrowed from another rank when they have none). FSDP then sums
the gradients itself, in fp32, during each backward, instead of the one all-reduce per step.

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
import torch.distributed as dist
from osworld_agents.arpo.loss import AggMode, aggregate_loss, policy_loss
from osworld_agents.engines.chat_encoding import ChatBatch, QwenChatEncoder
from osworld_agents.engines.hf import sequence_logprobs
from osworld_agents.trainer.distributed import (
    DistContext,
    all_gather_objects,
    all_reduce_gradients,
    all_reduce_sum,
)
from osworld_agents.trainer.metrics import MetricSums
from osworld_agents.trainer.samples import TrainSample
from osworld_agents.trainer.sharding import clip_grad_norm, is_sharded

logger = logging.getLogger(__name__)

__all__ = [
    "LossSettings",
    "accumulate_gradients",
    "compute_logprobs",
    "encode_batch",
    "micro_batches",
    "optimizer_step",
    "padding_passes",
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


def _sharded_context(model: torch.nn.Module, ctx: DistContext | None) -> DistContext | None:
    """The world a sharded model's passes must line up over (None: unsharded, no padding)."""
    if not is_sharded(model):
        return None
    if ctx is not None:
        return ctx
    # Callers that predate FSDP pass no context: the process group is the world.
    world = dist.get_world_size() if dist.is_initialized() else 1
    if world == 1:
        return DistContext(device=_model_device(model))
    return DistContext(dist.get_rank(), world, device=_model_device(model), initialized=True)


def _model_device(model: torch.nn.Module) -> torch.device:
    device = getattr(model, "device", None)
    return device if isinstance(device, torch.device) else torch.device("cpu")


def padding_passes(
    samples: Sequence[TrainSample],
    micro_batch_size: int,
    model: torch.nn.Module,
    ctx: DistContext | None,
) -> tuple[int, TrainSample | None]:
    """Zero-weight forward passes this rank adds so every rank runs as many, and their sample.

    Unsharded models need none (their only collective is the per-step all-reduce). A sharded
    one agrees the counts with one all-reduce; a rank that must pad but holds no sample
    borrows the first sample of the first rank that has one (one more collective, taken only
    when some rank is in that case, as every rank can tell from the counts).

    Returns:
        ``(passes, sample)``: the sample is None when ``passes`` is 0.
    """
    world = _sharded_context(model, ctx)
    if world is None or not world.initialized:
        return 0, None
    mine = len(micro_batches(samples, micro_batch_size))
    slots = [0.0] * (2 * world.world_size)
    slots[world.rank] = float(mine)
    slots[world.world_size + world.rank] = float(len(samples) > 0)
    totals = all_reduce_sum(slots, world)
    counts, has = totals[: world.world_size], totals[world.world_size :]
    target = int(counts.max())
    if any(int(c) < target and h == 0 for c, h in zip(counts, has, strict=True)):
        donors = all_gather_objects(samples[0] if samples else None, world)
        filler = samples[0] if samples else next(s for s in donors if s is not None)
    else:
        filler = samples[0] if samples else None
    passes = target - mine
    return passes, filler if passes else None


def _padding_pass(
    model: torch.nn.Module, encoder: QwenChatEncoder, sample: TrainSample, temperature: float
) -> None:
    """One forward (and, with gradients on, backward) that joins the collectives, adding 0."""
    batch = encode_batch([sample], encoder)
    logp = sequence_logprobs(model, batch, temperature)
    if torch.is_grad_enabled():
        # A zero-weighted loss: the backward's reduce-scatters run and add nothing.
        (logp.sum() * 0.0).backward()


def compute_logprobs(
    model: torch.nn.Module,
    encoder: QwenChatEncoder,
    samples: Sequence[TrainSample],
    *,
    micro_batch_size: int,
    temperature: float,
    field: LogprobField = "old_logprobs",
    ctx: DistContext | None = None,
) -> None:
    """Score every sample's loss tokens under ``model`` (no gradient), into ``field``.

    ``ctx`` matters only for a sharded model (taken from the process group when None).
    """
    passes, filler = padding_passes(samples, micro_batch_size, model, ctx)
    with torch.no_grad():
        for chunk in micro_batches(samples, micro_batch_size):
            batch = encode_batch(chunk, encoder)
            logp = sequence_logprobs(model, batch, temperature)
            mask = batch.loss_mask.to(logp.device).bool()
            for row, sample in enumerate(chunk):
                setattr(sample, field, logp[row][mask[row]].float().cpu())
        for _ in range(passes):
            _padding_pass(model, encoder, filler, temperature)  # type: ignore[arg-type]


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
    # Async rollouts: weight tokens by min(1, exp(old - sampling)); uncorrected samples get 1.
    sampled = None
    if any(s.importance_logprobs is not None for s in chunk):
        sampled = _scatter(
            [s.old_logprobs if s.importance_logprobs is None else s.importance_logprobs
             for s in chunk],  # type: ignore[misc]
            mask,
        )  # fmt: skip
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
        rollout_logp=sampled,
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
    ctx: DistContext | None = None,
) -> tuple[dict[str, float], MetricSums]:
    """Forward and backward every micro-batch, adding into ``.grad``.

    A sharded model runs zero-weight padding passes after them when another rank has more
    micro-batches (see ``padding_passes()``).

    Args:
        model: The policy (in train mode).
        encoder: The model's chat encoder.
        samples: This rank's mini-batch.
        settings: The loss.
        normalizer: The mini-batch's normaliser summed over ranks.
        micro_batch_size: Samples per forward pass.
        ctx: The rank's context (for a sharded model; the process group's when None).

    Returns:
        This rank's sums of the loss shares (``settings.share_keys``) and its token-weighted
        metrics.
    """
    passes, filler = padding_passes(samples, micro_batch_size, model, ctx)
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
    for _ in range(passes):
        _padding_pass(model, encoder, filler, settings.temperature)  # type: ignore[arg-type]
    return shares, metrics


def optimizer_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    ctx: DistContext,
    *,
    max_grad_norm: float,
) -> float:
    """Sum gradients over ranks, clip, and step unless the norm is not finite.

    A sharded model's gradients are already summed (FSDP reduce-scatters them in each
    backward); its norm is reduced over the shards, so every rank clips and skips alike.

    Returns:
        The gradient norm before clipping (identical on every rank); the step was skipped
        when it is not finite.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if not is_sharded(model):
        all_reduce_gradients(params, ctx)
    norm = clip_grad_norm(params, max_grad_norm)
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
            ctx=ctx,
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
