"""TRL's ``environment_factory`` over remote desktops: each instance is one OpenEnv session.

``osworld_gym.integrations.trl`` runs desktops in the trainer's process. When they live on
another machine (``osworld-gym serve-env`` there), give TRL ``RemoteDesktop`` instead: the
same tools (click, type_text, ..., done), each forwarded to the server as a tool call and
answered with the new screenshot (a PIL image block) and the action's error, if any.

TRL builds the class with no arguments, so the server comes from ``OSWORLD_OPENENV_URL``
(default ``http://127.0.0.1:8000``). Start the server with at least as many desktops as TRL
generates rollouts at once (``--num-envs`` >= the generation batch per process): each instance
holds its session's desktop, and a session beyond ``--num-envs`` is refused.

Check the class against a running server, without a model (one ``ui-basics`` episode through
the tools)::

    osworld-gym serve-env --tasks ui-basics --num-envs 2 --port 8000 &
    OSWORLD_OPENENV_URL=http://127.0.0.1:8000 python examples/openenv/trl_remote.py --check

Training: see ``README.md`` beside this file.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Literal

from osworld_gym.integrations.openenv import OSWorldAction, OSWorldEnvClient, observation_content

ContentBlocks = list[dict[str, Any]]


class RemoteDesktop:
    """One rollout's desktop on an ``osworld-gym serve-env`` server (TRL ``environment_factory``).

    Public methods other than ``reset`` and ``get_reward`` are the model's tools.
    """

    def __init__(self) -> None:
        url = os.environ.get("OSWORLD_OPENENV_URL", "http://127.0.0.1:8000")
        self._env = OSWorldEnvClient(base_url=url).sync()
        self._env.connect()  # the session (and, at the first reset, its desktop) is this instance's
        self._result: Any = None

    def reset(self, task_id: str, **row: Any) -> ContentBlocks:
        """Start the row's task; TRL appends the first screenshot to the prompt."""
        self._result = self._env.reset(task_id=task_id)
        return observation_content(self._result.observation, first_turn=False, style="hf")

    def get_reward(self) -> float | None:
        """The episode's score; None when the desktop failed (TRL leaves the rollout out)."""
        if self._result is not None and not self._result.done:
            self._act("done", {})  # the model stopped before done(): score the desktop as it is
        return None if self._result is None else self._result.reward

    def click(self, x: int, y: int) -> ContentBlocks:
        """Left-click at a point on the screen.

        Args:
            x: Horizontal position in screen pixels, from the left edge.
            y: Vertical position in screen pixels, from the top edge.
        """
        return self._act("click", {"x": x, "y": y})

    def double_click(self, x: int, y: int) -> ContentBlocks:
        """Double-click at a point on the screen.

        Args:
            x: Horizontal position in screen pixels, from the left edge.
            y: Vertical position in screen pixels, from the top edge.
        """
        return self._act("double_click", {"x": x, "y": y})

    def right_click(self, x: int, y: int) -> ContentBlocks:
        """Right-click at a point on the screen.

        Args:
            x: Horizontal position in screen pixels, from the left edge.
            y: Vertical position in screen pixels, from the top edge.
        """
        return self._act("right_click", {"x": x, "y": y})

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> ContentBlocks:
        """Press the left button at a start point, move to an end point and release it.

        Args:
            x1: Start position, horizontal, in screen pixels.
            y1: Start position, vertical, in screen pixels.
            x2: End position, horizontal, in screen pixels.
            y2: End position, vertical, in screen pixels.
        """
        return self._act("drag", {"x1": x1, "y1": y1, "x2": x2, "y2": y2})

    def scroll(
        self, x: int, y: int, direction: Literal["up", "down", "left", "right"], amount: int = 5
    ) -> ContentBlocks:
        """Turn the mouse wheel with the pointer at a point on the screen.

        Args:
            x: Horizontal position in screen pixels.
            y: Vertical position in screen pixels.
            direction: Which way to scroll.
            amount: Wheel clicks.
        """
        return self._act("scroll", {"x": x, "y": y, "direction": direction, "amount": amount})

    def type_text(self, text: str) -> ContentBlocks:
        """Type text where the focus is; a newline presses Enter.

        Args:
            text: The text to type.
        """
        return self._act("type_text", {"text": text})

    def hotkey(self, keys: list[str]) -> ContentBlocks:
        """Press keys together, such as ["ctrl", "c"].

        Args:
            keys: Key names, pressed in this order.
        """
        return self._act("hotkey", {"keys": keys})

    def press(self, key: str) -> ContentBlocks:
        """Press and release one key, such as "enter" or "escape".

        Args:
            key: The key name.
        """
        return self._act("press", {"key": key})

    def wait(self) -> ContentBlocks:
        """Wait a moment for the screen to change, then look again."""
        return self._act("wait", {})

    def done(self) -> ContentBlocks:
        """Declare the task complete; this ends the episode."""
        return self._act("done", {})

    def fail(self) -> ContentBlocks:
        """Declare the task impossible; this ends the episode."""
        return self._act("fail", {})

    def _act(self, tool: str, arguments: dict[str, Any]) -> ContentBlocks:
        if self._result is None or self._result.done:
            raise ValueError("The episode is over.")  # TRL answers the model with this error
        self._result = self._env.step(OSWorldAction.tool_call(tool, arguments))
        if self._result.done:
            return [{"type": "text", "text": "The episode is over."}]
        return observation_content(self._result.observation, first_turn=False, style="hf")


def check(task_id: str) -> int:
    """One ``ui-basics`` episode through the tools, as TRL would call them."""
    from osworld_gym.policies.oracles.ui_basics import task_layout

    env = RemoteDesktop()
    blocks = env.reset(task_id=task_id, prompt=[])
    print(f"reset: {[b['type'] for b in blocks]}, image {blocks[0]['image'].size}")
    x, y = task_layout(task_id).centre() if task_id.startswith("click") else (0, 0)
    print("click:", [b["type"] for b in env.click(x, y)])
    print("done:", env.done())
    print("reward:", env.get_reward())
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="one episode, no model")
    parser.add_argument("--task-id", default="click-colour-01")
    args = parser.parse_args()
    if not args.check:
        parser.error("see README.md for training; --check drives one episode")
    sys.exit(check(args.task_id))
