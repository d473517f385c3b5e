"""ARPO's experience replay: stored successes re-enter task groups that all failed.

Policy (``docs/design/arpo.md#replay-buffer``, bounded and switchable):

* **Insert.** Every trainable episode with ``score > success_threshold`` (0.1) is stored under
  its task. Each task keeps at most ``capacity_per_task`` (8) entries, first in first out.
  Failures are never stored.
* **Budget.** Unlike ARPO, a byte budget over all tasks also applies. While the stored bytes
  exceed it, one entry at a time goes, chosen by ``eviction``:

  - ``"largest-task"`` (default): the oldest entry of the task holding the most bytes among
    the tasks holding at least two entries (ties: the task whose oldest entry is older). A
    task's last success is therefore never evicted while another task holds several. Only
    when every task holds exactly one entry does a task lose its last success: the oldest
    entry over all tasks goes (the budget is then too small for one success per task; the
    newest success stays, and the size of an episode plays no part, so long episodes of hard
    tasks are not singled out).
  - ``"oldest"``: the oldest entry over all tasks, whatever its task holds (the first
    bounded policy; it empties the rarely solved tasks first, see
    ``benchmarks/bench_replay.py``).

  An INFO log line summarises every insertion that had to evict for the budget.
* **Inject.** A group whose scores have population std < 0.05 and mean < 0.2 (in practice: all
  rollouts failed) gets its first rollout replaced by one stored success of its task, drawn
  uniformly with replacement from the buffer's own RNG. A task with nothing stored keeps its
  group (an *empty trigger*, counted). Only evaluator scores decide this, never the format term.
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
from typing import Any, Literal

import numpy as np
from osworld_agents.arpo.rewards import is_trainable

from osworld_gym.pool.trajectory import Trajectory, TrajectoryGroup

logger = logging.getLogger(__name__)

_FORMAT = "osworld-arpo-replay"
_VERSION = 1  # unchanged by the eviction policy and the empty-trigger counter: both load old states

Eviction = Literal["largest-task", "oldest"]
EVICTION_POLICIES: tuple[str, ...] = ("largest-task", "oldest")


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """How the replay buffer stores and injects.

    Attributes:
        enabled: False makes the buffer a no-op (plain GRPO).
        success_threshold: Store episodes whose score is strictly above this (ARPO: 0.1).
        capacity_per_task: Entries kept per task, oldest evicted first (ARPO: 8).
        max_bytes: Budget in bytes over all tasks (screenshots + numpy arrays); None = no
            budget (ARPO). The default 2 GiB holds roughly 500 15-step trajectories of PNGs.
        eviction: Which entry goes when the budget is exceeded: ``"largest-task"`` (the
            oldest of the task holding the most bytes, never a task's last success while
            another task holds several) or ``"oldest"`` (the oldest over all tasks).
        trigger_std: Inject when the population std of a group's scores is below this.
        trigger_mean: ... and their mean is below this.
        compact_extra: ``(key, numpy dtype)`` pairs: step ``extra`` values stored as arrays.
    """

    enabled: bool = True
    success_threshold: float = 0.1
    capacity_per_task: int = 8
    max_bytes: int | None = 2 * 1024**3
    eviction: Eviction = "largest-task"
    trigger_std: float = 0.05
    trigger_mean: float = 0.2
    compact_extra: tuple[tuple[str, str], ...] = (("token_ids", "int32"), ("logprobs", "float32"))

    def __post_init__(self) -> None:
        if self.capacity_per_task < 1:
            raise ValueError(f"capacity_per_task must be >= 1, got {self.capacity_per_task}")
        if self.max_bytes is not None and self.max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0 or None, got {self.max_bytes}")
        if self.eviction not in EVICTION_POLICIES:
            raise ValueError(f"eviction must be one of {EVICTION_POLICIES}, got {self.eviction!r}")


@dataclasses.dataclass(frozen=True)
class Injection:
    """The outcome of ``ReplayBuffer.inject()`` for one group.

    Attributes:
        group: The group to train on: a new group if a success was injected, else the input.
        replayed: One flag per trajectory of ``group``: True for the injected copy.
        triggered: Whether the group met the replay trigger (all rollouts failed), whether or
            not a stored success was found for it.
    """

    group: TrajectoryGroup
    replayed: tuple[bool, ...]
    triggered: bool = False

    @property
    def injected(self) -> bool:
        """Whether a stored success replaced a rollout."""
        return any(self.replayed)

    @property
    def empty_trigger(self) -> bool:
        """The group needed a replayed success and its task had none stored."""
        return self.triggered and not self.injected


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
    # Old states lack empty_triggers: loading merges them into these zeros.
    return {"stored": 0, "evicted": 0, "injections": 0, "empty_triggers": 0}


def _size(nbytes: int) -> str:
    """``nbytes`` for a log line: KiB, MiB or GiB with one decimal."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes / 2**10:.1f} KiB"


@dataclasses.dataclass
class _Entry:
    seq: int  # global insertion order, for budget eviction across tasks
    trajectory: Trajectory
    nbytes: int


class ReplayBuffer:
    """Per-task FIFO of successful episodes with a byte budget (module docstring).

    Args:
        config: The policy; None uses ``ReplayConfig`` defaults.
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
        self._task_bytes: dict[str, int] = {}
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
        self._append(trajectory.task_id, entry)
        self._counters["stored"] += 1
        self._enforce_limits()
        return True

    def add_group(self, group: TrajectoryGroup) -> int:
        """Store the group's successes; returns how many were kept."""
        return sum(self.add(trajectory) for trajectory in group.trajectories)

    def _append(self, task_id: str, entry: _Entry) -> None:
        self._entries.setdefault(task_id, deque()).append(entry)
        self._task_bytes[task_id] = self._task_bytes.get(task_id, 0) + entry.nbytes
        self._bytes += entry.nbytes

    def _enforce_limits(self) -> None:
        cfg = self.config
        for task_id in list(self._entries):
            while len(self._entries[task_id]) > cfg.capacity_per_task:
                self._evict(task_id)
        evicted: dict[str, int] = {}
        emptied: list[str] = []
        while cfg.max_bytes is not None and self._bytes > cfg.max_bytes:
            task_id = self._budget_victim()
            evicted[task_id] = evicted.get(task_id, 0) + 1
            self._evict(task_id)
            if task_id not in self._entries:
                emptied.append(task_id)
        if evicted:
            self._log_budget_eviction(evicted, emptied)

    def _budget_victim(self) -> str:
        """The task whose oldest entry goes next to meet the byte budget (module docstring)."""
        entries = self._entries
        if self.config.eviction == "largest-task":
            several = [task for task, queue in entries.items() if len(queue) > 1]
            if several:
                # Most bytes first; on a tie the task with the older oldest entry.
                return max(several, key=lambda t: (self._task_bytes[t], -entries[t][0].seq))
        # "oldest", or every task down to one entry: the global oldest is the oldest head,
        # since each task's deque is in insertion order.
        return min(entries, key=lambda task: entries[task][0].seq)

    def _evict(self, task_id: str) -> None:
        entries = self._entries[task_id]
        entry = entries.popleft()
        self._bytes -= entry.nbytes
        self._task_bytes[task_id] -= entry.nbytes
        self._counters["evicted"] += 1
        if not entries:
            del self._entries[task_id]
            del self._task_bytes[task_id]
        logger.debug("replay: evicted entry %d of task %s", entry.seq, task_id)

    def _log_budget_eviction(self, evicted: dict[str, int], emptied: list[str]) -> None:
        """One INFO line per insertion that evicted for the budget: what went, what is left."""
        per_task = self._task_bytes.values()
        budget = self.config.max_bytes or 0
        most = max(per_task, default=0)
        count = sum(evicted.values())
        logger.info(
            "replay: byte budget %s full, %r evicted %d entr%s (%s); %d task(s) hold %s, "
            "per task %s..%s (largest share %.1f%% of the budget), %d at their last success%s",
            _size(budget),
            self.config.eviction,
            count,
            "y" if count == 1 else "ies",
            ", ".join(f"{task} x{n}" for task, n in evicted.items()),
            len(self._entries),
            _size(self._bytes),
            _size(min(per_task, default=0)),
            _size(most),
            100.0 * most / budget if budget else 0.0,
            sum(len(queue) == 1 for queue in self._entries.values()),
            f"; lost their only success: {', '.join(emptied)}" if emptied else "",
        )

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
            takes the replaced rollout's index; its score is the one it was stored with. A
            triggered group whose task has nothing stored comes back unchanged, marked
            ``triggered`` (an empty trigger, counted as ``replay/empty_triggers``).
        """
        cfg = self.config
        unchanged = Injection(group, (False,) * len(group))
        if not cfg.enabled or not group.trajectories:
            return unchanged
        if not needs_replay(group.scores, max_std=cfg.trigger_std, max_mean=cfg.trigger_mean):
            return unchanged
        drawn = self.sample(group.task_id, 1)
        if not drawn:
            self._counters["empty_triggers"] += 1
            logger.debug(
                "replay: task %s failed every rollout and has nothing stored", group.task_id
            )
            return dataclasses.replace(unchanged, triggered=True)
        replayed = drawn[0]
        replayed.rollout = group.trajectories[0].rollout
        self._counters["injections"] += 1
        logger.debug("replay: injected a stored success into task %s", group.task_id)
        trajectories = [replayed, *group.trajectories[1:]]
        new_group = TrajectoryGroup(group.task_id, trajectories, list(group.discarded))
        return Injection(new_group, (True,) + (False,) * (len(trajectories) - 1), triggered=True)

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

    def task_bytes(self) -> dict[str, int]:
        """Bytes stored per task, as counted against the budget (tasks with none are absent)."""
        return dict(self._task_bytes)

    def gauges(self) -> dict[str, float]:
        """The buffer's state now, keyed ``replay/...``: identical on every rank of a run.

        ``size``, ``tasks`` and ``bytes``; ``task_bytes_max``/``task_bytes_min`` over the
        tasks holding something; ``task_share_max`` (the largest task's bytes over the budget,
        0 without one) and ``budget_used`` (stored bytes over the budget, 0 without one);
        ``single_tasks`` (tasks down to one success, which ``largest-task`` eviction spares
        while another task holds several);
        ``evicted`` (entries evicted so far, capacity and budget together).
        """
        per_task = self._task_bytes.values()
        budget = self.config.max_bytes
        most = max(per_task, default=0)
        return {
            "replay/size": len(self),
            "replay/tasks": len(self._entries),
            "replay/bytes": self._bytes,
            "replay/task_bytes_max": most,
            "replay/task_bytes_min": min(per_task, default=0),
            "replay/task_share_max": most / budget if budget else 0.0,
            "replay/budget_used": self._bytes / budget if budget else 0.0,
            "replay/single_tasks": sum(len(q) == 1 for q in self._entries.values()),
            "replay/evicted": self._counters["evicted"],
        }

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
        """Restore a ``state_dict()``; the current config's limits then apply.

        Args:
            state: From ``state_dict()`` (possibly of a buffer with another config).

        Raises:
            ValueError: If ``state`` is not a replay-buffer state of a known version.
        """
        if state.get("format") != _FORMAT or state.get("version") != _VERSION:
            raise ValueError(
                f"not a replay buffer state of version {_VERSION}: "
                f"format={state.get('format')!r}, version={state.get('version')!r}"
            )
        current = dataclasses.asdict(self.config)
        # States saved before a field existed lack it; only the fields both know are compared.
        if any(current.get(key, value) != value for key, value in state["config"].items()):
            logger.warning("replay: loading a state saved with another config: %s", state["config"])
        self._entries, self._task_bytes, self._bytes = {}, {}, 0
        for item in sorted(state["entries"], key=lambda item: item["seq"]):
            trajectory = compact_copy(item["trajectory"], self.config.compact_extra)
            # Recounted rather than trusted: another compact_extra may have changed the arrays.
            entry = _Entry(int(item["seq"]), trajectory, stored_nbytes(trajectory))
            self._append(trajectory.task_id, entry)
        self._next_seq = int(state["next_seq"])
        self._counters = _new_counters() | dict(state["counters"])
        version, internal, gauss_next = state["rng_state"]
        # Tuples again, should the state have gone through JSON (which turns them into lists).
        self._rng.setstate((version, tuple(internal), gauss_next))
        self._enforce_limits()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``state_dict()`` to ``path`` (pickle), atomically.

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
        """Restore a buffer written by ``save()``. Unpickles: trusted files only.

        Args:
            path: The file.
        """
        with open(path, "rb") as f:
            state = pickle.load(f)
        self.load_state_dict(state)
        logger.info("replay: loaded %d entries (%d bytes) from %s", len(self), self._bytes, path)
