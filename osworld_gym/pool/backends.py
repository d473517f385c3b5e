"""Where a pool's env workers run: the backend interface and the in-process (thread) backend.

``OSWorldEnv`` calls are blocking HTTP and subprocess work, so the in-process backend gives each
env its own single-thread executor: every env's calls run in order on its own thread, and the
pool's event loop only awaits them. The Ray backend (:mod:`.ray_backend`) offers the same
interface with each worker in an actor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from osworld_gym.pool.config import EnvFactory, PoolConfig, RayBackendConfig
from osworld_gym.pool.state import Command
from osworld_gym.pool.worker import EnvWorker

logger = logging.getLogger(__name__)


class Backend(Protocol):
    """Runs worker commands for a pool. Every coroutine runs on the pool's event loop."""

    async def start(self) -> None:
        """Create the workers (envs are built lazily, on their first command)."""
        ...

    async def run(self, env_id: int, command: Command, payload: Any = None) -> Any:
        """Run one command on one env's worker and return the worker's reply.

        Raises:
            WorkerLostError: The worker died or stopped answering; the backend replaces it
                before the next command to this env.
        """
        ...

    async def close(self, timeout: float) -> None:
        """Close every env (stopping its desktop) and release the workers, within ``timeout``."""
        ...

    def force_close(self) -> None:
        """Stop every env now, from any thread, without the event loop (last resort)."""
        ...


class ThreadBackend:
    """Each env's worker on its own thread, in this process.

    Args:
        factories: One env factory per env.
        config: The pool's settings.
    """

    def __init__(self, factories: Sequence[EnvFactory], config: PoolConfig) -> None:
        self.workers = [EnvWorker(f, i, config) for i, f in enumerate(factories)]
        self._executors = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"osworld-env-{i}")
            for i in range(len(factories))
        ]

    async def start(self) -> None:
        """Nothing to start: threads are created with the first command."""

    async def run(self, env_id: int, command: Command, payload: Any = None) -> Any:
        """Run the command on the env's own thread."""
        loop = asyncio.get_running_loop()
        worker = self.workers[env_id]
        return await loop.run_in_executor(self._executors[env_id], worker.handle, command, payload)

    async def close(self, timeout: float) -> None:
        """Close each env on its thread; envs whose thread stays busy are closed from here."""
        loop = asyncio.get_running_loop()
        closing: dict[asyncio.Future[None], EnvWorker] = {}
        for executor, worker in zip(self._executors, self.workers, strict=True):
            try:
                closing[loop.run_in_executor(executor, worker.close)] = worker
            except RuntimeError:  # interpreter exit: executors no longer take work
                worker.close()
        if not closing:
            return
        done, stuck = await asyncio.wait(closing, timeout=timeout)
        for future in done:
            if future.exception() is not None:
                logger.warning("closing an env failed: %r", future.exception())
        if stuck:
            logger.warning("%d env(s) still busy after %.1f s; stopping them", len(stuck), timeout)
            # Stopping the desktop under a stuck call makes that call fail fast, freeing its thread.
            await asyncio.gather(*(asyncio.to_thread(closing[f].close) for f in stuck))
        for executor in self._executors:
            executor.shutdown(wait=False, cancel_futures=True)

    def force_close(self) -> None:
        """Close every env from the calling thread."""
        for worker in self.workers:
            worker.close()
        for executor in self._executors:
            executor.shutdown(wait=False, cancel_futures=True)


def make_backend(
    spec: str | RayBackendConfig | Backend, factories: Sequence[EnvFactory], config: PoolConfig
) -> Backend:
    """Build a backend from ``"thread"``, a :class:`RayBackendConfig`, or pass one through.

    Raises:
        ValueError: An unknown backend name or type; the message lists the choices.
    """
    match spec:
        case "thread":
            return ThreadBackend(factories, config)
        case "ray":
            spec = RayBackendConfig()
    if isinstance(spec, RayBackendConfig):
        from osworld_gym.pool.ray_backend import RayBackend

        return RayBackend(factories, config, spec)
    if isinstance(spec, str):
        raise ValueError(
            f"unknown pool backend {spec!r}; use 'thread', 'ray' or a RayBackendConfig"
        )
    return spec
