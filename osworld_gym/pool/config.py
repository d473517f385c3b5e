"""How a pool builds its envs and how it runs them: the env factory and the config dataclasses."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

SCREENSHOT_FORMATS = ("png", "jpeg")


@runtime_checkable
class EnvFactory(Protocol):
    """Builds one env.

    Must be picklable for the Ray backend: a module-level function or an :class:`EnvSpec`, not a
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
        return creator(**dict(self.kwargs))


@dataclass(frozen=True)
class PoolConfig:
    """Settings of an :class:`~osworld_gym.pool.EnvPool`.

    Attributes:
        max_concurrent_resets: Resets (desktop launches included) running at once, across the
            pool; launching many desktops together starves a small host.
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

    max_concurrent_resets: int = 4
    launch_attempts: int = 3
    screenshot_format: str | None = None
    jpeg_quality: int = 85
    png_compress_level: int = 1
    close_timeout: float = 30.0
    step_timeout: float | None = 600.0
    reset_timeout: float | None = 1800.0

    def __post_init__(self) -> None:
        if self.max_concurrent_resets < 1:
            raise ValueError(
                f"max_concurrent_resets must be >= 1, got {self.max_concurrent_resets}"
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
