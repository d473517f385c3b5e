"""The Ray backend across the nodes of a multi-node Ray cluster, all on loopback.

Two raylets on this machine (``ray.cluster_utils.Cluster``) stand in for two desktop hosts,
each offering a ``desktop:<host>`` resource: actors are spread over them, and when a host
leaves the cluster its envs are relaunched on the other one.
"""

from __future__ import annotations

import collections.abc
import sys

import pool_fakes
import pytest
from fixture_marks import needs
from pool_fakes import FakeFactory

from osworld_gym.pool import EnvPool, RayBackendConfig
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector

ray = pytest.importorskip("ray", reason="pip install 'osworld-gym[ray]'")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = pytest.mark.ray
BACKEND = RayBackendConfig(num_cpus=0.1, resource_prefix="desktop:")
HOSTS = ("desktop:host-a", "desktop:host-b")


@pytest.fixture(scope="module")
@needs("ray")
def cluster() -> collections.abc.Iterator[object]:
    """A head node and a second node, both on 127.0.0.1, each a desktop host of 4 envs."""
    cluster = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "resources": {HOSTS[0]: 4},
            "node_ip_address": "127.0.0.1",
            "include_dashboard": False,
        },
    )
    try:
        cluster.add_node(num_cpus=1, resources={HOSTS[1]: 4}, node_ip_address="127.0.0.1")
        ray.init(address=cluster.address, log_to_driver=False)
        ray.cloudpickle.register_pickle_by_value(pool_fakes)
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # node_of
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def node_of(env: object) -> str:
    return ray.get_runtime_context().get_node_id()


def host_nodes() -> dict[str, str]:
    """Desktop-host resource name -> node id."""
    return {
        name: node["NodeID"]
        for node in ray.nodes()
        if node["Alive"]
        for name in node["Resources"]
        if name in HOSTS
    }


def test_actors_are_spread_over_the_desktop_hosts(cluster: object) -> None:
    with EnvPool(FakeFactory(), num_envs=4, backend=BACKEND) as pool:
        nodes = pool.call(node_of)
        hosts = host_nodes()
        assert nodes == [hosts[HOSTS[i % 2]] for i in range(4)]
        groups = RolloutCollector(
            pool, lambda r: ["a"] * len(r), CollectorConfig(group_size=4)
        ).collect(["short", "long"])
        assert all(len(g) == 4 and all(t.complete for t in g.trajectories) for g in groups)
        assert {t.env_id for g in groups for t in g.trajectories} == {0, 1, 2, 3}


def test_a_lost_host_relaunches_its_envs_on_the_others(cluster: object) -> None:
    extra = cluster.add_node(
        num_cpus=1, resources={"desktop:host-c": 4}, node_ip_address="127.0.0.1"
    )
    cluster.wait_for_nodes()
    with EnvPool(FakeFactory(step_latency=0.5), num_envs=3, backend=BACKEND) as pool:
        pool.reset(options={"task_id": "long"})
        placed = pool.call(node_of)
        lost = [i for i, n in enumerate(placed) if n == extra.node_id]
        assert lost == [2]  # round-robin over host-a, host-b, host-c
        pool.send(["a"] * 3)
        cluster.remove_node(extra)
        results = {r.env_id: r for r in pool.recv(timeout=60)}
        assert results[2].truncated and "lost" in results[2].infra_error
        assert all(r.ok for r in pool.reset(env_ids=[2], options={"task_id": "long"}))
        assert pool.call(node_of, env_ids=[2])[0] in set(host_nodes().values())
