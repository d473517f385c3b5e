"""The ``oracle`` agent: replays a scripted solution of each bundled task, step by step.

``desktop-basics`` tasks replay the typed actions of :mod:`osworld_gym.commands.oracles`;
``ui-basics`` tasks replay the UI-TARS responses of ``osworld_agents.oracles`` (imported only
when such a task is run), parsed here into typed actions so one run can mix both. Either way
the env receives typed actions (``action_format="structured"``); the step's model text is the
UI-TARS response for ui-basics tasks and none for desktop-basics ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from osworld_gym.actions import Action, Done, parse_action
from osworld_gym.commands.oracles import DESKTOP_BASICS, DESKTOP_BASICS_SCREEN
from osworld_gym.pool.policy import PolicyOutput, PolicyRequest
from osworld_gym.tasks import Task

UI_BASICS_SCREEN = (336, 224)
"""The screen the ui-basics suite is laid out for."""


class OracleAgent:
    """A pool policy that solves the bundled suites' tasks with their scripts.

    Args:
        tasks: The tasks it will be asked about (each must have a script).

    Raises:
        ValueError: A task has no script, or the tasks need different screen sizes.
    """

    action_format = "structured"

    def __init__(self, tasks: Iterable[Task]) -> None:
        self._scripts: dict[str, list[list[Action]]] = {}
        self._texts: dict[str, list[str]] = {}
        screens: set[tuple[int, int]] = set()
        unknown: list[str] = []
        for task in tasks:
            if task.id in DESKTOP_BASICS:
                self._scripts[task.id] = [_as_list(step) for step in DESKTOP_BASICS[task.id]]
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
        from osworld_agents.oracles.ui_basics import oracle_responses

        responses = oracle_responses(task, UI_BASICS_SCREEN)
        steps = []
        for text in responses:
            parsed = parse_action(text, dialect="uitars", screen_size=UI_BASICS_SCREEN)
            if parsed.error:
                raise ValueError(f"ui-basics oracle response did not parse: {parsed.error}")
            steps.append(list(parsed.actions))
        self._scripts[task.id] = steps
        self._texts[task.id] = list(responses)

    def step(self, task_id: str, step: int) -> tuple[list[Action], str | None]:
        """The actions (DONE past the end of the script) and their model text, if any."""
        script = self._scripts[task_id]
        if step >= len(script):
            return [Done()], None
        texts = self._texts.get(task_id)
        return script[step], (texts[step] if texts else None)

    def __call__(self, requests: Sequence[PolicyRequest]) -> list[PolicyOutput]:
        """One scripted step per request."""
        outputs = []
        for request in requests:
            actions, text = self.step(request.task_id, request.step)
            outputs.append(PolicyOutput(action=actions, text=text))
        return outputs


def _as_list(step: Any) -> list[Action]:
    return list(step) if isinstance(step, (list, tuple)) else [step]
