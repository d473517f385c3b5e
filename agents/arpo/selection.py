"""Training-task selection from a baseline pass, and per-task rollout counts.

ARPO trains on the 128 OSWorld tasks where the base agent (UI-TARS-1.5) succeeded at least once,
infeasible tasks excluded; its list is precomputed and the number of baseline rollouts behind
it is not recorded. Here the rule is code and the selection file records how it was made: the
rule, every task's success count, rollout count and rate, and why each task was kept or not.

Infeasible tasks (evaluator ``func`` ``"infeasible"``: the agent scores by answering FAIL) are
excluded by default, as ARPO's list does, whatever their scores; ``include_infeasible`` lets
the rule decide them like any other task. The file lists the infeasible tasks and every
excluded task with the reason.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_FORMAT = "osworld-arpo-task-selection"
_VERSION = 1

SELECTED = "selected"
EXCLUDED = "excluded by predicate"
INFEASIBLE_TASK = "infeasible task (evaluator func 'infeasible')"
UNSCORED = "no scored rollout"
NO_SUCCESS = "no success"
BELOW_BAND = "success rate below band"
ABOVE_BAND = "success rate above band"


@dataclasses.dataclass(frozen=True)
class SelectionRule:
    """Which tasks are worth training on. The defaults are ARPO's rule.

    Attributes:
        success_threshold: A rollout succeeds when its score is strictly above this (0.1, the
            replay buffer's threshold).
        require_success: Keep only tasks with at least one successful rollout (ARPO).
        min_rate: Lowest success rate kept, inclusive.
        max_rate: Highest success rate kept, inclusive (below 1.0 drops tasks already solved
            every time, which give GRPO no signal).
    """

    success_threshold: float = 0.1
    require_success: bool = True
    min_rate: float = 0.0
    max_rate: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_rate <= self.max_rate <= 1.0:
            raise ValueError(f"need 0 <= min_rate <= max_rate <= 1, got {self}")


@dataclasses.dataclass(frozen=True)
class TaskStats:
    """A task's baseline outcome.

    Attributes:
        rollouts: Scored rollouts (unscored ones, e.g. cut by a fault, say nothing and are
            left out).
        successes: Rollouts scoring above the threshold.
    """

    rollouts: int
    successes: int

    @property
    def rate(self) -> float | None:
        """Success rate, or None without a scored rollout."""
        return self.successes / self.rollouts if self.rollouts else None


@dataclasses.dataclass(frozen=True)
class TaskSelection:
    """The outcome of ``select_tasks()``.

    Attributes:
        rule: The rule applied.
        stats: Per-task baseline outcome, in input order.
        decisions: Per task, ``SELECTED`` or why it was not.
        exclude_predicate: Name of the exclusion predicate, if one was used.
        excluded: The tasks dropped whatever their scores, with the reason
            (``INFEASIBLE_TASK`` or ``EXCLUDED``); a subset of ``decisions``.
        infeasible: The infeasible tasks among the inputs, excluded or not.
        include_infeasible: Whether infeasible tasks were left to the rule.
    """

    rule: SelectionRule
    stats: Mapping[str, TaskStats]
    decisions: Mapping[str, str]
    exclude_predicate: str | None = None
    excluded: Mapping[str, str] = dataclasses.field(default_factory=dict)
    infeasible: tuple[str, ...] = ()
    include_infeasible: bool = False

    @property
    def selected(self) -> list[str]:
        """The selected task ids, in input order."""
        return [task for task, why in self.decisions.items() if why == SELECTED]

    @property
    def rollouts_per_task(self) -> int | None:
        """The baseline's rollouts per task (k) if all tasks had the same number, else None.

        Tasks excluded before the pass (never rolled out: no scored rollout) do not count.
        """
        counts = {
            s.rollouts
            for task, s in self.stats.items()
            if not (task in self.excluded and s.rollouts == 0)
        }
        return counts.pop() if len(counts) == 1 else None


def task_stats(scores: Sequence[float | None], success_threshold: float = 0.1) -> TaskStats:
    """Count a task's scored and successful rollouts.

    Example:
        >>> task_stats([0.0, 1.0, None, 0.05]).rate
        0.3333333333333333
    """
    scored = [s for s in scores if s is not None]
    return TaskStats(len(scored), sum(s > success_threshold for s in scored))


def _decide(stats: TaskStats, rule: SelectionRule) -> str:
    rate = stats.rate
    if rate is None:
        return UNSCORED
    if rule.require_success and stats.successes == 0:
        return NO_SUCCESS
    if rate < rule.min_rate:
        return BELOW_BAND
    if rate > rule.max_rate:
        return ABOVE_BAND
    return SELECTED


def select_tasks(
    baseline: Mapping[str, Sequence[float | None]],
    rule: SelectionRule | None = None,
    *,
    exclude: Callable[[str], bool] | None = None,
    infeasible: Iterable[str] = (),
    include_infeasible: bool = False,
) -> TaskSelection:
    """Apply ``rule`` to a baseline pass.

    Args:
        baseline: Task id -> the scores of its k baseline rollouts.
        rule: The rule; None uses ARPO's (``SelectionRule`` defaults).
        exclude: Predicate on task ids that drops a task regardless of its scores.
        infeasible: The ids of the infeasible tasks (e.g. ``TaskSet.filter(infeasible=True)``).
            They are excluded (``INFEASIBLE_TASK``) whatever their scores, as ARPO's list
            leaves them out; those absent from ``baseline`` (not rolled out, to save the
            pass) are recorded with no rollout.
        include_infeasible: Let the rule decide infeasible tasks like the others (those absent
            from ``baseline`` are then left out of the selection altogether).

    Returns:
        The selection, with every task's stats and decision.
    """
    rule = rule if rule is not None else SelectionRule()
    infeasible = tuple(dict.fromkeys(infeasible))
    stats = {task: task_stats(scores, rule.success_threshold) for task, scores in baseline.items()}
    excluded: dict[str, str] = {}
    if not include_infeasible:
        for task in infeasible:
            stats.setdefault(task, TaskStats(0, 0))
            excluded[task] = INFEASIBLE_TASK
    if exclude is not None:
        for task in stats:
            if task not in excluded and exclude(task):
                excluded[task] = EXCLUDED
    decisions = {task: excluded.get(task) or _decide(s, rule) for task, s in stats.items()}
    name = None if exclude is None else getattr(exclude, "__qualname__", repr(exclude))
    selection = TaskSelection(
        rule, stats, decisions, name, excluded, infeasible, include_infeasible
    )
    logger.info(
        "selected %d of %d tasks with %s; %d excluded (%d infeasible%s)",
        len(selection.selected),
        len(stats),
        rule,
        len(excluded),
        len(infeasible),
        ", kept for the rule" if include_infeasible else "",
    )
    return selection


def save_selection(selection: TaskSelection, path: str | os.PathLike[str]) -> None:
    """Write a selection as JSON: the rule, k, the selected ids and every task's record.

    Args:
        selection: From ``select_tasks()``.
        path: The file to write.
    """
    document: dict[str, Any] = {
        "format": _FORMAT,
        "version": _VERSION,
        "rule": dataclasses.asdict(selection.rule),
        "exclude_predicate": selection.exclude_predicate,
        "include_infeasible": selection.include_infeasible,
        "infeasible": list(selection.infeasible),
        "excluded": dict(selection.excluded),
        "rollouts_per_task": selection.rollouts_per_task,
        "selected": selection.selected,
        "tasks": {
            task: {
                "rollouts": s.rollouts,
                "successes": s.successes,
                "rate": s.rate,
                "decision": selection.decisions[task],
            }
            for task, s in selection.stats.items()
        },
    }
    Path(path).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def load_selection(path: str | os.PathLike[str]) -> TaskSelection:
    """Read a file written by ``save_selection()``.

    Raises:
        ValueError: If the file is not a task selection of a known version.
    """
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    if document.get("format") != _FORMAT or document.get("version") != _VERSION:
        raise ValueError(f"{path} is not an {_FORMAT} file of version {_VERSION}")
    tasks = document["tasks"]
    decisions = {t: r["decision"] for t, r in tasks.items()}
    # Files written before infeasible tasks were handled lack the last three keys.
    excluded = document.get("excluded", {t: d for t, d in decisions.items() if d == EXCLUDED})
    return TaskSelection(
        rule=SelectionRule(**document["rule"]),
        stats={t: TaskStats(r["rollouts"], r["successes"]) for t, r in tasks.items()},
        decisions=decisions,
        exclude_predicate=document["exclude_predicate"],
        excluded=excluded,
        infeasible=tuple(document.get("infeasible", ())),
        include_infeasible=bool(document.get("include_infeasible", False)),
    )


def rollout_count(rate: float | None, *, min_n: int, max_n: int, power: float = 1.0) -> int:
    """DART-style rollout budget: harder tasks (lower success rate) get more rollouts.

    ``n = min_n + round((max_n - min_n) * (1 - rate) ** power)``, rounding halves up. A task
    never solved gets ``max_n``, one always solved ``min_n``; ``power > 1`` concentrates the
    extra rollouts on the hardest tasks. An unknown rate counts as 0 (most rollouts), since
    nothing is known about the task yet.

    Args:
        rate: Success rate in [0, 1], or None.
        min_n: Fewest rollouts (>= 1; GRPO needs >= 2 for any signal).
        max_n: Most rollouts.
        power: Shape of the curve (> 0).

    Returns:
        The rollout count, in ``[min_n, max_n]``.

    Example:
        >>> [rollout_count(p, min_n=4, max_n=12) for p in (0.0, 0.25, 0.5, 1.0, None)]
        [12, 10, 8, 4, 12]
    """
    if not 1 <= min_n <= max_n:
        raise ValueError(f"need 1 <= min_n <= max_n, got {min_n}, {max_n}")
    if power <= 0:
        raise ValueError(f"power must be > 0, got {power}")
    if rate is None:
        rate = 0.0
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"success rate must be in [0, 1], got {rate}")
    return min_n + math.floor((max_n - min_n) * (1.0 - rate) ** power + 0.5)


def rollout_counts(
    rates: Mapping[str, float | None], *, min_n: int, max_n: int, power: float = 1.0
) -> dict[str, int]:
    """``rollout_count()`` for every task (e.g. ``{t: s.rate for t, s in stats.items()}``).

    Args:
        rates: Task id -> success rate (None if unknown).
        min_n: See ``rollout_count()``.
        max_n: See ``rollout_count()``.
        power: See ``rollout_count()``.

    Returns:
        Task id -> rollouts.
    """
    return {
        task: rollout_count(rate, min_n=min_n, max_n=max_n, power=power)
        for task, rate in rates.items()
    }
