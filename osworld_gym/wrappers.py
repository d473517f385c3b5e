"""Wrappers that give the env's observation the shapes Gymnasium's own wrappers expect.

The env observes a ``Dict`` (screenshot, instruction, last action's error, optionally the
accessibility tree). Gymnasium's image wrappers (``ResizeObservation``,
``GrayscaleObservation``, ``FrameStackObservation``...) take a ``Box`` image:
``ScreenshotObservation`` gives them the screenshot and moves the text parts into
``info``, so nothing the agent is told is lost.

Example:
    >>> import gymnasium as gym
    >>> from osworld_gym.wrappers import ScreenshotObservation
    >>> env = ScreenshotObservation(gym.make("OSWorld-v0"))  # doctest: +SKIP
    >>> env = gym.wrappers.ResizeObservation(env, (224, 224))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["TEXT_KEYS", "ScreenshotObservation"]

# The observation's text parts, which ScreenshotObservation hands over in ``info``.
TEXT_KEYS = ("instruction", "last_action_error", "accessibility_tree")


class ScreenshotObservation(
    gym.Wrapper[np.ndarray, Any, dict[str, Any], Any], gym.utils.RecordConstructorArgs
):
    """The screenshot (a ``uint8`` ``Box`` of ``(height, width, 3)``) as the observation.

    The observation's text parts go into ``info`` under their own names (``info["instruction"]``,
    ``info["last_action_error"]`` and, when observed, ``info["accessibility_tree"]``) on every
    ``reset`` and ``step``.

    Args:
        env: An OSWorld env (or a wrapper of one) whose observation is the env's ``Dict``.

    Raises:
        TypeError: ``env``'s observation space has no ``"screenshot"`` ``Box``.
    """

    def __init__(self, env: gym.Env[dict[str, Any], Any]) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        # Gymnasium 1.4 annotates Wrapper.__init__'s env with the wrapper's own observation
        # type, not the wrapped env's.
        super().__init__(env)  # type: ignore[arg-type]
        space = env.observation_space
        screenshot = space.spaces.get("screenshot") if isinstance(space, spaces.Dict) else None
        if not isinstance(screenshot, spaces.Box):
            raise TypeError(
                "ScreenshotObservation wraps an env observing a Dict with a 'screenshot' Box, "
                f"got {space}"
            )
        self.observation_space = screenshot

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the env; the screenshot is the observation, the text parts go into ``info``."""
        obs: Any  # the wrapped env's Dict (Gymnasium types self.env with the wrapper's types)
        obs, info = self.env.reset(seed=seed, options=options)
        return obs["screenshot"], _with_text(info, obs)

    def step(self, action: Any) -> tuple[np.ndarray, Any, bool, bool, dict[str, Any]]:
        """Step the env; the screenshot is the observation, the text parts go into ``info``."""
        obs: Any
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs["screenshot"], reward, terminated, truncated, _with_text(info, obs)


def _with_text(info: dict[str, Any], obs: dict[str, Any]) -> dict[str, Any]:
    return {**info, **{key: obs[key] for key in TEXT_KEYS if key in obs}}
