"""Clip-higher PPO policy loss with dual clip, an optional k3 KL term, and exact aggregation.

Per loss token, with ``rho = exp(logp - old_logp)`` and advantage ``A``::

    L1 = -A * rho
    L2 = -A * clip(rho, 1 - eps_low, 1 + eps_high)
    L  = max(L1, L2)                       # clip-higher: eps_high > eps_low
    L  = min(L, -A * c)       if A < 0     # dual clip bounds the loss of a very large ratio

ARPO uses eps_low 0.2, eps_high 0.3, c 3.0. ARPO clips the ratio in log space; clipping
``rho`` directly gives the same numbers.

Aggregation is explicit and does not depend on how the batch is split into micro-batches. ARPO
takes a token mean over each micro-batch, which is a per-trajectory token mean only because its
micro-batch holds one trajectory. Here every micro-batch's loss is a *sum* divided by a
normaliser counted over the whole optimizer-step batch, so summing the micro-batch losses (and
their gradients) gives exactly the full-batch loss:

* ``"seq-mean-token-mean"`` (ARPO): each trajectory's token mean, averaged equally over
  trajectories; normaliser = number of trajectories with at least one loss token.
* ``"token-mean"`` (DAPO): sum over all loss tokens / number of loss tokens.

**Stale rollouts** (DART-GUI's decoupled mode): when the episodes were sampled by an older
policy than the one PPO's old log-probs come from, each token's loss is also multiplied by the
truncated importance weight ``w = min(1, exp(old_logp - rollout_logp))`` (no gradient through
it; ``truncated_importance_weights()``): tokens the sampler favoured more than the trainer's
old policy count less, and no token counts more than once.

Count the normaliser with ``loss_normalizer()`` on every micro-batch of the step, sum the
counts (and all-reduce them across data-parallel ranks). If the data-parallel backend *averages*
gradients over ``R`` ranks (DDP, FSDP), pass ``global_count / R`` so the average restores the
sum.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal, NamedTuple, get_args

import torch

logger = logging.getLogger(__name__)

AggMode = Literal["seq-mean-token-mean", "token-mean"]
AGG_MODES: tuple[str, ...] = get_args(AggMode)

CLIP_LOW = 0.2
"""ARPO's lower clip range: rho is clipped below at 1 - 0.2."""

CLIP_HIGH = 0.3
"""ARPO's upper clip range (clip-higher): rho is clipped above at 1 + 0.3."""

DUAL_CLIP = 3.0
"""ARPO's dual-clip constant c: a negative-advantage token loses at most c * |A|."""

LOG_RATIO_CLAMP = 20.0
"""Bound on |logp - old_logp| before exponentiating.

exp(20) ~ 5e8 is still finite in float32, while an unbounded difference (e.g. a -inf logp from
a masked-out token) would give inf * 0 = NaN in the masked sum. Tokens this far off-policy are
already clipped (or dual-clipped), so the bound changes no gradient that PPO would keep.
"""

KL_CLAMP = 10.0
"""Upper bound on the per-token k3 KL value, for the same reason as ``LOG_RATIO_CLAMP``."""


class TokenLoss(NamedTuple):
    """Per-token pieces of the clipped objective, all ``[B, T]``.

    Attributes:
        loss: The clipped (and dual-clipped) loss per token, unmasked.
        ratio: ``rho``, detached.
        clipped_low: A < 0 and rho < 1 - eps_low: the lower clip is active (no gradient).
        clipped_high: A > 0 and rho > 1 + eps_high: the upper clip is active (no gradient).
        dual_clipped: A < 0 and rho > c: the dual clip is active (no gradient).
    """

    loss: torch.Tensor
    ratio: torch.Tensor
    clipped_low: torch.Tensor
    clipped_high: torch.Tensor
    dual_clipped: torch.Tensor


@dataclass(frozen=True)
class PolicyLossOutput:
    """What ``policy_loss()`` returns.

    Attributes:
        loss: Scalar to back-propagate: this micro-batch's share of the optimizer-step loss.
        metrics: Detached scalars keyed ``losses/...``. ``losses/policy_loss`` and
            ``losses/kl_loss`` are shares too (sum them over micro-batches); the fractions,
            ``approx_kl``, ``entropy_proxy`` and ``kl_ref`` are token means over this
            micro-batch.
    """

    loss: torch.Tensor
    metrics: dict[str, torch.Tensor]


def token_advantages(advantages: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Broadcast per-trajectory ``[B]`` advantages to ``[B, T]`` (per-token ones pass through).

    Args:
        advantages: ``[B]`` or ``[B, T]``.
        shape: The ``[B, T]`` shape of the log-probs.

    Returns:
        A ``[B, T]`` view, detached: advantages are constants of the objective.
    """
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1)
    if advantages.dim() != 2 or advantages.shape[0] != shape[0]:
        raise ValueError(f"advantages of shape {tuple(advantages.shape)} do not fit {tuple(shape)}")
    return advantages.detach().expand(shape)


def clipped_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    *,
    clip_low: float = CLIP_LOW,
    clip_high: float = CLIP_HIGH,
    dual_clip: float = DUAL_CLIP,
    log_ratio_clamp: float = LOG_RATIO_CLAMP,
) -> TokenLoss:
    """The clip-higher, dual-clip PPO loss of every token (see the module docstring).

    Args:
        logp: ``[B, T]`` log-probs of the taken tokens under the policy being trained.
        old_logp: ``[B, T]`` log-probs under the policy that produced the data (no gradient).
        advantages: ``[B]`` per-trajectory or ``[B, T]`` per-token advantages.
        clip_low: ``eps_low``.
        clip_high: ``eps_high``.
        dual_clip: ``c``; must exceed 1 so the dual clip sits above the ordinary clip.
        log_ratio_clamp: Bound on ``|logp - old_logp|`` (see ``LOG_RATIO_CLAMP``).

    Returns:
        The per-token loss and clip indicators; masking and aggregation are up to the caller.
    """
    if logp.shape != old_logp.shape or logp.dim() != 2:
        raise ValueError(f"logp {tuple(logp.shape)} and old_logp {tuple(old_logp.shape)} differ")
    if dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1, got {dual_clip}")
    adv = token_advantages(advantages, logp.shape).to(logp.dtype)
    log_ratio = (logp - old_logp.detach()).clamp(-log_ratio_clamp, log_ratio_clamp)
    ratio = torch.exp(log_ratio)
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    loss = torch.maximum(unclipped, clipped)
    negative = adv < 0
    loss = torch.where(negative, torch.minimum(loss, -adv * dual_clip), loss)
    r = ratio.detach()
    return TokenLoss(
        loss=loss,
        ratio=r,
        clipped_low=negative & (r < 1.0 - clip_low),
        clipped_high=(adv > 0) & (r > 1.0 + clip_high),
        dual_clipped=negative & (r > dual_clip),
    )


IS_CAP = 1.0
"""Truncation of the importance weight between the trainer's old policy and the sampler's."""


class ImportanceWeights(NamedTuple):
    """Truncated per-token importance weights, ``[B, T]``, detached.

    Attributes:
        weight: ``min(cap, exp(old_logp - rollout_logp))``.
        truncated: The untruncated weight exceeded ``cap``.
    """

    weight: torch.Tensor
    truncated: torch.Tensor


def truncated_importance_weights(
    old_logp: torch.Tensor, rollout_logp: torch.Tensor, *, cap: float = IS_CAP
) -> ImportanceWeights:
    """Per-token weights correcting for rollouts sampled by an older policy.

    Args:
        old_logp: ``[B, T]`` log-probs under the trainer's policy before this update.
        rollout_logp: ``[B, T]`` log-probs the rollout engine sampled with.
        cap: The truncation (DART-GUI: 1).

    Returns:
        The weights and where they were truncated; both carry no gradient.

    Example:
        >>> old, sampled = torch.tensor([[0.0, -1.0]]), torch.tensor([[-1.0, 0.0]])
        >>> w = truncated_importance_weights(old, sampled)
        >>> w.weight.tolist()[0][0], round(w.weight.tolist()[0][1], 4), w.truncated.tolist()
        (1.0, 0.3679, [[True, False]])
    """
    if old_logp.shape != rollout_logp.shape:
        raise ValueError(
            f"old_logp {tuple(old_logp.shape)} and rollout_logp {tuple(rollout_logp.shape)} differ"
        )
    if cap <= 0:
        raise ValueError(f"the importance weight cap must be > 0, got {cap}")
    log_ratio = (_upcast(old_logp) - _upcast(rollout_logp)).detach()
    raw = torch.exp(log_ratio.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))
    return ImportanceWeights(raw.clamp(max=cap), raw > cap)


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi || pi_ref), always >= 0.

    ``k3 = exp(ref - logp) - (ref - logp) - 1`` (Schulman's low-variance unbiased estimator on
    samples from pi), with the log-ratio and the result bounded as in ``LOG_RATIO_CLAMP``.

    Args:
        logp: ``[B, T]`` log-probs under the trained policy.
        ref_logp: ``[B, T]`` log-probs under the reference policy (no gradient).

    Returns:
        ``[B, T]`` KL estimates.
    """
    log_ratio = (ref_logp.detach() - logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    return (torch.exp(log_ratio) - log_ratio - 1.0).clamp(max=KL_CLAMP)


def loss_normalizer(mask: torch.Tensor, mode: AggMode) -> torch.Tensor:
    """This micro-batch's count towards the optimizer-step normaliser.

    Args:
        mask: ``[B, T]`` 1 for loss tokens, 0 elsewhere.
        mode: The aggregation mode.

    Returns:
        A float scalar: loss tokens (``token-mean``) or trajectories with at least one loss
        token (``seq-mean-token-mean``; an all-masked row contributes nothing and is not
        counted).
    """
    _check_mode(mode)
    mask = mask.detach().float()
    if mode == "token-mean":
        return mask.sum()
    return (mask.sum(dim=-1) > 0).float().sum()


def aggregate_loss(
    token_loss: torch.Tensor,
    mask: torch.Tensor,
    mode: AggMode,
    *,
    normalizer: float | torch.Tensor | None = None,
) -> torch.Tensor:
    """Reduce a ``[B, T]`` per-token loss to this micro-batch's share of the batch loss.

    Args:
        token_loss: ``[B, T]`` per-token loss.
        mask: ``[B, T]`` 1 for loss tokens, 0 elsewhere (bool or float).
        mode: ``"seq-mean-token-mean"`` or ``"token-mean"`` (module docstring).
        normalizer: The optimizer-step count (see ``loss_normalizer()``); None counts this
            micro-batch alone, i.e. treats it as the whole batch. Clamped to at least 1 so an
            all-masked batch gives 0 rather than NaN.

    Returns:
        A scalar.
    """
    _check_mode(mode)
    if mask.shape != token_loss.shape:
        raise ValueError(f"mask {tuple(mask.shape)} and loss {tuple(token_loss.shape)} differ")
    mask = mask.to(token_loss.dtype)
    # torch.where, not a product: a NaN/inf at a padded position must not leak into the sum.
    masked = torch.where(mask > 0, token_loss, torch.zeros_like(token_loss))
    if normalizer is None:
        normalizer = loss_normalizer(mask, mode)
    if mode == "token-mean":
        total = masked.sum()
    else:
        total = (masked.sum(dim=-1) / mask.sum(dim=-1).clamp(min=1.0)).sum()
    if isinstance(normalizer, torch.Tensor):
        return total / normalizer.to(total).clamp(min=1.0)
    return total / max(float(normalizer), 1.0)


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    mode: AggMode = "seq-mean-token-mean",
    normalizer: float | torch.Tensor | None = None,
    clip_low: float = CLIP_LOW,
    clip_high: float = CLIP_HIGH,
    dual_clip: float = DUAL_CLIP,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    rollout_logp: torch.Tensor | None = None,
    is_cap: float = IS_CAP,
) -> PolicyLossOutput:
    """The full policy loss of one micro-batch, with metrics.

    Log-probs in a low-precision dtype (bf16) are upcast to float32 first: the ratio of two
    bf16 log-probs is too coarse to clip at 0.8/1.3 reliably.

    Args:
        logp: ``[B, T]`` log-probs under the trained policy.
        old_logp: ``[B, T]`` log-probs under the data-producing policy.
        advantages: ``[B]`` or ``[B, T]``.
        mask: ``[B, T]`` loss mask (1 on the policy's own tokens).
        mode: Aggregation mode (module docstring).
        normalizer: Optimizer-step count (``loss_normalizer()``); None = this micro-batch.
        clip_low: ``eps_low``.
        clip_high: ``eps_high``.
        dual_clip: ``c``.
        ref_logp: ``[B, T]`` reference-policy log-probs; needed when ``kl_coef > 0``.
        kl_coef: Weight of the k3 KL penalty added per token (0 = off, as in ARPO).
        rollout_logp: ``[B, T]`` log-probs the rollouts were sampled with: weights every
            token's policy loss by ``truncated_importance_weights()`` (stale rollouts;
            None: no weighting). Adds ``losses/is_weight_mean`` and ``losses/is_truncated_frac``.
        is_cap: The importance weights' truncation.

    Returns:
        The loss and its metrics.
    """
    if kl_coef > 0 and ref_logp is None:
        raise ValueError("kl_coef > 0 needs ref_logp")
    logp, old_logp = _upcast(logp), _upcast(old_logp)
    pieces = clipped_policy_loss(
        logp, old_logp, advantages, clip_low=clip_low, clip_high=clip_high, dual_clip=dual_clip
    )
    token_loss = pieces.loss
    weights = None
    if rollout_logp is not None:
        weights = truncated_importance_weights(old_logp, rollout_logp, cap=is_cap)
        token_loss = token_loss * weights.weight
    pg_loss = aggregate_loss(token_loss, mask, mode, normalizer=normalizer)
    loss = pg_loss
    metrics = _token_metrics(logp, old_logp, mask, pieces)
    if weights is not None:
        metrics["losses/is_weight_mean"] = _masked_mean(weights.weight, mask)
        metrics["losses/is_truncated_frac"] = _masked_mean(weights.truncated.float(), mask)
    metrics["losses/policy_loss"] = pg_loss.detach()
    if ref_logp is not None:
        kl = kl_penalty(logp, _upcast(ref_logp))
        metrics["losses/kl_ref"] = _masked_mean(kl.detach(), mask)
        if kl_coef > 0:
            kl_loss = aggregate_loss(kl, mask, mode, normalizer=normalizer)
            loss = loss + kl_coef * kl_loss
            metrics["losses/kl_loss"] = kl_loss.detach()
    return PolicyLossOutput(loss=loss, metrics=metrics)


def _token_metrics(
    logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, pieces: TokenLoss
) -> dict[str, torch.Tensor]:
    return {
        "losses/clipfrac_low": _masked_mean(pieces.clipped_low.float(), mask),
        "losses/clipfrac_high": _masked_mean(pieces.clipped_high.float(), mask),
        "losses/dual_clipfrac": _masked_mean(pieces.dual_clipped.float(), mask),
        # k1 estimate of KL(old || new) on samples from old; ARPO logs it as ppo_kl.
        "losses/approx_kl": _masked_mean((old_logp - logp).detach(), mask),
        "losses/entropy_proxy": _masked_mean(-logp.detach(), mask),
    }


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.to(values.dtype)
    masked = torch.where(mask > 0, values, torch.zeros_like(values))
    return masked.sum() / mask.sum().clamp(min=1.0)


def _upcast(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _check_mode(mode: str) -> None:
    if mode not in AGG_MODES:
        raise ValueError(f"unknown loss aggregation mode {mode!r}; choose one of {AGG_MODES}")
