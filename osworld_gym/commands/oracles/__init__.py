"""Scripted solutions of the bundled ``desktop-basics`` suite, as typed actions per step.

``DESKTOP_BASICS`` maps each task id to its script: the steps passed to ``env.step`` one by one
(a step is one typed action or a list of them), between them
:class:`~osworld_gym.commands.oracles.conditions.WaitFor` steps (what the screen must show
before the next keys; the ``oracle`` agent polls for it, no script waits a fixed time); the
last step ends with DONE, or FAIL for infeasible tasks. The points they click and the regions
they watch were read off screenshots at :data:`DESKTOP_BASICS_SCREEN`.
The ``ui-basics`` suite's oracle lives with the trainer (``osworld_agents.oracles``).
"""

from __future__ import annotations

from osworld_gym.commands.oracles.desktop_basics_office import ORACLES as _OFFICE
from osworld_gym.commands.oracles.desktop_basics_system import ORACLES as _SYSTEM

DESKTOP_BASICS_SUITE = "desktop-basics"
DESKTOP_BASICS_SCREEN = (1280, 720)
"""The screen the desktop-basics oracles are written for."""
DESKTOP_BASICS: dict[str, list] = {**_SYSTEM, **_OFFICE}

__all__ = ["DESKTOP_BASICS", "DESKTOP_BASICS_SCREEN", "DESKTOP_BASICS_SUITE"]
