"""A fast fake env for unit tests of the pool's logic (importable as ``pool_fakes``).

Configurable per-step latency, episode lengths per task, and injected faults: failing launches,
infrastructure errors on chosen steps, exceptions out of ``step``. The factory is a picklable
object that counts what its envs did (builds, closes, concurrent resets), across rebuilds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from osworld_gym.actions.spaces import TextActionSpace
from osworld_gym.errors import ProviderError, UnknownTaskError

SHAPE = (6, 8, 3)


@dataclass
class FakeFactory:
    """Builds ``FakeEnv``; fault plans count calls across the envs it built."""

    step_latency: float = 0.0
    reset_latency: float = 0.0
    lengths: dict[str, int] = field(default_factory=lambda: {"short": 2, "long": 5})
    launch_failures: int = 0  # the first N resets raise ProviderError
    infra_on_steps: frozenset[int] = frozenset()  # 1-based step counts that report infra_error
    crash_on_steps: frozenset[int] = frozenset()  # 1-based step counts that raise
    hang_on_steps: frozenset[int] = frozenset()  # 1-based step counts that block until close
    builds: int = 0
    closes: int = 0
    resets: int = 0
    steps: int = 0
    active_resets: int = 0
    max_active_resets: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self) -> FakeEnv:
        with self._lock:
            self.builds += 1
        return FakeEnv(self)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def wait(seconds: float) -> None:
    """Simulated work (a fake's latency, not a wait for a condition)."""
    if seconds > 0:
        time.sleep(seconds)


class FakeEnv(gym.Env[dict[str, Any], str]):
    """Episodes of ``lengths[task_id]`` steps; action ``"done"`` ends one early with score 1."""

    metadata = {"render_modes": []}

    def __init__(self, factory: FakeFactory) -> None:
        self.factory = factory
        self.observation_space = spaces.Dict(
            {
                "screenshot": spaces.Box(0, 255, SHAPE, np.uint8),
                "instruction": TextActionSpace(64),
            }
        )
        self.action_space = TextActionSpace(64)
        self.task_id = ""
        self.t = 0
        self.closed = False
        self._stopped = threading.Event()  # a hung step returns when the env is closed

    def _obs(self) -> dict[str, Any]:
        frame = np.full(SHAPE, self.t % 256, np.uint8)
        return {"screenshot": frame, "instruction": f"do {self.task_id}"}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        f = self.factory
        with f._lock:
            f.resets += 1
            f.active_resets += 1
            f.max_active_resets = max(f.max_active_resets, f.active_resets)
            failing = f.launch_failures > 0
            f.launch_failures -= int(failing)
        try:
            wait(f.reset_latency)
            if failing:
                raise ProviderError("fake desktop failed to launch")
            task_id = (options or {}).get("task_id")
            if task_id is None:
                task_id = sorted(f.lengths)[int(self.np_random.integers(len(f.lengths)))]
            if task_id not in f.lengths:
                raise UnknownTaskError(task_id, f.lengths)
        finally:
            with f._lock:
                f.active_resets -= 1
        self.task_id, self.t = task_id, 0
        return self._obs(), {"task_id": task_id, "step": 0, "infra_error": None}

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        f = self.factory
        with f._lock:
            f.steps += 1
            count = f.steps
        wait(f.step_latency)
        if count in f.hang_on_steps:
            self._stopped.wait()
            raise ConnectionError("fake desktop stopped under a hung step")
        if count in f.crash_on_steps:
            raise RuntimeError(f"fake crash on step {count}")
        self.t += 1
        info: dict[str, Any] = {"task_id": self.task_id, "step": self.t, "infra_error": None}
        info["parse_error"] = "no action" if action == "garbage" else None
        if count in f.infra_on_steps:
            info["infra_error"] = "GuestUnreachableError: fake desktop died"
            return self._obs(), 0.0, False, True, info
        terminated = action == "done"
        truncated = not terminated and self.t >= f.lengths[self.task_id]
        reward = 0.0
        if terminated or truncated:
            reward = 1.0 if terminated else 0.0
            info["score"] = reward
        return self._obs(), reward, terminated, truncated, info

    def close(self) -> None:
        self._stopped.set()
        if not self.closed:
            self.closed = True
            with self.factory._lock:
                self.factory.closes += 1
