"""GRPO advantages: hand-computed values, degenerate groups, id types, mean-centring."""

from __future__ import annotations

import pytest
import torch
from osworld_agents.arpo import group_index, grpo_advantages

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build


def test_hand_computed_group() -> None:
    # mean 0.25; unbiased var = (0.75^2 + 3 * 0.25^2) / 3 = 0.25, std 0.5.
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), ["t"] * 4)
    expected = torch.tensor([0.75, -0.25, -0.25, -0.25]) / (0.5 + 1e-6)
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(adv, torch.tensor([1.5, -0.5, -0.5, -0.5]), atol=1e-5, rtol=0)


def test_matches_torch_std_per_group() -> None:
    gen = torch.Generator().manual_seed(0)
    rewards = torch.rand(12, generator=gen, dtype=torch.float64)
    groups = torch.tensor([3, 1, 3, 1, 3, 1, 7, 7, 7, 7, 3, 1])
    adv = grpo_advantages(rewards, groups)
    for gid in groups.unique():
        sel = groups == gid
        r = rewards[sel]
        torch.testing.assert_close(adv[sel], (r - r.mean()) / (r.std() + 1e-6))


def test_group_of_one_gives_zero_not_nan() -> None:
    adv = grpo_advantages(torch.tensor([1.0, 0.5, 0.0]), ["solo", "pair", "pair"])
    assert torch.isfinite(adv).all()
    assert adv[0].item() == 0.0
    assert adv[1].item() > 0 > adv[2].item()


@pytest.mark.parametrize("value", [0.0, 1.0, 0.1, -0.5, 0.7])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_all_equal_rewards_give_exact_zero(value: float, dtype: torch.dtype) -> None:
    rewards = torch.full((8,), value, dtype=dtype)
    for norm in (True, False):
        adv = grpo_advantages(rewards, [0] * 8, norm_by_std=norm)
        assert adv.dtype == dtype
        assert torch.equal(adv, torch.zeros(8, dtype=dtype))


def test_without_std_normalisation_is_mean_centred() -> None:
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 4.0]), [0, 0, 0, 0, 1, 1])
    centred = grpo_advantages(
        torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 4.0]), [0, 0, 0, 0, 1, 1], norm_by_std=False
    )
    torch.testing.assert_close(centred, torch.tensor([0.75, -0.25, -0.25, -0.25, -1.0, 1.0]))
    assert not torch.allclose(adv, centred)


def test_string_and_tensor_ids_agree_and_order_does_not_matter() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.5, 0.0, 1.0, 0.25])
    names = ["b", "a", "b", "a", "a", "b"]
    ints = torch.tensor([9, 2, 9, 2, 2, 9])
    torch.testing.assert_close(grpo_advantages(rewards, names), grpo_advantages(rewards, ints))
    perm = torch.tensor([5, 3, 0, 1, 4, 2])
    permuted = grpo_advantages(rewards[perm], [names[i] for i in perm])
    torch.testing.assert_close(permuted, grpo_advantages(rewards, names)[perm])


def test_integer_rewards_give_float_advantages() -> None:
    adv = grpo_advantages(torch.tensor([1, 0]), [0, 0])
    assert adv.dtype == torch.get_default_dtype()
    assert adv[0].item() == pytest.approx(0.5 / (0.5**0.5 + 1e-6))


def test_advantages_are_detached() -> None:
    rewards = torch.tensor([1.0, 0.0], requires_grad=True)
    assert not grpo_advantages(rewards, [0, 0]).requires_grad


def test_group_index_dense_in_first_seen_order() -> None:
    index, n = group_index(["x", "y", "x", "z"])
    assert n == 3
    assert index.tolist() == [0, 1, 0, 2]


@pytest.mark.parametrize(
    ("rewards", "ids"),
    [
        (torch.tensor([1.0, 0.0]), [0]),
        (torch.tensor([[1.0, 0.0]]), [0, 0]),
        (torch.tensor([1.0, float("nan")]), [0, 0]),
    ],
)
def test_bad_inputs_raise(rewards: torch.Tensor, ids: list[int]) -> None:
    with pytest.raises(ValueError):
        grpo_advantages(rewards, ids)


def test_empty_batch() -> None:
    assert grpo_advantages(torch.zeros(0), []).numel() == 0
