"""Clip-higher dual-clip policy loss: hand-computed values, aggregation, micro-batch exactness."""

from __future__ import annotations

import math

import pytest
import torch
from osworld_agents.arpo import (
    aggregate_loss,
    clipped_policy_loss,
    kl_penalty,
    loss_normalizer,
    policy_loss,
)

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

# (advantage, ratio, expected loss, expected d loss / d logp) with eps_low 0.2, eps_high 0.3, c 3.
# L1 = -A*rho, L2 = -A*clip(rho, 0.8, 1.3), L = max(L1, L2), and for A < 0: min(L, -A*3).
HAND_CASES = [
    (1.0, 1.5, -1.3, 0.0),  # L1 -1.5, L2 -1.3: upper clip, no gradient
    (1.0, 0.5, -0.5, -0.5),  # L1 -0.5, L2 -0.8: unclipped, grad -A*rho
    (-1.0, 0.5, 0.8, 0.0),  # L1 0.5, L2 0.8: lower clip, no gradient
    (-1.0, 2.0, 2.0, 2.0),  # L1 2.0, L2 1.3, below the dual bound 3.0
    (-1.0, 5.0, 3.0, 0.0),  # L1 5.0 > 3.0: dual clip
    (2.0, 1.2, -2.4, -2.4),  # inside the clip range
    (-0.5, 4.0, 1.5, 0.0),  # L1 2.0 > -A*c = 1.5: dual clip
    (1.0, 5.0, -1.3, 0.0),  # no dual clip for A > 0
]


def hand_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    adv = torch.tensor([[c[0] for c in HAND_CASES]], dtype=torch.float64)
    logp = torch.tensor([[math.log(c[1]) for c in HAND_CASES]], dtype=torch.float64)
    return logp.requires_grad_(), torch.zeros_like(logp), adv


def test_token_losses_and_gradients_match_hand_values() -> None:
    logp, old_logp, adv = hand_inputs()
    pieces = clipped_policy_loss(logp, old_logp, adv)
    expected_loss = torch.tensor([[c[2] for c in HAND_CASES]], dtype=torch.float64)
    expected_grad = torch.tensor([[c[3] for c in HAND_CASES]], dtype=torch.float64)
    torch.testing.assert_close(pieces.loss.detach(), expected_loss)
    pieces.loss.sum().backward()
    torch.testing.assert_close(logp.grad, expected_grad)
    assert pieces.clipped_high.tolist() == [[True, False, False, False, False, False, False, True]]
    assert pieces.clipped_low.tolist() == [[False, False, True, False, False, False, False, False]]
    assert pieces.dual_clipped.tolist() == [[False, False, False, False, True, False, True, False]]


def test_clip_ranges_and_dual_constant_are_parameters() -> None:
    logp, old_logp, adv = hand_inputs()
    pieces = clipped_policy_loss(logp, old_logp, adv, clip_low=0.1, clip_high=0.1, dual_clip=10.0)
    # A=1, rho=1.5 -> -1.1; A=-1, rho=0.5 -> 0.9; A=-1, rho=5 -> 5 (c=10 no longer binds).
    assert pieces.loss[0, 0].item() == pytest.approx(-1.1)
    assert pieces.loss[0, 2].item() == pytest.approx(0.9)
    assert pieces.loss[0, 4].item() == pytest.approx(5.0)
    with pytest.raises(ValueError, match="dual_clip"):
        clipped_policy_loss(logp, old_logp, adv, dual_clip=1.0)


def test_metrics_on_hand_cases() -> None:
    logp, old_logp, adv = hand_inputs()
    out = policy_loss(logp, old_logp, adv, torch.ones_like(logp), mode="token-mean")
    m = {k: v.item() for k, v in out.metrics.items()}
    assert m["losses/clipfrac_high"] == pytest.approx(2 / 8)
    assert m["losses/clipfrac_low"] == pytest.approx(1 / 8)
    assert m["losses/dual_clipfrac"] == pytest.approx(2 / 8)
    log_rhos = [math.log(c[1]) for c in HAND_CASES]
    assert m["losses/approx_kl"] == pytest.approx(-sum(log_rhos) / 8)
    assert m["losses/entropy_proxy"] == pytest.approx(-sum(log_rhos) / 8)
    assert m["losses/policy_loss"] == pytest.approx(sum(c[2] for c in HAND_CASES) / 8)
    assert out.loss.item() == pytest.approx(m["losses/policy_loss"])


# Per-token losses [[-1.3, -0.5, 0.8, 2.0], [3.0, -2.4, 1.5, -1.3]] from the hand cases.
AGG_MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # (-1.3 - 0.5 + 0.8 + 3.0 - 2.4) / 5 tokens
        ("token-mean", -0.4 / 5),
        # ((-1.3 - 0.5 + 0.8) / 3 + (3.0 - 2.4) / 2) / 2 trajectories
        ("seq-mean-token-mean", (-1.0 / 3 + 0.3) / 2),
    ],
)
def test_aggregation_modes_hand_values(mode: str, expected: float) -> None:
    logp, old_logp, adv = hand_inputs()
    out = policy_loss(logp.view(2, 4), old_logp.view(2, 4), adv.view(2, 4), AGG_MASK, mode=mode)
    assert out.loss.item() == pytest.approx(expected)


def test_fully_masked_row_is_not_counted() -> None:
    mask = torch.tensor([[1, 1, 0], [0, 0, 0]])
    assert loss_normalizer(mask, "seq-mean-token-mean").item() == 1.0
    assert loss_normalizer(mask, "token-mean").item() == 2.0
    loss = torch.tensor([[1.0, 3.0, float("nan")], [float("inf"), 5.0, 7.0]])
    assert aggregate_loss(loss, mask, "seq-mean-token-mean").item() == 2.0
    assert aggregate_loss(loss, mask, "token-mean").item() == 2.0
    assert aggregate_loss(loss, torch.zeros_like(mask), "token-mean").item() == 0.0


def random_batch(seed: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    batch, seq = 6, 7
    logp = -torch.rand(batch, seq, generator=gen, dtype=torch.float64) * 2
    old_logp = logp + (torch.rand(batch, seq, generator=gen, dtype=torch.float64) - 0.5)
    adv = torch.randn(batch, generator=gen, dtype=torch.float64)
    lengths = torch.tensor([7, 3, 0, 5, 1, 6])  # uneven, with a fully masked row
    mask = (torch.arange(seq)[None, :] < lengths[:, None]).long()
    return logp, old_logp, adv, mask


def loss_and_grad(splits: list[int], mode: str, *, global_norm: bool) -> tuple[float, torch.Tensor]:
    logp, old_logp, adv, mask = random_batch(0)
    logp.requires_grad_()
    bounds = torch.tensor([0, *splits]).cumsum(0).tolist()
    chunks = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    norm = sum(loss_normalizer(mask[c], mode) for c in chunks) if global_norm else None
    total = 0.0
    for c in chunks:
        out = policy_loss(logp[c], old_logp[c], adv[c], mask[c], mode=mode, normalizer=norm)
        out.loss.backward()
        total += out.loss.item()
    return total, logp.grad


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean"])
@pytest.mark.parametrize("splits", [[1] * 6, [2, 3, 1], [4, 2], [5, 1], [3, 3]])
def test_micro_batch_sum_equals_full_batch(mode: str, splits: list[int]) -> None:
    full_loss, full_grad = loss_and_grad([6], mode, global_norm=False)
    loss, grad = loss_and_grad(splits, mode, global_norm=True)
    assert loss == pytest.approx(full_loss, abs=1e-12)
    torch.testing.assert_close(grad, full_grad)


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean"])
def test_plain_number_normaliser_equals_tensor_one(mode: str) -> None:
    logp, old_logp, adv, mask = random_batch(3)
    count = loss_normalizer(mask, mode)
    as_tensor = policy_loss(logp, old_logp, adv, mask, mode=mode, normalizer=count).loss
    as_number = policy_loss(logp, old_logp, adv, mask, mode=mode, normalizer=int(count)).loss
    implicit = policy_loss(logp, old_logp, adv, mask, mode=mode).loss
    assert as_number.item() == as_tensor.item() == implicit.item()
    doubled = policy_loss(logp, old_logp, adv, mask, mode=mode, normalizer=2 * int(count)).loss
    assert doubled.item() == pytest.approx(implicit.item() / 2)


def test_local_normaliser_would_depend_on_the_split() -> None:
    # What the reference does (mean per micro-batch, then average): not the full-batch loss.
    full_loss, _ = loss_and_grad([6], "token-mean", global_norm=False)
    per_micro, _ = loss_and_grad([2, 3, 1], "token-mean", global_norm=False)
    assert per_micro / 3 != pytest.approx(full_loss)


def test_per_token_advantages_equal_broadcast_ones() -> None:
    logp, old_logp, adv, mask = random_batch(1)
    a = policy_loss(logp, old_logp, adv, mask).loss
    b = policy_loss(logp, old_logp, adv[:, None].expand_as(logp).clone(), mask).loss
    assert a.item() == pytest.approx(b.item())


def test_k3_kl_penalty_hand_value_and_coefficient() -> None:
    logp = torch.tensor([[math.log(0.25), math.log(0.5)]], dtype=torch.float64)
    ref = torch.tensor([[math.log(0.5), math.log(0.5)]], dtype=torch.float64)
    # ref - logp = ln 2: exp(ln 2) - ln 2 - 1 = 1 - ln 2.
    expected = torch.tensor([[1 - math.log(2), 0.0]], dtype=torch.float64)
    torch.testing.assert_close(kl_penalty(logp, ref), expected)
    mask, adv = torch.ones_like(logp), torch.tensor([1.0], dtype=torch.float64)
    base = policy_loss(logp, logp, adv, mask, mode="token-mean")
    with_kl = policy_loss(logp, logp, adv, mask, mode="token-mean", ref_logp=ref, kl_coef=0.1)
    assert with_kl.loss.item() == pytest.approx(base.loss.item() + 0.1 * (1 - math.log(2)) / 2)
    assert with_kl.metrics["losses/kl_ref"].item() == pytest.approx((1 - math.log(2)) / 2)
    logged_only = policy_loss(logp, logp, adv, mask, mode="token-mean", ref_logp=ref)
    assert logged_only.loss.item() == pytest.approx(base.loss.item())
    with pytest.raises(ValueError, match="ref_logp"):
        policy_loss(logp, logp, adv, mask, kl_coef=0.1)


def test_extreme_log_ratios_stay_finite() -> None:
    logp = torch.tensor([[0.0, 0.0, -5.0]], requires_grad=True)
    old_logp = torch.tensor([[-1000.0, float("-inf"), 0.0]])
    mask = torch.tensor([[1, 0, 1]])
    out = policy_loss(logp, old_logp, torch.tensor([-1.0]), mask, mode="token-mean")
    # token 0: rho = exp(20) -> dual clip 3.0; token 2: rho = exp(-5), lower clip 0.8.
    assert out.loss.item() == pytest.approx((3.0 + 0.8) / 2)
    out.loss.backward()
    assert torch.isfinite(logp.grad).all()


def test_bf16_inputs_are_upcast() -> None:
    logp = torch.zeros(1, 3, dtype=torch.bfloat16)
    out = policy_loss(logp, logp, torch.ones(1), torch.ones(1, 3))
    assert out.loss.dtype == torch.float32
    assert out.loss.item() == pytest.approx(-1.0)


def test_unknown_mode_and_bad_shapes_raise() -> None:
    logp, old_logp, adv, mask = random_batch(2)
    with pytest.raises(ValueError, match="seq-mean-token-mean"):
        policy_loss(logp, old_logp, adv, mask, mode="seq-mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        policy_loss(logp, old_logp[:, :3], adv, mask)
    with pytest.raises(ValueError):
        policy_loss(logp, old_logp, adv[:3], mask)


# --- truncated importance weights (async rollouts) ---------------------------------------------


def test_truncated_importance_weights_hand_values() -> None:
    from osworld_agents.arpo.loss import truncated_importance_weights

    # log-ratios old - rollout: -1 (sampler favoured it: e^-1), 0, +0.5 (truncated), -ln 4
    old = torch.tensor([[-2.0, -1.0, -0.5, -3.0]], dtype=torch.float64)
    sampled = torch.tensor([[-1.0, -1.0, -1.0, -3.0 + math.log(4.0)]], dtype=torch.float64)
    w = truncated_importance_weights(old, sampled)
    expected = torch.tensor([[math.exp(-1.0), 1.0, 1.0, 0.25]], dtype=torch.float64)
    torch.testing.assert_close(w.weight, expected)
    assert w.truncated.tolist() == [[False, False, True, False]]
    half = truncated_importance_weights(old, sampled, cap=0.5)
    torch.testing.assert_close(
        half.weight, torch.tensor([[math.exp(-1.0), 0.5, 0.5, 0.25]]).double()
    )
    with pytest.raises(ValueError, match="differ"):
        truncated_importance_weights(old, sampled[:, :2])


def test_importance_weights_scale_token_losses_without_gradient() -> None:
    # Two tokens, A = +1, logp = old (ratio 1, unclipped): token loss -1 each, d/dlogp = -1.
    logp = torch.tensor([[-1.0, -2.0]], dtype=torch.float64, requires_grad=True)
    old = logp.detach().clone()
    sampled = torch.tensor([[-1.0 + math.log(2.0), -2.0 - 1.0]], dtype=torch.float64)
    mask = torch.ones(1, 2)
    adv = torch.tensor([1.0], dtype=torch.float64)
    # Weights: min(1, e^-ln2) = 0.5 and min(1, e^1) = 1 (truncated).
    out = policy_loss(logp, old, adv, mask, mode="token-mean", rollout_logp=sampled)
    assert out.loss.item() == pytest.approx((-0.5 - 1.0) / 2)
    out.loss.backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[-0.25, -0.5]], dtype=torch.float64))
    assert out.metrics["losses/is_weight_mean"].item() == pytest.approx(0.75)
    assert out.metrics["losses/is_truncated_frac"].item() == pytest.approx(0.5)
    # The sampling log-probs get no gradient, and without them nothing is weighted.
    plain = policy_loss(logp.detach(), old, adv, mask, mode="token-mean")
    assert plain.loss.item() == pytest.approx(-1.0)
    assert "losses/is_weight_mean" not in plain.metrics


def test_on_policy_rollouts_weigh_one() -> None:
    logp, old_logp, adv = hand_inputs()
    mask = torch.ones_like(old_logp)
    weighted = policy_loss(logp, old_logp, adv, mask, rollout_logp=old_logp.clone())
    plain = policy_loss(logp, old_logp, adv, mask)
    torch.testing.assert_close(weighted.loss, plain.loss)
    assert weighted.metrics["losses/is_weight_mean"].item() == 1.0
    assert weighted.metrics["losses/is_truncated_frac"].item() == 0.0
