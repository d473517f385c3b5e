"""How faithful the desktop is to OSWorld's, task by task (``tasks report --fidelity``).

What is checked: the empty episodes' scores and the first frames.

For each task, on a real desktop, each pass plays two empty episodes: DONE as the first action,
and FAIL as the first action. On OSWorld's VM the starting state of a feasible task does not
solve it (DONE scores 0) and an infeasible task is solved by FAIL alone (it scores 1). A
feasible task that scores 1 for doing nothing, or an infeasible one whose FAIL does not score 1,
says that the starting state here is not OSWorld's. An episode that cannot be scored (an
evaluation or infrastructure error) is listed with its error, never counted as a 0.

Each reset's first observation is compared with the screen once it stayed still for a second
(``REFERENCE_QUIET``): a first frame that differs was taken before the task's setup had
settled (a black window, a splash screen). Differences confined to a text caret, the pointer or
the top bar's clock are not counted (``frame_difference()``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from osworld_gym.actions import Done, Fail
from osworld_gym.errors import OSWorldGymError

# What an episode of one task can raise without the report stopping: the package's own errors
# (a setup step, a guest, a desktop that died) and the host's (a file, a socket).
_EPISODE_ERRORS = (OSWorldGymError, OSError)

logger = logging.getLogger(__name__)

REFERENCE_QUIET = 1.0  # seconds the screen must stay unchanged to be the settled reference
REFERENCE_TIMEOUT = 30.0  # at most this long for it (an app that animates)
# Differences a settled screen may have from an early-enough first frame: a text caret's blink
# (one box at most this wide and tall), the pointer's shape (one box this size), the clock.
CARET_BOX = (4, 40)
POINTER_BOX = (64, 64)
TOP_BAR_ROWS = 32


@dataclass(frozen=True)
class TaskFidelity:
    """One task's empty episodes and first frames.

    Attributes:
        task_id: The task.
        domain: Its domain.
        infeasible: OSWorld's answer is FAIL.
        done_score: The score of DONE as the first action (first pass; None: not scored).
        fail_score: The score of FAIL as the first action (first pass; None: not scored).
        errors: Why an episode could not be scored or run, one line each.
        setup_warnings: What the task's setup warned about at its resets (deduplicated).
        early_frames: For each reset whose first frame was early, what differed.
        resets: How many resets were checked.
    """

    task_id: str
    domain: str | None
    infeasible: bool
    done_score: float | None = None
    fail_score: float | None = None
    errors: tuple[str, ...] = ()
    setup_warnings: tuple[str, ...] = ()
    early_frames: tuple[str, ...] = ()
    resets: int = 0

    def findings(self) -> list[str]:
        """What is not as on OSWorld's VM, one line each (empty when nothing)."""
        found = [f"cannot be scored: {error}" for error in self.errors]
        if not self.infeasible and self.done_score == 1.0:
            found.append("scores 1 with DONE: the starting state solves it")
        if self.infeasible and self.fail_score is not None and self.fail_score != 1.0:
            found.append(f"infeasible, but FAIL scores {self.fail_score:g}")
        if self.early_frames:
            found.append(
                f"first frame early in {len(self.early_frames)} of {self.resets} resets: "
                f"{self.early_frames[0]}"
            )
        return found


@dataclass(frozen=True)
class FidelityReport:
    """The fidelity of a set of tasks on one desktop kind.

    Attributes:
        desktop: What the episodes ran on (provider and session), for the header.
        passes: Resets per task and episode kind.
        tasks: One entry per task.
        not_run: Tasks left out, with the reason (not runnable here).
    """

    desktop: str
    passes: int
    tasks: tuple[TaskFidelity, ...]
    not_run: tuple[tuple[str, str], ...] = ()

    def counts(self) -> dict[str, int]:
        """How many tasks have each kind of finding."""
        return {
            "tasks": len(self.tasks),
            "feasible_scoring_1_with_done": sum(
                not t.infeasible and t.done_score == 1.0 for t in self.tasks
            ),
            "infeasible_not_1_with_fail": sum(
                t.infeasible and t.fail_score is not None and t.fail_score != 1.0
                for t in self.tasks
            ),
            "not_scored": sum(bool(t.errors) for t in self.tasks),
            "early_first_frames": sum(len(t.early_frames) for t in self.tasks),
            "resets": sum(t.resets for t in self.tasks),
            "not_run": len(self.not_run),
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "desktop": self.desktop,
            "passes": self.passes,
            "counts": self.counts(),
            "tasks": [asdict(t) | {"findings": t.findings()} for t in self.tasks],
            "not_run": [{"task_id": t, "reason": r} for t, r in self.not_run],
        }


def frame_difference(first: np.ndarray, settled: np.ndarray) -> str | None:
    """What differs between a first frame and the settled screen; None when nothing counts.

    Not counted: differences only in the top ``TOP_BAR_ROWS`` rows (the clock), or in at
    most two separate spots, each no larger than a caret (``CARET_BOX``) or the pointer
    (``POINTER_BOX``): a caret's blink and the pointer's shape, which can change at once.
    """
    if first.shape != settled.shape:
        return f"the frame is {first.shape[:2]}, the screen {settled.shape[:2]} (height, width)"
    changed = np.any(first != settled, axis=-1)
    changed[:TOP_BAR_ROWS] = False
    rows, cols = np.nonzero(changed)
    if rows.size == 0:
        return None
    spots = _spots(rows, cols)
    if len(spots) <= 2 and all(_small(spot) for spot in spots):
        return None
    top, left = int(rows.min()), int(cols.min())
    height, width = int(rows.max()) - top + 1, int(cols.max()) - left + 1
    share = rows.size / changed.size
    return f"{share:.1%} of the pixels differ, in {width}x{height} at ({left}, {top})"


_SPOT_GAP = 16  # pixels between two spots of change


def _spots(rows: np.ndarray, cols: np.ndarray, depth: int = 3) -> list[tuple[int, int]]:
    """Split changed pixels at wide gaps (columns, then rows); each part's (width, height)."""
    for axis in (cols, rows):
        order = np.sort(np.unique(axis))
        gaps = np.nonzero(np.diff(order) > _SPOT_GAP)[0]
        if depth > 0 and gaps.size:
            cut = order[gaps[0]]
            below = axis <= cut
            return _spots(rows[below], cols[below], depth - 1) + _spots(
                rows[~below], cols[~below], depth - 1
            )
    return [(int(cols.max() - cols.min()) + 1, int(rows.max() - rows.min()) + 1)]


def _small(spot: tuple[int, int]) -> bool:
    width, height = spot
    return any(width <= w and height <= h for w, h in (CARET_BOX, POINTER_BOX))


@dataclass
class _Findings:
    done: list[float | None] = field(default_factory=list)
    fail: list[float | None] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    early: list[str] = field(default_factory=list)
    resets: int = 0


def check_tasks(
    env: Any,
    tasks: Sequence[Any],
    passes: int = 1,
    progress: Callable[[str], None] | None = None,
    first_frame: Callable[[Any, np.ndarray], None] | None = None,
) -> list[TaskFidelity]:
    """Play each task's empty episodes on ``env`` (an ``OSWorldEnv``).

    Args:
        env: The env; its tasks include ``tasks``; structured actions.
        tasks: The tasks (``Task``) to check, in order.
        passes: Each task's DONE and FAIL episodes are played this many times (the scores are
            the first pass's; every reset's first frame is checked).
        progress: Called with a line per task once checked.
        first_frame: Called with each task and the first observation of its first reset
            (the screenshot gallery).
    """
    results = []
    for task in tasks:
        found = _Findings()
        for _ in range(passes):
            for kind, action in (("DONE", Done()), ("FAIL", Fail())):
                shown = first_frame if found.resets == 0 else None
                score = _empty_episode(env, task, kind, action, found, shown)
                (found.done if kind == "DONE" else found.fail).append(score)
        result = TaskFidelity(
            task_id=task.id,
            domain=task.domain,
            infeasible=task.infeasible,
            done_score=found.done[0] if found.done else None,
            fail_score=found.fail[0] if found.fail else None,
            errors=tuple(dict.fromkeys(found.errors)),
            setup_warnings=tuple(dict.fromkeys(found.warnings)),
            early_frames=tuple(found.early),
            resets=found.resets,
        )
        results.append(result)
        if progress is not None:
            findings = result.findings()
            progress(f"{task.domain}/{task.id}: " + ("; ".join(findings) or "as on OSWorld"))
    return results


def _empty_episode(
    env: Any,
    task: Any,
    kind: str,
    action: Any,
    found: _Findings,
    first_frame: Callable[[Any, np.ndarray], None] | None,
) -> float | None:
    """Reset to ``task``, check the first frame, play ``action``; the score (None: none)."""
    # What breaks is this task's finding, and the next task still runs.
    try:
        obs, info = env.reset(options={"task_id": task.id})
    except _EPISODE_ERRORS as e:
        found.errors.append(f"{kind} episode: reset failed: {type(e).__name__}: {e}")
        return None
    found.resets += 1
    if first_frame is not None:
        first_frame(task, obs["screenshot"])
    found.warnings.extend(str(w) for w in info.get("setup_warnings") or ())
    try:
        early = _early(env, obs["screenshot"])
    except _EPISODE_ERRORS as e:
        found.errors.append(f"{kind} episode: the settled screen could not be read: {e}")
        return None
    if early is not None:
        found.early.append(f"{kind} reset: {early}")
    try:
        _, reward, _, _, info = env.step(action)
    except _EPISODE_ERRORS as e:
        found.errors.append(f"{kind} episode: step failed: {type(e).__name__}: {e}")
        return None
    if info.get("infra_error"):
        found.errors.append(f"{kind} episode: {info['infra_error']}")
        return None
    if info.get("evaluation_error"):
        found.errors.append(f"{kind} episode: {info['evaluation_error']}")
        return None
    return float(reward)


def _early(env: Any, first: np.ndarray) -> str | None:
    """How the reset's first frame differs from the screen once it stayed still (None: not)."""
    client = env.unwrapped._desktop.client  # noqa: SLF001 - the report reads the desktop
    shot = client.screenshot(
        format="raw",
        settle=True,
        settle_mode="events",
        settle_quiet=REFERENCE_QUIET,
        settle_timeout=REFERENCE_TIMEOUT,
    )
    settled = shot.to_array()
    if settled.shape != first.shape:
        from PIL import Image

        height, width = first.shape[:2]
        settled = np.asarray(Image.fromarray(settled).resize((width, height)))
    return frame_difference(first, settled)


def format_fidelity_report(report: FidelityReport) -> str:
    """The report as text: a line per task with findings, then the counts."""
    lines = [f"fidelity on {report.desktop}: {len(report.tasks)} tasks, {report.passes} pass(es)"]
    for task in report.tasks:
        findings = task.findings()
        if findings:
            lines.append(f"{task.domain}/{task.task_id}:")
            lines.extend(f"    {finding}" for finding in findings)
    counts = report.counts()
    lines += [
        "",
        f"feasible tasks scoring 1 with DONE:    {counts['feasible_scoring_1_with_done']}",
        f"infeasible tasks not 1 with FAIL:      {counts['infeasible_not_1_with_fail']}",
        f"tasks with episodes not scored:        {counts['not_scored']}",
        f"early first frames:                    {counts['early_first_frames']} of "
        f"{counts['resets']} resets",
        f"not run (not runnable here):           {counts['not_run']}",
    ]
    return "\n".join(lines)


def runnable_tasks(report: Any, tasks: Iterable[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
    """Split ``tasks`` by a ``RunnableReport``.

    Returns:
        The tasks runnable here offline, and the others' ids with the reason.
    """
    verdicts = {item.task_id: item for item in report.tasks}
    run, skipped = [], []
    for task in tasks:
        item = verdicts[task.id]
        if item.verdict == "runnable":
            run.append(task)
        else:
            skipped.append((task.id, f"{item.verdict}: {item.reason}"))
    return run, skipped
