"""Scripted solutions of the bundled ``desktop-basics`` suite, as typed actions per step.

``DESKTOP_BASICS`` maps each task id to the steps passed to ``env.step`` one by one (a step is
one typed action or a list of them); the last step ends with DONE, or FAIL for infeasible
tasks. The points they click were read off screenshots at :data:`DESKTOP_BASICS_SCREEN`.
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
