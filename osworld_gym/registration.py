"""The Gymnasium ids of osworld-gym, registered in one place with string entry points.

``import osworld_gym`` registers them without importing the env module (nor any provider);
``gym.make("osworld_gym:OSWorld-v0")`` imports the package first and so works without it.

The step limit belongs to the env, which must score the episode at its last step: a
``TimeLimit`` wrapper alone would cut episodes without scoring them. So the ids register no
``max_episode_steps`` (``gym.make`` adds no ``TimeLimit`` of its own), the env's ``spec`` reports
its own limit (``env.spec.max_episode_steps == 15``), and ``gym.make(id,
max_episode_steps=N)``, what generic runners pass, makes N the env's limit
(``time_limit_of_make()``): the episode ends at step N, scored, and Gymnasium's ``TimeLimit(N)``
around it truncates at that same step. ``gym.make_vec(id, num_envs=n)`` builds the pool's vector
env (the ids' ``vector_entry_point``, ``osworld_gym.pool.vector.make_vector_env()``).

``gym.make`` does not wrap the env in Gymnasium's ``PassiveEnvChecker``: in Gymnasium 1.4 a
first ``reset`` that raises (an unknown task id, a desktop that will not start) leaves that
wrapper without the data it compares the first ``step`` with, and every later ``step`` then
raises ``TypeError`` while the step still runs on the desktop. The env passes Gymnasium's full
``check_env`` in the test suite; ``gym.make(..., disable_env_checker=False)`` restores the
wrapper.

Each id's kwargs spell out the env's defaults (provider, tasks, dialect, step limit, screen),
so ``gym.spec("OSWorld-v0").pprint()`` and ``env.spec`` show what a plain ``gym.make`` runs and
which names to override; a test keeps them equal to ``OSWorldEnv``'s.
"""

from __future__ import annotations

import sys
from types import FrameType

import gymnasium as gym
from gymnasium.envs import registration as gym_registration

ENV_IDS = {"OSWorld-v0": False, "OSWorld-Hard-v0": True}  # id -> Hard mode
# OSWorldEnv's defaults, written out here so registering stays free of the env's imports.
DEFAULT_KWARGS = {
    "provider": "local",
    "tasks": "desktop-basics",
    "action_format": "uitars",
    "max_steps": 15,
    "screen_size": (1920, 1080),
}


# How many frames up from the env's constructor ``gym.make`` may be: the constructor itself, a
# subclass's, a factory function the entry point names.
_MAKE_FRAME_DEPTH = 4


def time_limit_of_make() -> int | None:
    """The ``TimeLimit`` that the ``gym.make`` call building this env will wrap it in, if any.

    Gymnasium gives an env no way to learn the ``max_episode_steps`` its ``make`` was called
    with (the wrapper is added after the env is built, and nothing reaches the env), yet the
    env must know its last step to score it. So the env's constructor reads it from the
    ``gym.make`` call it runs in, as ``make`` will use it: the argument, else the spec's
    ``max_episode_steps``; ``-1`` means no wrapper. A test pins this against the installed
    Gymnasium (``gym.make(..., max_episode_steps=3)`` ends at step 3 with a score).

    Returns:
        The wrapper's step count, or None when the env is not being built by ``gym.make`` or
        ``make`` adds no ``TimeLimit``.
    """
    make_code = gym_registration.make.__code__
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_MAKE_FRAME_DEPTH + 1):
        if frame is None:
            return None
        if frame.f_code is make_code:
            requested = frame.f_locals.get("max_episode_steps")
            if requested == -1:
                return None
            if requested is None:
                spec = frame.f_locals.get("env_spec")
                requested = getattr(spec, "max_episode_steps", None)
            # A value TimeLimit refuses (not a positive int) is left for it to refuse.
            if isinstance(requested, int) and not isinstance(requested, bool) and requested > 0:
                return requested
            return None
        frame = frame.f_back
    return None


def register_envs() -> None:
    """Register ``OSWorld-v0`` and ``OSWorld-Hard-v0`` (idempotent)."""
    for env_id, hard in ENV_IDS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="osworld_gym.env:OSWorldEnv",
            vector_entry_point="osworld_gym.pool.vector:make_vector_env",
            kwargs={**DEFAULT_KWARGS, "hard": hard},
            nondeterministic=True,
            disable_env_checker=True,  # see the module doc
        )
