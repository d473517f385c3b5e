"""How a pool builds its envs and how it runs them: the env factory and the config dataclasses."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

SCREENSHOT_FORMATS = ("png", "jpeg")
RESETS_PER_CPU = 4
"""Concurrent resets per core of the desktops' host when ``max_concurrent_resets`` is None.

A reset mostly waits (processes starting, windows mapping, the screen settling), so several per
core keep the host busy; the cap is still there so that launching every desktop of a large pool
at once does not starve a small host into launch timeouts."""
MIN_CONCURRENT_RESETS = 4
"""The automatic cap never goes below this (one- and two-core hosts)."""


def host_cpus() -> int:
    """Cores this process may run on (its CPU affinity where the platform reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no sched_getaffinity on macOS and Windows
        return max(1, os.cpu_count() or 1)


def auto_reset_cap(num_envs: int, cpus: float) -> int:
    """The automatic ``max_concurrent_resets``: ``min(num_envs, max(4, 4 * cpus))``.

    Example:
        >>> auto_reset_cap(16, 2), auto_reset_cap(16, 8), auto_reset_cap(3, 64)
        (8, 16, 3)

    Args:
        num_envs: Envs of the pool (no more resets than envs can ever run).
        cpus: Cores of the host(s) running the desktops.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    return max(1, min(num_envs, max(MIN_CONCURRENT_RESETS, int(RESETS_PER_CPU * cpus))))


def is_count(value: object) -> bool:
    """An int >= 1 (not a bool, which is an int to Python but never meant as a count)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@runtime_checkable
class EnvFactory(Protocol):
    """Builds one env.

    Must be picklable for the Ray backend: a module-level function or an ``EnvSpec``, not a
    lambda.
    """

    def __call__(self) -> gym.Env[Any, Any]:
        """A new env."""
        ...


@dataclass(frozen=True)
class EnvSpec:
    """A picklable env factory: an entry point and its keyword arguments.

    Example:
        >>> spec = EnvSpec(kwargs={"tasks": "desktop-basics", "screen_size": (800, 600)})
        >>> spec.entry_point
        'osworld_gym.env:OSWorldEnv'

    Attributes:
        entry_point: ``"module:Class"`` (or ``"module:function"``) called with ``kwargs``, or a
            registered Gymnasium id such as ``"OSWorld-v0"`` (built with ``gym.make``).
        kwargs: Keyword arguments for the entry point (task dicts, screen size, provider, ...).
    """

    entry_point: str = "osworld_gym.env:OSWorldEnv"
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self) -> gym.Env[Any, Any]:
        """Build the env."""
        if ":" not in self.entry_point or self.entry_point.startswith("osworld_gym:"):
            return gym.make(self.entry_point, **dict(self.kwargs))
        module_name, _, attr = self.entry_point.partition(":")
        creator = getattr(importlib.import_module(module_name), attr)
        env: gym.Env[Any, Any] = creator(**dict(self.kwargs))
        return env


@dataclass(frozen=True)
class PoolConfig:
    """Settings of an ``EnvPool``.

    Attributes:
        max_concurrent_resets: Resets (desktop launches included) running at once, across the
            pool; launching many desktops together starves a small host. None (default): scale
            with the pool and the desktops' host, ``min(num_envs, max(4, 4 * cores))`` (see
            ``auto_reset_cap()``); the cores are this host's usable cores with the thread
            backend, and ``num_envs * num_cpus`` with the Ray backend (each actor reserves its
            CPUs on a desktop host). On 2 cores: 8. An int: exactly that cap.
        launch_attempts: Resets in a row that may fail for infrastructure reasons (each is an
            env reset with its own bounded relaunches) before the env is retired.
        screenshot_format: ``"png"`` or ``"jpeg"``: workers also encode each observation's
            screenshot into ``EnvResult.screenshot`` (what trajectories store); None: no encoding.
        jpeg_quality: JPEG quality, 1-95.
        png_compress_level: zlib level of PNG encoding, 0-9 (1 is fast and still small for
            desktop screens).
        close_timeout: Seconds ``close()`` waits for calls in flight before it stops the
            workers' desktops anyway.
        step_timeout: Seconds a step (evaluation included) may run before its worker counts
            as hung: the episode ends truncated with ``infra_error``, the env's desktop is
            stopped under the stuck call, and the env gets a fresh worker. None: no limit
            beyond the env's own timeouts.
        reset_timeout: The same for a reset (desktop launch and task setup included); a
            timed-out reset counts as a failed launch.
    """

    max_concurrent_resets: int | None = None
    launch_attempts: int = 3
    screenshot_format: str | None = None
    jpeg_quality: int = 85
    png_compress_level: int = 1
    close_timeout: float = 30.0
    step_timeout: float | None = 600.0
    reset_timeout: float | None = 1800.0

    def __post_init__(self) -> None:
        if self.max_concurrent_resets is not None and not is_count(self.max_concurrent_resets):
            raise ValueError(
                "max_concurrent_resets must be None (automatic) or an int >= 1, "
                f"got {self.max_concurrent_resets!r}"
            )
        for name in ("step_timeout", "reset_timeout", "close_timeout"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0 or None, got {value}")
        if self.launch_attempts < 1:
            raise ValueError(f"launch_attempts must be >= 1, got {self.launch_attempts}")
        if self.screenshot_format not in (None, *SCREENSHOT_FORMATS):
            raise ValueError(
                f"screenshot_format must be None or one of {SCREENSHOT_FORMATS}, "
                f"got {self.screenshot_format!r}"
            )

    def reset_cap(self, num_envs: int, cpus: float | None = None) -> int:
        """The resets a pool of ``num_envs`` runs at once under this config.

        Args:
            num_envs: Envs of the pool.
            cpus: Cores of the desktops' host(s); None: this host's (``host_cpus()``).
        """
        if self.max_concurrent_resets is not None:
            return self.max_concurrent_resets
        return auto_reset_cap(num_envs, host_cpus() if cpus is None else cpus)


@dataclass(frozen=True)
class RayBackendConfig:
    """Run the pool's env workers as Ray actors (``pip install 'osworld-gym[ray]'``).

    Attributes:
        address: Ray cluster to join (``"auto"``, ``"ray://host:10001"``); None uses the Ray
            instance already initialised in this process, or starts a local one.
        num_cpus: CPUs each env actor reserves.
        resource_prefix: Spread actors round-robin over the cluster's custom resources whose
            names start with this prefix, one unit each: start every desktop host with e.g.
            ``ray start --resources='{"desktop:10.0.0.5": 16}'`` and pass ``"desktop:"``.
            None: let Ray place actors anywhere.
    """

    address: str | None = None
    num_cpus: float = 1.0
    resource_prefix: str | None = None
