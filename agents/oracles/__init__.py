"""The ``ui-basics`` oracle under the trainer's package name.

Every scripted solution lives in ``osworld_gym.policies.oracles``; this module keeps the
``ui-basics`` names importable from here.
"""

from __future__ import annotations

from osworld_gym.policies.oracles.ui_basics import (
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
