"""Where a pool's env workers run: the backend interface and the in-process (thread) backend.

``OSWorldEnv`` calls are blocking HTTP and subprocess work, so the in-process backend gives each
env its own single-thread executor: every env's calls run in order on its own thread, and the
pool's event loop only awaits them. The Ray backend (``.ray_backend``) offers the same
interface with each worker in an actor.
"""

from __future__ import annotations

import asyncio
import logging
import threading
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

    def abandon(self, env_id: int) -> None:
        """Give up on a worker whose call hangs: stop its desktop, give the env a new worker.

        Returns at once; the stuck call's eventual reply is dropped.
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
        self._executors = [_executor(i) for i in range(len(factories))]
        self._stoppers: list[threading.Thread] = []  # closing abandoned envs

    async def start(self) -> None:
        """Nothing to start: threads are created with the first command."""

    async def run(self, env_id: int, command: Command, payload: Any = None) -> Any:
        """Run the command on the env's own thread."""
        loop = asyncio.get_running_loop()
        worker = self.workers[env_id]
        return await loop.run_in_executor(self._executors[env_id], worker.handle, command, payload)

    def abandon(self, env_id: int) -> None:
        """Swap in a new worker and thread; stop the old env's desktop from a helper thread.

        A Python thread cannot be killed: stopping the desktop under the stuck call makes it
        fail fast, which frees the old thread; its late result goes nowhere.
        """
        old, stuck = self.workers[env_id], self._executors[env_id]
        self.workers[env_id] = EnvWorker(old.factory, env_id, old.config)
        self._executors[env_id] = _executor(env_id)
        stuck.shutdown(wait=False, cancel_futures=True)
        stopper = threading.Thread(
            target=old.close, name=f"osworld-env-{env_id}-abandon", daemon=True
        )
        stopper.start()
        self._stoppers = [t for t in self._stoppers if t.is_alive()] + [stopper]

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
        await asyncio.to_thread(self._join_stoppers, timeout)

    def force_close(self) -> None:
        """Close every env from the calling thread."""
        for worker in self.workers:
            worker.close()
        for executor in self._executors:
            executor.shutdown(wait=False, cancel_futures=True)
        self._join_stoppers(10.0)

    def _join_stoppers(self, timeout: float) -> None:
        """Wait (bounded) until abandoned envs are closed, so their desktops are gone."""
        for stopper in self._stoppers:
            stopper.join(timeout)
            if stopper.is_alive():
                logger.warning("an abandoned env is still closing after %.1f s", timeout)


def _executor(env_id: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"osworld-env-{env_id}")


def make_backend(
    spec: str | RayBackendConfig | Backend, factories: Sequence[EnvFactory], config: PoolConfig
) -> Backend:
    """Build a backend from ``"thread"``, a ``RayBackendConfig``, or pass one through.

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
