"""osworld-gym: OSWorld desktop tasks as a Gymnasium environment.

Importing the package is cheap: heavy pieces (providers, the action parsers) load on first use.
"""

from __future__ import annotations

from typing import Any

from osworld_gym.registration import register_envs
from osworld_gym.version import __version__

register_envs()

__all__ = ["EnvPool", "OSWorldEnv", "__version__", "load_tasks", "parse_action"]


def __getattr__(name: str) -> Any:
    # Lazy public names keep `import osworld_gym` free of provider and parser imports.
    if name == "OSWorldEnv":
        from osworld_gym.env import OSWorldEnv

        return OSWorldEnv
    if name == "EnvPool":
        from osworld_gym.pool import EnvPool

        return EnvPool
    if name == "load_tasks":
        from osworld_gym.tasks import load_tasks

        return load_tasks
    if name == "parse_action":
        from osworld_gym.actions import parse_action

        return parse_action
    raise AttributeError(f"module 'osworld_gym' has no attribute {name!r}")
