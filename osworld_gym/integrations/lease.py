"""A lease desk: live desktops handed out one trajectory at a time, over one ``EnvPool``.

Trainers such as verl, SkyRL and TRL own their rollout loop and build one env object per
trajectory. Launching a desktop per trajectory would cost seconds to minutes each time, so the
adapters borrow instead: ``DesktopLeases`` keeps ``size`` envs alive in one pool and lends
each to one trajectory at a time (``DesktopLeases.acquire()`` waits while all are out). A
``Lease`` resets its env per episode and steps it; many threads or coroutines, on any
event loop, may drive different leases at once. Each call waits for its own env's result only
(never the pool's wait-any ``recv``), so no lease ever receives another's result.

Faults follow the env's contract: a step never raises for an infrastructure fault; it ends the
episode with ``truncated=True`` and ``info["infra_error"]``, and the env relaunches its desktop
at the next reset (the pool retries launches and retires an env whose desktop keeps failing).

Because the trainers build their env objects in places the user does not control, adapters share
one desk per process and env configuration through ``DesktopLeases.shared()``; it is closed at
interpreter exit or by ``close_shared_leases()``.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import hashlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from osworld_gym.errors import ClosedPoolError, EnvRetiredError, OSWorldGymError, PoolError
from osworld_gym.pool.config import EnvFactory, EnvSpec, PoolConfig, RayBackendConfig
from osworld_gym.pool.pool import EnvPool
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.state import EnvState
from osworld_gym.tasks import TaskSet

logger = logging.getLogger(__name__)

# How long a release waits for the pool's loop to take the env back (one loop turn normally).
_SORT_TIMEOUT_S = 30.0

__all__ = [
    "DesktopLeases",
    "Lease",
    "LeaseError",
    "LeaseResetError",
    "close_shared_leases",
]


class LeaseError(PoolError):
    """A lease was misused (used after release) or none could be had (closed desk, timeout)."""


class LeaseResetError(LeaseError):
    """A reset produced no observation: a bad task id, or a desktop that would not launch.

    Attributes:
        result: The pool's result, whose ``error`` is the cause (also ``__cause__``).
        retired: The env was retired (its desktop failed to come up ``launch_attempts`` times in
            a row); the desk no longer lends it.
    """

    def __init__(self, message: str, result: EnvResult) -> None:
        super().__init__(message)
        self.result = result
        self.retired = isinstance(result.error, EnvRetiredError)


def _close_env(env: Any) -> None:
    """Stop an env's desktop so that its next reset launches a fresh one (runs in its worker)."""
    env.unwrapped.close()


def _as_factory(env: EnvSpec | EnvFactory | Mapping[str, Any]) -> EnvFactory:
    if isinstance(env, Mapping):
        return EnvSpec(kwargs=dict(env))
    return env


class Lease:
    """One env lent to one trajectory; obtain it from ``DesktopLeases.acquire()``.

    Use it for one or more episodes (``reset`` then ``step`` until ``done``), then
    ``release()`` it (``with lease:`` / ``async with lease:`` do that). Not for use by two
    callers at once: one trajectory owns it.

    Attributes:
        env_id: The pool env this lease drives.
        last: The latest result of a reset or step (None before the first reset).
    """

    def __init__(self, desk: DesktopLeases, env_id: int) -> None:
        self._desk = desk
        self.env_id = env_id
        self.last: EnvResult | None = None
        self._released = False

    @property
    def released(self) -> bool:
        """The lease was handed back; its calls now raise ``LeaseError``."""
        return self._released

    @property
    def done(self) -> bool:
        """No episode is running: none started yet, or the last one ended."""
        return self.last is None or self.last.done

    def _check(self) -> None:
        if self._released:
            raise LeaseError(f"lease of env {self.env_id} was released; acquire a new one")

    def _reset_options(
        self, task_id: str | None, options: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        opts = dict(options or {})
        if task_id is not None:
            opts["task_id"] = str(task_id)
        return opts

    def _accept_reset(self, result: EnvResult) -> EnvResult:
        self.last = result
        if result.error is not None:
            if isinstance(result.error, EnvRetiredError):
                self._desk._retire(self.env_id)
            raise LeaseResetError(
                f"env {self.env_id}: reset failed: {type(result.error).__name__}: {result.error}",
                result,
            ) from result.error
        return result

    def reset(
        self,
        task_id: str | None = None,
        seed: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> EnvResult:
        """Start an episode on ``task_id`` (or a task the env samples) and return its result.

        Args:
            task_id: The task to run; None lets the env sample one with its RNG.
            seed: Seed of the env's RNG for this episode.
            options: More reset options for the env (``task_id`` here wins over them).

        Returns:
            The reset's result: ``observation``, ``info`` and, when the desk's pool config asks
            for one, the encoded ``screenshot``.

        Raises:
            LeaseResetError: No observation (a bad task id, or the desktop would not launch).
            LeaseError: The lease was released, or the desk closed.
        """
        self._check()
        opts = self._reset_options(task_id, options)
        results = self._desk._call(
            self._desk.pool.reset, [self.env_id], seed=[seed], options=[opts]
        )
        return self._accept_reset(results[0])

    async def areset(
        self,
        task_id: str | None = None,
        seed: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> EnvResult:
        """Async ``reset()``, usable from any event loop."""
        self._check()
        opts = self._reset_options(task_id, options)
        results = await self._desk._acall(
            self._desk.pool.areset, [self.env_id], seed=[seed], options=[opts]
        )
        return self._accept_reset(results[0])

    def step(self, action: Any) -> EnvResult:
        """Apply one action (model text or a typed action) and return the env's result.

        An infrastructure fault does not raise: the result has ``truncated=True`` and
        ``info["infra_error"]``, and the next reset relaunches the desktop.

        Raises:
            LeaseError: The lease was released, or the desk closed.
            ResetNeededError: No episode is running (reset first).
        """
        self._check()
        self.last = self._desk._call(self._desk.pool.step, [action], [self.env_id])[0]
        return self.last

    async def astep(self, action: Any) -> EnvResult:
        """Async ``step()``, usable from any event loop."""
        self._check()
        self.last = (await self._desk._acall(self._desk.pool.astep, [action], [self.env_id]))[0]
        return self.last

    def release(self, broken: bool = False) -> None:
        """Hand the env back to the desk. Idempotent.

        Args:
            broken: The caller saw the desktop misbehave (or abandoned it in an unknown state):
                its desktop is stopped, and the next borrower's reset launches a fresh one.
                Episodes that ended with ``infra_error`` need not say so: the env relaunches
                after those by itself.
        """
        if self._released:
            return
        self._released = True
        self._desk._give_back(self.env_id, broken=broken)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        # Released as not broken even when an exception left the episode half-way: a step
        # still in flight is drained by the desk, and the next reset restores the desktop.
        self.release()

    async def __aenter__(self) -> Lease:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else ("idle" if self.done else "in episode")
        return f"Lease(env_id={self.env_id}, {state})"


class DesktopLeases:
    """``size`` live envs in one ``EnvPool``, lent one trajectory at a time.

    Args:
        env: The env of every desktop: an ``EnvSpec``, another
            picklable env factory, or the keyword arguments of ``OSWorldEnv`` (``tasks``,
            ``provider``, ``screen_size``, ``action_format``, ``max_steps``, ...).
        size: How many envs (desktops) to keep; at most this many trajectories run at once.
        config: Pool settings (launch concurrency, timeouts, ``screenshot_format`` to have each
            result carry the screenshot encoded as PNG or JPEG).
        backend: ``"thread"``, ``"ray"`` or a ``RayBackendConfig``.

    Desktops launch at each env's first reset, not here, and stay up between episodes.

    Example:
        >>> desk = DesktopLeases({"tasks": "ui-basics", "screen_size": (336, 224)}, size=4)
        >>> with desk.acquire() as lease:  # doctest: +SKIP
        ...     first = lease.reset("click-colour-01")  # Click the Red button.
        ...     result = lease.step("click(start_box='(90,81)')")  # the Red button's centre
    """

    def __init__(
        self,
        env: EnvSpec | EnvFactory | Mapping[str, Any],
        size: int,
        *,
        config: PoolConfig | None = None,
        backend: str | RayBackendConfig = "thread",
    ) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size = size
        self.pool = EnvPool(_as_factory(env), size, config=config, backend=backend)
        self._lock = threading.Lock()
        self._free: deque[int] = deque(range(size))
        self._waiters: deque[concurrent.futures.Future[int]] = deque()
        self._retired: set[int] = set()
        self._closed = False
        self._lent = 0
        self._relaunches = 0
        self._settling: set[asyncio.Task[None]] = set()  # on the pool's loop only

    # --- lending -----------------------------------------------------------------------------

    def _request(self) -> concurrent.futures.Future[int]:
        """A future that gets an env id now (one is free) or when one is given back."""
        future: concurrent.futures.Future[int] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise LeaseError("the desk is closed")
            if not self._free and len(self._retired) == self.size:
                raise LeaseError(f"all {self.size} envs are retired: no desktop would launch")
            if self._free:
                future.set_running_or_notify_cancel()
                future.set_result(self._free.popleft())
            else:
                self._waiters.append(future)
        return future

    def _withdraw(self, future: concurrent.futures.Future[int]) -> None:
        """A waiter gave up: drop it, or hand back the id it got in the meantime."""
        with self._lock:
            if future in self._waiters:
                self._waiters.remove(future)
                future.cancel()
                return
        if future.done() and not future.cancelled() and future.exception() is None:
            self._give_back(future.result(), broken=False)

    def acquire(self, timeout: float | None = None) -> Lease:
        """Borrow an env, waiting while all are lent.

        Args:
            timeout: Seconds to wait at most (None: no limit).

        Raises:
            LeaseError: The desk is closed, every env is retired, or the timeout passed.
        """
        future = self._request()
        try:
            env_id = future.result(timeout)
        except concurrent.futures.TimeoutError:
            self._withdraw(future)
            raise LeaseError(f"no desktop free within {timeout} s ({self.size} lent)") from None
        except BaseException:
            self._withdraw(future)
            raise
        return self._lend(env_id)

    async def aacquire(self, timeout: float | None = None) -> Lease:
        """Async ``acquire()``: waits without blocking the caller's event loop."""
        future = self._request()
        try:
            env_id = await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            self._withdraw(future)
            raise LeaseError(f"no desktop free within {timeout} s ({self.size} lent)") from None
        except BaseException:
            self._withdraw(future)
            raise
        return self._lend(env_id)

    def _lend(self, env_id: int) -> Lease:
        with self._lock:
            self._lent += 1
        return Lease(self, env_id)

    def _give_back(self, env_id: int, *, broken: bool) -> None:
        """Return an env to the free list, first settling a call left in flight or a break.

        The env's state is read on the pool's loop, after whatever the lease sent it: a step
        cancelled just as it was sent is then seen in flight, and drained before anyone else
        borrows the env. The caller waits for that one loop turn, never for the drain or the
        stopping of a broken desktop.
        """
        if self._closed:
            return
        loop = self.pool._loop  # the pool's loop owns env states (pool.loop's docstring)
        if loop.in_loop():
            self._sort_returned(env_id, broken)
            return
        try:
            sorted_out = asyncio.run_coroutine_threadsafe(
                self._asort_returned(env_id, broken), loop.loop
            )
        except RuntimeError:  # the pool's loop is gone: the desk is closing
            return
        try:
            sorted_out.result(timeout=_SORT_TIMEOUT_S)
        except concurrent.futures.TimeoutError:
            # The loop is stalled; the env goes back (or is settled) when it runs again.
            logger.warning("env %d: the pool's loop took over %.0f s to take a lease back",
                           env_id, _SORT_TIMEOUT_S)  # fmt: skip

    async def _asort_returned(self, env_id: int, broken: bool) -> None:
        self._sort_returned(env_id, broken)

    def _sort_returned(self, env_id: int, broken: bool) -> None:
        """On the pool's loop: free the env now, or once its business is settled."""
        pending = self.pool.env_state(env_id) is EnvState.PENDING
        if not (broken or pending):
            self._make_free(env_id)
            return
        task = asyncio.ensure_future(self._settle(env_id, pending=pending, broken=broken))
        self._settling.add(task)  # a reference, so the task is not collected mid-way
        task.add_done_callback(self._settling.discard)

    async def _settle(self, env_id: int, *, pending: bool, broken: bool) -> None:
        try:
            if pending:
                await self.pool._core.recv_for([env_id], None)
            if broken:
                self._relaunches += 1
                await self.pool._core.call([env_id], _close_env)
        except (ClosedPoolError, EnvRetiredError):
            return
        except Exception:  # never lose the env: it relaunches at its next reset anyway
            logger.exception("env %d: settling a returned lease failed", env_id)
        self._make_free(env_id)

    def _make_free(self, env_id: int) -> None:
        with self._lock:
            if self._closed or env_id in self._retired:
                return
            while self._waiters:
                waiter = self._waiters.popleft()
                if waiter.set_running_or_notify_cancel():  # False: the waiter gave up
                    waiter.set_result(env_id)
                    return
            # Last returned, first lent: desktops beyond the concurrency actually used are
            # never launched (envs launch at their first reset).
            self._free.appendleft(env_id)

    def _retire(self, env_id: int) -> None:
        with self._lock:
            self._retired.add(env_id)
            if len(self._retired) == self.size:  # nobody waiting will ever be served
                while self._waiters:
                    waiter = self._waiters.popleft()
                    if waiter.set_running_or_notify_cancel():
                        waiter.set_exception(
                            LeaseError(f"all {self.size} envs are retired: no desktop would launch")
                        )

    # --- calls -------------------------------------------------------------------------------

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> list[EnvResult]:
        try:
            return list(method(*args, **kwargs))
        except ClosedPoolError as e:
            raise LeaseError("the desk is closed") from e

    async def _acall(self, method: Any, *args: Any, **kwargs: Any) -> list[EnvResult]:
        try:
            return list(await method(*args, **kwargs))
        except ClosedPoolError as e:
            raise LeaseError("the desk is closed") from e

    # --- state -------------------------------------------------------------------------------

    @property
    def available(self) -> int:
        """Envs free to lend right now."""
        with self._lock:
            return len(self._free)

    @property
    def closed(self) -> bool:
        """``close()`` was called."""
        return self._closed

    def stats(self) -> dict[str, float]:
        """The pool's counters plus the desk's own.

        ``leases/lent`` (leases handed out so far), ``leases/available``, ``leases/waiting``,
        ``leases/retired`` and ``leases/relaunches`` (desktops stopped because a lease came
        back broken).
        """
        with self._lock:
            own = {
                "leases/lent": float(self._lent),
                "leases/available": float(len(self._free)),
                "leases/waiting": float(len(self._waiters)),
                "leases/retired": float(len(self._retired)),
                "leases/relaunches": float(self._relaunches),
            }
        return {**self.pool.stats(), **own}

    def close(self) -> None:
        """Stop every desktop; waiting and later ``acquire`` calls raise ``LeaseError``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            waiters, self._waiters = list(self._waiters), deque()
        for waiter in waiters:
            if waiter.set_running_or_notify_cancel():
                waiter.set_exception(LeaseError("the desk was closed"))
        self.pool.close()
        _forget_shared(self)

    def __enter__(self) -> DesktopLeases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DesktopLeases(size={self.size}, available={self.available}, closed={self.closed})"

    # --- the process-wide desks --------------------------------------------------------------

    @classmethod
    def shared(
        cls,
        env: EnvSpec | Mapping[str, Any],
        size: int,
        *,
        config: PoolConfig | None = None,
        backend: str | RayBackendConfig = "thread",
    ) -> DesktopLeases:
        """The process's desk for this env configuration, created on first use.

        Trainers create a new env (or agent loop) object per trajectory; each calls this and
        gets the same desk, so desktops launch once per process. The key is the env
        configuration and the backend; ``size`` and ``config`` only matter on first use (a
        later call asking for another size gets the existing desk and a warning).
        """
        key = _shared_key(env, backend)
        with _SHARED_LOCK:
            desk = _SHARED.get(key)
            if desk is None or desk.closed:
                desk = cls(env, size, config=config, backend=backend)
                _SHARED[key] = desk
            elif desk.size != size:
                logger.warning(
                    "a shared desk for this env already holds %d desktops; asked for %d, "
                    "keeping %d", desk.size, size, desk.size,
                )  # fmt: skip
            return desk


# The desks of DesktopLeases.shared: per process by design (see the module docstring), guarded
# by a lock, closed at exit.
_SHARED: dict[str, DesktopLeases] = {}
_SHARED_LOCK = threading.Lock()


def _key_part(value: Any) -> Any:
    """JSON for values the default encoder refuses; a task set by its tasks' content."""
    if isinstance(value, TaskSet):
        digest = hashlib.sha256()
        for task in sorted(value, key=lambda t: t.id):
            digest.update(json.dumps(task.to_dict(), sort_keys=True, default=repr).encode())
        return {"taskset": digest.hexdigest()}
    return repr(value)


def _shared_key(env: EnvSpec | Mapping[str, Any], backend: Any) -> str:
    spec = env if isinstance(env, EnvSpec) else EnvSpec(kwargs=dict(env))
    payload = {"entry_point": spec.entry_point, "kwargs": dict(spec.kwargs), "backend": backend}
    return json.dumps(payload, sort_keys=True, default=_key_part)


def _forget_shared(desk: DesktopLeases) -> None:
    with _SHARED_LOCK:
        for key, value in list(_SHARED.items()):
            if value is desk:
                del _SHARED[key]


def close_shared_leases() -> None:
    """Close every desk made by ``DesktopLeases.shared()`` in this process."""
    with _SHARED_LOCK:
        desks = list(_SHARED.values())
    started = time.monotonic()
    for desk in desks:
        try:
            desk.close()
        except OSWorldGymError:
            logger.exception("closing a shared desk failed")
    if desks:
        logger.info("closed %d shared desk(s) in %.1f s", len(desks), time.monotonic() - started)


atexit.register(close_shared_leases)
