"""The Ray backend on a local Ray (loopback only): same pool behaviour, actors, placement, close.

Skipped when Ray is not installed (``pip install 'osworld-gym[ray]'``).
"""

from __future__ import annotations

import collections.abc
import importlib.util
import os
from pathlib import Path

import pool_desktops
import pool_fakes
import pytest
from desktop_helpers import wait_until
from pool_desktops import SOLUTIONS, UNSOLVED, processes_under, scripted_policy, spec
from pool_fakes import FakeFactory

from osworld_gym.errors import ClosedPoolError, UnknownTaskError
from osworld_gym.pool import EnvPool, PoolConfig, RayBackendConfig
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector

# Read by Ray when it is imported: keep the local Ray on 127.0.0.1 (DESIGN.md).
_PREVIOUS = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
if importlib.util.find_spec("ray") is None and _PREVIOUS is None:
    del os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"]
ray = pytest.importorskip("ray", reason="pip install 'osworld-gym[ray]'")
LABEL = "desktop:127.0.0.1"
BACKEND = RayBackendConfig(num_cpus=0.25, resource_prefix="desktop:")


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> collections.abc.Iterator[None]:
    """A local Ray on loopback for this module, with 16 units of a desktop-host resource."""
    ray.init(num_cpus=2, include_dashboard=False, resources={LABEL: 16}, log_to_driver=False)
    # Test helpers live outside the installed package: ship them to the actors by value.
    ray.cloudpickle.register_pickle_by_value(pool_fakes)
    ray.cloudpickle.register_pickle_by_value(pool_desktops)
    assert "node:127.0.0.1" in ray.cluster_resources()  # loopback only
    try:
        yield
    finally:
        ray.shutdown()
        if _PREVIOUS is None:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        else:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = _PREVIOUS


def test_pool_on_actors_is_wait_any_and_placed_by_resource() -> None:
    slow = FakeFactory(step_latency=0.5)
    with EnvPool([slow, FakeFactory(), FakeFactory()], backend=BACKEND) as pool:
        results = pool.reset(options=[{"task_id": "long"}, None, {"task_id": "nope"}])
        assert ray.available_resources().get(LABEL) == 13  # one unit per actor
        assert results[0].ok and results[1].ok
        assert "UnknownTaskError" in str(results[2].error) or isinstance(
            results[2].error, UnknownTaskError
        )
        pool.send(["a", "a"], env_ids=[0, 1])
        (first,) = pool.recv(min_results=1, max_results=1)
        assert first.env_id == 1
        pids = set(pool.call(lambda env: os.getpid()))
        assert len(pids) == 3 and os.getpid() not in pids
        assert [r.env_id for r in pool.recv()] == [0]
    wait_until(lambda: ray.available_resources().get(LABEL) == 16, message="actors released")


def test_lost_actor_is_an_infra_error_and_is_replaced() -> None:
    with EnvPool(FakeFactory(step_latency=1.0), num_envs=2, backend=BACKEND) as pool:
        pool.reset(options={"task_id": "long"})
        pool.send(["a", "a"])
        ray.kill(pool._backend.actors[0])
        results = {r.env_id: r for r in pool.recv()}
        assert results[0].truncated and "lost" in results[0].infra_error
        assert not results[1].done
        assert all(r.ok for r in pool.reset())  # a new actor for env 0
        assert pool.stats()["pool/infra_errors"] == 1


def test_collector_on_ray_with_fakes() -> None:
    with EnvPool(
        [FakeFactory(infra_on_steps=frozenset({2})) for _ in range(3)], backend=BACKEND
    ) as pool:
        groups = RolloutCollector(
            pool, lambda r: ["a"] * len(r), CollectorConfig(group_size=2)
        ).collect(["short", "long"])
        assert sorted(g.task_id for g in groups) == ["long", "short"]
        assert all(t.complete for g in groups for t in g.trajectories)


def test_close_kills_the_actors() -> None:
    pool = EnvPool(FakeFactory(), num_envs=2, backend=BACKEND)
    actors = list(pool._backend.actors)
    pool.close()
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.pid.remote(), timeout=30)
    with pytest.raises(ClosedPoolError):
        pool.reset()


@pytest.mark.desktop
def test_collect_bundled_tasks_on_ray(tmp_path: Path) -> None:
    tasks = [*SOLUTIONS, UNSOLVED[0]]
    config = PoolConfig(screenshot_format="png", max_concurrent_resets=3)
    with EnvPool(spec(tmp_path), num_envs=3, config=config, backend=BACKEND) as pool:
        collector = RolloutCollector(pool, scripted_policy, CollectorConfig(group_size=2))
        groups = collector.collect(tasks)
        assert sorted(g.task_id for g in groups) == sorted(tasks)
        assert all(len(g) == 2 and all(t.complete for t in g.trajectories) for g in groups)
        scores = {g.task_id: g.scores for g in groups}
        assert 1.0 in scores["os-write-file-content"] and scores[UNSOLVED[0]] == [0.0, 0.0]
    assert processes_under(tmp_path) == []
