"""The parity harness: OSWorld's metric code and ours on the same inputs, scores compared.

Case modules use the ``osworld`` fixture's ``OSWorld`` client (from ``conftest.py``),
``assert_same_score()``, and the helpers for their inputs (``make_file()``,
``real_checks()``, ``real_rules()``, ``disagreement()``). The comparison rule is in
``conftest.py``'s docstring; ``LEDGER`` counts every case for the session summary.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from osworld_client import (
    OSWorld,
    OSWorldError,
    OSWorldUnavailable,
    WorkerError,
    _to_wire,
    metric_modules,
)
from osworld_data import task_files

from osworld_gym.errors import DependencyNotInstalled
from osworld_gym.evaluation.metrics.registry import metrics_for
from osworld_gym.evaluation.references import OSWORLD_1_0_2

__all__ = [
    "ABSENT",
    "LEDGER",
    "FileContent",
    "OSWorld",
    "OSWorldError",
    "OSWorldUnavailable",
    "Outcome",
    "WorkerError",
    "assert_same_score",
    "compare",
    "disagreement",
    "make_file",
    "metric_modules",
    "real_checks",
    "real_rules",
]


# --- comparison ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """Both sides' answers for one case."""

    func: str
    module: str
    osworld_score: float | None
    osworld_error: OSWorldError | None
    our_score: float | None
    our_error: BaseException | None

    @property
    def our_effective_score(self) -> float:
        """Our score as our Evaluator records it: 0 when our metric raised."""
        if self.our_error is not None or self.our_score is None:
            return 0.0
        return self.our_score

    @property
    def agreed(self) -> bool:
        """Whether the scores agree under the parity rule (``conftest.py``)."""
        ours = self.our_effective_score
        if self.osworld_error is not None or self.osworld_score is None:
            return ours == 0.0
        if self.osworld_score in (0.0, 1.0):
            return ours == self.osworld_score
        return bool(ours == pytest.approx(self.osworld_score, abs=1e-9))

    def describe(self) -> str:
        """One line for a failure message."""
        theirs = (
            f"raised {self.osworld_error}"
            if self.osworld_error is not None
            else f"{self.osworld_score!r}"
        )
        ours = (
            f"raised {type(self.our_error).__name__}: {self.our_error}"
            if self.our_error is not None
            else f"{self.our_score!r}"
        )
        return f"{self.func} ({self.module}): OSWorld {theirs}; ours {ours}"


@dataclass
class Ledger:
    """Every case of the session, per metric, for the terminal summary."""

    cases: dict[str, list[tuple[str, Outcome]]] = field(default_factory=lambda: defaultdict(list))
    skipped: dict[str, str] = field(default_factory=dict)  # module or function -> why
    test_outcomes: dict[str, str] = field(default_factory=dict)
    side_info: dict[str, Any] = field(default_factory=dict)  # the worker's greeting

    def record(self, outcome: Outcome) -> None:
        """Count one case under the running test's node id."""
        nodeid = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
        self.cases[outcome.func].append((nodeid, outcome))

    def lines(self) -> list[str]:
        """The summary table."""
        totals: Counter[str] = Counter()
        rows = []
        for func in sorted(self.cases):
            row: Counter[str] = Counter()
            for nodeid, outcome in self.cases[func]:
                row["cases"] += 1
                row["agreed" if outcome.agreed else "disagreed"] += 1
                if not outcome.agreed and self.test_outcomes.get(nodeid) == "xfailed":
                    row["expected"] += 1
                if outcome.osworld_error is not None:
                    row["raised"] += 1
                if outcome.our_error is not None:
                    row["ours_raised"] += 1
            totals.update(row)
            rows.append(
                f"  {func:<44} {row['cases']:>5} {row['agreed']:>6} {row['disagreed']:>9}"
                f" {row['expected']:>8} {row['raised']:>14} {row['ours_raised']:>11}"
            )
        head = [
            f"metrics {len(self.cases)}, cases {totals['cases']}: agreed {totals['agreed']}"
            f" (OSWorld raised in {totals['raised']}), disagreed {totals['disagreed']}"
            f" ({totals['expected']} expected, marked xfail;"
            f" {totals['disagreed'] - totals['expected']} unexpected)",
            f"  {'metric':<44} {'cases':>5} {'agreed':>6} {'disagreed':>9} {'expected':>8}"
            f" {'OSWorld raised':>14} {'ours raised':>11}",
        ]
        tail = [f"  skipped: {why}" for _, why in sorted(self.skipped.items())]
        stand_ins = self.side_info.get("stand_ins") or {}
        tail += [
            f"  stand-in for {name} in the side venv: {why}" for name, why in stand_ins.items()
        ]
        return head + rows + tail


LEDGER = Ledger()


def _run_ours(metric: Callable[..., float], args: list[Any], options: dict[str, Any]) -> Any:
    return metric(*copy.deepcopy(args), **copy.deepcopy(options))


def compare(osworld: OSWorld, func_name: str, *args: Any, **options: Any) -> Outcome:
    """Run OSWorld's ``func_name`` and ours on the same inputs; record and return both answers.

    Skips the test when OSWorld's module cannot be imported in the side venv.
    """
    try:
        module = osworld.module_of(func_name)
    except KeyError:
        pytest.fail(f"OSWorld has no metric named {func_name!r}")
    # The side venv runs desktop-env 1.0.2: compare with our metrics of that reference.
    metric = metrics_for("osworld", OSWORLD_1_0_2)[func_name]
    wire_args, wire_options = _to_wire(list(args)), _to_wire(dict(options))
    theirs: float | None = None
    their_error: OSWorldError | None = None
    try:
        theirs = osworld.score(module, func_name, *wire_args, **wire_options)
    except OSWorldError as e:
        their_error = e
    except OSWorldUnavailable as e:
        LEDGER.skipped[e.where] = str(e)
        pytest.skip(str(e))
    ours: float | None = None
    our_error: BaseException | None = None
    try:
        ours = float(_run_ours(metric, wire_args, wire_options))
    except DependencyNotInstalled:
        raise  # an installation problem is no score (our evaluator re-raises it too)
    except Exception as e:  # noqa: BLE001 - our evaluator scores a raising metric 0
        our_error = e
    outcome = Outcome(func_name, module, theirs, their_error, ours, our_error)
    LEDGER.record(outcome)
    return outcome


def assert_same_score(osworld: OSWorld, func_name: str, *args: Any, **options: Any) -> Outcome:
    """Assert that OSWorld's metric ``func_name`` and ours agree on ``(*args, **options)``.

    Args:
        osworld: The session's ``osworld`` fixture.
        func_name: The metric's name (OSWorld's, which is ours too).
        *args: Positional arguments as the evaluator passes them: result (and expected).
            Paths as absolute ``Path`` or ``str``.
        **options: The task's ``options`` dict.

    Returns:
        Both answers, for further assertions (e.g. that OSWorld did raise).
    """
    outcome = compare(osworld, func_name, *args, **options)
    assert outcome.agreed, outcome.describe()
    return outcome


def disagreement(reason: str) -> pytest.MarkDecorator:
    """The mark of a case where OSWorld and we are known to disagree (strict xfail)."""
    return pytest.mark.xfail(strict=True, reason=reason, raises=AssertionError)


# --- files ------------------------------------------------------------------------------


class Absent:
    """A file case that names a path where no file exists (unlike ``None``: no path at all)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent()

FileContent = str | bytes | None | Absent


def make_file(folder: Path, name: str, content: FileContent) -> Path | None:
    """A test file for a metric argument, as a getter would hand it over.

    Args:
        folder: A pytest tmp folder.
        name: The file name.
        content: Text (written as UTF-8, newlines untouched), bytes (written as they are),
            ``None`` (no file: the getter returned ``None``) or ``ABSENT`` (a path where
            no file exists).

    Returns:
        The absolute path, or ``None``.
    """
    if content is None:
        return None
    path = folder.resolve() / name
    if isinstance(content, Absent):
        return path
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.write_bytes(data)
    return path


# --- OSWorld's task files (found by ``osworld_data``; none in a plain clone) -----------------


def real_checks(func_name: str) -> list[tuple[str, dict[str, Any], dict[str, Any] | None, Any]]:
    """Every check of OSWorld's task files that uses ``func_name``, read at test time.

    Returns:
        ``(task id prefix, result getter config, expected getter config, options)`` tuples,
        empty where the task files are not beside the repository.
    """
    found = []
    for task, evaluator in _task_evaluators():
        funcs = evaluator["func"]
        is_list = isinstance(funcs, list)
        for index, name in enumerate(funcs if is_list else [funcs]):
            if name != func_name:
                continue
            result, expected, options = (
                _nth(evaluator.get(key), index, is_list)
                for key in ("result", "expected", "options")
            )
            found.append((task[:8], result, expected, options or {}))
    return copy.deepcopy(found)


@functools.cache
def _task_evaluators() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(task id, evaluator) of every task file, read once per session."""
    return tuple(
        (path.stem, json.loads(path.read_text(encoding="utf-8"))["evaluator"])
        for path in task_files()
    )


def _nth(value: Any, index: int, is_list: bool) -> Any:
    """A list evaluator's ``index``-th entry of ``value`` (a single check's value as it is)."""
    return value[index] if is_list and isinstance(value, list) else value


def real_rules(func_name: str) -> list[tuple[str, Any]]:
    """The ``rules`` dicts of the ``rule`` expected getters of ``func_name``'s real checks."""
    return [
        (task, expected["rules"])
        for task, _, expected, _ in real_checks(func_name)
        if isinstance(expected, dict) and expected.get("type") == "rule"
    ]
