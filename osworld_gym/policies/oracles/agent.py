"""The ``oracle`` agent: replays a scripted solution of each bundled task, step by step.

``desktop-basics`` tasks replay the typed actions of ``osworld_gym.policies.oracles``;
``ui-basics`` tasks replay the UI-TARS responses of ``osworld_gym.policies.oracles`` (imported only
when such a task is run), parsed here into typed actions so one run can mix both. Either way
the env receives typed actions (``action_format="structured"``); the step's model text is the
UI-TARS response for ui-basics tasks and none for desktop-basics ones.

A script's ``WaitFor`` steps are checked on the
observed screenshot: while one does not hold, the oracle answers a short ``Wait`` (a bounded
poll that backs off) instead of its next keys, so the keys reach the widget that now shows
whatever the host's load. The oracle never fixes a delay in advance.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from osworld_gym.actions import Action, Done, Wait, parse_action
from osworld_gym.policies.oracles import (
    DESKTOP_BASICS,
    DESKTOP_BASICS_GNOME,
    DESKTOP_BASICS_SCREEN,
    shows_gnome,
)
from osworld_gym.policies.oracles.conditions import WaitFor, poll_seconds
from osworld_gym.pool.policy import PolicyOutput, PolicyRequest
from osworld_gym.tasks import Task

logger = logging.getLogger(__name__)

UI_BASICS_SCREEN = (336, 224)
"""The screen the ui-basics suite is laid out for."""

ScriptItem = list[Action] | WaitFor


@dataclass
class _Cursor:
    """Where one env's episode is in its script."""

    task_id: str
    rollout: int
    script: list[ScriptItem]  # the task's script for the desktop the episode runs on
    index: int = 0  # the next script item
    before: np.ndarray | None = None  # the screenshot the last actions were sent on
    polls: int = 0  # polls spent on the current condition
    waited: float = 0.0  # seconds they asked for
    waits: list[dict[str, Any]] = field(default_factory=list)  # conditions that made it poll


class OracleAgent:
    """A pool policy that solves the bundled suites' tasks with their scripts.

    It keeps each env's place in its script (keyed by ``env_id``, restarted at step 0), so one
    agent serves a whole pool; the screen conditions are read off ``request.observation``.

    Args:
        tasks: The tasks it will be asked about (each must have a script).

    Raises:
        ValueError: A task has no script, or the tasks need different screen sizes.
    """

    action_format = "structured"

    def __init__(self, tasks: Iterable[Task]) -> None:
        self._scripts: dict[str, list[ScriptItem]] = {}
        # desktop-basics tasks whose GNOME session's script differs (windows lie elsewhere).
        self._gnome_scripts: dict[str, list[ScriptItem]] = {}
        self._texts: dict[str, list[str]] = {}
        self._cursors: dict[int, _Cursor] = {}
        screens: set[tuple[int, int]] = set()
        unknown: list[str] = []
        for task in tasks:
            if task.id in DESKTOP_BASICS:
                self._scripts[task.id] = [_as_item(step) for step in DESKTOP_BASICS[task.id]]
                gnome = DESKTOP_BASICS_GNOME[task.id]
                if gnome != DESKTOP_BASICS[task.id]:
                    self._gnome_scripts[task.id] = [_as_item(step) for step in gnome]
                screens.add(DESKTOP_BASICS_SCREEN)
            elif "ui_basics" in task.raw:
                self._add_ui_basics(task)
                screens.add(UI_BASICS_SCREEN)
            else:
                unknown.append(task.id)
        if unknown:
            shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
            raise ValueError(
                f"the oracle has no script for {len(unknown)} task(s): {shown}; it solves the "
                "bundled suites desktop-basics and ui-basics"
            )
        if len(screens) > 1:
            raise ValueError(
                f"these tasks need different screens ({sorted(screens)}): run one suite at a time"
            )
        self.screen_size: tuple[int, int] | None = screens.pop() if screens else None

    def _add_ui_basics(self, task: Task) -> None:
        from osworld_gym.policies.oracles.ui_basics import oracle_responses

        responses = oracle_responses(task, UI_BASICS_SCREEN)
        steps: list[ScriptItem] = []
        for text in responses:
            parsed = parse_action(text, dialect="uitars", screen_size=UI_BASICS_SCREEN)
            if parsed.error:
                raise ValueError(f"ui-basics oracle response did not parse: {parsed.error}")
            steps.append(list(parsed.actions))
        self._scripts[task.id] = steps
        self._texts[task.id] = list(responses)

    def next_actions(
        self, env_id: int, task_id: str, step: int, screenshot: np.ndarray, rollout: int = 0
    ) -> tuple[list[Action], str | None, dict[str, Any]]:
        """What to send next on an env that shows ``screenshot`` after ``step`` steps.

        Returns:
            The actions (a ``Wait`` poll while a condition does not hold yet; DONE past the end
            of the script), their model text (ui-basics), and what to record with the step:
            ``oracle_waits``, the conditions polled for so far this episode.

        Raises:
            KeyError: ``task_id`` has no script here.
        """
        cursor = self._cursors.get(env_id)
        if step == 0 or cursor is None or (cursor.task_id, cursor.rollout) != (task_id, rollout):
            cursor = self._cursors[env_id] = _Cursor(
                task_id, rollout, self._script_for(task_id, screenshot)
            )
        script = cursor.script
        while cursor.index < len(script):
            item = script[cursor.index]
            if not isinstance(item, WaitFor):
                action_index = sum(1 for i in script[: cursor.index] if not isinstance(i, WaitFor))
                cursor.index += 1
                cursor.before = screenshot
                texts = self._texts.get(task_id)
                return item, (texts[action_index] if texts else None), self._extra(cursor)
            if cursor.before is None or item.met(screenshot, cursor.before):
                self._condition_done(cursor, item, met=True)
                continue
            if cursor.waited >= item.timeout:
                logger.warning(
                    "%s: %s did not show within %.1f s; going on", task_id, item.what, item.timeout
                )
                self._condition_done(cursor, item, met=False)
                continue
            seconds = poll_seconds(cursor.polls)
            cursor.polls += 1
            cursor.waited += seconds
            return [Wait(seconds=seconds)], None, self._extra(cursor)
        return [Done()], None, self._extra(cursor)

    def _script_for(self, task_id: str, first_screen: np.ndarray) -> list[ScriptItem]:
        """The task's script for the session its first screen shows (see ``shows_gnome``).

        Raises:
            KeyError: ``task_id`` has no script here.
        """
        script = self._scripts[task_id]
        if task_id in self._gnome_scripts and shows_gnome(first_screen):
            return self._gnome_scripts[task_id]
        return script

    @staticmethod
    def _condition_done(cursor: _Cursor, item: WaitFor, *, met: bool) -> None:
        if cursor.polls:
            cursor.waits.append(
                {"what": item.what, "polls": cursor.polls, "seconds": cursor.waited, "met": met}
            )
        cursor.index += 1
        cursor.polls, cursor.waited = 0, 0.0

    @staticmethod
    def _extra(cursor: _Cursor) -> dict[str, Any]:
        return {"oracle_waits": list(cursor.waits)} if cursor.waits else {}

    def __call__(self, requests: Sequence[PolicyRequest]) -> list[PolicyOutput]:
        """One scripted step (or a poll of the screen) per request."""
        outputs = []
        for request in requests:
            actions, text, extra = self.next_actions(
                request.env_id,
                request.task_id,
                request.step,
                screenshot_of(request.observation),
                request.rollout,
            )
            outputs.append(PolicyOutput(action=actions, text=text, extra=extra))
        return outputs


def play(env: Any, task_id: str, agent: OracleAgent | None = None) -> tuple[float, dict[str, Any]]:
    """Play one oracle episode on a Gymnasium env with ``action_format="structured"``.

    Args:
        env: An ``OSWorldEnv`` (or a wrapper of one) that has the task.
        task_id: The task to reset to.
        agent: The oracle to play (default: one for this task only).

    Returns:
        The last step's reward and info.

    Raises:
        RuntimeError: The episode did not end within the env's step limit.
    """
    agent = agent or OracleAgent([env.unwrapped.tasks[task_id]])
    obs, _ = env.reset(options={"task_id": task_id})
    for step in range(env.unwrapped.config.max_steps):
        actions, _, _ = agent.next_actions(0, task_id, step, screenshot_of(obs))
        obs, reward, terminated, truncated, info = env.step(actions)
        if terminated or truncated:
            return float(reward), info
    raise RuntimeError(f"{task_id}: the episode did not end within the env's step limit")


def screenshot_of(observation: Any) -> np.ndarray:
    """The screenshot array of an observation (the env's dict, or the array itself).

    Raises:
        TypeError: The observation holds no screenshot array.
    """
    shot = observation.get("screenshot") if isinstance(observation, Mapping) else observation
    if not isinstance(shot, np.ndarray):
        raise TypeError(
            f"the oracle needs the observation's screenshot as an array, got {type(shot).__name__}"
        )
    return shot


def _as_item(step: Any) -> ScriptItem:
    if isinstance(step, WaitFor):
        return step
    return list(step) if isinstance(step, (list, tuple)) else [step]
