"""The pool's engine, living on one event loop: a task per env, wait-any results, recovery.

Each env has a slot: its caller-visible ``EnvState``, an inbox of commands, and one task
that runs those commands through the backend in order. Finished results wait in one outbox,
in completion order, until ``recv`` takes them (wait-any). Resets, desktop launches included,
pass a semaphore that caps how many run at once. A reset that fails for infrastructure reasons
is retried on a fresh env, up to ``launch_attempts`` times in a row; then the env is retired and
its result carries ``EnvRetiredError``, while the other envs go on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from osworld_gym.errors import (
    ClosedPoolError,
    EnvRetiredError,
    NoAsyncCallError,
    PoolTimeoutError,
    WorkerLostError,
)
from osworld_gym.pool.backends import Backend
from osworld_gym.pool.config import PoolConfig
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.state import (
    Command,
    EnvState,
    PoolState,
    check_can_reset,
    check_can_step,
    check_env_ids,
    check_open,
)

logger = logging.getLogger(__name__)

_Job = tuple[Command, Any, "asyncio.Future[Any] | None"]


@dataclass
class SlotStats:
    """Counters of one env (merged by ``EnvPool.stats``).

    ``busy_seconds`` is the time the env's worker spent in reset and step calls: acting or being
    observed (desktop launches and evaluation included). Waiting for a policy, or for a launch
    slot (``reset_queue_seconds``), is not busy.
    """

    resets: int = 0
    steps: int = 0
    reset_errors: int = 0
    infra_errors: int = 0
    launch_failures: int = 0
    hung_calls: int = 0
    busy_seconds: float = 0.0
    reset_queue_seconds: float = 0.0  # waiting for a free launch slot (max_concurrent_resets)


@dataclass
class _Slot:
    env_id: int
    state: EnvState = EnvState.NEEDS_RESET
    inbox: asyncio.Queue[_Job] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    failures_in_a_row: int = 0
    stats: SlotStats = field(default_factory=SlotStats)


class PoolCore:
    """The state of one pool; every method runs on the pool's event loop.

    Args:
        num_envs: Number of envs.
        backend: Runs the workers.
        config: Pool settings.
        max_concurrent_resets: The resolved cap on resets at once; None: the config's
            (``PoolConfig.reset_cap()``, this host's cores when automatic).
    """

    def __init__(
        self,
        num_envs: int,
        backend: Backend,
        config: PoolConfig,
        *,
        max_concurrent_resets: int | None = None,
    ) -> None:
        self.num_envs = num_envs
        self.backend = backend
        self.config = config
        self.state = PoolState.OPEN
        self.slots = [_Slot(i) for i in range(num_envs)]
        self._outbox: dict[int, EnvResult] = {}  # insertion order = completion order
        self._changed = asyncio.Condition()
        if max_concurrent_resets is None:
            max_concurrent_resets = config.reset_cap(num_envs)
        if max_concurrent_resets < 1:
            raise ValueError(f"max_concurrent_resets must be >= 1, got {max_concurrent_resets}")
        self.max_concurrent_resets = max_concurrent_resets
        self._reset_gate = asyncio.Semaphore(max_concurrent_resets)

    async def start(self) -> None:
        """Start the backend and one task per env."""
        await self.backend.start()
        for slot in self.slots:
            slot.task = asyncio.create_task(self._serve(slot), name=f"osworld-env-{slot.env_id}")

    # --- caller side ---------------------------------------------------------------------

    def send_reset(
        self, env_ids: Sequence[int], seeds: Sequence[int | None], options: Sequence[Any]
    ) -> None:
        """Queue resets; all-or-nothing (a misuse error leaves every env as it was)."""
        check_open(self.state)
        check_env_ids(env_ids, self.num_envs)
        for env_id in env_ids:
            check_can_reset(env_id, self.slots[env_id].state)
        for env_id, seed, opts in zip(env_ids, seeds, options, strict=True):
            self._dispatch(env_id, Command.RESET, (seed, opts))

    def send(self, actions: Sequence[Any], env_ids: Sequence[int]) -> None:
        """Queue steps; all-or-nothing."""
        check_open(self.state)
        check_env_ids(env_ids, self.num_envs)
        if len(actions) != len(env_ids):
            raise ValueError(f"{len(actions)} actions for {len(env_ids)} env ids")
        for env_id in env_ids:
            check_can_step(env_id, self.slots[env_id].state)
        for env_id, action in zip(env_ids, actions, strict=True):
            self._dispatch(env_id, Command.STEP, action)

    def _dispatch(self, env_id: int, command: Command, payload: Any) -> None:
        slot = self.slots[env_id]
        slot.state = EnvState.PENDING
        slot.inbox.put_nowait((command, payload, None))

    @property
    def outstanding(self) -> int:
        """Calls sent whose results have not been received."""
        return sum(slot.state is EnvState.PENDING for slot in self.slots)

    async def recv(
        self, min_results: int | None, timeout: float | None, max_results: int | None = None
    ) -> list[EnvResult]:
        """Wait until ``min_results`` results are in (all outstanding ones for None)."""
        check_open(self.state)
        outstanding = self.outstanding
        if outstanding == 0:
            raise NoAsyncCallError("recv() with no call in flight; send() or send_reset() first")
        need = outstanding if min_results is None else min(max(min_results, 1), outstanding)
        await self._wait(lambda: len(self._outbox) >= need, timeout, f"{need} result(s)")
        ids = list(self._outbox)[:max_results]
        return [self._take(env_id) for env_id in ids]

    async def recv_for(self, env_ids: Sequence[int], timeout: float | None) -> list[EnvResult]:
        """Wait for the results of exactly these envs, leaving other results queued."""
        check_open(self.state)
        for env_id in env_ids:
            if self.slots[env_id].state is not EnvState.PENDING:
                raise NoAsyncCallError(f"env {env_id} has no call in flight")
        await self._wait(
            lambda: all(i in self._outbox for i in env_ids), timeout, f"envs {list(env_ids)}"
        )
        return [self._take(env_id) for env_id in env_ids]

    async def _wait(self, ready: Callable[[], bool], timeout: float | None, what: str) -> None:
        async with self._changed:
            try:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: ready() or self.state is PoolState.CLOSED),
                    timeout,
                )
            except TimeoutError as e:
                raise PoolTimeoutError(
                    f"recv timed out after {timeout} s waiting for {what} "
                    f"({len(self._outbox)} ready); calls stay in flight"
                ) from e
        check_open(self.state)

    def _take(self, env_id: int) -> EnvResult:
        result = self._outbox.pop(env_id)
        slot = self.slots[env_id]
        if isinstance(result.error, EnvRetiredError):
            slot.state = EnvState.RETIRED
        elif result.done:
            slot.state = EnvState.NEEDS_RESET
        else:
            slot.state = EnvState.READY
        return result

    async def call(self, env_ids: Sequence[int], fn: Any) -> list[Any]:
        """Run ``fn(env)`` on each env's worker, after whatever the env is already running."""
        check_open(self.state)
        check_env_ids(env_ids, self.num_envs)
        loop = asyncio.get_running_loop()
        futures = []
        for env_id in env_ids:
            if self.slots[env_id].state is EnvState.RETIRED:
                raise EnvRetiredError(env_id, f"env {env_id} is retired")
            future: asyncio.Future[Any] = loop.create_future()
            self.slots[env_id].inbox.put_nowait((Command.CALL, fn, future))
            futures.append(future)
        return list(await asyncio.gather(*futures))

    # --- env side ------------------------------------------------------------------------

    async def _serve(self, slot: _Slot) -> None:
        while True:
            command, payload, future = await slot.inbox.get()
            if command is Command.CLOSE:
                return
            if command is Command.CALL:
                assert future is not None
                await self._run_call(slot, payload, future)
                continue
            if command is Command.RESET:
                result = await self._reset(slot, payload)
            else:
                result = await self._step(slot, payload)
            slot.stats.busy_seconds += result.elapsed
            async with self._changed:
                self._outbox[slot.env_id] = result
                self._changed.notify_all()

    async def _run_call(self, slot: _Slot, fn: Any, future: asyncio.Future[Any]) -> None:
        try:
            value = await self.backend.run(slot.env_id, Command.CALL, fn)
        except Exception as e:
            if not future.cancelled():
                future.set_exception(e)
        else:
            if not future.cancelled():
                future.set_result(value)

    async def _run_bounded(
        self, slot: _Slot, command: Command, payload: Any, timeout: float | None
    ) -> EnvResult:
        """Run a reset or step; a call past its timeout abandons the worker (WorkerLostError)."""
        try:
            return await asyncio.wait_for(self.backend.run(slot.env_id, command, payload), timeout)
        except TimeoutError:
            slot.stats.hung_calls += 1
            logger.warning(
                "env %d: %s still running after %.1f s; abandoning its worker",
                slot.env_id, command.value, timeout,
            )  # fmt: skip
            self.backend.abandon(slot.env_id)
            raise WorkerLostError(
                f"env {slot.env_id}: {command.value} hung for more than {timeout} s "
                f"(PoolConfig.{command.value}_timeout); its desktop was stopped"
            ) from None

    async def _step(self, slot: _Slot, action: Any) -> EnvResult:
        slot.stats.steps += 1
        try:
            result: EnvResult = await self._run_bounded(
                slot, Command.STEP, action, self.config.step_timeout
            )
        except Exception as e:  # a lost worker, or a bug between env and pool: never hang
            if not isinstance(e, WorkerLostError):
                logger.exception("env %d: step failed outside the env", slot.env_id)
            result = EnvResult(
                slot.env_id, Command.STEP, truncated=True, infra=True,
                info={"infra_error": f"{type(e).__name__}: {e}"},
            )  # fmt: skip
        if result.infra_error:
            slot.stats.infra_errors += 1
            logger.info("env %d: episode cut by %s", slot.env_id, result.infra_error)
        return result

    async def _reset(self, slot: _Slot, payload: Any) -> EnvResult:
        slot.stats.resets += 1
        while True:
            queued = time.perf_counter()
            async with self._reset_gate:
                slot.stats.reset_queue_seconds += time.perf_counter() - queued
                try:
                    result: EnvResult = await self._run_bounded(
                        slot, Command.RESET, payload, self.config.reset_timeout
                    )
                except Exception as e:  # a lost worker, or a bug between env and pool
                    if not isinstance(e, WorkerLostError):
                        logger.exception("env %d: reset failed outside the env", slot.env_id)
                    result = EnvResult(slot.env_id, Command.RESET, error=e, infra=True)
            if result.ok:
                slot.failures_in_a_row = 0
                return result
            slot.stats.reset_errors += 1
            if not result.infra:
                return result
            slot.failures_in_a_row += 1
            slot.stats.launch_failures += 1
            if slot.failures_in_a_row >= self.config.launch_attempts:
                return self._retire(slot, result)
            if self.state is PoolState.CLOSED:
                return result
            logger.warning(
                "env %d: reset failed (%d of %d in a row), retrying on a fresh env: %s",
                slot.env_id, slot.failures_in_a_row, self.config.launch_attempts, result.error,
            )  # fmt: skip

    def _retire(self, slot: _Slot, failed: EnvResult) -> EnvResult:
        cause = failed.error
        error = EnvRetiredError(
            slot.env_id,
            f"env {slot.env_id} retired: its desktop failed to come up {slot.failures_in_a_row} "
            f"times in a row (launch_attempts={self.config.launch_attempts}); last error: "
            f"{type(cause).__name__}: {cause}",
        )
        error.__cause__ = cause
        logger.error("%s", error)
        failed.error = error
        return failed

    # --- shutdown ------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop accepting calls, let running calls finish (bounded), then close every env."""
        if self.state is PoolState.CLOSED:
            return
        self.state = PoolState.CLOSED
        async with self._changed:
            self._changed.notify_all()
        tasks = [slot.task for slot in self.slots if slot.task is not None]
        for slot in self.slots:
            slot.inbox.put_nowait((Command.CLOSE, None, None))
        timeout = self.config.close_timeout
        _, busy = await asyncio.wait(tasks, timeout=timeout) if tasks else (set(), set())
        for task in busy:
            task.cancel()
        for slot in self.slots:  # calls queued behind a stuck one will never run
            while not slot.inbox.empty():
                _, _, future = slot.inbox.get_nowait()
                if future is not None and not future.done():
                    future.set_exception(ClosedPoolError("the pool was closed"))
        await self.backend.close(timeout)
        self._outbox.clear()
        logger.info("pool of %d envs closed", self.num_envs)

    def raise_if_closed(self) -> None:
        """Raise ``ClosedPoolError`` once the pool is closed."""
        if self.state is PoolState.CLOSED:
            raise ClosedPoolError("the pool is closed; create a new EnvPool")
