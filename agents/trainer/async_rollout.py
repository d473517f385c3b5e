"""DART-GUI's decoupled mode: the desktops keep rolling out while the trainer updates.

The coupled loop collects an iteration's groups, then updates: the desktops idle during the
update and the model idles while they act. Here one *streaming* collection
(``stream()``) runs on the pool's event loop for
the whole run. The trainer keeps its ``TaskFeed``
``lookahead`` iterations ahead of the iteration it trains on (the schedule's next tasks, with
their rollout budget), so a desktop that finishes an episode starts one of a later iteration at
once -- during the update too. The rollout engine is a separate full-weight replica that
receives the new weights after every update between two policy calls
(``push_weights()``), so an episode may span versions.

**Staleness.** Every step records the weight version that sampled it
(``step.extra["weight_version"]``); a group's version is its oldest step's. Iteration ``k``
(the trainer at version ``k``) trains only on groups of version >= ``k - max_staleness``; an
older group is dropped (``async/stale_groups``) and its task run again at once, so every
iteration still trains on its scheduled tasks. The PPO loss weights each token by
``min(1, exp(old - sampled))`` (``osworld_agents.arpo.loss.truncated_importance_weights()``).

**Bounded.** The feed holds at most ``lookahead`` iterations beyond the one being trained
(``max(1, max_staleness)``: a group started after iteration ``k``'s tasks were fed is at most
that stale when consumed), so finished groups waiting for the trainer never exceed those
iterations' groups.

**Checkpoints.** The schedule is drawn ahead; a checkpoint saves it as it was right after the
checkpointed iteration's own draw (``AsyncRollouts.rewound()``), so a resumed run trains on
the same tasks. Episodes in flight at the checkpoint (later iterations') are lost and
re-collected after a resume, with the rollout budget known then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import logging
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from osworld_agents.trainer.config import TrainConfig
from osworld_agents.trainer.distributed import DistContext, shard
from osworld_agents.trainer.rollout import Collection, _agent_config, derive_seed
from osworld_agents.trainer.tasks import RolloutBudget, TaskSchedule

from osworld_gym.policies.uitars import UITARSAgent
from osworld_gym.pool import CollectionStats, CollectorConfig, EnvPool, RolloutCollector
from osworld_gym.pool.collector import TaskFeed
from osworld_gym.pool.policy import PolicyOutput, PolicyRequest
from osworld_gym.pool.trajectory import Trajectory, TrajectoryGroup

logger = logging.getLogger(__name__)

__all__ = [
    "AsyncRollouts",
    "check_async",
    "VersionedPolicy",
    "group_version",
    "split_stale",
    "stats_delta",
    "trajectory_version",
]

VERSION_KEY = "weight_version"


def check_async(config: TrainConfig) -> None:
    """Refuse what the decoupled mode does not do.

    Every rank runs its own stream over its own pool and replica; the collectives of the loop
    (success rates, replay, the update, metrics, evaluation) stay in the main thread, in the
    same order on every rank, so ``torchrun`` works as in the coupled loop.

    Raises:
        ValueError: ``max_staleness`` below 0, or teacher-forced SFT (a scripted
            demonstration policy has no weights to be stale).
    """
    if config.max_staleness < 0:
        raise ValueError(f"max_staleness must be >= 0, got {config.max_staleness}")
    if config.algo == "sft":
        raise ValueError("async_rollouts needs a learning policy: algo 'sft' rolls out a demo")


def trajectory_version(trajectory: Trajectory) -> int | None:
    """The policy version of an episode: its oldest step's (None: no step says)."""
    versions = [s.extra.get(VERSION_KEY) for s in trajectory.steps]
    known = [int(v) for v in versions if v is not None]
    return min(known) if known else None


def group_version(group: TrajectoryGroup) -> int | None:
    """The policy version of a group: its oldest episode's (None: no step says)."""
    versions = [v for v in map(trajectory_version, group.trajectories) if v is not None]
    return min(versions) if versions else None


def split_stale(
    groups: Sequence[TrajectoryGroup], current: int, max_staleness: int
) -> tuple[list[TrajectoryGroup], list[TrajectoryGroup]]:
    """The groups recent enough to train version ``current`` on, and the stale ones.

    A group is kept when its version is ``>= current - max_staleness``; a group without a
    recorded version (a scripted policy) is kept.

    Example:
        >>> from osworld_gym.pool.trajectory import StepRecord
        >>> def g(v):
        ...     step = StepRecord(None, "a", extra={"weight_version": v})
        ...     return TrajectoryGroup("t", [Trajectory("t", 0, steps=[step])])
        >>> kept, stale = split_stale([g(3), g(4), g(5)], current=5, max_staleness=1)
        >>> [group_version(x) for x in kept], [group_version(x) for x in stale]
        ([4, 5], [3])
    """
    if max_staleness < 0:
        raise ValueError(f"max_staleness must be >= 0, got {max_staleness}")
    kept, stale = [], []
    for group in groups:
        version = group_version(group)
        (stale if version is not None and version < current - max_staleness else kept).append(group)
    return kept, stale


def stats_delta(after: CollectionStats, before: CollectionStats) -> CollectionStats:
    """What happened between two ``RolloutCollector.stats`` readings."""
    return CollectionStats(
        **{
            f.name: getattr(after, f.name) - getattr(before, f.name)
            for f in dataclasses.fields(CollectionStats)
        }
    )


class _VersionTap:
    """The rollout engine, noting the weight version of each generation made on this thread.

    The agent keeps only token ids and log-probs of a generation; the version the engine
    reports with it would be lost. ``generate`` holds the engine's lock for the whole call, so
    the version of each generation is the version of all its tokens.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._local = threading.local()

    def generate(self, conversations: Any, params: Any, seeds: Any = None) -> Any:
        # An engine that does not report versions: the one before the call (never too new).
        fallback = getattr(self.engine, VERSION_KEY, None)
        if seeds is None:
            generations = self.engine.generate(conversations, params)
        elif "seeds" in inspect.signature(self.engine.generate).parameters:
            generations = self.engine.generate(conversations, params, seeds=seeds)
        else:  # an engine without per-row seeds: one call per conversation, as the agent does
            generations = []
            for conversation, seed in zip(conversations, seeds, strict=True):
                one = dataclasses.replace(params, seed=seed)
                generations.extend(self.engine.generate([conversation], one))
        noted = getattr(self._local, "versions", None)
        if noted is not None:
            noted.extend(g.extra.get(VERSION_KEY, fallback) for g in generations)
        return generations

    @contextlib.contextmanager
    def noting(self) -> Iterator[list[Any]]:
        self._local.versions = noted = []
        try:
            yield noted
        finally:
            self._local.versions = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


class VersionedPolicy:
    """A rollout agent whose every output records the weight version that sampled it.

    Args:
        agent: The rollout agent; its engine must be a ``_VersionTap`` (see
            ``build()``).
    """

    max_concurrent_calls = 1
    """One in-process engine: one batched call at a time."""

    def __init__(self, agent: UITARSAgent) -> None:
        if not isinstance(agent.engine, _VersionTap):
            raise TypeError("VersionedPolicy needs an agent built by VersionedPolicy.build")
        self.agent = agent
        self._tap: _VersionTap = agent.engine

    @classmethod
    def build(cls, engine: Any, config: TrainConfig, *, seed: int | None) -> VersionedPolicy:
        """The training-rollout agent over ``engine`` (sampling as in the coupled loop)."""
        agent = UITARSAgent(_VersionTap(engine), _agent_config(config, training=True), seed=seed)
        return cls(agent)

    def __call__(self, requests: list[PolicyRequest]) -> list[PolicyOutput]:
        """The agent's outputs, each with ``extra["weight_version"]``."""
        with self._tap.noting() as versions:
            outputs = self.agent(requests)
        if len(versions) != len(outputs):  # an engine call per request, or none: be explicit
            raise RuntimeError(f"{len(versions)} weight versions for {len(outputs)} outputs")
        for output, version in zip(outputs, versions, strict=True):
            output.extra[VERSION_KEY] = version
        return outputs


@dataclasses.dataclass
class _Fed:
    """What the feed holds of one iteration."""

    tasks: list[str]
    sizes: list[int]
    schedule_state: dict[str, Any]
    outstanding: int = 0
    groups: dict[int, TrajectoryGroup] = dataclasses.field(default_factory=dict)


class AsyncRollouts:
    """The trainer's side of the decoupled mode: feed ahead, take an iteration's groups.

    Args:
        pool: This rank's pool; the stream holds it except while paused (``pause()``).
        engine: The run's rollout engine (a replica: the trainer pushes weights into it).
        config: The run's settings.
        schedule: The task schedule (drawn ahead here).
        budget: The rollout budget (read when an iteration's tasks are fed).
        ctx: This rank's context.
        start: The first iteration to train.
    """

    def __init__(
        self,
        pool: EnvPool,
        engine: Any,
        config: TrainConfig,
        schedule: TaskSchedule,
        budget: RolloutBudget,
        ctx: DistContext,
        start: int,
    ) -> None:
        check_async(config)
        self.pool, self.config, self.ctx = pool, config, ctx
        self.schedule, self.budget = schedule, budget
        seed = derive_seed(config.seed, "rollout", "async", ctx.rank)
        self.policy = VersionedPolicy.build(
            engine, config, seed=seed if config.seeded_rollouts else None
        )
        self.lookahead = max(1, config.max_staleness)
        self._fed: dict[int, _Fed] = {}
        self._next_to_feed = start
        self._segment = 0
        self._feed: TaskFeed | None = None
        self._stream: Iterator[tuple[Any, TrajectoryGroup]] | None = None
        self._collector: RolloutCollector | None = None
        self._past = CollectionStats()
        self._position: defaultdict[int, int] = defaultdict(int)
        self._taken_states: dict[int, dict[str, Any]] = {}
        self._last_stats = CollectionStats()

    @property
    def agent(self) -> UITARSAgent:
        """The rollout agent (renders episodes as the policy saw them)."""
        return self.policy.agent

    @property
    def stats(self) -> CollectionStats:
        """Where the desktops' time went over every stream so far, the running one included."""
        return self._past if self._collector is None else self._past + self._collector.stats

    # --- feeding -------------------------------------------------------------------------------

    def _ensure_stream(self) -> TaskFeed:
        if self._feed is None:
            self._collector = RolloutCollector(
                self.pool,
                self.policy,
                CollectorConfig(
                    seed=derive_seed(
                        self.config.seed, "env", "async", self._segment, self.ctx.rank
                    ),
                    screenshot_format="png",
                    max_policy_batch=self.config.policy_batch_size,
                    policy_concurrency=1,
                ),
            )
            self._segment += 1
            self._feed = TaskFeed()
            self._stream = self._collector.stream(self._feed)
        return self._feed

    def _put(self, iteration: int, tasks: Sequence[str], sizes: Sequence[int]) -> None:
        feed, fed = self._ensure_stream(), self._fed[iteration]
        for task, size in zip(tasks, sizes, strict=True):
            position = self._position[iteration]
            self._position[iteration] += 1
            fed.outstanding += 1
            feed.put(task, size, tag=(iteration, position))

    def feed_through(self, iteration: int) -> None:
        """Draw and feed every iteration up to ``iteration`` (the schedule moves ahead)."""
        last = min(iteration, self.config.iterations - 1)
        while self._next_to_feed <= last:
            k = self._next_to_feed
            tasks = shard(self.schedule.next(), self.ctx)
            sizes = self.budget.sizes(tasks)
            self._fed[k] = _Fed(list(tasks), list(sizes), self.schedule.state_dict())
            self._put(k, tasks, sizes)
            self._next_to_feed += 1

    # --- taking --------------------------------------------------------------------------------

    def _receive(self) -> None:
        """Wait for the next finished group and file it under its iteration."""
        assert self._stream is not None
        try:
            (iteration, position), group = next(self._stream)
        except StopIteration:
            raise RuntimeError("the rollout stream ended with groups still expected") from None
        fed = self._fed[iteration]
        fed.groups[position] = group
        fed.outstanding -= 1

    def take(self, iteration: int) -> tuple[list[TrajectoryGroup], int]:
        """Iteration ``iteration``'s groups (the trainer at that version), in task order.

        Feeds ahead first, so the desktops move on to later iterations meanwhile. Stale groups
        are dropped and their tasks fed again (same rollout count) until every task has a
        recent enough group.

        Returns:
            The groups, and how many stale groups were dropped on the way.
        """
        self.feed_through(iteration + self.lookahead)
        fed = self._fed[iteration]
        dropped = 0
        while True:
            while fed.outstanding:
                self._receive()
            order = sorted(fed.groups)
            groups = [fed.groups[p] for p in order]
            _, stale = split_stale(groups, iteration, self.config.max_staleness)
            if not stale:
                break
            stale_ids = {id(g) for g in stale}
            positions = [p for p in order if id(fed.groups[p]) in stale_ids]
            dropped += len(positions)
            logger.info(
                "iteration %d: %d group(s) older than version %d dropped, their tasks run again",
                iteration, len(positions), iteration - self.config.max_staleness,
            )  # fmt: skip
            # Re-run in place: the new group takes the old one's position (task order).
            feed = self._ensure_stream()
            for p in positions:
                group = fed.groups.pop(p)
                fed.outstanding += 1
                feed.put(group.task_id, len(group.trajectories), tag=(iteration, p))
        self._taken_states = {iteration: fed.schedule_state}
        del self._fed[iteration]
        self._position.pop(iteration, None)  # absent when this rank's share was empty
        return groups, dropped

    def collect(self, iteration: int) -> tuple[Collection, dict[str, float]]:
        """``take()``, as the coupled loop's collection plus the decoupled mode's metrics.

        The collection's stats cover the desktops since the previous call (the last update
        included). Metrics (summed ``count`` ones end in ``_groups``): ``async/stale_groups``,
        ``async/group_staleness`` (mean versions behind), ``async/oldest_version``,
        ``async/newest_version`` (of the groups taken) and ``async/fed_ahead_groups``.
        """
        groups, dropped = self.take(iteration)
        now = self.stats
        delta = stats_delta(now, self._last_stats)
        self._last_stats = now
        versions = [v for v in map(group_version, groups) if v is not None]
        metrics = {
            "async/stale_groups": float(dropped),
            "async/fed_ahead_groups": float(
                sum(f.outstanding + len(f.groups) for f in self._fed.values())
            ),
        }
        if versions:
            metrics["async/group_staleness"] = sum(iteration - v for v in versions) / len(versions)
            metrics["async/oldest_version"] = float(min(versions))
            metrics["async/newest_version"] = float(max(versions))
        requeued = sum(len(g.discarded) for g in groups)
        return Collection(groups, requeued, delta), metrics

    def update_metrics(self, before: CollectionStats) -> dict[str, float]:
        """What the desktops did since ``before`` (a ``stats`` reading at the update's start).

        ``async/update_utilization`` and ``async/update_occupancy`` (as in
        ``CollectionStats``), ``async/update_steps`` and
        ``async/update_episodes``: the coupled loop's desktops do none of it.
        """
        delta = stats_delta(self.stats, before)
        return {
            "async/update_utilization": delta.utilization,
            "async/update_occupancy": delta.occupancy,
            "async/update_steps": float(delta.steps),
            "async/update_episodes": float(delta.episodes),
        }

    # --- pauses and checkpoints ----------------------------------------------------------------

    def pause(self) -> None:
        """Finish every group fed so far and free the pool (for an evaluation).

        The groups are kept for their iterations; the next ``take()`` starts a new stream.
        """
        if self._feed is None:
            return
        self._feed.close()
        while any(f.outstanding for f in self._fed.values()):
            self._receive()
        self._end_stream()

    def close(self) -> None:
        """Stop the stream; episodes in flight are abandoned (the pool stays consistent)."""
        if self._feed is not None:
            self._feed.close()
        self._end_stream()

    def _end_stream(self) -> None:
        if self._stream is not None:
            close = getattr(self._stream, "close", None)
            if close is not None:
                close()
        if self._collector is not None:
            self._past = self._past + self._collector.stats
        self._feed = self._stream = self._collector = None

    @contextlib.contextmanager
    def rewound(self, iteration: int) -> Iterator[None]:
        """The schedule as right after ``iteration``'s own draw, for a checkpoint.

        The schedule (and its generator, which the checkpoint's RNG states include) is drawn
        ahead; inside the block it is back where the coupled loop would have it after
        ``iteration`` (the last one taken), and moves forward again on exit.
        """
        state = self._taken_states.get(iteration)
        if state is None:
            raise KeyError(f"iteration {iteration} was not the last one taken")
        ahead = self.schedule.state_dict()
        self.schedule.load_state_dict(state)
        try:
            yield
        finally:
            self.schedule.load_state_dict(ahead)
