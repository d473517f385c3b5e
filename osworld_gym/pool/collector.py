"""Rollout-wise collection: every (task, rollout) is its own episode, and envs never wait.

An env that finishes an episode starts the next requested one at once (DART-GUI's scheduling;
ARPO instead steps all envs in lock-step, see ``.lockstep``). An env's request for its next
action goes out as soon as the env is ready, batched with whatever other envs are ready at that
moment, so a slow env or a slow policy call never holds back the others. Groups (all rollouts of
a task) are handed back whole, in the order they complete.

Calls in flight are unbounded by default (at most one per waiting env). A policy that cannot
serve concurrent calls usefully -- an in-process model that generates one batch at a time, code
that is not thread-safe -- declares it with a ``max_concurrent_calls`` attribute (1: one call at
a time), and the collector never exceeds it; ``CollectorConfig.policy_concurrency`` caps it too.

``CollectionStats`` says where the desktops' time went: utilization (acting or being
observed) and occupancy (that, or waiting for the env's own policy call).

The collection runs as a task on the pool's event loop, so envs keep stepping while the caller
works on the groups it already has.

A *streaming* collection (``RolloutCollector.stream()``) takes its tasks from a
``TaskFeed`` instead of a fixed list: the caller puts groups from any thread while the
collection runs, an env that frees up pulls the next one, and the collection ends once the feed
is closed and everything put has finished. A trainer keeps the feed a few iterations ahead so
the desktops never wait for an update (DART-GUI's decoupled mode).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from osworld_gym.errors import EnvRetiredError
from osworld_gym.pool.config import SCREENSHOT_FORMATS, is_count
from osworld_gym.pool.policy import Policy, PolicyOutput, PolicyRequest, call_policy
from osworld_gym.pool.pool import EnvPool
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.rollout import RolloutBook, TaskRef, task_options
from osworld_gym.pool.state import Command, EnvState, PoolState
from osworld_gym.pool.trajectory import TrajectoryGroup, encode_screenshot

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class CollectorConfig:
    """Settings of a collection.

    Attributes:
        group_size: Rollouts per task (GRPO's n).
        requeue_infra_errors: Re-run an episode cut by an infrastructure fault.
        max_attempts: Tries per episode; after the last, the cut trajectory is kept as is.
        policy_concurrency: Policy calls in flight at once at most. None (default): no cap --
            every env's request goes out as soon as the env is ready, in one call with the
            other envs ready at that moment, so there is at most one call per waiting env. An
            int caps the calls in flight (1: one batched call at a time; the envs that become
            ready meanwhile wait and go together in the next call). A policy's own
            ``max_concurrent_calls`` (see ``policy_call_limit()``) lowers the cap further.
        max_policy_batch: Requests per policy call at most (None: every ready env).
        seed: Seeds each env's first reset (``seed + env_id``); None leaves envs unseeded.
        screenshot_format: Encoding of stored screenshots when the pool's workers do not
            encode them (set ``PoolConfig.screenshot_format`` to encode in the workers).

    Raises:
        ValueError: A count below 1 (or not an int), or an unknown screenshot format.
    """

    group_size: int = 8
    requeue_infra_errors: bool = True
    max_attempts: int = 3
    policy_concurrency: int | None = None
    max_policy_batch: int | None = None
    seed: int | None = None
    screenshot_format: str = "png"

    def __post_init__(self) -> None:
        for name in ("group_size", "max_attempts"):
            if not is_count(getattr(self, name)):
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        for name, meaning in (
            ("policy_concurrency", "None (one call per ready env at most)"),
            ("max_policy_batch", "None (every ready env)"),
        ):
            value = getattr(self, name)
            if value is not None and not is_count(value):
                raise ValueError(f"{name} must be {meaning} or an int >= 1, got {value!r}")
        if self.screenshot_format not in SCREENSHOT_FORMATS:
            raise ValueError(
                f"screenshot_format must be one of {SCREENSHOT_FORMATS}, "
                f"got {self.screenshot_format!r}"
            )


def policy_call_limit(policy: Policy) -> int | None:
    """The calls in flight a policy accepts, as it declares them; None: no limit.

    A policy declares a limit with a ``max_concurrent_calls`` attribute (an int >= 1, or None
    for none): 1 for an in-process model that generates one batch at a time (concurrent calls
    would only queue behind each other in smaller batches) or for code that is not
    thread-safe. Collectors never run more of its calls at once.

    Raises:
        ValueError: The attribute is neither None nor an int >= 1.
    """
    declared = getattr(policy, "max_concurrent_calls", None)
    if declared is not None and not is_count(declared):
        raise ValueError(
            f"{type(policy).__name__}.max_concurrent_calls must be None or an int >= 1, "
            f"got {declared!r}"
        )
    return declared


def effective_concurrency(configured: int | None, policy: Policy) -> int | None:
    """Policy calls a collection keeps in flight at most (None: one per ready env at most).

    The config's cap and the policy's own limit, whichever is lower.
    """
    caps = [c for c in (configured, policy_call_limit(policy)) if c is not None]
    return min(caps) if caps else None


@dataclass
class CollectionStats:
    """Where the desktops' time went during collections: utilization, counted two ways.

    Each desktop-second of a collection (``wall_seconds`` times the envs it could use) is one of:

    * acting or being observed -- in a reset or step call (``env_seconds``);
    * waiting for the policy call that chooses the env's own next action (``policy_seconds``);
    * idle: ready, but its policy call has not started (``policy_queue_seconds``: calls are
      capped), waiting for other envs (lock-step's slowest-env barrier), for a launch slot, or
      with no episode left to run while the others finish theirs (``tail_seconds``: a finite
      collection's end, which a longer collection spreads thinner).

    ``utilization`` counts only the first as busy. ``occupancy`` (DART-GUI's "utilized
    environment") counts the first two: a scheduler that never lets an env idle reaches
    occupancy 1, while utilization stays at most ``utilization_bound`` as long as every step
    waits for its own policy call.

    Attributes:
        wall_seconds: Duration of the collections.
        desktop_seconds: Sum over collections of wall time x envs available at the start.
        env_seconds: Time envs spent in the reset and step calls the collections received.
        policy_seconds: Time envs waited for their own policy calls (a call of n requests
            counts n times its duration).
        policy_queue_seconds: Time envs were ready for an action before their call started.
        tail_seconds: Time from each env's last result to the end of its collection (counted
            once a collection ends).
        episodes: Episodes that ended (re-run attempts included).
        steps: Steps received.
        policy_calls: Policy calls made.
        policy_requests: Requests in those calls.
    """

    wall_seconds: float = 0.0
    desktop_seconds: float = 0.0
    env_seconds: float = 0.0
    policy_seconds: float = 0.0
    policy_queue_seconds: float = 0.0
    tail_seconds: float = 0.0
    episodes: int = 0
    steps: int = 0
    policy_calls: int = 0
    policy_requests: int = 0

    @property
    def utilization(self) -> float:
        """Share of desktop time spent acting or being observed (0 before any collection)."""
        return _ratio(self.env_seconds, self.desktop_seconds)

    @property
    def occupancy(self) -> float:
        """Share of desktop time acting, being observed, or waiting for the env's own call."""
        return _ratio(self.env_seconds + self.policy_seconds, self.desktop_seconds)

    @property
    def utilization_bound(self) -> float:
        """``env / (env + own policy)`` seconds: the utilization ceiling.

        No scheduler can beat it while each step waits for its own policy call.
        """
        return _ratio(self.env_seconds, self.env_seconds + self.policy_seconds)

    @property
    def episodes_per_minute(self) -> float:
        """Episodes ended per minute of wall time."""
        return _ratio(60.0 * self.episodes, self.wall_seconds)

    @property
    def mean_policy_batch(self) -> float:
        """Requests per policy call."""
        return _ratio(self.policy_requests, self.policy_calls)

    def __add__(self, other: CollectionStats) -> CollectionStats:
        """Both collections' time and counts together (run one after the other)."""
        return CollectionStats(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def as_dict(self, prefix: str = "collect/") -> dict[str, float]:
        """The counters and the derived figures, keyed ``<prefix><name>`` (for loggers)."""
        values = {f.name: float(getattr(self, f.name)) for f in fields(self)}
        for name in (
            "utilization", "occupancy", "utilization_bound", "episodes_per_minute",
            "mean_policy_batch",
        ):  # fmt: skip
            values[name] = getattr(self, name)
        return {prefix + name: value for name, value in values.items()}


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


class UtilizationMeter:
    """Counts one collection's ``CollectionStats`` as its events happen.

    Args:
        num_envs: Envs the collection can use (the desktop-seconds' width).
        clock: Monotonic seconds (tests pass a fake one).
    """

    def __init__(self, num_envs: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.num_envs = num_envs
        self.clock = clock
        self.started = clock()
        self.finished: float | None = None
        self.stats = CollectionStats()
        self._ready_at: dict[int, float] = {}
        self._last_result: dict[int, float] = {}

    def on_result(self, result: EnvResult) -> None:
        """A reset or step result came in."""
        self._last_result[result.env_id] = self.clock()
        self.stats.env_seconds += result.elapsed
        self.stats.steps += result.kind is Command.STEP

    def on_episode_end(self) -> None:
        """An episode ended (finished, failed, or cut for a re-run)."""
        self.stats.episodes += 1

    def on_ready(self, env_id: int) -> None:
        """The env waits for its next action."""
        self._ready_at[env_id] = self.clock()

    def on_call(self, env_ids: Iterable[int]) -> None:
        """A policy call for these envs starts."""
        now = self.clock()
        for env_id in env_ids:
            self.stats.policy_queue_seconds += now - self._ready_at.pop(env_id, now)

    def on_answer(self, requests: int, seconds: float) -> None:
        """A policy call of ``requests`` requests answered after ``seconds``."""
        self.stats.policy_calls += 1
        self.stats.policy_requests += requests
        self.stats.policy_seconds += requests * seconds

    def stop(self) -> None:
        """The collection is over: the wall clock stops."""
        if self.finished is None:
            self.finished = self.clock()

    def snapshot(self) -> CollectionStats:
        """The stats so far (the wall clock running until ``stop()``)."""
        end = self.clock() if self.finished is None else self.finished
        wall = end - self.started
        stats = CollectionStats(**{f.name: getattr(self.stats, f.name) for f in fields(self.stats)})
        stats.wall_seconds, stats.desktop_seconds = wall, wall * self.num_envs
        if self.finished is not None:
            idle = [end - last for last in self._last_result.values()]
            idle += [wall] * (self.num_envs - len(idle))  # envs that never got an episode
            stats.tail_seconds = sum(idle)
        return stats


class TaskFeed:
    """The groups of a streaming collection, put from any thread and pulled lazily.

    A group is pulled only when an env frees up and every earlier group has started, so what
    is still in the feed has not touched a desktop; ``close()`` says no more will come.

    Example:
        >>> feed = TaskFeed()
        >>> feed.put("short", 2, tag="iteration 0"); feed.close()
        >>> feed.pending, feed.closed
        (1, True)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: deque[tuple[dict[str, Any], int | None, Any]] = deque()
        self._closed = False
        self._wake: Callable[[], None] | None = None

    def put(self, task: TaskRef, group_size: int | None = None, tag: Any = None) -> None:
        """Queue one group: ``group_size`` rollouts of ``task`` (None: the config's size).

        ``tag`` comes back with the finished group (e.g. the iteration it is for).

        Raises:
            ValueError: The feed is closed, the task has no ``task_id``, or a size below 1.
            TypeError: ``task`` is neither a string nor a mapping.
        """
        options = task_options(task)
        if "task_id" not in options:
            raise ValueError(f"a task needs a 'task_id': {options!r}")
        if group_size is not None and not is_count(group_size):
            raise ValueError(f"group sizes must be integers >= 1, got {group_size!r}")
        with self._lock:
            if self._closed:
                raise ValueError("the feed is closed")
            self._items.append((options, group_size, tag))
            wake = self._wake
        if wake is not None:
            wake()

    def close(self) -> None:
        """No more groups: the collection ends once everything put has finished."""
        with self._lock:
            self._closed = True
            wake = self._wake
        if wake is not None:
            wake()

    @property
    def closed(self) -> bool:
        """``close()`` was called."""
        return self._closed

    @property
    def pending(self) -> int:
        """Groups put and not yet pulled by the collection."""
        return len(self._items)

    def _pull(self) -> tuple[dict[str, Any], int | None, Any] | None:
        with self._lock:
            return self._items.popleft() if self._items else None

    def _exhausted(self) -> bool:
        with self._lock:
            return self._closed and not self._items

    def _attach(self, wake: Callable[[], None] | None) -> None:
        with self._lock:
            if wake is not None and self._wake is not None:
                raise RuntimeError("the feed already serves a running collection")
            self._wake = wake


class RolloutCollector:
    """Runs tasks × group_size episodes rollout-wise on a pool and yields whole groups.

    Args:
        pool: The pool; the collector owns it while collecting (no other calls in flight).
        policy: A batched policy (see ``Policy``).
        config: Collection settings.
    """

    def __init__(self, pool: EnvPool, policy: Policy, config: CollectorConfig | None = None):
        self.pool = pool
        self.policy = policy
        self.config = config or CollectorConfig()
        self.requeued = 0
        self._past = CollectionStats()
        self._run: _Run | None = None

    @property
    def stats(self) -> CollectionStats:
        """Utilization and counts over every collection of this collector so far.

        The one running is included, up to now.
        """
        run = self._run
        return self._past if run is None else self._past + run.meter.snapshot()

    async def agroups(
        self, tasks: Sequence[TaskRef], group_sizes: Sequence[int] | None = None
    ) -> AsyncGenerator[TrajectoryGroup, None]:
        """Yield each task's group as soon as all its rollouts are done.

        Args:
            tasks: The tasks, one group each.
            group_sizes: Rollouts of each task (same order); None: ``config.group_size`` each.
        """
        inner = self._iterate(_Run(self, tasks, group_sizes))
        try:
            async for item in inner:
                yield item
        finally:  # closed early: stop the run now, not when the inner generator is collected
            await inner.aclose()

    async def astream(self, feed: TaskFeed) -> AsyncGenerator[tuple[Any, TrajectoryGroup], None]:
        """Yield ``(tag, group)`` for each group put in ``feed``, as soon as it is done.

        Envs pull the next group from the feed as they free up; while the feed is empty and
        open they idle. The stream ends once the feed is closed and every group put has been
        yielded. Closing the generator early stops the episodes in flight (their groups are
        lost; what is still in the feed stays there).
        """
        inner = self._iterate(_Run(self, (), None, feed))
        try:
            async for item in inner:
                yield item
        finally:
            await inner.aclose()

    async def _iterate(self, run: _Run) -> AsyncGenerator[Any, None]:
        await self.pool._arun(run.start())
        self._run = run
        try:
            while True:
                item = await self.pool._arun(run.out.get())
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if self.pool.state is PoolState.OPEN:
                await self.pool._arun(run.stop())
            run.meter.stop()
            self.requeued += run.book.requeued
            self._past, self._run = self._past + run.meter.snapshot(), None

    def groups(
        self, tasks: Sequence[TaskRef], group_sizes: Sequence[int] | None = None
    ) -> Iterator[TrajectoryGroup]:
        """Blocking ``agroups()``."""
        return self._blocking(self.agroups(tasks, group_sizes))

    def stream(self, feed: TaskFeed) -> Iterator[tuple[Any, TrajectoryGroup]]:
        """Blocking ``astream()``: ``(tag, group)`` pairs in completion order."""
        return self._blocking(self.astream(feed))

    def _blocking(self, agen: AsyncGenerator[T, None]) -> Iterator[T]:
        try:
            while True:
                try:
                    yield self.pool._run(_next(agen))
                except StopAsyncIteration:
                    return
        finally:
            if self.pool.state is PoolState.OPEN:
                try:
                    self.pool._run(agen.aclose())
                except RuntimeError as e:  # interrupted mid-step: it is still stopping itself
                    logger.debug("collector generator not closed: %r", e)

    def collect(
        self, tasks: Sequence[TaskRef], group_sizes: Sequence[int] | None = None
    ) -> list[TrajectoryGroup]:
        """Every group, in completion order (``group_sizes`` as in ``agroups()``)."""
        return list(self.groups(tasks, group_sizes))


async def _next(agen: AsyncGenerator[T, None]) -> T:
    return await agen.__anext__()


class _Run:
    """One collection's scheduling state; lives on the pool's loop."""

    def __init__(
        self,
        owner: RolloutCollector,
        tasks: Sequence[TaskRef],
        group_sizes: Sequence[int] | None = None,
        feed: TaskFeed | None = None,
    ) -> None:
        self.pool, self.policy, self.config = owner.pool, owner.policy, owner.config
        self.book = RolloutBook(
            tasks,
            self.config.group_size if group_sizes is None else group_sizes,
            requeue_infra_errors=self.config.requeue_infra_errors,
            max_attempts=self.config.max_attempts,
        )
        # Streaming: groups come from the feed, and each goes out with its tag.
        self.feed = feed
        self.fed = asyncio.Event()
        self.feed_wait: asyncio.Task[bool] | None = None
        self.out: asyncio.Queue[Any] = asyncio.Queue()
        self.waiting: list[int] = []
        self.policy_calls: set[asyncio.Task[tuple[list[int], list[PolicyOutput], float]]] = set()
        self.recv_task: asyncio.Task[list[EnvResult]] | None = None
        self.encoding: set[asyncio.Task[None]] = set()  # results waiting for their screenshot
        self.seeded: set[int] = set()
        self.task: asyncio.Task[None] | None = None
        self.concurrency = effective_concurrency(self.config.policy_concurrency, self.policy)
        # A retired env stays in the count: its desktop-seconds are idle ones.
        self.meter = UtilizationMeter(len(self.pool.live_env_ids))

    async def start(self) -> None:
        if self.pool.outstanding:
            raise RuntimeError("the pool has calls in flight; a collector needs it to itself")
        logger.debug(
            "rollout collection on %d env(s), policy calls in flight: %s",
            self.meter.num_envs, "one per ready env" if self.concurrency is None
            else f"at most {self.concurrency}",
        )  # fmt: skip
        if self.feed is not None:
            loop = asyncio.get_running_loop()

            def wake() -> None:  # from the thread that put tasks into the feed
                loop.call_soon_threadsafe(self.fed.set)

            self.feed._attach(wake)
        self.task = asyncio.create_task(self._main(), name="osworld-rollout-collector")

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    def _done(self) -> bool:
        return self.book.done and (self.feed is None or self.feed._exhausted())

    async def _main(self) -> None:
        try:
            while not self._done():
                await self._start_episodes()
                self._start_policy_calls()
                await self._next_event()
            self.meter.stop()
            self.out.put_nowait(None)
        except Exception as e:
            logger.error("rollout collection failed: %r", e)
            self.out.put_nowait(e)
        finally:
            if self.feed is not None:
                self.feed._attach(None)
            await self._drain()

    def _pull(self) -> bool:
        """Streaming: move the feed's next group into the book; False when it has none."""
        item = None if self.feed is None else self.feed._pull()
        if item is None:
            return False
        options, size, tag = item
        self.book.add(options, self.config.group_size if size is None else size, tag)
        return True

    async def _start_episodes(self) -> None:
        free = [
            i
            for i in self.pool.live_env_ids
            if i not in self.book.running and self.pool.env_state(i) is not EnvState.PENDING
        ]
        if not self.pool.live_env_ids and (self.book.queue or self.feed is not None):
            raise EnvRetiredError(-1, "every env of the pool is retired; nothing can run")
        for env_id in free:
            # A streaming run pulls a group only for an env that is free now: lazily.
            if not self.book.queue and not self._pull():
                break
            options = self.book.start(env_id)
            seed = None
            if self.config.seed is not None and env_id not in self.seeded:
                seed = self.config.seed + env_id
                self.seeded.add(env_id)
            await self.pool.asend_reset([env_id], seed=[seed], options=[options])

    def _start_policy_calls(self) -> None:
        # Everything ready now goes out now: at most max_policy_batch requests a call, and as
        # many calls as the cap allows; the rest wait for a call to answer.
        limit = self.config.max_policy_batch or len(self.waiting) or 1
        while self.waiting and (
            self.concurrency is None or len(self.policy_calls) < self.concurrency
        ):
            batch, self.waiting = self.waiting[:limit], self.waiting[limit:]
            requests = [self.book.request_for(i) for i in batch]
            self.meter.on_call(batch)
            self.policy_calls.add(asyncio.create_task(self._act(batch, requests)))

    async def _act(
        self, env_ids: list[int], requests: list[PolicyRequest]
    ) -> tuple[list[int], list[PolicyOutput], float]:
        outputs, seconds = await call_policy(self.policy, requests)
        return env_ids, outputs, seconds

    async def _next_event(self) -> None:
        if self.recv_task is None and self.pool.outstanding:
            self.recv_task = asyncio.create_task(self.pool.arecv(min_results=1))
        waits: set[asyncio.Task[Any]] = self.policy_calls | self.encoding
        if self.recv_task is not None:
            waits.add(self.recv_task)
        if self.feed is not None:
            # New groups (or the feed's close) wake an idle stream.
            if self.feed_wait is None:
                self.feed_wait = asyncio.create_task(self.fed.wait())
            waits.add(self.feed_wait)
        if not waits:
            raise RuntimeError("rollout collector stalled: nothing in flight")
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is self.feed_wait:
                self.feed_wait = None
                self.fed.clear()
            elif task is self.recv_task:
                self.recv_task = None
                for result in task.result():
                    self.meter.on_result(result)
                    self._on_result(result)
            elif task in self.encoding:
                self.encoding.discard(task)
                task.result()
            else:
                self.policy_calls.discard(task)
                env_ids, outputs, seconds = task.result()
                self.meter.on_answer(len(env_ids), seconds)
                for env_id, output in zip(env_ids, outputs, strict=True):
                    self.book.chose(env_id, output, seconds)
                await self.pool.asend([o.action for o in outputs], env_ids)

    def _on_result(self, result: EnvResult) -> None:
        if isinstance(result.error, EnvRetiredError):
            self.book.give_back(result.env_id)
            return
        frame = None
        if result.screenshot is None and isinstance(result.observation, dict):
            frame = result.observation.get("screenshot")
        if frame is None:
            self._record(result, result.screenshot)
            return
        # Encode off the loop and without holding up the other envs' results.
        self.encoding.add(asyncio.create_task(self._encode_and_record(result, frame)))

    async def _encode_and_record(self, result: EnvResult, frame: Any) -> None:
        fmt = self.config.screenshot_format
        self._record(result, await asyncio.to_thread(encode_screenshot, frame, fmt))

    def _record(self, result: EnvResult, screenshot: bytes | None) -> None:
        done = self.book.on_result_tagged(result, screenshot)
        if result.env_id in self.book.running:
            self.waiting.append(result.env_id)
            self.meter.on_ready(result.env_id)
        else:
            self.meter.on_episode_end()
        if done is not None:
            self.out.put_nowait(done if self.feed is not None else done[1])

    async def _drain(self) -> None:
        """Leave the pool consistent: stop policy calls, receive what is still in flight."""
        if self.feed_wait is not None:
            self.feed_wait.cancel()
        for task in self.policy_calls | self.encoding:
            task.cancel()
        await asyncio.gather(*self.encoding, return_exceptions=True)
        if self.recv_task is not None:
            self.recv_task.cancel()
        await asyncio.gather(*self.policy_calls, return_exceptions=True)
        if self.recv_task is not None:
            await asyncio.gather(self.recv_task, return_exceptions=True)
        try:
            while self.pool.outstanding and self.pool.state is PoolState.OPEN:
                await self.pool.arecv()
        except Exception as e:  # the pool was closed under us; nothing left to keep
            logger.debug("drain stopped: %r", e)
