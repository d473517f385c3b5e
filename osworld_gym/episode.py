"""The episode rules OSWorld scores depend on, as pure functions (no desktop needed).

* The step limit belongs to the env: the last allowed step still evaluates.
* Standard mode (``OSWorld-v0``) replaces the agent's action on the last allowed step by FAIL,
  as the UI-TARS agent and several runners do; Hard mode (``OSWorld-Hard-v0``) runs it as is.
* DONE or FAIL ends the episode (terminated); the limit ends it as truncated.
* A model output that does not parse is a no-op step; optionally it ends the episode (ARPO).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from osworld_gym.actions import Action, Fail

TERMINAL_KINDS = frozenset({"done", "fail"})


@dataclass(frozen=True)
class StepPlan:
    """What a step will do and how it ends, decided before anything runs.

    Attributes:
        actions: Actions to execute (after any FAIL replacement).
        fail_replaced: The agent's actions were replaced by FAIL at the step limit.
        last_step: This is the last step the limit allows.
    """

    actions: tuple[Action, ...]
    fail_replaced: bool
    last_step: bool


def plan_step(actions: Sequence[Action], *, step: int, max_steps: int, hard: bool) -> StepPlan:
    """Apply the step-limit rule to the actions of step ``step`` (1-based).

    Example:
        >>> from osworld_gym.actions import Click
        >>> plan = plan_step([Click(x=1, y=2)], step=15, max_steps=15, hard=False)
        >>> [a.kind for a in plan.actions], plan.fail_replaced
        (['fail'], True)
        >>> plan_step([Click(x=1, y=2)], step=15, max_steps=15, hard=True).fail_replaced
        False
    """
    last = step >= max_steps
    already_final = any(a.kind in TERMINAL_KINDS for a in actions)
    if last and not hard and not already_final:
        return StepPlan((Fail(reason="step limit reached"),), True, True)
    return StepPlan(tuple(actions), False, last)


def terminal_kind(actions: Sequence[Action]) -> str | None:
    """``"done"`` or ``"fail"`` if the actions end the episode (the first such action wins)."""
    for action in actions:
        if action.kind in TERMINAL_KINDS:
            return action.kind
    return None


def episode_end(
    *,
    terminal: str | None,
    last_step: bool,
    parse_error: bool,
    parse_error_ends: bool,
    fail_replaced: bool = False,
) -> tuple[bool, bool]:
    """``(terminated, truncated)`` of a step.

    A FAIL that replaced the agent's action at the limit is a truncation (the limit ended the
    episode, not the agent).

    Example:
        >>> episode_end(terminal=None, last_step=True, parse_error=False, parse_error_ends=False)
        (False, True)
        >>> episode_end(terminal="done", last_step=True, parse_error=False, parse_error_ends=False)
        (True, False)
    """
    if fail_replaced:
        return False, True
    terminated = terminal is not None or (parse_error and parse_error_ends)
    return terminated, (last_step and not terminated)
