"""``EnvPool``: many envs driven from one process, envpool-style, with per-env recovery.

    pool = EnvPool(EnvSpec(kwargs={"tasks": "desktop-basics"}), num_envs=8)
    pool.send_reset(options=[{"task_id": t} for t in task_ids])
    while ...:
        for result in pool.recv(min_results=1):       # wait-any: whichever envs finish first
            ...                                         # result.env_id, .observation, .info
        pool.send(actions, env_ids)
    pool.close()

Every method has an asyncio twin (``asend``, ``arecv``, ``areset``, ``astep``, ``acall``,
``aclose``) usable from any event loop. The pool's state lives on a private event loop thread;
env calls run on per-env threads (or Ray actors), so neither API blocks the other.
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import gymnasium as gym

from osworld_gym.errors import ClosedPoolError
from osworld_gym.pool.backends import Backend, make_backend
from osworld_gym.pool.config import EnvFactory, PoolConfig, RayBackendConfig, host_cpus
from osworld_gym.pool.core import PoolCore
from osworld_gym.pool.loop import LoopThread
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.state import EnvState, PoolState

logger = logging.getLogger(__name__)
T = TypeVar("T")

Seeds = int | Sequence[int | None] | None
Options = Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None


def _spaces(env: gym.Env[Any, Any]) -> tuple[gym.Space[Any], gym.Space[Any]]:
    return env.observation_space, env.action_space


def _env_counters(env: gym.Env[Any, Any]) -> dict[str, float]:
    inner = env.unwrapped
    stats = getattr(inner, "stats", None)
    counters = dict(stats()) if callable(stats) else {}
    restarts = getattr(inner, "restarts", None)
    if isinstance(restarts, int):
        counters.setdefault("restarts", restarts)
    return {k: float(v) for k, v in counters.items() if isinstance(v, (int, float))}


def _desktop_cpus(backend: str | RayBackendConfig | Backend, num_envs: int) -> float:
    """Cores the desktops run on, for the automatic reset cap.

    Ray actors each reserve ``num_cpus`` on a desktop host, so a Ray pool's desktops have at
    least ``num_envs * num_cpus`` cores between them, whatever this host has.
    """
    if isinstance(backend, RayBackendConfig):
        return num_envs * backend.num_cpus
    if backend == "ray":
        return num_envs * RayBackendConfig().num_cpus
    return host_cpus()


def _helper_threads(num_envs: int) -> int:
    """Threads of the pool loop's default executor (started only when needed).

    Blocking policy calls (one per waiting env at most) and screenshot encodings (one per env)
    must not queue behind each other, which asyncio's default of ``min(32, cores + 4)`` would
    make them do on a small host.
    """
    return max(min(32, (os.cpu_count() or 1) + 4), 2 * num_envs + 4)


def _shutdown(core: PoolCore, loop: LoopThread, backend: Backend) -> None:
    """Close the pool's envs and stop its loop (``close()``, garbage collection or exit)."""
    if loop.alive:
        try:
            loop.run(core.close())
        except Exception as e:  # at interpreter exit, stop the desktops by hand below
            logger.warning("closing the pool failed (%r); stopping its envs directly", e)
            backend.force_close()
        loop.stop()
    else:
        backend.force_close()


class EnvPool:
    """N envs driven from one process: wait-any ``send``/``recv``, per-env tasks and recovery.

    Args:
        env_fns: One env factory (used for every env) or one per env: a picklable callable
            such as ``EnvSpec`` (the Ray backend pickles it).
        num_envs: Number of envs (required with a single factory).
        config: Pool settings.
        backend: ``"thread"`` (each env on its own thread in this process), ``"ray"`` or a
            ``RayBackendConfig`` (each env in a Ray actor), or a backend.

    ``with EnvPool(...) as pool:`` closes the pool, which stops every desktop; so do garbage
    collection and interpreter exit. Desktops of the ``local`` provider also stop when this
    process dies (their watchdog), and Ray stops a dead driver's actors.
    """

    def __init__(
        self,
        env_fns: EnvFactory | Sequence[EnvFactory],
        num_envs: int | None = None,
        *,
        config: PoolConfig | None = None,
        backend: str | RayBackendConfig | Backend = "thread",
    ) -> None:
        factories = _factories(env_fns, num_envs)
        self.num_envs = len(factories)
        self.config = config or PoolConfig()
        reset_cap = self.config.reset_cap(self.num_envs, _desktop_cpus(backend, self.num_envs))
        self._loop = LoopThread(f"osworld-pool-{id(self):x}")
        try:
            self._backend = make_backend(backend, factories, self.config)
            self._core = self._loop.run(self._create_core(reset_cap))
        except BaseException:
            self._loop.stop()
            raise
        self._finalizer = weakref.finalize(self, _shutdown, self._core, self._loop, self._backend)
        self._spaces: tuple[gym.Space[Any], gym.Space[Any]] | None = None

    async def _create_core(self, reset_cap: int) -> PoolCore:
        # Runs on the pool's loop: its executor then serves that loop's to_thread calls.
        threads = _helper_threads(self.num_envs)
        executor = ThreadPoolExecutor(threads, thread_name_prefix="osworld-pool-helper")
        asyncio.get_running_loop().set_default_executor(executor)  # shut down with the loop
        core = PoolCore(self.num_envs, self._backend, self.config, max_concurrent_resets=reset_cap)
        await core.start()
        return core

    # --- introspection -------------------------------------------------------------------

    @property
    def state(self) -> PoolState:
        """``OPEN`` or ``CLOSED``."""
        return self._core.state

    def env_state(self, env_id: int) -> EnvState:
        """Where one env stands (``NEEDS_RESET``, ``READY``, ``PENDING``, ``RETIRED``)."""
        return self._core.slots[env_id].state

    @property
    def live_env_ids(self) -> list[int]:
        """Envs that are not retired."""
        return [s.env_id for s in self._core.slots if s.state is not EnvState.RETIRED]

    @property
    def outstanding(self) -> int:
        """Calls sent whose results have not been received."""
        return self._core.outstanding

    @property
    def max_concurrent_resets(self) -> int:
        """Resets run at once: ``PoolConfig.max_concurrent_resets``, resolved when automatic."""
        return self._core.max_concurrent_resets

    def stats(self, *, include_envs: bool = False) -> dict[str, float]:
        """Pool counters summed over envs, optionally merged with the envs' own counters.

        Keys: ``pool/resets``, ``pool/steps``, ``pool/reset_errors``, ``pool/infra_errors``,
        ``pool/launch_failures``, ``pool/hung_calls``, ``pool/busy_seconds`` (in reset and step
        calls: acting or being observed; collectors report utilization in their ``stats``),
        ``pool/reset_queue_seconds`` (waiting for a launch slot) and ``pool/retired``; with
        ``include_envs``, ``env/<name>`` sums of each live env's ``stats()`` (and of its
        ``restarts``), asked of the workers after their running calls.
        """
        totals: dict[str, float] = {}
        for slot in self._core.slots:
            for name, value in vars(slot.stats).items():
                totals[f"pool/{name}"] = totals.get(f"pool/{name}", 0) + value
        totals["pool/retired"] = self.num_envs - len(self.live_env_ids)
        if include_envs:
            for counters in self.call(_env_counters):
                for name, value in counters.items():
                    totals[f"env/{name}"] = totals.get(f"env/{name}", 0) + value
        return totals

    def env_stats(self, env_id: int) -> dict[str, float]:
        """The counters of one env (``busy_seconds`` is its time spent in calls)."""
        return dict(vars(self._core.slots[env_id].stats))

    @property
    def single_observation_space(self) -> gym.Space[Any]:
        """Observation space of one env (asked of env 0 once)."""
        return self._fetch_spaces()[0]

    @property
    def single_action_space(self) -> gym.Space[Any]:
        """Action space of one env (asked of env 0 once)."""
        return self._fetch_spaces()[1]

    def _fetch_spaces(self) -> tuple[gym.Space[Any], gym.Space[Any]]:
        if self._spaces is None:
            self._spaces = self.call(_spaces, env_ids=[self.live_env_ids[0]])[0]
        return self._spaces

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._core.state is PoolState.CLOSED or not self._loop.alive:
            coro.close()
            raise ClosedPoolError("the pool is closed; create a new EnvPool")
        return self._loop.run(coro)

    async def _arun(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._core.state is PoolState.CLOSED or not self._loop.alive:
            coro.close()
            raise ClosedPoolError("the pool is closed; create a new EnvPool")
        return await self._loop.arun(coro)

    # --- asyncio API ---------------------------------------------------------------------

    async def asend_reset(
        self, env_ids: Sequence[int] | None = None, *, seed: Seeds = None, options: Options = None
    ) -> None:
        """Start resets without waiting; results come through ``arecv()``.

        Args:
            env_ids: Envs to reset (default: every env that is not retired).
            seed: One int (env ``i`` gets ``seed + i``), one seed per env id, or None.
            options: One options dict for all, one per env id (``{"task_id": ...}``), or None.

        Raises:
            AlreadyPendingCallError: An env's previous result has not been received.
            EnvRetiredError: An env is retired.
            ClosedPoolError: The pool is closed.
        """
        ids = self.live_env_ids if env_ids is None else [int(i) for i in env_ids]
        seeds, opts = _per_env_seeds(seed, ids), _per_env_options(options, ids)
        await self._arun(_sync(self._core.send_reset, ids, seeds, opts))

    async def asend(self, actions: Sequence[Any], env_ids: Sequence[int] | None = None) -> None:
        """Start steps without waiting; results come through ``arecv()``.

        Args:
            actions: One action per env id.
            env_ids: The envs (default: every env, all of which must be ``READY``).

        Raises:
            AlreadyPendingCallError: An env's previous result has not been received.
            ResetNeededError: An env has no episode running.
            EnvRetiredError: An env is retired.
            ClosedPoolError: The pool is closed.
        """
        ids = list(range(self.num_envs)) if env_ids is None else [int(i) for i in env_ids]
        await self._arun(_sync(self._core.send, list(actions), ids))

    async def arecv(
        self,
        min_results: int | None = None,
        timeout: float | None = None,
        max_results: int | None = None,
    ) -> list[EnvResult]:
        """Wait for finished calls, whichever envs they come from (wait-any).

        Args:
            min_results: Return once this many results are in (capped at the calls
                outstanding); None waits for every outstanding call.
            timeout: Seconds to wait at most.
            max_results: Return at most this many (the rest stay queued).

        Returns:
            Results in the order they finished, each tagged with its ``env_id``.

        Raises:
            NoAsyncCallError: No call is in flight and no result is waiting.
            PoolTimeoutError: The timeout passed first (nothing is lost: results stay queued).
            ClosedPoolError: The pool is closed (also while waiting).
        """
        return await self._arun(self._core.recv(min_results, timeout, max_results))

    async def areset(
        self,
        env_ids: Sequence[int] | None = None,
        *,
        seed: Seeds = None,
        options: Options = None,
        timeout: float | None = None,
    ) -> list[EnvResult]:
        """Reset envs and wait for their results (in ``env_ids`` order); see ``asend_reset()``.

        Failed resets come back with ``result.error`` set rather than raised.
        """
        ids = self.live_env_ids if env_ids is None else [int(i) for i in env_ids]
        await self.asend_reset(ids, seed=seed, options=options)
        return await self._arun(self._core.recv_for(ids, timeout))

    async def astep(
        self,
        actions: Sequence[Any],
        env_ids: Sequence[int] | None = None,
        *,
        timeout: float | None = None,
    ) -> list[EnvResult]:
        """Step envs and wait for all their results (in ``env_ids`` order)."""
        ids = list(range(self.num_envs)) if env_ids is None else [int(i) for i in env_ids]
        await self.asend(actions, ids)
        return await self._arun(self._core.recv_for(ids, timeout))

    async def acall(self, fn: Any, env_ids: Sequence[int] | None = None) -> list[Any]:
        """Run ``fn(env)`` in each env's worker (after its running call) and return the values.

        ``fn`` must be picklable for the Ray backend (a module-level function).
        """
        ids = self.live_env_ids if env_ids is None else [int(i) for i in env_ids]
        return await self._arun(self._core.call(ids, fn))

    async def aclose(self) -> None:
        """Close the pool: see ``close()``."""
        if self._loop.in_loop():
            await self._core.close()
            return
        if self._loop.alive:
            await self._loop.arun(self._core.close())
        self._finalizer()

    # --- blocking API --------------------------------------------------------------------

    def send_reset(
        self, env_ids: Sequence[int] | None = None, *, seed: Seeds = None, options: Options = None
    ) -> None:
        """Blocking ``asend_reset()`` (returns at once; the resets run in the background)."""
        self._run(self.asend_reset(env_ids, seed=seed, options=options))

    def send(self, actions: Sequence[Any], env_ids: Sequence[int] | None = None) -> None:
        """Blocking ``asend()`` (returns at once; the steps run in the background)."""
        self._run(self.asend(actions, env_ids))

    def recv(
        self,
        min_results: int | None = None,
        timeout: float | None = None,
        max_results: int | None = None,
    ) -> list[EnvResult]:
        """Blocking ``arecv()``."""
        return self._run(self.arecv(min_results, timeout, max_results))

    def reset(
        self,
        env_ids: Sequence[int] | None = None,
        *,
        seed: Seeds = None,
        options: Options = None,
        timeout: float | None = None,
    ) -> list[EnvResult]:
        """Blocking ``areset()``."""
        return self._run(self.areset(env_ids, seed=seed, options=options, timeout=timeout))

    def step(
        self,
        actions: Sequence[Any],
        env_ids: Sequence[int] | None = None,
        *,
        timeout: float | None = None,
    ) -> list[EnvResult]:
        """Blocking ``astep()``: ``send`` + wait for those envs."""
        return self._run(self.astep(actions, env_ids, timeout=timeout))

    def call(self, fn: Any, env_ids: Sequence[int] | None = None) -> list[Any]:
        """Blocking ``acall()``."""
        return self._run(self.acall(fn, env_ids))

    def close(self) -> None:
        """Close every env (stopping its desktop) and the pool's loop. Idempotent.

        Calls in flight get ``PoolConfig.close_timeout`` seconds to finish; then their desktops
        are stopped under them. Unreceived results are dropped.
        """
        self._finalizer()

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> EnvPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"EnvPool(num_envs={self.num_envs}, state={self.state.value})"


async def _sync(fn: Any, *args: Any) -> Any:
    """Run a synchronous core method on the pool's loop (it touches loop-owned state)."""
    return fn(*args)


def _factories(env_fns: EnvFactory | Sequence[EnvFactory], num_envs: int | None) -> list[Any]:
    if callable(env_fns):
        if num_envs is None or num_envs < 1:
            raise ValueError("num_envs (>= 1) is required with a single env factory")
        return [env_fns] * num_envs
    factories = list(env_fns)
    if not factories:
        raise ValueError("an EnvPool needs at least one env factory")
    if num_envs is not None and num_envs != len(factories):
        raise ValueError(f"num_envs={num_envs} but {len(factories)} env factories were given")
    return factories


def _per_env_seeds(seed: Seeds, env_ids: list[int]) -> list[int | None]:
    if seed is None:
        return [None] * len(env_ids)
    if isinstance(seed, int):
        return [seed + i for i in env_ids]
    seeds = list(seed)
    if len(seeds) != len(env_ids):
        raise ValueError(f"{len(seeds)} seeds for {len(env_ids)} envs")
    return seeds


def _per_env_options(options: Options, env_ids: list[int]) -> list[dict[str, Any] | None]:
    if options is None:
        return [None] * len(env_ids)
    if isinstance(options, Mapping):
        return [dict(options) for _ in env_ids]
    per_env = [None if o is None else dict(o) for o in options]
    if len(per_env) != len(env_ids):
        raise ValueError(f"{len(per_env)} options for {len(env_ids)} envs")
    return per_env
