"""A run's summary: a table per domain and overall, and ``summary.json`` for machines.

``summary.json`` records every setting that moves a score (``settings``), so two runs can be
compared, and what the last invocation did (``invocation``: episodes run, tasks skipped as done,
errors, wall time, whether it was interrupted). Success rates are OSWorld's: the mean score of
the tasks that have one; tasks without a score are errors, counted apart (``errors``, and
``error_kinds``: ``reset``, ``infrastructure``, ``evaluation``, ``unfinished``), never as zero.
``versions`` records what scored the last invocation's tasks: Python, osworld-gym and every
installed package of the metric extras (``library_versions()``).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osworld_gym.commands.doctor import extra_distributions
from osworld_gym.commands.results import ERROR_KINDS, SUMMARY_FILE, TaskRecord, write_atomically
from osworld_gym.version import __version__

logger = logging.getLogger(__name__)

SCORE_SETTINGS = (
    "mode",
    "max_steps",
    "fail_at_step_limit",
    "parse_error_ends_episode",
    "history_images",
    "temperature",
    "top_p",
    "max_new_tokens",
    "screen_size",
    "action_space",
    "observation_type",
    "provider",
    "image",
    "agent",
    "model",
    "evaluation",
    "evaluator_reference",
)
"""Settings that must match for a rerun to continue a run (they change what a score means)."""
# Runs recorded before the reference was: their scores followed desktop-env 1.0.2's code.
SETTING_DEFAULTS = {"evaluation": "osworld", "evaluator_reference": "osworld-1.0.2"}
"""What a run folder written before a setting was recorded ran with."""
METRIC_EXTRAS = ("eval", "media", "ocr", "chrome")
"""The extras whose packages score tasks (metrics, and the Chrome getters' Playwright)."""


@dataclass(frozen=True)
class DomainRow:
    """One line of the summary table."""

    domain: str
    tasks: int
    scored: int
    score_sum: float
    steps: int

    @property
    def success_rate(self) -> float | None:
        """Mean score over the scored tasks, None when none is scored."""
        return self.score_sum / self.scored if self.scored else None

    @property
    def errors(self) -> int:
        """Tasks that ran but have no score (see ``TaskRecord.error_kind``)."""
        return self.tasks - self.scored

    @property
    def mean_steps(self) -> float | None:
        """Mean steps of the scored tasks."""
        return self.steps / self.scored if self.scored else None


def domain_rows(records: Sequence[TaskRecord]) -> list[DomainRow]:
    """One row per domain, sorted, then ``all``."""
    by_domain: dict[str, list[TaskRecord]] = {}
    for record in records:
        by_domain.setdefault(record.domain, []).append(record)
    rows = [_row(domain, items) for domain, items in sorted(by_domain.items())]
    rows.append(_row("all", list(records)))
    return rows


def _row(domain: str, records: Sequence[TaskRecord]) -> DomainRow:
    scored = [r for r in records if r.score is not None]
    return DomainRow(
        domain=domain,
        tasks=len(records),
        scored=len(scored),
        score_sum=sum(r.score or 0.0 for r in scored),
        steps=sum(len(r.steps) for r in scored),
    )


def format_table(rows: Sequence[DomainRow]) -> str:
    """The rows as an aligned text table."""
    columns = ("tasks", 6), ("scored", 7), ("errors", 7), ("success", 8), ("mean steps", 11)
    lines = [f"{'domain':<24} " + " ".join(f"{name:>{width}}" for name, width in columns)]
    for row in rows:
        if row.domain == "all":
            lines.append("-" * len(lines[0]))
        rate = "-" if row.success_rate is None else f"{100 * row.success_rate:.1f}%"
        steps = "-" if row.mean_steps is None else f"{row.mean_steps:.1f}"
        values = (row.tasks, row.scored, row.errors, rate, steps)
        cells = " ".join(f"{v:>{w}}" for v, (_, w) in zip(values, columns, strict=True))
        lines.append(f"{row.domain:<24} {cells}")
    return "\n".join(lines)


def build_summary(
    records: Sequence[TaskRecord],
    settings: Mapping[str, Any],
    invocation: Mapping[str, Any],
    *,
    created: str | None = None,
) -> dict[str, Any]:
    """The ``summary.json`` object of a run."""
    rows = domain_rows(records)
    overall = rows[-1]
    return {
        "format": "osworld-gym-run",
        "version": 1,
        "created": created or _now(),
        "updated": _now(),
        "settings": dict(settings),
        "invocation": dict(invocation),
        "overall": _row_dict(overall),
        "error_kinds": error_kinds(records),
        "domains": {row.domain: _row_dict(row) for row in rows[:-1]},
        "tasks": {
            record.task_id: {
                "domain": record.domain,
                "score": record.score,
                "steps": len(record.steps),
                "error": record.error,
                "error_kind": record.error_kind,
            }
            for record in records
        },
    }


def error_kinds(records: Sequence[TaskRecord]) -> dict[str, int]:
    """How many tasks have no score, per reason (every kind listed, zeros included)."""
    counts = dict.fromkeys(ERROR_KINDS, 0)
    for record in records:
        kind = record.error_kind
        if kind is not None:
            counts[kind] += 1
    return counts


def library_versions(extras: Sequence[str] = METRIC_EXTRAS) -> dict[str, Any]:
    """What scores tasks here: Python, osworld-gym, and the metric extras' packages.

    Returns:
        ``{"python": ..., "osworld-gym": ..., "packages": {distribution: version},
        "missing": {extra: [distribution, ...]}}``: ``packages`` holds every installed package
        of ``extras`` (a package of several extras once), ``missing`` the ones that are not
        installed, per extra (an extra with none missing is left out).
    """
    packages: dict[str, str] = {}
    missing: dict[str, list[str]] = {}
    for extra in extras:
        for dist in extra_distributions(extra):
            try:
                packages[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                missing.setdefault(extra, []).append(dist)
    return {
        "python": platform.python_version(),
        "osworld-gym": __version__,
        "packages": dict(sorted(packages.items())),
        "missing": missing,
    }


def _row_dict(row: DomainRow) -> dict[str, Any]:
    return {
        "tasks": row.tasks,
        "scored": row.scored,
        "errors": row.errors,
        "score_sum": row.score_sum,
        "success_rate": row.success_rate,
        "mean_steps": row.mean_steps,
    }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def write_summary(run_dir: Path, summary: Mapping[str, Any]) -> Path:
    """Write ``summary.json`` into the run folder, atomically; return its path."""
    path = Path(run_dir) / SUMMARY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, (json.dumps(summary, indent=2, ensure_ascii=False) + "\n").encode())
    return path


def load_summary(run_dir: Path) -> dict[str, Any] | None:
    """The run folder's ``summary.json``, None when there is none."""
    path = Path(run_dir) / SUMMARY_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def settings_conflicts(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Score-relevant settings that differ between an earlier run and this one."""
    conflicts = []
    for key in SCORE_SETTINGS:
        before = old.get(key, SETTING_DEFAULTS.get(key))
        if _canonical(before) != _canonical(new.get(key)):
            conflicts.append(f"{key}: {before!r} before, {new.get(key)!r} now")
    return conflicts


def _canonical(value: Any) -> Any:
    return json.loads(json.dumps(value))  # tuples and lists compare alike
