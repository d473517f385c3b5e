"""Lock-step collection, ARPO-style: the baseline rollout-wise collection is measured against.

ARPO (``docs/design/arpo.md#training-iteration``) gives every env one episode of the batch, then
loops: one batched policy call over all envs still running, one step on each, and a wait for the
slowest before the next step; a new batch starts only when every episode of the current one is over.
This collector does the same on an ``EnvPool``, in chunks of as many episodes as the pool has
live envs, and returns groups whole when their chunk ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from osworld_gym.pool.collector import CollectionStats, CollectorConfig, UtilizationMeter
from osworld_gym.pool.policy import Policy, call_policy
from osworld_gym.pool.pool import EnvPool
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.rollout import RolloutBook, TaskRef
from osworld_gym.pool.trajectory import TrajectoryGroup, encode_screenshot


class LockstepCollector:
    """Runs tasks × group_size episodes in lock-step batches (every env waits for the slowest).

    Args:
        pool: The pool (owned while collecting).
        policy: A batched policy.
        config: Collection settings (``policy_concurrency`` and ``max_policy_batch`` do not
            apply: each step is one policy call over the whole batch).
    """

    def __init__(self, pool: EnvPool, policy: Policy, config: CollectorConfig | None = None):
        self.pool = pool
        self.policy = policy
        self.config = config or CollectorConfig()
        self._past = CollectionStats()
        self._meter: UtilizationMeter | None = None

    @property
    def stats(self) -> CollectionStats:
        """Utilization and counts over every collection so far (the running one up to now).

        Lock-step's idle time is the envs' wait for the slowest env of each step and of each
        batch; it is neither acting nor waiting for the env's own policy call.
        """
        meter = self._meter
        return self._past if meter is None else self._past + meter.snapshot()

    async def acollect(self, tasks: Sequence[TaskRef]) -> list[TrajectoryGroup]:
        """Every group, in completion order."""
        return await self.pool._arun(self._collect(tasks))

    def collect(self, tasks: Sequence[TaskRef]) -> list[TrajectoryGroup]:
        """Blocking ``acollect()``."""
        return self.pool._run(self._collect(tasks))

    async def _collect(self, tasks: Sequence[TaskRef]) -> list[TrajectoryGroup]:
        meter = self._meter = UtilizationMeter(len(self.pool.live_env_ids))
        try:
            return await self._batches(tasks, meter)
        finally:
            meter.stop()
            self._past, self._meter = self._past + meter.snapshot(), None

    async def _batches(
        self, tasks: Sequence[TaskRef], meter: UtilizationMeter
    ) -> list[TrajectoryGroup]:
        book = RolloutBook(
            tasks,
            self.config.group_size,
            requeue_infra_errors=self.config.requeue_infra_errors,
            max_attempts=self.config.max_attempts,
        )
        groups: list[TrajectoryGroup] = []
        while not book.done:
            env_ids = self.pool.live_env_ids[: len(book.queue)]
            if not env_ids:
                raise RuntimeError("every env of the pool is retired; nothing can run")
            options = [book.start(i) for i in env_ids]
            results = await self.pool.areset(env_ids, options=options)
            active = await self._record(book, results, groups, meter)
            while active:
                requests = [book.request_for(i) for i in active]
                outputs, seconds = await call_policy(self.policy, requests)
                meter.on_answer(len(requests), seconds)
                for env_id, output in zip(active, outputs, strict=True):
                    book.chose(env_id, output, seconds)
                results = await self.pool.astep([o.action for o in outputs], active)
                active = await self._record(book, results, groups, meter)
        return groups

    async def _screenshot(self, result: EnvResult) -> bytes | None:
        if result.screenshot is not None or not isinstance(result.observation, dict):
            return result.screenshot
        frame = result.observation.get("screenshot")
        if frame is None:
            return None
        return await asyncio.to_thread(encode_screenshot, frame, self.config.screenshot_format)

    async def _record(
        self,
        book: RolloutBook,
        results: list[EnvResult],
        groups: list[TrajectoryGroup],
        meter: UtilizationMeter,
    ) -> list[int]:
        active = []
        screenshots = await asyncio.gather(*(self._screenshot(r) for r in results))
        for result, screenshot in zip(results, screenshots, strict=True):
            meter.on_result(result)
            if result.error is not None and result.env_id not in self.pool.live_env_ids:
                book.give_back(result.env_id)
                continue
            group = book.on_result(result, screenshot)
            if group is not None:
                groups.append(group)
            if result.env_id in book.running:
                active.append(result.env_id)
            else:
                meter.on_episode_end()
        return active
