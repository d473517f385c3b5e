"""Scripted solutions of the bundled suites, and the ``oracle`` agent that replays them.

- ``desktop_basics_system``, ``desktop_basics_office`` (with ``conditions``): the
  ``desktop-basics`` suite as typed actions per step, exported here.
- ``ui_basics``: the ``ui-basics`` suite as UI-TARS responses, and a pool policy that replays
  them (``UIBasicsOracle``, also exported here).
- ``agent``: the ``oracle`` agent of ``osworld-gym run``/``play``, which replays either.

Every file here holds answers: the ``local`` provider's sandbox hides this folder from the
desktop (``osworld_gym.providers.local.sandbox``).

``DESKTOP_BASICS`` maps each task id to its script: the steps passed to ``env.step`` one by one
(a step is one typed action or a list of them), between them
``WaitFor`` steps (what the screen must show
before the next keys; the ``oracle`` agent polls for it, no script waits a fixed time); the
last step ends with DONE, or FAIL for infeasible tasks. The points they click and the regions
they watch were read off screenshots at ``DESKTOP_BASICS_SCREEN``.
"""

from __future__ import annotations

import numpy as np

from osworld_gym.policies.oracles.desktop_basics_office import GNOME_ORACLES as _OFFICE_GNOME
from osworld_gym.policies.oracles.desktop_basics_office import ORACLES as _OFFICE
from osworld_gym.policies.oracles.desktop_basics_system import GNOME_ORACLES as _SYSTEM_GNOME
from osworld_gym.policies.oracles.desktop_basics_system import ORACLES as _SYSTEM
from osworld_gym.policies.oracles.ui_basics import (
    UIBasicsLayout,
    UIBasicsOracle,
    distractor_answer,
    oracle_responses,
    task_layout,
)

DESKTOP_BASICS_SUITE = "desktop-basics"
DESKTOP_BASICS_SCREEN = (1280, 720)
"""The screen the desktop-basics oracles are written for."""
DESKTOP_BASICS: dict[str, list] = {**_SYSTEM, **_OFFICE}
"""The scripts for the openbox session (``session="minimal"``), the suite's own."""
DESKTOP_BASICS_GNOME: dict[str, list] = {**_SYSTEM_GNOME, **_OFFICE_GNOME}
"""The scripts for the GNOME session, where windows and dialogs lie elsewhere."""

# GNOME's top bar: a near-black strip across the top of the screen. Under openbox the top rows
# of a desktop-basics task's first screen are its app's maximized window, title bar and menus.
_TOP_BAR = (slice(0, 20), slice(200, 1000))
_TOP_BAR_MEAN = 40


def shows_gnome(screenshot: np.ndarray) -> bool:
    """Whether a desktop-basics task's first screen shows GNOME's top bar (its session)."""
    return bool(screenshot[_TOP_BAR].mean() < _TOP_BAR_MEAN)


__all__ = [
    "DESKTOP_BASICS",
    "DESKTOP_BASICS_GNOME",
    "DESKTOP_BASICS_SCREEN",
    "DESKTOP_BASICS_SUITE",
    "UIBasicsLayout",
    "UIBasicsOracle",
    "distractor_answer",
    "oracle_responses",
    "shows_gnome",
    "task_layout",
]
