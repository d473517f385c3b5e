"""A Gymnasium ``VectorEnv`` over an ``EnvPool``, for users of the stock vector API.

Same batching, info layout and autoreset modes as ``SyncVectorEnv`` (``NEXT_STEP``,
``SAME_STEP``, ``DISABLED`` with ``options["reset_mask"]``), but the envs step concurrently on
the pool's workers and a crashed desktop is an ``infra_error`` truncation, never a dead vector
env. Per-env tasks: ``reset(options={"task_id": [id_0, ..., id_n-1]})``.

A vector step still waits for every env (that is the vector API); for wait-any scheduling use
the pool or ``RolloutCollector`` directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from osworld_gym.env_config import DEFAULT_MAX_STEPS, resolve_step_limit
from osworld_gym.pool.backends import Backend
from osworld_gym.pool.config import EnvFactory, EnvSpec, PoolConfig, RayBackendConfig
from osworld_gym.pool.pool import EnvPool
from osworld_gym.pool.results import EnvResult


@dataclass(frozen=True)
class _Attr:
    """Picklable ``fn(env)`` for ``call``/``get_attr``/``set_attr`` on every worker."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    set_value: Any = None
    setting: bool = False

    def __call__(self, env: Any) -> Any:
        if self.setting:
            setattr(env, self.name, self.set_value)
            return None
        value = getattr(env, self.name)
        return value(*self.args, **dict(self.kwargs)) if callable(value) else value


class PoolVectorEnv(VectorEnv[Any, Any, Any]):
    """``VectorEnv`` facade of an env pool.

    Args:
        env_fns: Env factories (one per env), if no ``pool`` is given; the facade then owns
            the pool it builds and closes it.
        pool: An existing pool to drive instead (closed by ``close()`` only if owned).
        autoreset_mode: Gymnasium's autoreset mode.
        copy: Return copies of the batched observations.
        config: Settings of the pool built from ``env_fns``.
        backend: Backend of the pool built from ``env_fns``.
        timeout: Seconds a reset or step may take at most (None: no limit).

    Raises:
        ValueError: Neither or both of ``env_fns`` and ``pool`` were given.
    """

    def __init__(
        self,
        env_fns: Sequence[EnvFactory] | None = None,
        *,
        pool: EnvPool | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        config: PoolConfig | None = None,
        backend: str | RayBackendConfig | Backend = "thread",
        timeout: float | None = None,
    ) -> None:
        if (env_fns is None) == (pool is None):
            raise ValueError("give either env_fns or pool")
        self._owns_pool = pool is None
        self.pool = pool or EnvPool(list(env_fns or ()), config=config, backend=backend)
        self.num_envs = self.pool.num_envs
        self.copy = copy
        self.timeout = timeout
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        first = self.pool.live_env_ids[:1]
        self.metadata = dict(self.pool.call(_Attr("metadata"), env_ids=first)[0])
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = self.pool.call(_Attr("render_mode"), env_ids=first)[0]
        self.single_observation_space = self.pool.single_observation_space
        self.single_action_space = self.pool.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._env_obs: list[Any] = [None] * self.num_envs
        self._observations: Any = create_empty_array(self.single_observation_space, self.num_envs)
        self._rewards = np.zeros(self.num_envs, dtype=np.float64)
        self._terminations = np.zeros(self.num_envs, dtype=np.bool_)
        self._truncations = np.zeros(self.num_envs, dtype=np.bool_)
        self._autoreset_envs = np.zeros(self.num_envs, dtype=np.bool_)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all envs (or those in ``options["reset_mask"]``).

        ``options["task_id"]`` may be one id for all or a sequence with one id per env.

        Raises:
            Exception: The first env's reset error (an unknown task id, a retired env...).
        """
        seeds = _seeds(seed, self.num_envs)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        elif not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (
            self.num_envs,
        ) and mask.any()):  # fmt: skip
            raise ValueError(f"options['reset_mask'] must be a non-empty bool array, got {mask!r}")
        ids = [int(i) for i in np.flatnonzero(mask)]
        per_env = _per_env_options(options, self.num_envs)
        results = self.pool.reset(
            ids, seed=[seeds[i] for i in ids], options=[per_env[i] for i in ids],
            timeout=self.timeout,
        )  # fmt: skip
        _raise_first_error(results)
        infos: dict[str, Any] = {}
        for result in results:
            self._env_obs[result.env_id] = result.observation
            infos = self._add_info(infos, result.info, result.env_id)
        self._terminations[mask] = self._truncations[mask] = self._autoreset_envs[mask] = False
        return self._batched(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env concurrently; autoreset as the mode says."""
        results = self._run_step(list(iterate(self.action_space, actions)))
        infos: dict[str, Any] = {}
        finals = []
        for result in results:
            i = result.env_id
            self._env_obs[i] = result.observation
            self._rewards[i], self._terminations[i], self._truncations[i] = (
                result.reward, result.terminated, result.truncated,
            )  # fmt: skip
            if self.autoreset_mode is AutoresetMode.SAME_STEP and result.done:
                final = {"final_obs": result.observation, "final_info": result.info}
                infos = self._add_info(infos, final, i)
                finals.append(i)
            else:
                infos = self._add_info(infos, result.info, i)
        if finals:  # SAME_STEP: the reset observation replaces the final one
            for result in self.pool.reset(finals, timeout=self.timeout):
                _raise_first_error([result])
                self._env_obs[result.env_id] = result.observation
                infos = self._add_info(infos, result.info, result.env_id)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (
            self._batched(),
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def _run_step(self, actions: list[Any]) -> list[EnvResult]:
        """Send the step (and NEXT_STEP autoresets) to the pool; every env's result, by id."""
        every = list(range(self.num_envs))
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            resetting = [i for i in every if self._autoreset_envs[i]]
            if resetting:
                self.pool.send_reset(resetting)
            return self._step(actions, [i for i in every if not self._autoreset_envs[i]], resetting)
        if self.autoreset_mode is AutoresetMode.DISABLED and self._autoreset_envs.any():
            raise ValueError(
                "autoreset is disabled: reset the finished envs "
                f"{np.flatnonzero(self._autoreset_envs).tolist()} with "
                "options={'reset_mask': ...} first"
            )
        return self._step(actions, every)

    def _step(
        self, actions: list[Any], env_ids: list[int], collect_also: Sequence[int] = ()
    ) -> list[EnvResult]:
        if env_ids:
            self.pool.send([actions[i] for i in env_ids], env_ids)
        if not env_ids and not collect_also:
            return []
        results = self.pool.recv(timeout=self.timeout)
        _raise_first_error(results)
        return sorted(results, key=lambda r: r.env_id)

    def _batched(self) -> Any:
        self._observations = concatenate(
            self.single_observation_space, self._env_obs, self._observations
        )
        return deepcopy(self._observations) if self.copy else self._observations

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a method (or read an attribute) of every env, in its worker."""
        return tuple(self.pool.call(_Attr(name, args, tuple(kwargs.items()))))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """An attribute of every env."""
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set an attribute on every env (one value for all, or one per env)."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"{len(values)} values for {self.num_envs} envs")
        for env_id, value in enumerate(values):
            self.pool.call(_Attr(name, set_value=value, setting=True), env_ids=[env_id])

    def __enter__(self) -> PoolVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close_extras(self, **kwargs: Any) -> None:
        """Close the pool if this facade built it."""
        if self._owns_pool:
            self.pool.close()


def make_vector_env(
    num_envs: int = 1,
    *,
    max_episode_steps: int | None = None,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    pool_config: PoolConfig | None = None,
    backend: str | RayBackendConfig | Backend = "thread",
    timeout: float | None = None,
    **env_kwargs: Any,
) -> PoolVectorEnv:
    """The registered ids' ``vector_entry_point``: ``gym.make_vec("OSWorld-v0", num_envs=n)``.

    Gymnasium passes every keyword of ``make_vec`` here (it refuses ``vector_kwargs`` for
    this mode): the vector env's own (``autoreset_mode``, ``pool_config``, ``backend``,
    ``timeout``) are taken out, and the rest build each env, the id's defaults included.

    Args:
        num_envs: Desktops, one env each.
        max_episode_steps: Each env's step limit (``max_steps``), as ``gym.make`` takes it.
        autoreset_mode: Gymnasium's autoreset mode.
        pool_config: Settings of the pool (``PoolConfig``).
        backend: ``"thread"``, ``"ray"``, a Ray backend config or a backend.
        timeout: Seconds a vector reset or step may take at most (None: no limit).
        **env_kwargs: ``OSWorldEnv``'s arguments.

    Raises:
        ValueError: ``max_episode_steps`` and a different ``max_steps`` were both given.
    """
    if max_episode_steps is not None:
        given = env_kwargs.get("max_steps", DEFAULT_MAX_STEPS)
        env_kwargs["max_steps"] = resolve_step_limit(given, max_episode_steps)
    spec = EnvSpec(entry_point="osworld_gym.env:OSWorldEnv", kwargs=env_kwargs)
    return PoolVectorEnv(
        [spec] * num_envs,
        autoreset_mode=autoreset_mode,
        config=pool_config,
        backend=backend,
        timeout=timeout,
    )


def _seeds(seed: int | list[int | None] | None, n: int) -> list[int | None]:
    if seed is None:
        return [None] * n
    if isinstance(seed, int):
        return [seed + i for i in range(n)]
    if len(seed) != n:
        raise ValueError(f"{len(seed)} seeds for {n} envs")
    return list(seed)


def _per_env_options(options: dict[str, Any], n: int) -> list[dict[str, Any] | None]:
    task_ids = options.get("task_id")
    if task_ids is None or isinstance(task_ids, str):
        return [dict(options) if options else None for _ in range(n)]
    task_ids = list(task_ids)
    if len(task_ids) != n:
        raise ValueError(f"options['task_id'] has {len(task_ids)} ids for {n} envs")
    return [{**options, "task_id": task_id} for task_id in task_ids]


def _raise_first_error(results: list[EnvResult]) -> None:
    for result in results:
        if result.error is not None:
            raise result.error
