"""What a pool hands back for each call: one ``EnvResult``, tagged with its env id."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from osworld_gym.pool.state import Command


@dataclass
class EnvResult:
    """The outcome of one reset or step of one env.

    A failed reset carries ``error`` (and no observation); a step never fails this way: a
    broken desktop or a crashed worker ends the episode with ``truncated=True`` and
    ``info["infra_error"]``.

    Attributes:
        env_id: Index of the env in the pool.
        kind: ``Command.RESET`` or ``Command.STEP``.
        observation: The observation, or None after a failed reset.
        reward: The step's reward (0 for resets).
        terminated: The episode ended by the agent's DONE or FAIL.
        truncated: The episode ended by the step limit or an infrastructure fault.
        info: The env's info dict (``task_id``, ``step``, ``timings``, ``infra_error``, ...).
        error: Why a reset failed: the env's exception (e.g. an unknown task id), or
            ``EnvRetiredError`` when the env's desktop kept failing.
        screenshot: The observation's screenshot encoded as PNG or JPEG, when the pool's
            ``screenshot_format`` asks for it.
        elapsed: Seconds the worker spent on the call.
        infra: The failure was an infrastructure fault (counts toward retiring the env).
    """

    env_id: int
    kind: Command
    observation: Any = None
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None
    screenshot: bytes | None = None
    elapsed: float = 0.0
    infra: bool = False

    @property
    def done(self) -> bool:
        """The episode is over (terminated or truncated), or the reset failed."""
        return self.terminated or self.truncated or self.error is not None

    @property
    def infra_error(self) -> str | None:
        """The infrastructure fault that ended the episode, if any."""
        return self.info.get("infra_error")

    @property
    def ok(self) -> bool:
        """The call produced an observation (no reset error)."""
        return self.error is None
