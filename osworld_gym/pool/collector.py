"""Rollout-wise collection: every (task, rollout) is its own episode, and envs never wait.

An env that finishes an episode starts the next requested one at once (DART-GUI's scheduling;
ARPO instead steps all envs in lock-step, see :mod:`.lockstep`). Envs waiting for an action
are batched into policy calls as they come, up to ``policy_concurrency`` calls in flight, so a
slow env or a slow policy call never holds back the others. Groups (all rollouts of a task)
are handed back whole, in the order they complete.

The collection runs as a task on the pool's event loop, so envs keep stepping while the caller
works on the groups it already has.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from osworld_gym.errors import EnvRetiredError
from osworld_gym.pool.policy import Policy, PolicyOutput, PolicyRequest, call_policy
from osworld_gym.pool.pool import EnvPool
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.rollout import RolloutBook, TaskRef
from osworld_gym.pool.state import EnvState, PoolState
from osworld_gym.pool.trajectory import TrajectoryGroup, encode_screenshot

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CollectorConfig:
    """Settings of a collection.

    Attributes:
        group_size: Rollouts per task (GRPO's n).
        requeue_infra_errors: Re-run an episode cut by an infrastructure fault.
        max_attempts: Tries per episode; after the last, the cut trajectory is kept as is.
        policy_concurrency: Policy calls in flight at once (1: one batched call at a time).
        max_policy_batch: Requests per policy call at most (None: every waiting env).
        seed: Seeds each env's first reset (``seed + env_id``); None leaves envs unseeded.
        screenshot_format: Encoding of stored screenshots when the pool's workers do not
            encode them (set ``PoolConfig.screenshot_format`` to encode in the workers).
    """

    group_size: int = 8
    requeue_infra_errors: bool = True
    max_attempts: int = 3
    policy_concurrency: int = 1
    max_policy_batch: int | None = None
    seed: int | None = None
    screenshot_format: str = "png"


class RolloutCollector:
    """Runs tasks × group_size episodes rollout-wise on a pool and yields whole groups.

    Args:
        pool: The pool; the collector owns it while collecting (no other calls in flight).
        policy: A batched policy (see :data:`~osworld_gym.pool.policy.Policy`).
        config: Collection settings.
    """

    def __init__(self, pool: EnvPool, policy: Policy, config: CollectorConfig | None = None):
        self.pool = pool
        self.policy = policy
        self.config = config or CollectorConfig()
        self.requeued = 0

    async def agroups(
        self, tasks: Sequence[TaskRef], group_sizes: Sequence[int] | None = None
    ) -> AsyncGenerator[TrajectoryGroup, None]:
        """Yield each task's group as soon as all its rollouts are done.

        Args:
            tasks: The tasks, one group each.
            group_sizes: Rollouts of each task (same order); None: ``config.group_size`` each.
        """
        run = _Run(self, tasks, group_sizes)
        await self.pool._arun(run.start())
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
            self.requeued += run.book.requeued

    def groups(
        self, tasks: Sequence[TaskRef], group_sizes: Sequence[int] | None = None
    ) -> Iterator[TrajectoryGroup]:
        """Blocking :meth:`agroups`."""
        agen = self.agroups(tasks, group_sizes)
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
        """Every group, in completion order (``group_sizes`` as in :meth:`agroups`)."""
        return list(self.groups(tasks, group_sizes))


async def _next(agen: AsyncGenerator[TrajectoryGroup, None]) -> TrajectoryGroup:
    return await agen.__anext__()


class _Run:
    """One collection's scheduling state; lives on the pool's loop."""

    def __init__(
        self,
        owner: RolloutCollector,
        tasks: Sequence[TaskRef],
        group_sizes: Sequence[int] | None = None,
    ) -> None:
        self.pool, self.policy, self.config = owner.pool, owner.policy, owner.config
        self.book = RolloutBook(
            tasks,
            self.config.group_size if group_sizes is None else group_sizes,
            requeue_infra_errors=self.config.requeue_infra_errors,
            max_attempts=self.config.max_attempts,
        )
        self.out: asyncio.Queue[TrajectoryGroup | BaseException | None] = asyncio.Queue()
        self.waiting: list[int] = []
        self.policy_calls: set[asyncio.Task[tuple[list[int], list[PolicyOutput], float]]] = set()
        self.recv_task: asyncio.Task[list[EnvResult]] | None = None
        self.encoding: set[asyncio.Task[None]] = set()  # results waiting for their screenshot
        self.seeded: set[int] = set()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.pool.outstanding:
            raise RuntimeError("the pool has calls in flight; a collector needs it to itself")
        self.task = asyncio.create_task(self._main(), name="osworld-rollout-collector")

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def _main(self) -> None:
        try:
            while not self.book.done:
                await self._start_episodes()
                self._start_policy_calls()
                await self._next_event()
            self.out.put_nowait(None)
        except Exception as e:
            logger.error("rollout collection failed: %r", e)
            self.out.put_nowait(e)
        finally:
            await self._drain()

    async def _start_episodes(self) -> None:
        free = [
            i
            for i in self.pool.live_env_ids
            if i not in self.book.running and self.pool.env_state(i) is not EnvState.PENDING
        ]
        if not self.pool.live_env_ids and self.book.queue:
            raise EnvRetiredError(-1, "every env of the pool is retired; nothing can run")
        for env_id in free:
            if not self.book.queue:
                break
            options = self.book.start(env_id)
            seed = None
            if self.config.seed is not None and env_id not in self.seeded:
                seed = self.config.seed + env_id
                self.seeded.add(env_id)
            await self.pool.asend_reset([env_id], seed=[seed], options=[options])

    def _start_policy_calls(self) -> None:
        limit = self.config.max_policy_batch or len(self.waiting) or 1
        while self.waiting and len(self.policy_calls) < self.config.policy_concurrency:
            batch, self.waiting = self.waiting[:limit], self.waiting[limit:]
            requests = [self.book.request_for(i) for i in batch]
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
        if not waits:
            raise RuntimeError("rollout collector stalled: nothing in flight")
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is self.recv_task:
                self.recv_task = None
                for result in task.result():
                    self._on_result(result)
            elif task in self.encoding:
                self.encoding.discard(task)
                task.result()
            else:
                self.policy_calls.discard(task)
                env_ids, outputs, seconds = task.result()
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
        group = self.book.on_result(result, screenshot)
        if result.env_id in self.book.running:
            self.waiting.append(result.env_id)
        if group is not None:
            self.out.put_nowait(group)

    async def _drain(self) -> None:
        """Leave the pool consistent: stop policy calls, receive what is still in flight."""
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
