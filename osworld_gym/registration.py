"""The Gymnasium ids of osworld-gym, registered in one place with string entry points.

``import osworld_gym`` registers them without importing the env module (nor any provider);
``gym.make("osworld_gym:OSWorld-v0")`` imports the package first and so works without it.
The env owns its step limit (it must evaluate on the last step), so no ``max_episode_steps``
(a ``TimeLimit`` wrapper would cut episodes without scoring them).

``gym.make`` does not wrap the env in Gymnasium's ``PassiveEnvChecker``: in Gymnasium 1.4 a
first ``reset`` that raises (an unknown task id, a desktop that will not start) leaves that
wrapper without the data it compares the first ``step`` with, and every later ``step`` then
raises ``TypeError`` while the step still runs on the desktop. The env passes Gymnasium's full
``check_env`` in the test suite; ``gym.make(..., disable_env_checker=False)`` restores the
wrapper.

Each id's kwargs spell out the env's defaults (provider, tasks, dialect, step limit, screen),
so ``gym.spec("OSWorld-v0").pprint()`` and ``env.spec`` show what a plain ``gym.make`` runs and
which names to override; a test keeps them equal to :class:`~osworld_gym.env.OSWorldEnv`'s.
"""

from __future__ import annotations

import gymnasium as gym

ENV_IDS = {"OSWorld-v0": False, "OSWorld-Hard-v0": True}  # id -> Hard mode
# OSWorldEnv's defaults, written out here so registering stays free of the env's imports.
DEFAULT_KWARGS = {
    "provider": "local",
    "tasks": "desktop-basics",
    "action_format": "uitars",
    "max_steps": 15,
    "screen_size": (1920, 1080),
}


def register_envs() -> None:
    """Register ``OSWorld-v0`` and ``OSWorld-Hard-v0`` (idempotent)."""
    for env_id, hard in ENV_IDS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="osworld_gym.env:OSWorldEnv",
            kwargs={**DEFAULT_KWARGS, "hard": hard},
            nondeterministic=True,
            disable_env_checker=True,  # see the module doc
        )
