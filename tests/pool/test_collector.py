"""Rollout-wise and lock-step collection on the fake env: whole groups, refill, recovery."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections import Counter

import pytest
from pool_fakes import FakeFactory

from osworld_gym.errors import EnvRetiredError
from osworld_gym.pool import EnvPool, EnvState, PoolConfig, decode_screenshot
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector
from osworld_gym.pool.lockstep import LockstepCollector
from osworld_gym.pool.policy import PolicyOutput, PolicyRequest


def scripted(requests: list[PolicyRequest]) -> list[str]:
    return ["a" for _ in requests]


def test_groups_come_back_whole_with_records() -> None:
    pool = EnvPool(FakeFactory(), num_envs=4, config=PoolConfig(screenshot_format="png"))
    with pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=3))
        groups = collector.collect(["short", "long", "short", {"task_id": "long"}])
        assert sorted(g.task_id for g in groups) == ["long", "long", "short", "short"]
        for group in groups:
            assert [t.rollout for t in group.trajectories] == [0, 1, 2]
            for t in group.trajectories:
                assert t.complete and t.truncated and t.score == 0.0
                assert len(t.steps) == {"short": 2, "long": 5}[t.task_id]
                assert t.instruction == f"do {t.task_id}"
                shots = list(t.screenshots())
                assert len(shots) == len(t.steps) + 1 and shots[0][:4] == b"\x89PNG"
                assert decode_screenshot(shots[-1]).shape == (6, 8, 3)
                step = t.steps[0]
                assert step.action == step.text == "a" and step.parse_error is None
                assert {"policy", "env"} <= set(step.timings)
        assert pool.outstanding == 0


def test_per_task_group_sizes() -> None:
    pool = EnvPool(FakeFactory(), num_envs=3)
    with pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=2))
        groups = collector.collect(["short", "long", "short"], group_sizes=[1, 4, 3])
        sizes = sorted((g.task_id, len(g.trajectories)) for g in groups)
        assert sizes == [("long", 4), ("short", 1), ("short", 3)]
        for group in groups:
            assert [t.rollout for t in group.trajectories] == list(range(len(group.trajectories)))
        assert len(collector.collect(["short"])[0].trajectories) == 2  # the config's size again
        with pytest.raises(ValueError, match="group sizes"):
            collector.collect(["short", "long"], group_sizes=[2])
        with pytest.raises(ValueError, match=">= 1"):
            collector.collect(["short"], group_sizes=[0])
        assert pool.outstanding == 0


def test_free_envs_are_refilled_at_once() -> None:
    slow = FakeFactory(step_latency=0.3)
    fast = [FakeFactory(step_latency=0.005) for _ in range(3)]
    with EnvPool([slow, *fast]) as pool:
        collector = RolloutCollector(
            pool, scripted, CollectorConfig(group_size=4, policy_concurrency=4)
        )
        groups = collector.collect(["short"] * 4)
        per_env = Counter(t.env_id for g in groups for t in g.trajectories)
        assert per_env[0] == 1 and sum(per_env.values()) == 16


def test_async_policy_calls_are_batched_and_outputs_recorded() -> None:
    batches: list[int] = []

    async def policy(requests: list[PolicyRequest]) -> list[PolicyOutput]:
        batches.append(len(requests))
        await asyncio.sleep(0.02)
        return [
            PolicyOutput("garbage" if r.step == 0 else "done", extra={"step": r.step})
            for r in requests
        ]

    with EnvPool(FakeFactory(), num_envs=4) as pool:
        groups = RolloutCollector(pool, policy, CollectorConfig(group_size=4)).collect(["long"])
    (group,) = groups
    assert max(batches) > 1
    for t in group.trajectories:
        assert [s.text for s in t.steps] == ["garbage", "done"]
        assert t.steps[0].parse_error == "no action" and t.steps[1].extra == {"step": 1}
        assert t.terminated and t.score == 1.0 and t.total_reward == 1.0


def test_infra_faults_are_requeued_and_accounted_for() -> None:
    factories = [FakeFactory(infra_on_steps=frozenset({2, 7})) for _ in range(2)]
    factories.append(FakeFactory(crash_on_steps=frozenset({3})))
    with EnvPool(factories) as pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=4))
        groups = collector.collect(["long", "short"])
        assert len(groups) == 2 and all(len(g) == 4 for g in groups)
        assert all(t.complete for g in groups for t in g.trajectories)
        discarded = [t for g in groups for t in g.discarded]
        assert len(discarded) == 5 == collector.requeued
        assert all(t.infra_error and t.truncated for t in discarded)
        assert {t.attempt for g in groups for t in g.trajectories} >= {0, 1}


def test_requeue_can_be_switched_off() -> None:
    with EnvPool(FakeFactory(infra_on_steps=frozenset({1})), num_envs=1) as pool:
        config = CollectorConfig(group_size=2, requeue_infra_errors=False)
        (group,) = RolloutCollector(pool, scripted, config).collect(["short"])
        assert group.trajectories[0].infra_error and not group.discarded


def test_a_retired_env_hands_its_episode_to_the_others() -> None:
    broken = FakeFactory(launch_failures=100)
    with EnvPool(
        [broken, FakeFactory(), FakeFactory()], config=PoolConfig(launch_attempts=2)
    ) as pool:
        groups = RolloutCollector(pool, scripted, CollectorConfig(group_size=3)).collect(["short"])
        assert all(t.complete and t.env_id != 0 for t in groups[0].trajectories)
        assert pool.env_state(0) is EnvState.RETIRED


def test_all_envs_retired_raises() -> None:
    with EnvPool(FakeFactory(launch_failures=100), num_envs=2) as pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=2))
        with pytest.raises(EnvRetiredError, match="every env"):
            collector.collect(["short"])


def test_task_error_becomes_a_trajectory_error() -> None:
    with EnvPool(FakeFactory(), num_envs=2) as pool:
        (group,) = RolloutCollector(pool, scripted, CollectorConfig(group_size=2)).collect(["nope"])
        assert all("UnknownTaskError" in t.error for t in group.trajectories)


def test_leaving_early_leaves_the_pool_consistent() -> None:
    with EnvPool(FakeFactory(step_latency=0.01), num_envs=3) as pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=2))
        for _ in collector.groups(["short", "long", "long", "long"]):
            break
        assert pool.outstanding == 0
        assert all(pool.env_state(i) is not EnvState.PENDING for i in range(3))
        assert len(collector.collect(["short"])) == 1  # the pool is still usable


def test_policy_exception_reaches_the_caller_and_the_pool_survives() -> None:
    def broken(requests: list[PolicyRequest]) -> list[str]:
        raise ZeroDivisionError("policy bug")

    with EnvPool(FakeFactory(), num_envs=2) as pool:
        with pytest.raises(ZeroDivisionError):
            RolloutCollector(pool, broken, CollectorConfig(group_size=2)).collect(["short"])
        assert pool.outstanding == 0
        assert len(RolloutCollector(pool, scripted).collect(["short"])) == 1


def test_async_iteration() -> None:
    async def main() -> list[str]:
        async with EnvPool(FakeFactory(), num_envs=2) as pool:
            collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=2))
            return [g.task_id async for g in collector.agroups(["short", "long"])]

    assert sorted(asyncio.run(main())) == ["long", "short"]


def test_lockstep_collector_gives_the_same_groups() -> None:
    with EnvPool(FakeFactory(infra_on_steps=frozenset({3})), num_envs=3) as pool:
        groups = LockstepCollector(pool, scripted, CollectorConfig(group_size=2)).collect(
            ["short", "long"]
        )
        assert sorted(g.task_id for g in groups) == ["long", "short"]
        assert all(len(g) == 2 and all(t.complete for t in g.trajectories) for g in groups)
        assert sum(len(g.discarded) for g in groups) == 1


def test_ctrl_c_during_collect_stops_cleanly() -> None:
    factory = FakeFactory(step_latency=0.05)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    # A suite run in the background of a non-interactive shell inherits SIGINT ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), EnvPool(factory, num_envs=2) as pool:
            timer.start()
            RolloutCollector(pool, scripted, CollectorConfig(group_size=2)).collect(["long"] * 20)
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert pool.state.value == "closed" and factory.closes == factory.builds == 2


def test_streamed_groups_are_not_kept_by_the_collection() -> None:
    import gc
    import weakref

    pool = EnvPool(FakeFactory(), num_envs=2)
    with pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=2))
        stream = collector.groups(["short"] * 6)
        first = next(stream)
        gone = [weakref.ref(t) for t in first.trajectories]
        del first
        next(stream)  # the collection runs on: its book must not hold the first group
        gc.collect()
        assert all(ref() is None for ref in gone)
        assert len(list(stream)) == 4
