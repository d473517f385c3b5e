"""Adapters that plug osworld-gym desktops into other RL trainers' rollout loops.

The core, importable without any trainer installed:

* ``.lease`` -- ``DesktopLeases``, live desktops lent one trajectory at a time;
* ``.render`` -- ``render_observation()``, observations as chat content parts;
* ``.tools`` -- ``tool_schemas()`` and ``action_from_tool_call()``, the GUI actions as
  function tools.

One module per trainer builds on them, each needing that trainer's extra (importing one without
its trainer raises an error that names the extra to install):

* ``.verl`` -- ``OSWorldAgentLoop``, verl's agent loop ``osworld_agent`` (``[verl]``);
* ``.skyrl`` -- ``OSWorldTextEnv``, skyrl-gym's env ``osworld`` (``[skyrl]``);
* ``.trl`` -- ``osworld_environment``, TRL's ``environment_factory`` (``[trl]``);
* ``.openenv`` -- ``OSWorldEnvironment`` and ``OSWorldEnvClient``, served by
  ``osworld-gym serve-env`` (``[openenv]``);
* ``.episode`` -- ``osworld_episode``, one UI-TARS episode against an OpenAI-compatible
  endpoint (no extra: the agents package, without torch).
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
