"""EnvPool and the rollout collector over real ``OSWorldEnv``s on fake desktops
(``fake_provider``): the env's own reset, step, scoring and fault handling under the pool,
without an X server. The same on real desktops is in ``test_pool_desktops.py``."""

from __future__ import annotations

from typing import Any

from fake_provider import FAKE_SCREEN, FakeProvider
from fake_tasks import TASKS

from osworld_gym.errors import EnvRetiredError
from osworld_gym.pool import EnvPool, EnvSpec, EnvState, PoolConfig, decode_screenshot
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector
from osworld_gym.pool.policy import PolicyRequest

WORDS = {"type-hello": "hello", "type-world": "world"}


def spec(provider: FakeProvider, **kwargs: Any) -> EnvSpec:
    settings: dict[str, Any] = {
        "provider": provider,
        "tasks": TASKS,
        "screen_size": FAKE_SCREEN,
        "action_format": "pyautogui",
        "settle": False,
        "max_steps": 4,
    }
    settings.update(kwargs)
    return EnvSpec(kwargs=settings)


def solve(requests: list[PolicyRequest]) -> list[str]:
    """Type the task's word, then say DONE (FAIL on the infeasible task)."""
    actions = []
    for request in requests:
        word = WORDS.get(request.task_id)
        if word is None:
            actions.append("FAIL")
        else:
            actions.append(f"pyautogui.typewrite({word!r})" if request.step == 0 else "DONE")
    return actions


def test_each_env_drives_its_own_desktop_and_scores_its_own_task() -> None:
    provider = FakeProvider()
    config = PoolConfig(screenshot_format="png")
    with EnvPool(spec(provider), num_envs=3, config=config) as pool:
        ids = ["type-hello", "type-world", "impossible"]
        results = pool.reset(options=[{"task_id": t} for t in ids])
        assert all(r.ok for r in results) and len(provider.live()) == 3
        assert results[0].observation in pool.single_observation_space
        assert decode_screenshot(results[0].screenshot).shape == (FAKE_SCREEN[1], FAKE_SCREEN[0], 3)
        endpoints = pool.call(lambda env: env.unwrapped.desktop.endpoint)
        assert len(set(endpoints)) == 3, "one desktop per env"
        # Each env types the other env's word: only its own desktop sees what it typed.
        pool.send(["pyautogui.typewrite('world')", "pyautogui.typewrite('hello')", "FAIL"])
        done = pool.recv(min_results=3)
        assert sorted(r.env_id for r in done) == [0, 1, 2]
        infeasible = next(r for r in done if r.env_id == 2)
        assert infeasible.terminated and infeasible.reward == 1.0
        results = pool.step(["DONE", "DONE"], env_ids=[0, 1])
        assert [r.reward for r in results] == [0.0, 0.0]
        typed = pool.call(lambda env: [c[1] for c in env.unwrapped.desktop.inputs()])
        assert typed[:2] == [[["world"]], [["hello"]]]
        assert pool.stats()["pool/steps"] == 5


def test_a_dead_desktop_ends_only_its_envs_episode_and_the_next_reset_relaunches() -> None:
    provider = FakeProvider()
    with EnvPool(spec(provider), num_envs=2) as pool:
        pool.reset(options={"task_id": "type-hello"})
        victim = pool.call(lambda env: env.unwrapped.desktop, env_ids=[1])[0]
        victim.kill()
        results = pool.step(["pyautogui.click(1, 2)"] * 2)
        assert not results[0].done and results[0].infra_error is None
        assert results[1].truncated and results[1].infra_error
        assert pool.env_state(1) is EnvState.NEEDS_RESET
        assert pool.stats()["pool/infra_errors"] == 1
        assert pool.reset(env_ids=[1], options={"task_id": "type-hello"})[0].ok
        assert provider.launches == 3 and len(provider.live()) == 2


def test_an_env_whose_desktop_never_launches_is_retired() -> None:
    provider = FakeProvider(fail_launches=2)
    config = PoolConfig(launch_attempts=2, max_concurrent_resets=1)
    with EnvPool(spec(provider, restart_attempts=0), num_envs=2, config=config) as pool:
        results = pool.reset(env_ids=[0])
        assert isinstance(results[0].error, EnvRetiredError)
        assert pool.env_state(0) is EnvState.RETIRED
        assert pool.reset(env_ids=[1])[0].ok, "the next env's launch works"


def test_the_collector_brings_back_whole_scored_groups() -> None:
    provider = FakeProvider()
    with EnvPool(spec(provider), num_envs=2, config=PoolConfig(screenshot_format="png")) as pool:
        collector = RolloutCollector(pool, solve, CollectorConfig(group_size=2))
        groups = collector.collect(["type-hello", "type-world", "impossible"])
        assert sorted(g.task_id for g in groups) == ["impossible", "type-hello", "type-world"]
        for group in groups:
            assert [t.rollout for t in group.trajectories] == [0, 1]
            for t in group.trajectories:
                assert t.complete and t.terminated and t.score == 1.0
                assert len(t.steps) == (1 if t.task_id == "impossible" else 2)
                assert t.infra_error is None
        assert provider.launches == 2, "envs are reset between episodes, not relaunched"
