"""PerRowSeededSampler: Gumbel-max sampling with a generator per batch row."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402
from osworld_agents.engines.seeded_sampling import PerRowSeededSampler  # noqa: E402

pytestmark = pytest.mark.heavy  # torch and tiny models: seconds to import and build

LOGITS = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -torch.inf])
"""The last token is banned (a suppressed placeholder): it must never be drawn."""


def draws(seeds: list[int], logits: torch.Tensor, steps: int = 1, **sampling: float) -> list:
    """Greedy picks over the sampler's output, ``steps`` steps for each seed's row."""
    sampler = PerRowSeededSampler(seeds, temperature=sampling.pop("temperature", 1.0), **sampling)
    rows = logits.expand(len(seeds), -1)
    ids = torch.zeros((len(seeds), 1), dtype=torch.long)
    picks = [sampler(ids, rows.clone()).argmax(-1) for _ in range(steps)]
    return torch.stack(picks, dim=1).tolist()


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_frequencies_follow_the_tempered_softmax(temperature: float) -> None:
    n = 20_000
    picks = torch.tensor(draws(list(range(n)), LOGITS, temperature=temperature)).squeeze(1)
    frequencies = torch.bincount(picks, minlength=len(LOGITS)).double() / n
    expected = torch.softmax(LOGITS.double() / temperature, dim=-1)
    # 4 standard errors of a binomial proportion at n = 20000 is at most 0.0142.
    torch.testing.assert_close(frequencies, expected, atol=0.0142, rtol=0)
    assert frequencies[-1] == 0


def test_top_k_and_top_p_truncate_like_transformers() -> None:
    seeds = list(range(3000))
    assert set(sum(draws(seeds, LOGITS, top_k=2), [])) == {0, 1}
    # softmax(LOGITS) = 0.51, 0.19, 0.11, ...: the 0.7 nucleus keeps tokens 0 and 1 only.
    assert set(sum(draws(seeds, LOGITS, top_p=0.7), [])) == {0, 1}


def test_a_row_depends_on_its_own_seed_only() -> None:
    alone = draws([7], LOGITS, steps=12)[0]
    batched = draws([3, 7, 11], LOGITS, steps=12)
    assert batched[1] == alone
    assert draws([7], LOGITS, steps=12)[0] == alone  # deterministic
    assert draws([8], LOGITS, steps=12)[0] != alone  # and the seed matters


def test_rows_must_match_seeds() -> None:
    sampler = PerRowSeededSampler([1, 2], temperature=1.0)
    with pytest.raises(ValueError, match="3 batch rows for 2 seeds"):
        sampler(torch.zeros((3, 1), dtype=torch.long), torch.zeros((3, 6)))
    with pytest.raises(ValueError, match="temperature must be > 0"):
        PerRowSeededSampler([1], temperature=0.0)
