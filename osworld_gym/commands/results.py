"""OSWorld's results layout: one folder per task with its screenshots, ``traj.jsonl`` and score.

``<result_dir>/<action_space>/<observation_type>/<model>/<domain>/<task_id>/`` holds, as
OSWorld's run scripts write it (``docs/design/evaluators.md#results-layout``):

* ``step_<n>_<timestamp>.png`` -- the screen after step ``n`` (``step_0_...`` is the screen
  after the reset, which step 1 acted on: an addition of ours, so every action has its screen);
* ``traj.jsonl`` -- one line per step: OSWorld's ``step_num``, ``action_timestamp``,
  ``action``, ``response``, ``reward``, ``done``, ``info``, ``screenshot_file``, plus
  ``observation_file`` (the screen the action was chosen on), ``parsed_actions`` (typed
  actions with screen pixels, for drawing) and the policy's ``extra``;
* ``task.json`` -- the task's instruction, how the episode ended, timings (ours);
* ``result.txt`` -- the score, written last and atomically: a task is done exactly when its
  ``result.txt`` exists, so a run killed mid-task never counts a half-written task.

A task that has no score gets ``error.txt`` instead of ``result.txt``, saying why: its episode
could not start (a setup step failed), an infrastructure fault cut it, or it ran to its end but
could not be scored (``evaluation_error``: a metric library that is not installed, a failed
postconfig step). Such a task is an error, never a 0, and a rerun runs it again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from osworld_gym.actions import Action, parse_action
from osworld_gym.pool.trajectory import Trajectory

logger = logging.getLogger(__name__)

RESULT_FILE = "result.txt"
TRAJECTORY_FILE = "traj.jsonl"
TASK_FILE = "task.json"
ERROR_FILE = "error.txt"
ERROR_KINDS = ("reset", "infrastructure", "evaluation", "unfinished")
"""Why a task has no score (``TaskRecord.error_kind``)."""
SUMMARY_FILE = "summary.json"
TIMESTAMP_FORMAT = "%Y%m%d@%H%M%S%f"
NO_DOMAIN = "default"
"""Folder of tasks that have no domain."""


def path_component(name: str) -> str:
    """A model or task name made safe as one folder name (``/`` and odd characters become _).

    Example:
        >>> path_component("ByteDance-Seed/UI-TARS-1.5-7B")
        'ByteDance-Seed_UI-TARS-1.5-7B'
    """
    safe = re.sub(r"[^A-Za-z0-9._@+=-]", "_", name).strip(".")
    return safe or "_"


def timestamp(seconds: float | None = None) -> str:
    """OSWorld's action timestamp (local time) of an epoch time, now by default."""
    moment = datetime.fromtimestamp(time.time() if seconds is None else seconds)
    return moment.strftime(TIMESTAMP_FORMAT)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a synced temporary file renamed into place."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class RunLayout:
    """Where one run's results go.

    Attributes:
        result_dir: The root (OSWorld's ``--result_dir``, ``./results`` by default).
        action_space: The env's action format (``uitars``, ``structured``, ...).
        observation_type: ``screenshot`` (OSWorld's names).
        model: The agent or model name (made safe as a folder name).
    """

    result_dir: Path
    action_space: str
    observation_type: str
    model: str

    @property
    def run_dir(self) -> Path:
        """The folder of this run's domains, and of its ``summary.json``."""
        return (
            Path(self.result_dir)
            / path_component(self.action_space)
            / path_component(self.observation_type)
            / path_component(self.model)
        )

    def task_dir(self, domain: str | None, task_id: str) -> Path:
        """The folder of one task's results."""
        return self.run_dir / path_component(domain or NO_DOMAIN) / path_component(task_id)

    def is_done(self, domain: str | None, task_id: str) -> bool:
        """The task has a score from an earlier run."""
        return read_score(self.task_dir(domain, task_id)) is not None


@dataclass(frozen=True)
class Dialect:
    """How the run's env reads actions: needed to turn recorded actions into typed ones.

    Attributes:
        action_format: The env's ``action_format``.
        screen_size: The env's screen.
        options: The env's ``dialect_options``.
        max_steps: The step limit.
        hard: OSWorld-Hard mode (no FAIL replacement).
    """

    action_format: str
    screen_size: tuple[int, int]
    options: Mapping[str, Any] = field(default_factory=dict)
    max_steps: int = 15
    hard: bool = False

    def parse(self, action: Any) -> tuple[list[dict[str, Any]], str | None]:
        """The typed actions of a recorded action, as dicts, and a parse error if any."""
        if isinstance(action, Action):
            action = [action]
        if isinstance(action, str) and self.action_format != "structured":
            result = parse_action(
                action, dialect=self.action_format, screen_size=self.screen_size, **self.options
            )
        else:
            result = parse_action(action, dialect="structured", screen_size=self.screen_size)
        return [a.to_dict() for a in result.actions], result.error


def read_score(task_dir: Path) -> float | None:
    """The score in a task folder's ``result.txt``, None when there is none (or it is bad)."""
    try:
        return float((task_dir / RESULT_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def _jsonable(value: Any) -> Any:
    """Numbers, strings, lists and dicts as JSON takes them; numpy values become lists."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Action):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return _jsonable(tolist())
    return repr(value)


def recorded_action(action: Any) -> Any:
    """The action as ``traj.jsonl`` keeps it: model text as is, typed actions as dicts."""
    if isinstance(action, str):
        return action
    if isinstance(action, Action):
        return [action.to_dict()]
    return _jsonable(action)


def fail_replaced(trajectory: Trajectory, dialect: Dialect) -> bool:
    """Whether the env replaced the last step's action by FAIL (standard mode, step limit)."""
    return (
        not dialect.hard
        and trajectory.truncated
        and trajectory.infra_error is None
        and len(trajectory.steps) >= dialect.max_steps
    )


def write_task(
    task_dir: Path,
    trajectory: Trajectory,
    *,
    domain: str | None,
    dialect: Dialect,
    extra: Mapping[str, Any] | None = None,
) -> float | None:
    """Write one finished episode in OSWorld's layout; return its score (None: not scored).

    Anything an earlier, unfinished attempt left in ``task_dir`` is removed first.
    ``result.txt`` is written last, and only for an episode that ran to its end.
    """
    if task_dir.exists():
        shutil.rmtree(task_dir)
    task_dir.mkdir(parents=True)
    steps = trajectory.steps
    stamps = [_step_time(step.extra) for step in steps]
    now = time.time()
    # step_0 shows the screen after the reset: named after the first action's time.
    names = [f"step_0_{timestamp(stamps[0] if stamps else now)}.png"]
    for i in range(1, len(steps) + 1):
        names.append(f"step_{i}_{timestamp(stamps[i - 1] if stamps[i - 1] else now)}.png")
    shots = [step.screenshot for step in steps] + [trajectory.final_screenshot]
    for name, shot in zip(names, shots, strict=True):
        if shot is not None:
            (task_dir / name).write_bytes(shot)
    replaced = fail_replaced(trajectory, dialect)
    lines = []
    for i, step in enumerate(steps, start=1):
        parsed, _ = dialect.parse(step.action)
        info: dict[str, Any] = {
            "parse_error": step.parse_error,
            "action_error": step.action_error,
            "fail_replaced": replaced and i == len(steps),
            "timings": {k: round(float(v), 4) for k, v in step.timings.items()},
        }
        entry = {
            "step_num": i,
            "action_timestamp": timestamp(stamps[i - 1] or now),
            "action": recorded_action(step.action),
            "response": step.text,
            "reward": float(step.reward),
            "done": i == len(steps),
            "info": info,
            "screenshot_file": names[i] if shots[i] is not None else None,
            "observation_file": names[i - 1] if shots[i - 1] is not None else None,
            "parsed_actions": parsed,
            "extra": _jsonable({k: v for k, v in step.extra.items() if k != "action_time"}),
        }
        lines.append(json.dumps(entry, ensure_ascii=False))
    (task_dir / TRAJECTORY_FILE).write_text("".join(line + "\n" for line in lines))
    scored = trajectory.complete and trajectory.score is not None
    meta = {
        "task_id": trajectory.task_id,
        "domain": domain,
        "instruction": trajectory.instruction,
        "score": trajectory.score if scored else None,
        "steps": len(steps),
        "terminated": trajectory.terminated,
        "truncated": trajectory.truncated,
        "fail_replaced": replaced,
        "infra_error": trajectory.infra_error,
        "evaluation_error": trajectory.evaluation_error,
        "error": trajectory.error,
        "attempt": trajectory.attempt,
        "wall_seconds": round(trajectory.wall_seconds, 3),
        "reset_timings": {k: round(float(v), 4) for k, v in trajectory.reset_timings.items()},
        "screen_size": list(dialect.screen_size),
        "action_format": dialect.action_format,
        **dict(extra or {}),
    }
    (task_dir / TASK_FILE).write_text(json.dumps(_jsonable(meta), indent=2, ensure_ascii=False))
    if not scored:
        (task_dir / ERROR_FILE).write_text(unscored_reason(trajectory) + "\n")
        return None
    score = float(trajectory.score)  # type: ignore[arg-type]
    write_atomically(task_dir / RESULT_FILE, f"{score}\n".encode())
    return score


def unscored_reason(trajectory: Trajectory) -> str:
    """Why an episode has no score, as ``error.txt`` says it."""
    if trajectory.error:
        return trajectory.error
    if trajectory.infra_error:
        return trajectory.infra_error
    if trajectory.evaluation_error:
        return trajectory.evaluation_error
    if trajectory.complete:
        return "the evaluator gave no score"
    return "the episode did not end"


def _step_time(extra: Mapping[str, Any]) -> float | None:
    value = extra.get("action_time")
    return float(value) if isinstance(value, (int, float)) else None


# --- reading a run back ----------------------------------------------------------------------


@dataclass
class TaskRecord:
    """One task's results as read back from its folder.

    Attributes:
        task_dir: The folder.
        task_id: The task.
        domain: Its domain (the parent folder's name when ``task.json`` is missing).
        score: The score in ``result.txt``; None when the task is not done.
        meta: ``task.json`` (empty for folders written by OSWorld's own scripts).
        steps: The ``traj.jsonl`` entries, in order.
        error: ``error.txt``, when the episode could not finish.
    """

    task_dir: Path
    task_id: str
    domain: str
    score: float | None
    meta: dict[str, Any]
    steps: list[dict[str, Any]]
    error: str | None = None

    @property
    def instruction(self) -> str:
        """The task's instruction ("" when unknown)."""
        return str(self.meta.get("instruction") or "")

    @property
    def error_kind(self) -> str | None:
        """Why the task has no score, one of ``ERROR_KINDS``; None when it has one.

        ``reset``: the episode could not start (a setup step failed, the task cannot be scored
        here, no desktop came up); ``infrastructure``: a fault cut the episode; ``evaluation``:
        it ran to its end but could not be scored; ``unfinished``: no record says (a folder
        written by OSWorld's own scripts, or one whose writing was cut short).
        """
        if self.score is not None:
            return None
        if self.meta.get("infra_error"):
            return "infrastructure"
        if self.meta.get("evaluation_error"):
            return "evaluation"
        if self.meta.get("error"):
            return "reset"
        return "unfinished"

    def initial_screenshot(self) -> Path | None:
        """``step_0_*.png``: the screen the first step acted on."""
        found = sorted(self.task_dir.glob("step_0_*.png"))
        return found[0] if found else None

    def observation_path(self, step: Mapping[str, Any]) -> Path | None:
        """The screenshot a step's action was chosen on, if recorded."""
        name = step.get("observation_file")
        if name:
            return self.task_dir / str(name)
        number = int(step.get("step_num", 0))
        if number <= 1:
            return self.initial_screenshot()
        for previous in self.steps:
            if int(previous.get("step_num", 0)) == number - 1 and previous.get("screenshot_file"):
                return self.task_dir / str(previous["screenshot_file"])
        return None


def find_task_dirs(root: Path) -> list[Path]:
    """Every task folder under ``root`` (folders with a ``traj.jsonl`` or ``result.txt``)."""
    root = Path(root)
    found = {
        path.parent
        for name in (TRAJECTORY_FILE, RESULT_FILE, TASK_FILE)
        for path in root.rglob(name)
    }
    return sorted(found)


def read_task(task_dir: Path) -> TaskRecord:
    """Read one task folder (ours, or OSWorld's with only ``traj.jsonl``/``result.txt``)."""
    meta: dict[str, Any] = {}
    if (task_dir / TASK_FILE).is_file():
        meta = json.loads((task_dir / TASK_FILE).read_text())
    steps = []
    if (task_dir / TRAJECTORY_FILE).is_file():
        for line in (task_dir / TRAJECTORY_FILE).read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                if "step_num" in entry:  # OSWorld also logs {"Error": ...} lines
                    steps.append(entry)
    error_file = task_dir / ERROR_FILE
    return TaskRecord(
        task_dir=task_dir,
        task_id=str(meta.get("task_id") or task_dir.name),
        domain=str(meta.get("domain") or task_dir.parent.name),
        score=read_score(task_dir),
        meta=meta,
        steps=steps,
        error=error_file.read_text().strip() if error_file.is_file() else None,
    )


def read_run(root: Path) -> list[TaskRecord]:
    """Every task of a run folder (or of a whole result dir), sorted by domain and task."""
    records = [read_task(d) for d in find_task_dirs(root)]
    return sorted(records, key=lambda r: (r.domain, r.task_id))


def iter_run_dirs(root: Path) -> Iterator[Path]:
    """Folders under ``root`` (itself included) that hold a ``summary.json``."""
    root = Path(root)
    if (root / SUMMARY_FILE).is_file():
        yield root
    for path in sorted(root.rglob(f"*/{SUMMARY_FILE}")):
        yield path.parent
