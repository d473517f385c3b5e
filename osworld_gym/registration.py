"""The Gymnasium ids of osworld-gym, registered in one place with string entry points.

``import osworld_gym`` registers them without importing the env module (nor any provider);
``gym.make("osworld_gym:OSWorld-v0")`` imports the package first and so works without it.
The env owns its step limit (it must evaluate on the last step), so no ``max_episode_steps``
(a ``TimeLimit`` wrapper would cut episodes without scoring them).
"""

from __future__ import annotations

import gymnasium as gym

ENV_IDS = {"OSWorld-v0": False, "OSWorld-Hard-v0": True}  # id -> Hard mode


def register_envs() -> None:
    """Register ``OSWorld-v0`` and ``OSWorld-Hard-v0`` (idempotent)."""
    for env_id, hard in ENV_IDS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="osworld_gym.env:OSWorldEnv",
            kwargs={"hard": hard},
            nondeterministic=True,
        )
