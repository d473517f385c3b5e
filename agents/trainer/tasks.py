"""Which tasks each iteration trains on, and how many rollouts each gets.

ARPO draws ``rollout_batch_size`` tasks per iteration from a seeded ``RandomSampler`` with
``drop_last=True``: every epoch is a fresh permutation cut into whole batches, and the leftover
tail is skipped. ``TaskSchedule`` does the same with a generator it owns, so the schedule
is identical on every rank and restored exactly from a checkpoint.

``RolloutBudget`` gives every task ``rollouts_per_task`` rollouts (ARPO), or, DART-style,
more rollouts to tasks the policy solves less often: the rate comes from the baseline pass of
the selection file, then from each task's latest group.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from osworld_gym.tasks import TaskSet

logger = logging.getLogger(__name__)

__all__ = ["RolloutBudget", "TaskSchedule", "baseline_rates", "resolve_task_ids", "resolve_tasks"]


def resolve_task_ids(
    suite: str, task_ids: Sequence[str] = (), selection: str | None = None
) -> list[str]:
    """The ids of ``resolve_tasks()``' tasks, in order."""
    return list(resolve_tasks(suite, task_ids, selection).ids)


def resolve_tasks(
    suite: str, task_ids: Sequence[str] = (), selection: str | None = None
) -> TaskSet:
    """The training tasks: ``task_ids``, else the selection file's, else the whole suite.

    Args:
        suite: Task source (suite name, folder or index file) the env loads.
        task_ids: Explicit ids; checked against the suite.
        selection: A file written by ``osworld_agents.arpo.save_selection()``.

    Returns:
        The tasks (with what they are, e.g. ``infeasible``) in a stable order.

    Raises:
        UnknownTaskError: An id is not in the suite (the message names the closest ones).
        ValueError: The result is empty.
    """
    from osworld_gym.tasks import load_tasks

    wanted: Sequence[str] | None = tuple(task_ids) or None
    if wanted is None and selection is not None:
        from osworld_agents.arpo import load_selection

        wanted = load_selection(selection).selected
    tasks = load_tasks(suite, ids=wanted)
    if not tasks.ids:
        raise ValueError(f"no training tasks in {suite!r}")
    return tasks


class TaskSchedule:
    """Epochs of shuffled task batches, ARPO's sampler (``drop_last=True``).

    Args:
        task_ids: The tasks.
        batch_size: Tasks per iteration; at most ``len(task_ids)``.
        rng: The schedule's own generator (its state is checkpointed).

    Example:
        >>> schedule = TaskSchedule(["a", "b", "c"], 2, np.random.default_rng(0))
        >>> len(schedule.next()), schedule.epoch
        (2, 0)
    """

    def __init__(self, task_ids: Sequence[str], batch_size: int, rng: np.random.Generator):
        if not 1 <= batch_size <= len(task_ids):
            raise ValueError(
                f"tasks_per_iteration must be between 1 and the {len(task_ids)} training "
                f"tasks, got {batch_size}"
            )
        self.task_ids = list(task_ids)
        self.batch_size = batch_size
        self.rng = rng
        self.epoch = -1
        self._order: list[str] = []

    def next(self) -> list[str]:
        """The next iteration's tasks (a new epoch when fewer than a batch remain)."""
        if len(self._order) < self.batch_size:
            self.epoch += 1
            self._order = [self.task_ids[i] for i in self.rng.permutation(len(self.task_ids))]
            logger.debug("task schedule: epoch %d", self.epoch)
        batch, self._order = self._order[: self.batch_size], self._order[self.batch_size :]
        return batch

    def state_dict(self) -> dict[str, Any]:
        """The schedule's position and its generator's state."""
        return {
            "task_ids": list(self.task_ids),
            "epoch": self.epoch,
            "order": list(self._order),
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` (of the same task list)."""
        if list(state["task_ids"]) != self.task_ids:
            logger.warning("task schedule: the task list changed since the checkpoint")
        self.epoch = int(state["epoch"])
        self._order = [t for t in state["order"] if t in set(self.task_ids)]
        self.rng.bit_generator.state = state["rng"]


def baseline_rates(selection: str | None) -> dict[str, float | None]:
    """Every task's baseline success rate from a selection file (empty without a file)."""
    if selection is None:
        return {}
    from osworld_agents.arpo import load_selection

    return {task: stats.rate for task, stats in load_selection(selection).stats.items()}


class RolloutBudget:
    """Rollouts per task: ``default`` for every task, or DART-style from success rates.

    With ``bounds=(min_n, max_n)`` a task gets
    ``osworld_agents.arpo.selection.rollout_count()`` rollouts of its latest known success rate
    (``max_n`` while unknown); ``observe()`` replaces a task's rate with its newest group's.

    Args:
        default: Rollouts per task without bounds (ARPO's n).
        bounds: ``(min_n, max_n)`` for dynamic counts, or None.
        rates: Known success rates to start from (a baseline pass's), task id -> rate.

    Example:
        >>> budget = RolloutBudget(8, bounds=(4, 12), rates={"a": 1.0})
        >>> budget.sizes(["a", "b"])
        [4, 12]
        >>> budget.observe({"b": 0.5}); budget.sizes(["b"])
        [8]
    """

    def __init__(
        self,
        default: int,
        bounds: tuple[int, int] | None = None,
        rates: Mapping[str, float | None] | None = None,
    ) -> None:
        if default < 1:
            raise ValueError(f"rollouts per task must be >= 1, got {default}")
        if bounds is not None and not 1 <= bounds[0] <= bounds[1]:
            raise ValueError(f"dynamic rollout bounds need 1 <= min <= max, got {bounds}")
        self.default = default
        self.bounds = bounds
        self.rates: dict[str, float] = {t: r for t, r in (rates or {}).items() if r is not None}

    def sizes(self, tasks: Sequence[str]) -> list[int]:
        """The rollouts of each task, in order."""
        if self.bounds is None:
            return [self.default] * len(tasks)
        from osworld_agents.arpo.selection import rollout_count

        low, high = self.bounds
        return [rollout_count(self.rates.get(t), min_n=low, max_n=high) for t in tasks]

    def observe(self, rates: Mapping[str, float]) -> None:
        """Record the newest success rate of the tasks just rolled out."""
        self.rates.update(rates)

    def state_dict(self) -> dict[str, Any]:
        """The known rates (the rest is configuration)."""
        return {"rates": dict(self.rates)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()``."""
        self.rates = {str(t): float(r) for t, r in state["rates"].items()}
