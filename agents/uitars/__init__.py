"""The UI-TARS-1.5 agent, under the trainer's package name.

The agent lives with the env library's policies (``osworld_gym.policies.uitars``), where the
trainer adapters use it without this package; this module keeps the names importable from here.
"""

from __future__ import annotations

from osworld_gym.policies import uitars as _uitars
from osworld_gym.policies.uitars import *  # noqa: F403 - the same names, listed once there

__all__ = _uitars.__all__
