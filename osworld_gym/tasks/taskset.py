"""An immutable, ordered collection of tasks with lookup by id and seeded sampling."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeAlias, overload

from osworld_gym.tasks.errors import TaskFormatError, UnknownDomainError, UnknownTaskError
from osworld_gym.tasks.model import Task

if TYPE_CHECKING:  # numpy is only needed to name the type; any Generator-like object works
    import numpy as np

__all__ = ["Rng", "TaskProblem", "TaskSet"]

Rng: TypeAlias = "np.random.Generator | random.Random"
"""A ``numpy.random.Generator`` or a ``random.Random``: the caller owns the randomness."""


class TaskProblem(NamedTuple):
    """A task that could not be loaded (``errors="collect"``).

    Attributes:
        path: Where it came from (file path relative to the source, or a label).
        message: Why it was rejected, naming the field.
    """

    path: str
    message: str


class TaskSet(Sequence[Task]):
    """An immutable sequence of tasks with unique ids.

    Index it by position (``tasks[0]``), slice it (a new ``TaskSet``), or look a task up by id
    (``tasks["<id>"]``; an unknown id raises ``UnknownTaskError`` with suggestions).

    Args:
        tasks: The tasks, in order.
        problems: Tasks that were rejected while loading (see ``load_tasks(errors="collect")``).

    Raises:
        TaskFormatError: Two tasks share an id.
    """

    __slots__ = ("_by_id", "_problems", "_tasks")

    def __init__(self, tasks: Iterable[Task] = (), *, problems: Iterable[TaskProblem] = ()) -> None:
        self._tasks: tuple[Task, ...] = tuple(tasks)
        self._problems: tuple[TaskProblem, ...] = tuple(problems)
        self._by_id: dict[str, Task] = {}
        for task in self._tasks:
            if task.id in self._by_id:
                raise duplicate_id_error(task, self._by_id[task.id])
            self._by_id[task.id] = task

    # --- sequence protocol -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    @overload
    def __getitem__(self, key: int | str) -> Task: ...

    @overload
    def __getitem__(self, key: slice) -> TaskSet: ...

    def __getitem__(self, key: int | str | slice) -> Task | TaskSet:
        if isinstance(key, str):
            try:
                return self._by_id[key]
            except KeyError:
                raise UnknownTaskError(key, self._by_id) from None
        if isinstance(key, slice):
            return TaskSet(self._tasks[key])
        return self._tasks[key]

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return item in self._by_id
        return isinstance(item, Task) and self._by_id.get(item.id) == item

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaskSet) and self._tasks == other._tasks

    def __hash__(self) -> int:
        return hash(self._tasks)

    def __repr__(self) -> str:
        domains = self.domains
        shown = ", ".join(domains[:4]) + (", ..." if len(domains) > 4 else "")
        extra = f", {len(self._problems)} problems" if self._problems else ""
        return f"TaskSet({len(self)} tasks; domains: {shown or 'none'}{extra})"

    # --- views -------------------------------------------------------------------------------

    @property
    def ids(self) -> tuple[str, ...]:
        """Task ids, in order."""
        return tuple(self._by_id)

    @property
    def domains(self) -> tuple[str, ...]:
        """Distinct domains, in order of first appearance (tasks without a domain are skipped)."""
        return tuple(dict.fromkeys(t.domain for t in self._tasks if t.domain is not None))

    @property
    def problems(self) -> tuple[TaskProblem, ...]:
        """Tasks rejected while loading with ``errors="collect"`` (empty otherwise)."""
        return self._problems

    def get(self, task_id: str, default: Task | None = None) -> Task | None:
        """The task with this id, or ``default``."""
        return self._by_id.get(task_id, default)

    def domain_counts(self) -> dict[str, int]:
        """Number of tasks per domain, in order of first appearance."""
        counts: dict[str, int] = {}
        for task in self._tasks:
            if task.domain is not None:
                counts[task.domain] = counts.get(task.domain, 0) + 1
        return counts

    # --- selection ---------------------------------------------------------------------------

    def filter(
        self,
        predicate: Callable[[Task], bool] | None = None,
        *,
        domain: str | Iterable[str] | None = None,
        ids: Iterable[str] | None = None,
        infeasible: bool | None = None,
    ) -> TaskSet:
        """A new set with the tasks that pass every given criterion.

        Args:
            predicate: Keep tasks for which it returns true.
            domain: Keep tasks of this domain (or these domains).
            ids: Keep these tasks, in the order given (duplicates are dropped).
            infeasible: Keep only infeasible (``True``) or only feasible (``False``) tasks.

        Returns:
            The filtered set (its ``problems`` are carried over).

        Raises:
            UnknownDomainError: A requested domain has no task in this set.
            UnknownTaskError: A requested id is not in this set.
        """
        tasks: Iterable[Task] = self._tasks
        if ids is not None:
            tasks = [self[task_id] for task_id in dict.fromkeys(ids)]
        if domain is not None:
            wanted = {domain} if isinstance(domain, str) else set(domain)
            for name in sorted(wanted - set(self.domains)):
                raise UnknownDomainError(name, self.domains)
            tasks = [t for t in tasks if t.domain in wanted]
        if infeasible is not None:
            tasks = [t for t in tasks if t.infeasible == infeasible]
        if predicate is not None:
            tasks = [t for t in tasks if predicate(t)]
        return TaskSet(tasks, problems=self._problems)

    def sample(self, rng: Rng) -> Task:
        """One task drawn uniformly with the caller's random generator.

        Args:
            rng: A ``numpy.random.Generator`` (e.g. an env's ``np_random``) or a
                ``random.Random``; the same seed gives the same task.

        Returns:
            The drawn task.

        Raises:
            ValueError: The set is empty.
            TypeError: ``rng`` is not one of the accepted generators.
        """
        if not self._tasks:
            raise ValueError("cannot sample a task from an empty TaskSet")
        return self._tasks[_draw_index(rng, len(self._tasks))]

    def shuffled(self, rng: Rng) -> TaskSet:
        """A new set with the same tasks in an order drawn from ``rng`` (see ``sample()``)."""
        order = list(self._tasks)
        for i in range(len(order) - 1, 0, -1):  # Fisher-Yates, drawing from either rng kind
            j = _draw_index(rng, i + 1)
            order[i], order[j] = order[j], order[i]
        return TaskSet(order, problems=self._problems)


def duplicate_id_error(task: Task, first: Task) -> TaskFormatError:
    """The error for a task whose id an earlier task already uses."""
    here = str(task.path) if task.path else "<dict>"
    there = str(first.path) if first.path else "an earlier task"
    return TaskFormatError(
        here, "id", f"duplicate task id {task.id!r}, already used by {there}", path=task.path
    )


def _draw_index(rng: Rng, n: int) -> int:
    if isinstance(rng, random.Random):
        return rng.randrange(n)
    integers = getattr(rng, "integers", None)
    if callable(integers):
        return int(integers(n))
    raise TypeError(
        f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed) or an env's "
        f"np_random) or a random.Random(seed), got {type(rng).__name__}; there is no global RNG"
    )
