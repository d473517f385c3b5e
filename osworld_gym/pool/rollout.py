"""Episode bookkeeping shared by the collectors: requests, running episodes, whole groups.

Pure state, no scheduling: a collector asks for the next request, reports results, and gets
back finished groups. An episode cut by an infrastructure fault is re-queued (at the front, so
its group finishes soon) up to ``max_attempts`` tries; its cut attempt is kept in the group's
``discarded`` list, so every requested episode is accounted for.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from osworld_gym.pool.policy import PolicyOutput, PolicyRequest
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.state import Command
from osworld_gym.pool.trajectory import StepRecord, Trajectory, TrajectoryGroup

TaskRef = str | Mapping[str, Any]
"""A task id, or reset options with a ``"task_id"`` (and anything else the env takes)."""


@dataclass(frozen=True)
class EpisodeRequest:
    """One (task, rollout) episode to run."""

    group: int
    rollout: int
    attempt: int = 0


@dataclass
class Episode:
    """An episode running on an env."""

    request: EpisodeRequest
    trajectory: Trajectory
    started: float
    observation: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes | None = None
    chosen: PolicyOutput | None = None
    policy_seconds: float = 0.0


def task_options(task: TaskRef) -> dict[str, Any]:
    """Reset options of a task reference."""
    return {"task_id": task} if isinstance(task, str) else dict(task)


class RolloutBook:
    """Requests, running episodes and groups of one collection.

    Args:
        tasks: The tasks; each becomes a group of ``group_size`` rollouts.
        group_size: Rollouts per task (GRPO's n): one number for every task, or one per task
            (DART-style budgets that give harder tasks more rollouts).
        requeue_infra_errors: Re-run episodes cut by infrastructure faults.
        max_attempts: Tries per episode; after the last, a cut trajectory is kept as is.
    """

    def __init__(
        self,
        tasks: Sequence[TaskRef],
        group_size: int | Sequence[int],
        *,
        requeue_infra_errors: bool = True,
        max_attempts: int = 3,
    ) -> None:
        options = [task_options(t) for t in tasks]
        for option in options:
            if "task_id" not in option:
                raise ValueError(f"a task needs a 'task_id': {option!r}")
        sizes = [group_size] * len(options) if isinstance(group_size, int) else list(group_size)
        if len(sizes) != len(options):
            raise ValueError(f"{len(sizes)} group sizes for {len(options)} tasks")
        if any(not _is_size(n) for n in sizes):
            raise ValueError(f"group sizes must be integers >= 1, got {group_size}")
        self.requeue = requeue_infra_errors
        self.max_attempts = max_attempts
        self.tasks: list[dict[str, Any]] = []
        self.group_sizes: list[int] = []
        self.tags: list[Any] = []
        # Task-major order: all rollouts of a task start together, so groups finish early.
        self.queue: deque[EpisodeRequest] = deque()
        self.running: dict[int, Episode] = {}
        self._finished: dict[int, dict[int, Trajectory]] = {}
        self._discarded: dict[int, list[Trajectory]] = {}
        self.requeued = 0
        for option, size in zip(options, sizes, strict=True):
            self.add(option, size)

    def add(self, task: TaskRef, group_size: int, tag: Any = None) -> int:
        """Queue one more group (a streaming collection's next task); return its index.

        Args:
            task: The task.
            group_size: Its rollouts.
            tag: Anything the caller wants back with the finished group (see
                ``on_result_tagged()``).

        Raises:
            ValueError: No ``task_id``, or a size below 1.
        """
        options = task_options(task)
        if "task_id" not in options:
            raise ValueError(f"a task needs a 'task_id': {options!r}")
        if not _is_size(group_size):
            raise ValueError(f"group sizes must be integers >= 1, got {group_size!r}")
        index = len(self.tasks)
        self.tasks.append(options)
        self.group_sizes.append(group_size)
        self.tags.append(tag)
        self._finished[index], self._discarded[index] = {}, []
        self.queue.extend(EpisodeRequest(index, r) for r in range(group_size))
        return index

    @property
    def done(self) -> bool:
        """Every episode finished."""
        return not self.queue and not self.running

    def start(self, env_id: int) -> dict[str, Any]:
        """Assign the next request to an env; return the reset options to send."""
        request = self.queue.popleft()
        options = self.tasks[request.group]
        trajectory = Trajectory(
            task_id=str(options["task_id"]),
            rollout=request.rollout,
            attempt=request.attempt,
            env_id=env_id,
        )
        self.running[env_id] = Episode(request, trajectory, time.monotonic())
        return dict(options)

    def give_back(self, env_id: int) -> None:
        """The env could not run its episode (it was retired): queue it again, first."""
        episode = self.running.pop(env_id)
        self.queue.appendleft(episode.request)

    def chose(self, env_id: int, output: PolicyOutput, seconds: float) -> None:
        """Record the policy's choice for an env's next step."""
        episode = self.running[env_id]
        episode.chosen, episode.policy_seconds = output, seconds

    def request_for(self, env_id: int) -> PolicyRequest:
        """What the policy needs to choose this env's next action."""
        episode = self.running[env_id]
        return PolicyRequest(
            env_id=env_id,
            task_id=episode.trajectory.task_id,
            rollout=episode.request.rollout,
            step=len(episode.trajectory.steps),
            observation=episode.observation,
            info=episode.info,
            trajectory=episode.trajectory,
            tag=self.tags[episode.request.group],
        )

    def on_result(self, result: EnvResult, screenshot: bytes | None) -> TrajectoryGroup | None:
        """Record a reset or step result; return the group it completed, if it did.

        After this, the env either waits for an action (``env_id in running``) or is free.
        """
        done = self.on_result_tagged(result, screenshot)
        return None if done is None else done[1]

    def on_result_tagged(
        self, result: EnvResult, screenshot: bytes | None
    ) -> tuple[Any, TrajectoryGroup] | None:
        """``on_result()``, with the completed group's tag (given to ``add()``)."""
        episode = self.running[result.env_id]
        trajectory = episode.trajectory
        if result.error is not None:
            trajectory.error = f"{type(result.error).__name__}: {result.error}"
            return self._finish(result.env_id)
        if result.kind is Command.RESET:
            trajectory.reset_timings = dict(result.info.get("timings") or {})
            if isinstance(result.observation, Mapping):
                trajectory.instruction = str(result.observation.get("instruction", ""))
        else:
            trajectory.steps.append(self._step_record(episode, result))
            episode.chosen = None
        episode.observation, episode.info, episode.screenshot = (
            result.observation, result.info, screenshot,
        )  # fmt: skip
        if not result.done:
            return None
        trajectory.final_screenshot = screenshot
        trajectory.terminated, trajectory.truncated = result.terminated, result.truncated
        trajectory.infra_error = result.infra_error
        trajectory.evaluation_error = result.info.get("evaluation_error")
        score = result.info.get("score")
        trajectory.score = None if score is None else float(score)
        return self._finish(result.env_id)

    @staticmethod
    def _step_record(episode: Episode, result: EnvResult) -> StepRecord:
        chosen = episode.chosen
        assert chosen is not None
        timings = {k: float(v) for k, v in (result.info.get("timings") or {}).items()}
        timings.update(policy=episode.policy_seconds, env=result.elapsed)
        return StepRecord(
            screenshot=episode.screenshot,
            action=chosen.action,
            text=chosen.text,
            parse_error=result.info.get("parse_error"),
            action_error=result.info.get("action_error"),
            reward=result.reward,
            timings=timings,
            extra=dict(chosen.extra),
        )

    def _finish(self, env_id: int) -> tuple[Any, TrajectoryGroup] | None:
        episode = self.running.pop(env_id)
        request, trajectory = episode.request, episode.trajectory
        trajectory.wall_seconds = time.monotonic() - episode.started
        if trajectory.infra_error and self.requeue and request.attempt + 1 < self.max_attempts:
            self._discarded[request.group].append(trajectory)
            self.queue.appendleft(
                EpisodeRequest(request.group, request.rollout, request.attempt + 1)
            )
            self.requeued += 1
            return None
        finished = self._finished[request.group]
        finished[request.rollout] = trajectory
        size = self.group_sizes[request.group]
        if len(finished) < size:
            return None
        group = TrajectoryGroup(
            task_id=trajectory.task_id,
            trajectories=[finished[r] for r in range(size)],
            discarded=self._discarded[request.group],
        )
        # Handed over: the book keeps no reference, so a caller that streams groups and drops
        # them holds no screenshots of finished groups (about 20 kB an episode at 336x224).
        del self._finished[request.group], self._discarded[request.group]
        return self.tags[request.group], group


def _is_size(n: object) -> bool:
    return isinstance(n, int) and n >= 1
