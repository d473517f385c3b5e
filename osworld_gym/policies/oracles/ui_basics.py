r"""Scripted solutions of the ``ui-basics`` suite as UI-TARS responses.

Each task of the suite carries its answer and, for dialog tasks, the screen box of every button
under its ``ui_basics`` key (measured on a real desktop by the suite's generator). The oracle
turns that into the text a UI-TARS-1.5 model would answer, one response per step:

    Thought: Click the Green button.
    Action: click(start_box='(136,81)')

then ``Thought: The task is done.\nAction: finished(content='')``. Typing tasks answer
``type(content='river\n')`` (the trailing ``\n`` presses Enter) before finishing.

Points are written in the coordinate system the env's ``uitars`` parser reads: pixels of the
smart-resized screenshot by default. Pass the env's (or the agent's) ``dialect_options`` so the
oracle resizes with the same factor and pixel bounds; at the suite's 336x224 screen, whose sides
are multiples of 28, resized pixels are screen pixels under the default bounds.

Example:
    >>> from osworld_gym.policies.oracles import ui_basics
    >>> ui_basics.oracle_responses("type-word-02")  # doctest: +SKIP
    ["Thought: Type river and press Enter.\nAction: type(content='river\\n')",
     "Thought: The task is done.\nAction: finished(content='')"]
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from osworld_gym.actions import coords
from osworld_gym.pool.policy import PolicyOutput, PolicyRequest
from osworld_gym.tasks import Task, TaskSet, load_tasks, thaw

logger = logging.getLogger(__name__)

__all__ = [
    "DONE_RESPONSE",
    "LAYOUT_KEY",
    "SCREEN_SIZE",
    "SUITE",
    "Box",
    "UIBasicsLayout",
    "UIBasicsOracle",
    "distractor_answer",
    "oracle_responses",
    "task_layout",
]

SUITE = "ui-basics"
"""The bundled suite this oracle solves."""
SCREEN_SIZE = (336, 224)
"""The screen the suite is laid out for: ``OSWorldEnv(..., screen_size=SCREEN_SIZE)``."""
LAYOUT_KEY = "ui_basics"
"""The task-file key holding the answer and the button boxes (kept in ``Task.raw``)."""

Box: TypeAlias = tuple[int, int, int, int]
"""``(x, y, width, height)`` of a button's inside, in screen pixels."""
TaskLike: TypeAlias = "Task | Mapping[str, Any] | str"
"""A loaded task, a task's JSON object, or the id of a task of the bundled suite."""

DONE_RESPONSE = "Thought: The task is done.\nAction: finished(content='')"
"""The last response of every script: the agent declares the task done."""


@dataclass(frozen=True)
class UIBasicsLayout:
    """What a ``ui-basics`` task asks for and where its buttons are.

    Attributes:
        task_id: The task.
        action: ``"click"`` (press the button labelled ``answer``) or ``"type"`` (type
            ``answer`` and press Enter).
        answer: The button label or the word.
        screen_size: ``(width, height)`` the layout was measured on.
        buttons: Label -> box of every button, left to right (empty for typing tasks).
        window: The dialog's X geometry ``(x, y, width, height)`` (border corner, inside size),
            ``None`` for typing tasks.
    """

    task_id: str
    action: Literal["click", "type"]
    answer: str
    screen_size: tuple[int, int]
    buttons: Mapping[str, Box]
    window: Box | None = None

    def centre(self, label: str | None = None) -> tuple[int, int]:
        """The screen pixel at the middle of a button (the answer's by default).

        Raises:
            ValueError: The task has no button ``label``.
        """
        label = self.answer if label is None else label
        if label not in self.buttons:
            raise ValueError(
                f"task {self.task_id} has no button {label!r}; buttons: {list(self.buttons)}"
            )
        x, y, width, height = self.buttons[label]
        return x + width // 2, y + height // 2


def task_layout(task: TaskLike) -> UIBasicsLayout:
    """Read a task's ``ui_basics`` key.

    Args:
        task: A loaded task, its JSON object, or the id of a task of the bundled suite.

    Raises:
        ValueError: The task has no (or a malformed) ``ui_basics`` key.
        UnknownTaskError: ``task`` is an id the bundled suite does not have.
    """
    raw, task_id = _raw(task)
    data = raw.get(LAYOUT_KEY)
    if not isinstance(data, Mapping):
        raise ValueError(f"task {task_id} has no {LAYOUT_KEY!r} object: not a ui-basics task")
    try:
        action = data["action"]
        if action not in ("click", "type"):
            raise ValueError(f"unknown action {action!r}")
        buttons = {str(k): _box(v) for k, v in (data.get("buttons") or {}).items()}
        window = _box(data["window"]) if data.get("window") is not None else None
        width, height = (int(n) for n in data["screen_size"])
        layout = UIBasicsLayout(
            task_id=task_id,
            action=action,
            answer=str(data["answer"]),
            screen_size=(width, height),
            buttons=buttons,
            window=window,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"task {task_id}: malformed {LAYOUT_KEY!r} object: {e}") from e
    if action == "click" and layout.answer not in buttons:
        raise ValueError(f"task {task_id}: answer {layout.answer!r} is not one of its buttons")
    return layout


def oracle_responses(
    task: TaskLike,
    screen_size: Sequence[int] = SCREEN_SIZE,
    *,
    dialect_options: Mapping[str, Any] | None = None,
    answer: str | None = None,
) -> list[str]:
    """The UI-TARS response of each step that solves the task (the last one finishes).

    Args:
        task: A loaded task, its JSON object, or the id of a task of the bundled suite.
        screen_size: ``(width, height)`` of the env's screen.
        dialect_options: The env's ``uitars`` parser options (``coordinates``, ``factor``,
            ``min_pixels``, ``max_pixels``; others are ignored), e.g.
            ``UITARSAgent.dialect_options``. Default: the parser's defaults.
        answer: Answer something else instead: another button's label or another word (for
            negative examples); the task's own answer by default.

    Returns:
        Two responses: the click or the typing, then ``finished``.

    Raises:
        ValueError: The task is not a ``ui-basics`` task, ``answer`` is not one of its buttons,
            or its buttons do not fit on ``screen_size``.
    """
    layout = task_layout(task)
    chosen = layout.answer if answer is None else answer
    if layout.action == "type":
        content = _escape(f"{chosen}\n")
        first = f"Thought: Type {chosen} and press Enter.\nAction: type(content='{content}')"
        return [first, DONE_RESPONSE]
    width, height = int(screen_size[0]), int(screen_size[1])
    x, y = layout.centre(chosen)
    if not (0 <= x < width and 0 <= y < height):
        raise ValueError(
            f"task {layout.task_id} is laid out for a {layout.screen_size[0]}x"
            f"{layout.screen_size[1]} screen; its {chosen} button is off a {width}x{height} one"
        )
    mx, my = _to_model(x, y, (width, height), dialect_options or {})
    first = f"Thought: Click the {chosen} button.\nAction: click(start_box='({mx},{my})')"
    return [first, DONE_RESPONSE]


def distractor_answer(task: TaskLike) -> str:
    """A deterministic wrong answer: the next button to the right (wrapping), or the word reversed.

    Example:
        >>> distractor_answer({"id": "t", "ui_basics": {"action": "type", "answer": "river",
        ...                    "screen_size": [336, 224]}})
        'revir'
    """
    layout = task_layout(task)
    if layout.action == "type":
        wrong = layout.answer[::-1]
        return wrong if wrong != layout.answer else layout.answer + "x"
    labels = list(layout.buttons)
    return labels[(labels.index(layout.answer) + 1) % len(labels)]


class UIBasicsOracle:
    """A pool policy that answers every request with the oracle's response for its step.

    Useful as a perfect policy when testing a training loop end to end: each request's task
    and step pick the response (steps past the script answer ``finished``).

    Args:
        tasks: The tasks the pool runs (default: the bundled suite).
        screen_size: The envs' screen size.
        dialect_options: The envs' ``uitars`` parser options.
    """

    def __init__(
        self,
        tasks: TaskSet | Sequence[Task] | None = None,
        screen_size: Sequence[int] = SCREEN_SIZE,
        *,
        dialect_options: Mapping[str, Any] | None = None,
    ) -> None:
        loaded = _suite() if tasks is None else tasks
        self.screen_size = (int(screen_size[0]), int(screen_size[1]))
        self.dialect_options = dict(dialect_options or {})
        self._scripts = {
            t.id: oracle_responses(t, self.screen_size, dialect_options=self.dialect_options)
            for t in loaded
        }

    def response(self, task_id: str, step: int) -> str:
        """The response for ``task_id`` after ``step`` steps."""
        script = self._scripts[task_id]
        return script[step] if step < len(script) else DONE_RESPONSE

    def __call__(self, requests: list[PolicyRequest]) -> list[PolicyOutput]:
        """One response per request."""
        return [PolicyOutput(self.response(r.task_id, r.step)) for r in requests]


# --- helpers -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _suite() -> TaskSet:
    return load_tasks(SUITE)


def _raw(task: TaskLike) -> tuple[Mapping[str, Any], str]:
    if isinstance(task, str):
        task = _suite()[task]
    if isinstance(task, Task):
        return thaw(task.raw), task.id
    if isinstance(task, Mapping):
        return task, str(task.get("id", "<dict>"))
    raise TypeError(f"expected a Task, a task dict or a task id, got {type(task).__name__}")


def _box(value: Any) -> Box:
    x, y, width, height = (int(n) for n in value)
    if width <= 0 or height <= 0:
        raise ValueError(f"empty box {list(value)}")
    return x, y, width, height


def _to_model(
    x: int, y: int, screen_size: tuple[int, int], options: Mapping[str, Any]
) -> tuple[int, int]:
    """Screen pixels to the point the ``uitars`` parser maps back to (about) them."""
    return coords.from_screen(
        x,
        y,
        screen_size,
        options.get("coordinates", "resized"),
        factor=int(options.get("factor", coords.IMAGE_FACTOR)),
        min_pixels=int(options.get("min_pixels", coords.MIN_PIXELS)),
        max_pixels=int(options.get("max_pixels", coords.MAX_PIXELS)),
    )


def _escape(text: str) -> str:
    r"""Write text as a single-quoted UI-TARS argument (``\\``, ``\'`` and ``\n`` escaped)."""
    return text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
