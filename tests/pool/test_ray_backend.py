"""The Ray backend on a local Ray (loopback only): same pool behaviour, actors, placement, close.

Skipped when Ray is not installed (``pip install 'osworld-gym[ray]'``).
"""

from __future__ import annotations

import collections.abc
import os
import subprocess
import sys
from pathlib import Path

import pool_desktops
import pool_fakes
import psutil
import pytest
from desktop_helpers import wait_until
from fixture_marks import needs
from pool_desktops import SOLUTIONS, UNSOLVED, processes_under, scripted_policy, spec
from pool_fakes import FakeFactory

from osworld_gym.errors import ClosedPoolError, UnknownTaskError
from osworld_gym.pool import EnvPool, PoolConfig, RayBackendConfig
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector

ray = pytest.importorskip("ray", reason="pip install 'osworld-gym[ray]'")

pytestmark = pytest.mark.ray
LABEL = "desktop:127.0.0.1"
BACKEND = RayBackendConfig(num_cpus=0.25, resource_prefix="desktop:")


@pytest.fixture(scope="module", autouse=True)
@needs("ray")
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


def actor_gone(actor: object) -> bool:
    """The actor no longer answers because it died (not merely because it is slow)."""
    try:
        ray.get(actor.pid.remote(), timeout=10)
    except ray.exceptions.RayActorError:
        return True
    except ray.exceptions.GetTimeoutError:
        return False
    return False


def test_close_kills_the_actors() -> None:
    pool = EnvPool(FakeFactory(), num_envs=2, backend=BACKEND)
    actors = list(pool._backend.actors)
    pool.close()
    # ray.kill is asynchronous: a call sent right after it may still be answered.
    wait_until(lambda: all(actor_gone(a) for a in actors), timeout=60, message="actors killed")
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


DRIVER = """
import sys, threading
from pathlib import Path
sys.path.insert(0, {helpers!r})
import ray
ray.init(num_cpus=2, include_dashboard=False, resources={{{label!r}: 4}}, log_to_driver=False)
import pool_desktops
ray.cloudpickle.register_pickle_by_value(pool_desktops)
from osworld_gym.pool import EnvPool, RayBackendConfig
backend = RayBackendConfig(num_cpus=0.25, resource_prefix="desktop:")
pool = EnvPool(pool_desktops.spec(Path({work!r})), num_envs=2, backend=backend)
assert all(r.ok for r in pool.reset(options={{"task_id": "os-count-error-lines"}}))
print("ready", flush=True)
threading.Event().wait()
"""


def running(proc: psutil.Process) -> bool:
    """The process still exists and is not a zombie (it may vanish while we look)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.desktop
def test_driver_killed_leaves_no_actor_and_no_desktop(tmp_path: Path) -> None:
    """SIGKILL the driver: Ray ends its actors, and each desktop stops with its actor."""
    code = DRIVER.format(helpers=str(Path(__file__).parent), label=LABEL, work=str(tmp_path))
    driver = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert driver.stdout is not None and driver.stdout.readline().strip() == "ready"
        assert len(processes_under(tmp_path)) >= 8  # two desktops with their apps
        spawned = psutil.Process(driver.pid).children(recursive=True)  # its Ray and actors
        names = {p.pid: p.name() for p in spawned}
    finally:
        driver.kill()
        driver.wait()

    def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
        return [p for p in procs if running(p)]

    actors = [p for p in spawned if "EnvActor" in names[p.pid]]
    assert len(actors) == 2
    wait_until(
        lambda: not alive(actors) and not processes_under(tmp_path),
        timeout=60,
        message="actors and desktops gone",
    )
    # Ray's own agents of the driver's local Ray notice their raylet is gone within minutes.
    wait_until(lambda: not alive(spawned), timeout=240, message="the driver's Ray gone")
