"""A private event loop on its own thread, so one pool serves blocking and asyncio callers alike.

The pool's state lives on this loop and is touched only from it (no locks). Blocking callers
submit coroutines and wait for them; asyncio callers on another loop await them through
``asyncio.wrap_future``; code already running on the pool's loop (a policy coroutine, the
collector) awaits directly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
logger = logging.getLogger(__name__)


class LoopThread:
    """An asyncio event loop running on a daemon thread until ``stop()``.

    Args:
        name: Name of the thread (shows up in stack dumps).
    """

    def __init__(self, name: str = "osworld-pool") -> None:
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._started.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            if tasks:
                self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
            self.loop.close()

    @property
    def alive(self) -> bool:
        """The loop thread is running."""
        return self._thread.is_alive() and not self.loop.is_closed()

    def in_loop(self) -> bool:
        """The caller runs on this loop's thread."""
        return threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the loop and block until it finishes.

        Ctrl-C while waiting cancels the coroutine and re-raises ``KeyboardInterrupt``.

        Raises:
            RuntimeError: Called from the loop's own thread (it would wait on itself).
        """
        if self.in_loop():
            coro.close()
            raise RuntimeError(
                "a blocking pool method was called from the pool's event loop; "
                "await its async variant (asend, arecv, ...) instead"
            )
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await a coroutine on the loop from any event loop (or directly, on this one)."""
        if self.in_loop():
            return await coro
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return await asyncio.wrap_future(future)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop (cancelling what still runs on it) and join its thread."""
        if self.loop.is_closed():
            return
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # closed in between
            return
        if not self.in_loop():
            self._thread.join(timeout)
            if self._thread.is_alive():
                logger.warning("the pool's event loop did not stop within %.1f s", timeout)
