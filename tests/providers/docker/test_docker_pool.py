"""Eight containers side by side in an EnvPool: no cross-talk, a killed one recovered, no trace."""

from __future__ import annotations

import os

from osworld_gym.actions import Done, TypeText
from osworld_gym.policies.oracles.desktop_basics_system import ORACLES as SYSTEM_ORACLES
from osworld_gym.pool import EnvPool, EnvSpec, PoolConfig
from osworld_gym.providers.docker.provider import OWNER_LABEL, PID_LABEL, DockerProviderConfig

NUM_ENVS = 8
SCREEN = (800, 600)
# Eight different terminal tasks, each with its oracle: one task per env. (Envs running the same
# task at once on one host share the evaluator's per-task download folder; see the report.)
TASKS = [t for t in SYSTEM_ORACLES if t.startswith("os-") and "infeasible" not in t][:NUM_ENVS]


def solution(env_id: int) -> TypeText:
    """The task's oracle command, after a marker naming the env, typed into its terminal."""
    (typed,), _ = SYSTEM_ORACLES[TASKS[env_id]]
    return TypeText(text=f"echo {env_id} > ~/.marker\n{typed.text}")


def _container(env: object) -> str:
    return env.unwrapped._desktop.container_name  # type: ignore[attr-defined]


def _marker(env: object) -> str:
    client = env.unwrapped._desktop.client  # type: ignore[attr-defined]
    return client.execute("cat ~/.marker", shell=True).output


def test_eight_containers_no_cross_talk_kill_recovered(
    guest_image: str, docker_engine, our_containers
) -> None:
    assert len(TASKS) == NUM_ENVS
    volumes_before = {v.name for v in docker_engine.volumes.list()}
    networks_before = {n.name for n in docker_engine.networks.list()}
    spec = EnvSpec(
        kwargs={
            "provider": DockerProviderConfig(
                image=guest_image, screen_size=SCREEN, cpus=1.0, memory="1g"
            ),
            "tasks": "desktop-basics",
            "action_format": "structured",
            "screen_size": SCREEN,
            "max_steps": 3,
            "offline": True,
        }
    )
    config = PoolConfig(max_concurrent_resets=4)
    with EnvPool(spec, num_envs=NUM_ENVS, config=config) as pool:
        resets = pool.reset(options=[{"task_id": task} for task in TASKS])
        assert all(r.ok for r in resets), [r.error for r in resets]
        names = pool.call(_container)
        assert len(set(names)) == NUM_ENVS
        assert sorted(c.name for c in our_containers()) == sorted(names)

        victim = 3
        docker_engine.containers.get(names[victim]).kill()  # mid-episode
        results = pool.step([solution(i) for i in range(NUM_ENVS)])
        assert results[victim].truncated and results[victim].infra_error
        assert all(r.infra_error is None for i, r in enumerate(results) if i != victim)

        # Each surviving desktop saw only its own typing, and its task scores 1.0.
        survivors = [i for i in range(NUM_ENVS) if i != victim]
        assert pool.call(_marker, env_ids=survivors) == [f"{i}\n" for i in survivors]
        finals = pool.step([Done()] * len(survivors), env_ids=survivors)
        scores = {TASKS[i]: r.reward for i, r in zip(survivors, finals, strict=True)}
        assert set(scores.values()) == {1.0}, scores

        # The pool rebuilds the killed env: a new container runs the next episode.
        (again,) = pool.reset(env_ids=[victim], options={"task_id": TASKS[victim]})
        assert again.ok
        (new_name,) = pool.call(_container, env_ids=[victim])
        assert new_name != names[victim]
        pool.step([solution(victim)], env_ids=[victim])
        assert pool.call(_marker, env_ids=[victim]) == [f"{victim}\n"]
        (final,) = pool.step([Done()], env_ids=[victim])
        assert final.terminated and final.infra_error is None and final.reward == 1.0
        assert pool.stats()["pool/retired"] == 0
    assert our_containers() == []
    filters = {"label": f"{PID_LABEL}={os.getpid()}"}
    assert docker_engine.containers.list(all=True, filters=filters) == []
    assert docker_engine.volumes.list(filters={"label": OWNER_LABEL}) == []
    assert {v.name for v in docker_engine.volumes.list()} <= volumes_before
    assert {n.name for n in docker_engine.networks.list()} <= networks_before
