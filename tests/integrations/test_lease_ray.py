"""The lease desk over the Ray backend: leases on actors, each coroutine getting its own results."""

from __future__ import annotations

import asyncio
import collections.abc
import os

import pool_fakes
import pytest
from fixture_marks import needs
from pool_fakes import FakeFactory

from osworld_gym.integrations import DesktopLeases
from osworld_gym.pool import RayBackendConfig

ray = pytest.importorskip("ray", reason="pip install 'osworld-gym[ray]'")
pytestmark = pytest.mark.trainers


@pytest.fixture(scope="module", autouse=True)
@needs("ray")
def local_ray() -> collections.abc.Iterator[None]:
    """A local Ray on loopback (tests/integrations/conftest.py pins it there)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(pool_fakes)  # test helpers travel by value
    assert "node:127.0.0.1" in ray.cluster_resources()
    try:
        yield
    finally:
        ray.shutdown()


def test_leases_on_ray_actors_each_get_their_own_results() -> None:
    factory = FakeFactory(step_latency=0.02, lengths={"a": 3, "b": 5, "c": 4})
    backend = RayBackendConfig(num_cpus=0.25)
    with DesktopLeases(factory, 3, backend=backend) as desk:

        async def trajectory(k: int) -> int:
            task_id = "abc"[k % 3]
            async with await desk.aacquire(timeout=120) as lease:
                result = await lease.areset(task_id)
                steps = 0
                while not result.done:
                    result = await lease.astep("noop")
                    steps += 1
                    assert result.info["task_id"] == task_id and result.info["step"] == steps
                return steps

        async def main() -> list[int]:
            return await asyncio.gather(*(trajectory(k) for k in range(12)))

        assert asyncio.run(main()) == [3, 5, 4] * 4
        pids = set(desk.pool.call(lambda env: os.getpid()))
        assert len(pids) == 3 and os.getpid() not in pids, "the envs ran in actors"
