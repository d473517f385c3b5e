"""Adapters that plug osworld-gym desktops into other RL trainers' rollout loops.

The core, importable without any trainer installed:

* :mod:`.lease` -- :class:`DesktopLeases`, live desktops lent one trajectory at a time;
* :mod:`.render` -- :func:`render_observation`, observations as chat content parts;
* :mod:`.tools` -- :func:`tool_schemas` and :func:`action_from_tool_call`, the GUI actions as
  function tools.

One module per trainer (each needing that trainer's extra) builds on them; importing one of those
without its trainer raises an error that names the extra to install.
"""

from __future__ import annotations

from osworld_gym.integrations.lease import (
    DesktopLeases,
    Lease,
    LeaseError,
    LeaseResetError,
    close_shared_leases,
)
from osworld_gym.integrations.render import (
    encode_image,
    observation_text,
    render_observation,
    screenshot_image,
)
from osworld_gym.integrations.tools import TOOL_NAMES, action_from_tool_call, tool_schemas

__all__ = [
    "TOOL_NAMES",
    "DesktopLeases",
    "Lease",
    "LeaseError",
    "LeaseResetError",
    "action_from_tool_call",
    "close_shared_leases",
    "encode_image",
    "observation_text",
    "render_observation",
    "screenshot_image",
    "tool_schemas",
]
