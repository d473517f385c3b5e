"""Rollout budgets: ARPO's fixed n, DART's counts from success rates, and their state."""

from __future__ import annotations

import pytest
from osworld_agents.trainer.tasks import RolloutBudget


def test_fixed_budget_ignores_rates() -> None:
    budget = RolloutBudget(8, rates={"a": 1.0})
    budget.observe({"a": 0.0})
    assert budget.sizes(["a", "b"]) == [8, 8]


def test_dart_budget_follows_the_latest_rate() -> None:
    budget = RolloutBudget(8, bounds=(2, 10), rates={"solved": 1.0, "unknown": None})
    assert budget.sizes(["solved", "unknown", "never-seen"]) == [2, 10, 10]
    budget.observe({"solved": 0.25})
    assert budget.sizes(["solved"]) == [8]


def test_state_round_trip() -> None:
    budget = RolloutBudget(4, bounds=(1, 5), rates={"a": 0.5})
    budget.observe({"b": 0.0})
    restored = RolloutBudget(4, bounds=(1, 5))
    restored.load_state_dict(budget.state_dict())
    assert restored.sizes(["a", "b", "c"]) == budget.sizes(["a", "b", "c"]) == [3, 5, 5]


@pytest.mark.parametrize(("default", "bounds"), [(0, None), (4, (0, 3)), (4, (5, 3))])
def test_bad_budgets_raise(default: int, bounds: tuple[int, int] | None) -> None:
    with pytest.raises(ValueError):
        RolloutBudget(default, bounds=bounds)
