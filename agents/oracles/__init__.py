"""Scripted solutions of bundled task suites, written as model responses.

* ``ui_basics`` -- the ``ui-basics`` suite as UI-TARS responses,
  and a pool policy that replays them.
"""

from __future__ import annotations

from osworld_agents.oracles.ui_basics import (
    UIBasicsLayout,
    UIBasicsOracle,
    distractor_answer,
    oracle_responses,
    task_layout,
)

__all__ = [
    "UIBasicsLayout",
    "UIBasicsOracle",
    "distractor_answer",
    "oracle_responses",
    "task_layout",
]
