"""Fast, safe defaults: policy calls in flight, the reset cap, and utilization counted two ways."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from pool_fakes import FakeFactory, wait

from osworld_gym.pool import EnvPool, PoolConfig, RayBackendConfig
from osworld_gym.pool.collector import (
    CollectionStats,
    CollectorConfig,
    RolloutCollector,
    UtilizationMeter,
    effective_concurrency,
    policy_call_limit,
)
from osworld_gym.pool.config import MIN_CONCURRENT_RESETS, RESETS_PER_CPU, auto_reset_cap
from osworld_gym.pool.lockstep import LockstepCollector
from osworld_gym.pool.policy import PolicyRequest
from osworld_gym.pool.pool import _desktop_cpus, _helper_threads
from osworld_gym.pool.results import EnvResult
from osworld_gym.pool.state import Command


def scripted(requests: list[PolicyRequest]) -> list[str]:
    return ["a" for _ in requests]


class PeakCounter:
    """Counts calls in flight at once (asyncio or threads)."""

    def __init__(self) -> None:
        self.now = self.peak = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1


class SlowAsyncPolicy:
    """An async policy that takes ``seconds`` a call (optionally declaring a limit)."""

    def __init__(self, seconds: float, max_concurrent_calls: int | None = None) -> None:
        self.seconds = seconds
        self.max_concurrent_calls = max_concurrent_calls
        self.counter = PeakCounter()
        self.batches: list[int] = []

    async def __call__(self, requests: list[PolicyRequest]) -> list[str]:
        self.counter.enter()
        self.batches.append(len(requests))
        try:
            await asyncio.sleep(self.seconds)
        finally:
            self.counter.leave()
        return ["a" for _ in requests]


# --- configuration ---------------------------------------------------------------------------


def test_collector_defaults_do_not_cap_policy_calls() -> None:
    config = CollectorConfig()
    assert config.policy_concurrency is None and config.max_policy_batch is None
    assert CollectorConfig(policy_concurrency=3).policy_concurrency == 3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"policy_concurrency": 0}, "policy_concurrency"),
        ({"policy_concurrency": -2}, "policy_concurrency"),
        ({"policy_concurrency": True}, "policy_concurrency"),
        ({"policy_concurrency": 1.5}, "policy_concurrency"),
        ({"policy_concurrency": "4"}, "policy_concurrency"),
        ({"max_policy_batch": 0}, "max_policy_batch"),
        ({"group_size": 0}, "group_size"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"screenshot_format": "gif"}, "screenshot_format"),
    ],
)
def test_collector_config_validation(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CollectorConfig(**kwargs)


def test_a_policy_limit_lowers_the_configured_cap() -> None:
    class Serial:
        max_concurrent_calls = 1

    assert policy_call_limit(scripted) is None
    assert policy_call_limit(Serial()) == 1
    assert effective_concurrency(None, scripted) is None
    assert effective_concurrency(4, scripted) == 4
    assert effective_concurrency(None, Serial()) == 1
    assert effective_concurrency(4, Serial()) == 1
    assert effective_concurrency(2, SlowAsyncPolicy(0, max_concurrent_calls=8)) == 2


@pytest.mark.parametrize("declared", [0, -1, True, 2.0, "1"])
def test_a_bad_policy_limit_is_refused(declared: object) -> None:
    class Odd:
        max_concurrent_calls = declared

    with pytest.raises(ValueError, match="max_concurrent_calls"):
        policy_call_limit(Odd())
    with EnvPool(FakeFactory(), num_envs=1) as pool:
        with pytest.raises(ValueError, match="max_concurrent_calls"):
            RolloutCollector(pool, Odd()).collect(["short"])  # type: ignore[arg-type]
        assert pool.outstanding == 0


def test_reset_cap_scales_with_envs_and_cores() -> None:
    assert PoolConfig().max_concurrent_resets is None
    assert auto_reset_cap(16, 2) == min(16, RESETS_PER_CPU * 2)
    assert auto_reset_cap(64, 16) == min(64, RESETS_PER_CPU * 16)
    assert auto_reset_cap(3, 64) == 3  # never more than the envs
    assert auto_reset_cap(100, 1) == MIN_CONCURRENT_RESETS  # a floor for small hosts
    assert auto_reset_cap(1, 1) == 1
    assert auto_reset_cap(100, 0.5) == MIN_CONCURRENT_RESETS
    with pytest.raises(ValueError, match="num_envs"):
        auto_reset_cap(0, 4)
    assert PoolConfig().reset_cap(16, cpus=2) == auto_reset_cap(16, 2)
    assert PoolConfig(max_concurrent_resets=3).reset_cap(16, cpus=64) == 3


@pytest.mark.parametrize("value", [0, -1, True, 2.5, "4"])
def test_reset_cap_validation(value: object) -> None:
    with pytest.raises(ValueError, match="max_concurrent_resets"):
        PoolConfig(max_concurrent_resets=value)  # type: ignore[arg-type]


def test_pools_resolve_their_reset_cap() -> None:
    with EnvPool(FakeFactory(), num_envs=2) as pool:
        assert pool.max_concurrent_resets == 2  # automatic: at most one per env
    with EnvPool(FakeFactory(), num_envs=6, config=PoolConfig(max_concurrent_resets=5)) as pool:
        assert pool.max_concurrent_resets == 5
    # Ray actors reserve their CPUs on the desktop hosts, whatever this host has.
    assert _desktop_cpus(RayBackendConfig(num_cpus=0.5), 40) == 20
    assert _desktop_cpus("ray", 8) == 8 * RayBackendConfig().num_cpus
    assert _helper_threads(64) == 132


def test_automatic_reset_cap_is_enforced() -> None:
    factory = FakeFactory(reset_latency=0.05)
    with EnvPool(factory, num_envs=12) as pool:
        pool.reset(options={"task_id": "short"})
        assert factory.max_active_resets <= pool.max_concurrent_resets


# --- calls in flight -------------------------------------------------------------------------


def staggered(n: int, step: float = 0.1) -> list[FakeFactory]:
    """Envs whose resets end ``step`` seconds apart: each is ready at its own moment."""
    return [FakeFactory(reset_latency=i * step) for i in range(n)]


def test_by_default_every_ready_env_gets_its_call_at_once() -> None:
    policy = SlowAsyncPolicy(0.5)
    with EnvPool(staggered(3)) as pool:
        RolloutCollector(pool, policy, CollectorConfig(group_size=3)).collect(["short"])
    assert policy.counter.peak >= 2  # env 1 did not wait for env 0's call


def test_a_configured_cap_is_kept() -> None:
    policy = SlowAsyncPolicy(0.3)
    with EnvPool(staggered(3)) as pool:
        config = CollectorConfig(group_size=3, policy_concurrency=1)
        RolloutCollector(pool, policy, config).collect(["short"])
    assert policy.counter.peak == 1


def test_a_declared_policy_limit_is_kept() -> None:
    policy = SlowAsyncPolicy(0.3, max_concurrent_calls=1)
    with EnvPool(staggered(3)) as pool:
        RolloutCollector(pool, policy, CollectorConfig(group_size=3)).collect(["short"])
    assert policy.counter.peak == 1


def test_a_thread_unsafe_sync_policy_is_never_called_concurrently() -> None:
    class NotThreadSafe:
        max_concurrent_calls = 1

        def __init__(self) -> None:
            self.counter = PeakCounter()

        def __call__(self, requests: list[PolicyRequest]) -> list[str]:
            self.counter.enter()
            try:
                wait(0.05)  # simulated inference
            finally:
                self.counter.leave()
            return ["a" for _ in requests]

    policy = NotThreadSafe()
    with EnvPool(staggered(4, 0.02)) as pool:
        RolloutCollector(pool, policy, CollectorConfig(group_size=4)).collect(["long"])
    assert policy.counter.peak == 1


def test_max_policy_batch_still_splits_calls() -> None:
    policy = SlowAsyncPolicy(0.05)
    with EnvPool(FakeFactory(), num_envs=4) as pool:
        config = CollectorConfig(group_size=4, max_policy_batch=1)
        RolloutCollector(pool, policy, config).collect(["short"])
    assert set(policy.batches) == {1}
    assert policy.counter.peak > 1


def test_many_blocking_policy_calls_run_at_once() -> None:
    """More sync calls in flight than asyncio's default executor has threads on a small host."""
    n = 12
    barrier = threading.Barrier(n, timeout=20)

    def policy(requests: list[PolicyRequest]) -> list[str]:
        if requests[0].step == 0:
            barrier.wait()  # every env's first call must be running at the same time
        return ["a" for _ in requests]

    with EnvPool(FakeFactory(), num_envs=n) as pool:
        config = CollectorConfig(group_size=n, max_policy_batch=1)
        (group,) = RolloutCollector(pool, policy, config).collect(["short"])
    assert len(group) == n and not barrier.broken


# --- utilization -----------------------------------------------------------------------------


def test_utilization_arithmetic() -> None:
    stats = CollectionStats(
        wall_seconds=10.0,
        desktop_seconds=40.0,  # 4 envs
        env_seconds=18.0,
        policy_seconds=16.0,
        policy_queue_seconds=2.0,
        episodes=5,
        steps=20,
        policy_calls=8,
        policy_requests=20,
    )
    assert stats.utilization == pytest.approx(0.45)
    assert stats.occupancy == pytest.approx(0.85)
    assert stats.utilization_bound == pytest.approx(18 / 34)
    assert stats.episodes_per_minute == pytest.approx(30.0)
    assert stats.mean_policy_batch == pytest.approx(2.5)
    both = stats + stats
    assert both.utilization == pytest.approx(0.45) and both.episodes == 10
    assert both.wall_seconds == 20.0 and both.desktop_seconds == 80.0
    logged = stats.as_dict()
    assert logged["collect/utilization"] == pytest.approx(0.45)
    assert logged["collect/occupancy"] == pytest.approx(0.85)
    assert logged["collect/episodes"] == 5.0
    meter = UtilizationMeter(3, clock=lambda: 7.0)
    meter.stop()
    assert meter.snapshot().tail_seconds == 0.0  # no time passed
    empty = CollectionStats()
    assert empty.utilization == empty.occupancy == empty.utilization_bound == 0.0
    assert empty.episodes_per_minute == empty.mean_policy_batch == 0.0


def test_meter_splits_desktop_time() -> None:
    now = [100.0]
    meter = UtilizationMeter(2, clock=lambda: now[0])
    meter.on_result(EnvResult(0, Command.RESET, elapsed=1.0))
    meter.on_result(EnvResult(1, Command.RESET, elapsed=2.0))
    now[0] = 102.0
    meter.on_ready(0)
    meter.on_ready(1)
    now[0] = 103.0
    meter.on_call([0])  # env 0's call starts 1 s after it was ready
    meter.on_answer(1, 0.5)
    now[0] = 104.0
    meter.on_call([1])  # env 1 waited 2 s for a call slot
    meter.on_answer(1, 0.5)
    meter.on_result(EnvResult(0, Command.STEP, elapsed=1.5, terminated=True))
    meter.on_episode_end()
    now[0] = 110.0
    meter.stop()
    now[0] = 500.0  # the clock stopped with the collection
    stats = meter.snapshot()
    assert stats.wall_seconds == 10.0 and stats.desktop_seconds == 20.0
    assert stats.env_seconds == 4.5 and stats.steps == 1 and stats.episodes == 1
    assert stats.policy_queue_seconds == 3.0 and stats.policy_seconds == 1.0
    assert stats.tail_seconds == (110 - 104) + (110 - 100)  # after each env's last result
    assert stats.utilization == pytest.approx(4.5 / 20)
    assert stats.occupancy == pytest.approx(5.5 / 20)


def test_collectors_report_utilization_two_ways() -> None:
    policy = SlowAsyncPolicy(0.03)
    with EnvPool(FakeFactory(step_latency=0.03), num_envs=3) as pool:
        collector = RolloutCollector(pool, policy, CollectorConfig(group_size=3))
        groups = collector.collect(["short", "long"])
        stats = collector.stats
        assert stats.episodes == 6 == sum(len(g) for g in groups)
        assert stats.steps == sum(len(t.steps) for g in groups for t in g.trajectories)
        assert stats.policy_requests == stats.steps
        assert 0 < stats.utilization <= stats.utilization_bound + 0.05
        assert stats.utilization < stats.occupancy <= 1.0 + 1e-6
        assert 0 < stats.tail_seconds < stats.desktop_seconds - stats.env_seconds
        busy = sum(s.timings["env"] for g in groups for t in g.trajectories for s in t.steps)
        assert stats.env_seconds >= busy  # the steps, and the resets besides
        collector.collect(["short"])
        assert collector.stats.episodes == 9  # collections add up
        assert collector.stats.wall_seconds > stats.wall_seconds

        lockstep = LockstepCollector(pool, policy, CollectorConfig(group_size=3))
        lockstep.collect(["short", "long"])
        locked = lockstep.stats
        assert locked.episodes == 6 and locked.policy_queue_seconds == 0.0
        assert 0 < locked.utilization < locked.occupancy <= 1.0 + 1e-6
