"""The env side of a pool: one env, driven by commands, whichever backend runs it.

``EnvWorker`` is plain blocking code. The in-process backend runs each worker on its own
thread; the Ray backend wraps one in an actor. The worker sorts failures into the pool's two
channels:

* a reset that fails because of the task or the caller (unknown task id, a task that cannot be
  scored here, bad options) is reported as is, and the env is kept;
* a reset that fails for any other reason (the desktop would not launch, a crashed guest, an
  unexpected exception) is an infrastructure fault: the env is discarded, rebuilt from the
  factory on the next reset, and the pool counts the failure toward retiring the env;
* a step never fails: an exception escaping the env (a bug, a dead desktop the env did not
  catch) ends the episode as truncated with ``info["infra_error"]``, and the env is rebuilt.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import gymnasium as gym

from osworld_gym.errors import GuestError, OSWorldGymError, ProviderError
from osworld_gym.pool.config import EnvFactory, PoolConfig
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.state import Command
from osworld_gym.pool.trajectory import encode_screenshot

logger = logging.getLogger(__name__)

# Failures that say something about the task or the call, not about the desktop.
_CALLER_ERRORS = (ValueError, TypeError, KeyError, LookupError, gym.error.Error)


def is_infra_failure(error: BaseException) -> bool:
    """Whether a reset failure is an infrastructure fault (relaunch and retry) or not."""
    if isinstance(error, (ProviderError, GuestError)):
        return True
    if isinstance(error, (OSWorldGymError, *_CALLER_ERRORS)):
        return False
    return True


class EnvWorker:
    """Owns one env built from a factory and runs reset/step/call/close on it.

    Args:
        factory: Builds the env (on first use, and again after an infrastructure fault).
        env_id: The env's index in the pool (tags the results).
        config: The pool's settings (screenshot encoding).
    """

    def __init__(self, factory: EnvFactory, env_id: int, config: PoolConfig) -> None:
        self.factory = factory
        self.env_id = env_id
        self.config = config
        self.env: gym.Env[Any, Any] | None = None
        self.builds = 0
        self._last_obs: Any = None

    def handle(self, command: Command, payload: Any = None) -> Any:
        """Run one command; the payload is ``(seed, options)``, an action, or a callable."""
        if command is Command.RESET:
            seed, options = payload
            return self.reset(seed, options)
        if command is Command.STEP:
            return self.step(payload)
        if command is Command.CALL:
            return self.call(payload)
        if command is Command.CLOSE:
            return self.close()
        raise ValueError(f"unknown worker command {command!r}")

    def ensure_env(self) -> gym.Env[Any, Any]:
        """The env, built now if there is none."""
        if self.env is None:
            self.env = self.factory()
            self.builds += 1
        return self.env

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> EnvResult:
        """Reset the env; failures come back in ``EnvResult.error``, never raised."""
        start = time.perf_counter()
        try:
            obs, info = self.ensure_env().reset(seed=seed, options=options)
        except Exception as e:
            infra = is_infra_failure(e)
            logger.warning("env %d: reset failed (%s): %s", self.env_id, _kind(infra), e)
            if infra:
                self.discard()
            return EnvResult(
                self.env_id, Command.RESET, error=e, infra=infra,
                elapsed=time.perf_counter() - start,
            )  # fmt: skip
        self._last_obs = obs
        return self._result(Command.RESET, obs, 0.0, False, False, info, start)

    def step(self, action: Any) -> EnvResult:
        """Step the env; an exception out of the env becomes a truncation with infra_error."""
        start = time.perf_counter()
        try:
            obs, reward, terminated, truncated, info = self.ensure_env().step(action)
        except Exception as e:
            logger.warning("env %d: step raised, rebuilding the env: %r", self.env_id, e)
            self.discard()
            info = {"infra_error": f"worker crash: {type(e).__name__}: {e}"}
            return self._result(Command.STEP, self._last_obs, 0.0, False, True, info, start)
        self._last_obs = obs
        return self._result(Command.STEP, obs, float(reward), terminated, truncated, info, start)

    def call(self, fn: Any) -> Any:
        """Run ``fn(env)`` in the worker and return its value."""
        return fn(self.ensure_env())

    def close(self) -> None:
        """Close the env (stops its desktop). Safe to call more than once."""
        self.discard()

    def discard(self) -> None:
        """Close and forget the env; the next call builds a new one."""
        env, self.env = self.env, None
        if env is None:
            return
        try:
            env.close()
        except Exception as e:  # a half-dead env must not stop the pool from going on
            logger.warning("env %d: closing a broken env failed: %r", self.env_id, e)

    def _result(
        self,
        kind: Command,
        obs: Any,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        start: float,
    ) -> EnvResult:
        return EnvResult(
            env_id=self.env_id,
            kind=kind,
            observation=obs,
            reward=reward,
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=dict(info),
            screenshot=self._encode(obs),
            elapsed=time.perf_counter() - start,
            infra=bool(info.get("infra_error")),
        )

    def _encode(self, obs: Any) -> bytes | None:
        fmt = self.config.screenshot_format
        if fmt is None or not isinstance(obs, dict) or "screenshot" not in obs:
            return None
        return encode_screenshot(
            obs["screenshot"],
            fmt,
            jpeg_quality=self.config.jpeg_quality,
            png_compress_level=self.config.png_compress_level,
        )


def _kind(infra: bool) -> str:
    return "infrastructure fault" if infra else "task or caller error"
