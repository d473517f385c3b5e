"""ARPO's experience replay: stored successes re-enter task groups that all failed.

Policy (``docs/design/arpo.md#replay-buffer``, bounded and switchable):

* **Insert.** Every trainable episode with ``score > success_threshold`` (0.1) is stored under
  its task. Each task keeps at most ``capacity_per_task`` (8) entries, first in first out.
  Unlike ARPO, a global byte budget also applies: while the stored bytes exceed it, the oldest
  entry over *all* tasks goes first. Failures are never stored.
* **Inject.** A group whose scores have population std < 0.05 and mean < 0.2 (in practice: all
  rollouts failed) gets its first rollout replaced by one stored success of its task, drawn
  uniformly with replacement from the buffer's own RNG. A task with nothing stored keeps its
  group. Only evaluator scores decide this, never the format term.
* **Order** (as in ARPO): inject into every group of the iteration first, compute advantages on
  the injected groups, then insert the *original* groups.
* ``enabled=False`` turns every operation into a no-op, which is plain GRPO.

Stored episodes are private copies: screenshots stay as encoded bytes (ARPO keeps fp32 pixel
values, ~760 MB per trajectory), the per-step ``extra`` entries named in ``compact_extra``
become read-only numpy arrays, and every trajectory handed out is a fresh copy.

``save``/``load`` use pickle (the stored steps hold arbitrary action objects); load only files
you wrote yourself.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import pickle
import random
import tempfile
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from osworld_agents.arpo.rewards import is_trainable

from osworld_gym.pool.trajectory import Trajectory, TrajectoryGroup

logger = logging.getLogger(__name__)

_FORMAT = "osworld-arpo-replay"
_VERSION = 1


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """How the replay buffer stores and injects.

    Attributes:
        enabled: False makes the buffer a no-op (plain GRPO).
        success_threshold: Store episodes whose score is strictly above this (ARPO: 0.1).
        capacity_per_task: Entries kept per task, oldest evicted first (ARPO: 8).
        max_bytes: Budget in bytes over all tasks (screenshots + numpy arrays); None = no
            budget (ARPO). The default 2 GiB holds roughly 500 15-step trajectories of PNGs.
        trigger_std: Inject when the population std of a group's scores is below this.
        trigger_mean: ... and their mean is below this.
        compact_extra: ``(key, numpy dtype)`` pairs: step ``extra`` values stored as arrays.
    """

    enabled: bool = True
    success_threshold: float = 0.1
    capacity_per_task: int = 8
    max_bytes: int | None = 2 * 1024**3
    trigger_std: float = 0.05
    trigger_mean: float = 0.2
    compact_extra: tuple[tuple[str, str], ...] = (("token_ids", "int32"), ("logprobs", "float32"))

    def __post_init__(self) -> None:
        if self.capacity_per_task < 1:
            raise ValueError(f"capacity_per_task must be >= 1, got {self.capacity_per_task}")
        if self.max_bytes is not None and self.max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0 or None, got {self.max_bytes}")


@dataclasses.dataclass(frozen=True)
class Injection:
    """The outcome of :meth:`ReplayBuffer.inject` for one group.

    Attributes:
        group: The group to train on: a new group if a success was injected, else the input.
        replayed: One flag per trajectory of ``group``: True for the injected copy.
    """

    group: TrajectoryGroup
    replayed: tuple[bool, ...]

    @property
    def injected(self) -> bool:
        """Whether a stored success replaced a rollout."""
        return any(self.replayed)


def needs_replay(
    scores: Sequence[float | None], *, max_std: float = 0.05, max_mean: float = 0.2
) -> bool:
    """ARPO's trigger: the group's scores barely vary and are low, i.e. all rollouts failed.

    Args:
        scores: The group's evaluator scores; None (unscored) counts as 0.0.
        max_std: Population (N) std must be below this.
        max_mean: Mean must be below this.

    Returns:
        Whether to inject; False for an empty group.

    Example:
        >>> needs_replay([0.0, 0.0, 0.0]), needs_replay([0.0, 1.0, 0.0])
        (True, False)
    """
    if not scores:
        return False
    values = np.array([0.0 if s is None else s for s in scores], dtype=np.float64)
    return bool(values.std() < max_std and values.mean() < max_mean)


def stored_nbytes(trajectory: Trajectory) -> int:
    """Bytes a stored episode counts against the budget: screenshots plus numpy arrays."""
    arrays = sum(
        value.nbytes
        for step in trajectory.steps
        for value in step.extra.values()
        if isinstance(value, np.ndarray)
    )
    return trajectory.nbytes() + arrays


def compact_copy(trajectory: Trajectory, compact_extra: Iterable[tuple[str, str]]) -> Trajectory:
    """A private copy of ``trajectory`` with the named ``extra`` values as read-only arrays.

    Args:
        trajectory: The episode (left untouched).
        compact_extra: ``(key, dtype)`` pairs; a list of token ids becomes e.g. int32, 4 bytes
            an id instead of a 28-byte Python int plus an 8-byte list slot.

    Returns:
        The copy. Screenshot bytes are shared: they are immutable.
    """
    stored = copy.deepcopy(trajectory)
    for step in stored.steps:
        for key, dtype in compact_extra:
            value = step.extra.get(key)
            if value is None:
                continue
            array = np.array(value, dtype=dtype)
            array.setflags(write=False)
            step.extra[key] = array
    return stored


def _new_counters() -> dict[str, int]:
    return {"stored": 0, "evicted": 0, "injections": 0}


@dataclasses.dataclass
class _Entry:
    seq: int  # global insertion order, for budget eviction across tasks
    trajectory: Trajectory
    nbytes: int


class ReplayBuffer:
    """Per-task FIFO of successful episodes with a byte budget (module docstring).

    Args:
        config: The policy; None uses :class:`ReplayConfig` defaults.
        seed: Seed of the buffer's own ``random.Random``, which makes draws reproducible
            regardless of what else consumes randomness. Ignored when ``rng`` is given.
        rng: An RNG to own instead (its state is saved and restored with the buffer).
    """

    def __init__(
        self,
        config: ReplayConfig | None = None,
        *,
        seed: int | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config if config is not None else ReplayConfig()
        self._rng = rng if rng is not None else random.Random(seed)
        self._entries: dict[str, deque[_Entry]] = {}
        self._bytes = 0
        self._next_seq = 0
        self._counters = _new_counters()

    # -- insert ----------------------------------------------------------------------------

    def add(self, trajectory: Trajectory) -> bool:
        """Store ``trajectory`` if it is a trainable success.

        Args:
            trajectory: An original rollout (not an injected copy).

        Returns:
            Whether it was stored. An episode larger than the whole byte budget is not: it
            would evict everything else and then itself.
        """
        cfg = self.config
        if not cfg.enabled or not is_trainable(trajectory):
            return False
        if trajectory.score is None or trajectory.score <= cfg.success_threshold:
            return False
        stored = compact_copy(trajectory, cfg.compact_extra)
        entry = _Entry(self._next_seq, stored, stored_nbytes(stored))
        if cfg.max_bytes is not None and entry.nbytes > cfg.max_bytes:
            # Storing it would flush every other entry and then the episode itself.
            logger.warning(
                "replay: task %s episode of %d bytes exceeds the whole %d-byte budget; not kept",
                trajectory.task_id,
                entry.nbytes,
                cfg.max_bytes,
            )
            return False
        self._next_seq += 1
        self._entries.setdefault(trajectory.task_id, deque()).append(entry)
        self._bytes += entry.nbytes
        self._counters["stored"] += 1
        self._enforce_limits()
        return True

    def add_group(self, group: TrajectoryGroup) -> int:
        """Store the group's successes; returns how many were kept."""
        return sum(self.add(trajectory) for trajectory in group.trajectories)

    def _enforce_limits(self) -> None:
        cfg = self.config
        for task_id in list(self._entries):
            while len(self._entries[task_id]) > cfg.capacity_per_task:
                self._evict(task_id)
        while cfg.max_bytes is not None and self._bytes > cfg.max_bytes:
            # The global oldest is the oldest head: each task's deque is in insertion order.
            oldest = min(self._entries, key=lambda task: self._entries[task][0].seq)
            self._evict(oldest)

    def _evict(self, task_id: str) -> None:
        entries = self._entries[task_id]
        entry = entries.popleft()
        self._bytes -= entry.nbytes
        self._counters["evicted"] += 1
        if not entries:
            del self._entries[task_id]
        logger.debug("replay: evicted entry %d of task %s", entry.seq, task_id)

    # -- draw and inject -------------------------------------------------------------------

    def sample(self, task_id: str, k: int = 1) -> list[Trajectory]:
        """Draw ``k`` stored successes of a task, uniformly with replacement.

        Args:
            task_id: The task.
            k: How many to draw.

        Returns:
            ``k`` fresh copies, or an empty list when the task has nothing stored (or the
            buffer is disabled); no randomness is consumed then.
        """
        entries = self._entries.get(task_id)
        if not self.config.enabled or not entries or k <= 0:
            return []
        return [copy.deepcopy(e.trajectory) for e in self._rng.choices(entries, k=k)]

    def inject(self, group: TrajectoryGroup) -> Injection:
        """Replace the first rollout of an all-failed group by a stored success of its task.

        Args:
            group: An original group, before advantages are computed.

        Returns:
            The group to train on and which of its trajectories is the replayed copy. The copy
            takes the replaced rollout's index; its score is the one it was stored with.
        """
        cfg = self.config
        unchanged = Injection(group, (False,) * len(group))
        if not cfg.enabled or not group.trajectories:
            return unchanged
        if not needs_replay(group.scores, max_std=cfg.trigger_std, max_mean=cfg.trigger_mean):
            return unchanged
        drawn = self.sample(group.task_id, 1)
        if not drawn:
            return unchanged
        replayed = drawn[0]
        replayed.rollout = group.trajectories[0].rollout
        self._counters["injections"] += 1
        logger.debug("replay: injected a stored success into task %s", group.task_id)
        trajectories = [replayed, *group.trajectories[1:]]
        new_group = TrajectoryGroup(group.task_id, trajectories, list(group.discarded))
        return Injection(new_group, (True,) + (False,) * (len(trajectories) - 1))

    # -- accounting ------------------------------------------------------------------------

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._entries.values())

    @property
    def nbytes(self) -> int:
        """Bytes stored, as counted against the budget."""
        return self._bytes

    def task_sizes(self) -> dict[str, int]:
        """Entries stored per task (tasks with none are absent)."""
        return {task_id: len(entries) for task_id, entries in self._entries.items()}

    def stats(self) -> dict[str, int]:
        """Counters for logging, keyed ``replay/...``."""
        return {
            "replay/size": len(self),
            "replay/tasks": len(self._entries),
            "replay/bytes": self._bytes,
            **{f"replay/{name}": value for name, value in self._counters.items()},
        }

    # -- persistence -----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: entries, byte counts, counters and the RNG state.

        The entries are the stored objects themselves, not copies; do not mutate them.
        """
        entries = sorted(
            (e for task_entries in self._entries.values() for e in task_entries),
            key=lambda e: e.seq,
        )
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "config": dataclasses.asdict(self.config),
            "entries": [
                {"seq": e.seq, "nbytes": e.nbytes, "trajectory": e.trajectory} for e in entries
            ],
            "next_seq": self._next_seq,
            "counters": dict(self._counters),
            "rng_state": self._rng.getstate(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`; the current config's limits then apply.

        Args:
            state: From :meth:`state_dict` (possibly of a buffer with another config).

        Raises:
            ValueError: If ``state`` is not a replay-buffer state of a known version.
        """
        if state.get("format") != _FORMAT or state.get("version") != _VERSION:
            raise ValueError(
                f"not a replay buffer state of version {_VERSION}: "
                f"format={state.get('format')!r}, version={state.get('version')!r}"
            )
        if state["config"] != dataclasses.asdict(self.config):
            logger.warning("replay: loading a state saved with another config: %s", state["config"])
        self._entries, self._bytes = {}, 0
        for item in sorted(state["entries"], key=lambda item: item["seq"]):
            trajectory = compact_copy(item["trajectory"], self.config.compact_extra)
            # Recounted rather than trusted: another compact_extra may have changed the arrays.
            entry = _Entry(int(item["seq"]), trajectory, stored_nbytes(trajectory))
            self._entries.setdefault(trajectory.task_id, deque()).append(entry)
            self._bytes += entry.nbytes
        self._next_seq = int(state["next_seq"])
        self._counters = _new_counters() | dict(state["counters"])
        version, internal, gauss_next = state["rng_state"]
        # Tuples again, should the state have gone through JSON (which turns them into lists).
        self._rng.setstate((version, tuple(internal), gauss_next))
        self._enforce_limits()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`state_dict` to ``path`` (pickle), atomically.

        Args:
            path: The file; written through a temporary file in the same folder and renamed,
                so a crash mid-write leaves the previous file intact.
        """
        path = Path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(self.state_dict(), f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        logger.info("replay: saved %d entries (%d bytes) to %s", len(self), self._bytes, path)

    def load(self, path: str | os.PathLike[str]) -> None:
        """Restore a buffer written by :meth:`save`. Unpickles: trusted files only.

        Args:
            path: The file.
        """
        with open(path, "rb") as f:
            state = pickle.load(f)
        self.load_state_dict(state)
        logger.info("replay: loaded %d entries (%d bytes) from %s", len(self), self._bytes, path)
