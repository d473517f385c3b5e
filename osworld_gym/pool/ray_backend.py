"""The Ray backend: each env worker in a Ray actor, placed across the nodes of a Ray cluster.

Each actor owns one ``EnvWorker``, so envs behave exactly as in
the in-process backend. Actors can be spread over desktop hosts by a custom resource per host
(``RayBackendConfig.resource_prefix``), as ARPO does with ``docker:<ip>`` labels. An actor that
dies (its node lost, its process killed) is replaced before the env's next call; the call it
was running ends the episode with ``infra_error``. Closing the pool closes every env in its
actor and kills the actors; Ray itself kills a dead driver's actors, and each ``local`` desktop
stops when its actor process does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
from collections.abc import Sequence
from typing import Any

from osworld_gym.errors import DependencyNotInstalled, OSWorldGymError, WorkerLostError
from osworld_gym.pool.config import EnvFactory, PoolConfig, RayBackendConfig
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.state import Command
from osworld_gym.pool.worker import EnvWorker

logger = logging.getLogger(__name__)

# When an actor's process ends, Ray by default SIGKILLs its child processes, the desktop's
# watchdog among them, before the watchdog can stop the desktop's daemonised apps (they are
# not Ray's children). Left alone, the watchdog notices its launcher's death and stops them all.
_ACTOR_ENV = {"RAY_kill_child_processes_on_worker_exit": "false"}


def import_ray() -> Any:
    """Import Ray, or explain how to install it."""
    try:
        import ray
    except ImportError as e:
        raise DependencyNotInstalled(
            "the Ray backend needs Ray: pip install 'osworld-gym[ray]'"
        ) from e
    return ray


class EnvActor:
    """The body of a Ray actor: one env worker (wrapped with ``ray.remote`` at run time)."""

    def __init__(self, factory: EnvFactory, env_id: int, config: PoolConfig) -> None:
        self.worker = EnvWorker(factory, env_id, config)

    def handle(self, command: Command, payload: Any = None) -> Any:
        """Run one worker command; errors in results are made safe to unpickle."""
        reply = self.worker.handle(command, payload)
        if isinstance(reply, EnvResult) and reply.error is not None:
            reply.error = portable_error(reply.error)
        return reply

    def pid(self) -> int:
        """The actor's process id."""
        return os.getpid()


def portable_error(error: BaseException) -> BaseException:
    """The error itself if it survives pickling, else an ``OSWorldGymError`` naming it.

    Exceptions whose ``__init__`` takes other arguments than their message do not unpickle.
    """
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return OSWorldGymError(f"{type(error).__name__}: {error}")
    return error


class RayBackend:
    """Env workers as Ray actors.

    Args:
        factories: One picklable env factory per env.
        config: The pool's settings.
        ray_config: Where and how to place the actors.
    """

    def __init__(
        self, factories: Sequence[EnvFactory], config: PoolConfig, ray_config: RayBackendConfig
    ) -> None:
        self.ray = import_ray()
        self.factories = list(factories)
        self.config = config
        self.ray_config = ray_config
        self.actors: list[Any] = [None] * len(self.factories)
        self.labels: list[str] = []
        self._actor_class: Any = None
        self._started_ray = False

    async def start(self) -> None:
        """Join (or start) Ray and create one actor per env."""
        ray = self.ray
        if not ray.is_initialized():
            ray.init(address=self.ray_config.address, include_dashboard=False)
            self._started_ray = True
        prefix = self.ray_config.resource_prefix
        if prefix:
            self.labels = sorted(r for r in ray.cluster_resources() if r.startswith(prefix))
            if not self.labels:
                raise ValueError(
                    f"no Ray resource starts with {prefix!r}; start each desktop host with "
                    f"ray start --resources='{{\"{prefix}<host>\": <desktops>}}'"
                )
        self._actor_class = ray.remote(EnvActor)
        for env_id in range(len(self.factories)):
            self.actors[env_id] = self._new_actor(env_id)
        logger.info("started %d env actors on Ray", len(self.actors))

    def _new_actor(self, env_id: int, replacing: bool = False) -> Any:
        options: dict[str, Any] = {
            "num_cpus": self.ray_config.num_cpus,
            "max_restarts": 0,
            "runtime_env": {"env_vars": dict(_ACTOR_ENV)},
        }
        if self.labels:
            options["resources"] = {self._label_for(env_id, replacing): 1}
        return self._actor_class.options(**options).remote(
            self.factories[env_id], env_id, self.config
        )

    def _label_for(self, env_id: int, replacing: bool) -> str:
        """Round-robin at start; a replacement goes to the host with the most free units.

        A replacement may be replacing an actor whose host left the cluster: asking for that
        host's resource again would wait forever, so hosts are looked up afresh.
        """
        if not replacing:
            return self.labels[env_id % len(self.labels)]
        prefix = self.ray_config.resource_prefix or ""
        free: dict[str, float] = {
            name: units
            for name, units in self.ray.available_resources().items()
            if name.startswith(prefix) and units >= 1
        }
        if not free:
            raise WorkerLostError(
                f"no desktop host has a free {prefix!r} resource for env {env_id}; "
                f"hosts known at start: {self.labels}"
            )
        return max(sorted(free), key=lambda name: free[name])

    async def run(self, env_id: int, command: Command, payload: Any = None) -> Any:
        """Run a command in the env's actor; a lost actor is replaced and reported."""
        ray = self.ray
        if self.actors[env_id] is None:
            self.actors[env_id] = self._new_actor(env_id, replacing=True)
        ref = self.actors[env_id].handle.remote(command, payload)
        try:
            return await ref
        except ray.exceptions.RayActorError as e:
            self._discard(env_id)
            raise WorkerLostError(f"the Ray actor of env {env_id} was lost: {e}") from e
        except ray.exceptions.RayTaskError as e:  # only CALL functions raise in the actor
            cause = getattr(e, "cause", None)
            raise (cause if isinstance(cause, BaseException) else e) from None

    def abandon(self, env_id: int) -> None:
        """Kill the hung actor (its desktop stops with its process); the next call makes another."""
        self._discard(env_id)

    def _discard(self, env_id: int) -> None:
        actor, self.actors[env_id] = self.actors[env_id], None
        if actor is not None:
            try:
                self.ray.kill(actor)
            except Exception as e:  # already gone
                logger.debug("killing the lost actor of env %d: %r", env_id, e)

    async def close(self, timeout: float) -> None:
        """Close every env in its actor (bounded), then kill the actors."""
        refs = [a.handle.remote(Command.CLOSE) for a in self.actors if a is not None]
        if refs:
            done = asyncio.gather(*refs, return_exceptions=True)
            try:
                await asyncio.wait_for(done, timeout)
            except TimeoutError:
                logger.warning("env actors did not close within %.1f s; killing them", timeout)
        self.force_close()

    def force_close(self) -> None:
        """Kill every actor (their desktops stop with them); shut Ray down if we started it."""
        for env_id in range(len(self.actors)):
            self._discard(env_id)
        if self._started_ray and self.ray.is_initialized():
            self.ray.shutdown()
            self._started_ray = False
