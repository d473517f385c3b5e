"""EnvPool logic on a fast fake env: state machine, wait-any, recovery, concurrency cap, close."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref

import pytest
from desktop_helpers import wait_until
from pool_fakes import FakeEnv, FakeFactory

import osworld_gym
from osworld_gym.errors import (
    AlreadyPendingCallError,
    ClosedPoolError,
    EnvRetiredError,
    NoAsyncCallError,
    PoolTimeoutError,
    ResetNeededError,
    UnknownTaskError,
)
from osworld_gym.pool import Command, EnvPool, EnvState, PoolConfig, PoolState, decode_screenshot


def make_pool(n: int = 3, **factory_kwargs: object) -> tuple[EnvPool, list[FakeFactory]]:
    factories = [FakeFactory(**factory_kwargs) for _ in range(n)]  # type: ignore[arg-type]
    return EnvPool(factories), factories


def test_envpool_is_exported_lazily() -> None:
    assert osworld_gym.EnvPool is EnvPool and "EnvPool" in osworld_gym.__all__


def test_reset_and_step_results_are_tagged_and_in_space() -> None:
    with EnvPool(FakeFactory(), num_envs=3) as pool:
        results = pool.reset(options=[{"task_id": "short"}, {"task_id": "long"}, None], seed=5)
        assert [r.env_id for r in results] == [0, 1, 2]
        assert all(r.kind is Command.RESET and r.ok for r in results)
        assert results[0].observation in pool.single_observation_space
        assert [r.info["task_id"] for r in results[:2]] == ["short", "long"]
        assert all(pool.env_state(i) is EnvState.READY for i in range(3))
        steps = pool.step(["a", "b", "done"])
        assert [r.env_id for r in steps] == [0, 1, 2]
        assert steps[2].terminated and steps[2].reward == 1.0
        assert pool.env_state(2) is EnvState.NEEDS_RESET and pool.env_state(0) is EnvState.READY
        assert pool.stats()["pool/steps"] == 3


def test_wait_any_returns_fast_envs_before_a_slow_one() -> None:
    slow = FakeFactory(step_latency=0.6)
    fast = [FakeFactory(step_latency=0.01) for _ in range(3)]
    with EnvPool([slow, *fast]) as pool:
        pool.reset(options={"task_id": "long"})
        start = time.monotonic()
        pool.send(["a"] * 4)
        first = pool.recv(min_results=3)
        assert time.monotonic() - start < 0.4
        assert sorted(r.env_id for r in first) == [1, 2, 3]
        # the fast envs step again while the slow one is still busy
        pool.send(["a"] * 3, env_ids=[1, 2, 3])
        again = pool.recv(min_results=3)
        assert 0 not in {r.env_id for r in again}
        (last,) = pool.recv()
        assert last.env_id == 0


def test_recv_without_a_call_raises() -> None:
    pool, _ = make_pool(2)
    with pool, pytest.raises(NoAsyncCallError):
        pool.recv()


def test_send_to_a_pending_env_is_refused_all_or_nothing() -> None:
    pool, _ = make_pool(2, step_latency=0.2)
    with pool:
        pool.reset()
        pool.send(["a"], env_ids=[0])
        with pytest.raises(AlreadyPendingCallError):
            pool.send(["a", "a"], env_ids=[1, 0])
        assert pool.env_state(1) is EnvState.READY  # env 1 was not sent to
        with pytest.raises(AlreadyPendingCallError):
            pool.send_reset([0])
        assert [r.env_id for r in pool.recv()] == [0]


def test_step_without_episode_needs_reset() -> None:
    pool, _ = make_pool(1)
    with pool:
        with pytest.raises(ResetNeededError):
            pool.send(["a"])
        pool.reset(options={"task_id": "short"})
        pool.step(["done"])
        with pytest.raises(ResetNeededError):
            pool.step(["a"])


def test_bad_arguments() -> None:
    pool, _ = make_pool(2)
    with pool:
        pool.reset()
        with pytest.raises(IndexError):
            pool.send(["a"], env_ids=[5])
        with pytest.raises(ValueError, match="distinct"):
            pool.send(["a", "a"], env_ids=[1, 1])
        with pytest.raises(ValueError, match="actions"):
            pool.send(["a"], env_ids=[0, 1])
        with pytest.raises(ValueError, match="seeds"):
            pool.send_reset([0], seed=[1, 2])


def test_recv_timeout_keeps_everything() -> None:
    pool, _ = make_pool(2, step_latency=0.3)
    with pool:
        pool.reset()
        pool.send(["a", "a"])
        with pytest.raises(PoolTimeoutError):
            pool.recv(min_results=2, timeout=0.05)
        assert pool.outstanding == 2
        assert sorted(r.env_id for r in pool.recv(min_results=2, timeout=5)) == [0, 1]


def test_max_results_leaves_the_rest_queued() -> None:
    pool, _ = make_pool(3)
    with pool:
        pool.send_reset()
        assert len(pool.recv(min_results=3, max_results=1)) == 1
        assert len(pool.recv()) == 2


def test_use_after_close_and_close_is_idempotent() -> None:
    pool, factories = make_pool(2)
    pool.reset()
    pool.close()
    pool.close()
    assert pool.state is PoolState.CLOSED
    assert all(f.closes == f.builds == 1 for f in factories)
    for call in (lambda: pool.send(["a", "a"]), pool.recv, pool.reset, lambda: pool.call(len)):
        with pytest.raises(ClosedPoolError):
            call()


def test_close_wakes_a_waiting_recv() -> None:
    async def main() -> None:
        pool, _ = make_pool(1, step_latency=0.5)
        await pool.areset()
        await pool.asend(["a"])
        waiter = asyncio.create_task(pool.arecv())
        await asyncio.sleep(0.05)  # let recv start waiting
        await pool.aclose()
        with pytest.raises(ClosedPoolError):
            await waiter

    asyncio.run(main())


def test_infra_error_ends_episode_and_next_reset_recovers() -> None:
    pool, factories = make_pool(2, infra_on_steps=frozenset({2}))
    with pool:
        pool.reset(options={"task_id": "long"})
        pool.step(["a", "a"])
        results = pool.step(["a", "a"])
        assert all(r.truncated and r.infra_error for r in results)
        assert pool.stats()["pool/infra_errors"] == 2
        assert all(pool.env_state(i) is EnvState.NEEDS_RESET for i in range(2))
        assert all(r.ok for r in pool.reset())
        assert all(not r.done for r in pool.step(["a", "a"]))


def test_exception_out_of_step_is_a_truncation_and_the_env_is_rebuilt() -> None:
    pool, factories = make_pool(2, crash_on_steps=frozenset({1}))
    with pool:
        pool.reset(options={"task_id": "long"})
        results = pool.step(["a", "a"])
        assert all(r.truncated and "worker crash" in r.infra_error for r in results)
        assert results[0].observation is not None  # the last observation stands in
        pool.reset()
        assert [f.builds for f in factories] == [2, 2]
        assert [f.closes for f in factories] == [1, 1]


def test_failing_launch_is_retried_then_retired_while_others_go_on() -> None:
    flaky = FakeFactory(launch_failures=2)
    broken = FakeFactory(launch_failures=1000)
    healthy = FakeFactory()
    with EnvPool([flaky, broken, healthy], config=PoolConfig(launch_attempts=3)) as pool:
        results = pool.reset()
        assert results[0].ok and results[2].ok
        assert isinstance(results[1].error, EnvRetiredError) and results[1].error.env_id == 1
        assert "3 times in a row" in str(results[1].error)
        assert pool.env_state(1) is EnvState.RETIRED and pool.live_env_ids == [0, 2]
        with pytest.raises(EnvRetiredError):
            pool.send(["a"], env_ids=[1])
        assert pool.stats()["pool/retired"] == 1
        assert [r.env_id for r in pool.step(["a", "a"], env_ids=[0, 2])] == [0, 2]
        assert pool.reset() and pool.live_env_ids == [0, 2]  # default ids skip retired envs


def test_task_error_is_reported_without_retiring() -> None:
    pool, factories = make_pool(1)
    with pool:
        (result,) = pool.reset(options={"task_id": "nope"})
        assert isinstance(result.error, UnknownTaskError) and not result.infra
        assert pool.env_state(0) is EnvState.NEEDS_RESET
        assert factories[0].builds == 1  # the env was kept
        assert pool.reset(options={"task_id": "short"})[0].ok


def test_reset_concurrency_is_capped() -> None:
    shared = FakeFactory(reset_latency=0.05)
    with EnvPool(shared, num_envs=6, config=PoolConfig(max_concurrent_resets=2)) as pool:
        pool.reset()
        assert shared.max_active_resets == 2


def test_screenshots_are_encoded_by_the_workers() -> None:
    pool = EnvPool(FakeFactory(), num_envs=1, config=PoolConfig(screenshot_format="png"))
    with pool:
        (result,) = pool.reset()
        assert result.screenshot is not None
        assert (decode_screenshot(result.screenshot) == result.observation["screenshot"]).all()


def test_call_runs_in_each_worker() -> None:
    pool, _ = make_pool(3)
    with pool:
        assert pool.call(type) == [FakeEnv] * 3
        assert pool.call(lambda env: env.closed, env_ids=[1]) == [False]


def test_async_api_from_another_loop() -> None:
    async def main() -> None:
        async with EnvPool(FakeFactory(step_latency=0.01), num_envs=4) as pool:
            await pool.asend_reset(options={"task_id": "short"})
            results = await pool.arecv()
            assert sorted(r.env_id for r in results) == [0, 1, 2, 3]
            results = await pool.astep(["a"] * 4)
            assert all(not r.done for r in results)
            await pool.asend(["a"] * 4)
            done = []
            while len(done) < 4:
                done += await pool.arecv(min_results=1)
            assert all(r.truncated for r in done)

    asyncio.run(main())


def test_garbage_collected_pool_closes_its_envs() -> None:
    factory = FakeFactory()
    pool = EnvPool(factory, num_envs=2)
    pool.reset()
    ref = weakref.ref(pool)
    del pool
    gc.collect()
    assert ref() is None
    assert factory.closes == factory.builds == 2


def test_stats_can_include_the_envs_counters() -> None:
    class Counted(FakeEnv):
        def stats(self) -> dict[str, float]:
            return {"parse_errors": 2.0, "note": "not a number"}  # type: ignore[dict-item]

    with EnvPool([lambda: Counted(FakeFactory())] * 2) as pool:
        pool.reset()
        stats = pool.stats(include_envs=True)
        assert stats["env/parse_errors"] == 4.0 and "env/note" not in stats
        assert stats["pool/resets"] == 2 and "env/parse_errors" not in pool.stats()


def test_close_does_not_wait_forever_for_a_stuck_call() -> None:
    factory = FakeFactory(step_latency=3.0)
    pool = EnvPool(factory, num_envs=1, config=PoolConfig(close_timeout=0.2))
    pool.reset()
    pool.send(["a"])
    start = time.monotonic()
    pool.close()
    assert time.monotonic() - start < 1.5
    assert factory.closes == 1  # closed under the stuck call


def test_hung_step_is_abandoned_as_infra_error_while_others_go_on() -> None:
    hung = FakeFactory(hang_on_steps=frozenset({1}))
    healthy = FakeFactory(step_latency=0.05)
    with EnvPool([hung, healthy], config=PoolConfig(step_timeout=0.5)) as pool:
        pool.reset(options={"task_id": "long"})
        pool.send(["a", "a"])
        first = pool.recv(min_results=1, max_results=1)[0]
        assert first.env_id == 1 and not first.done  # the healthy env is not held up
        (cut,) = pool.recv()
        assert cut.env_id == 0 and cut.truncated and "hung" in cut.infra_error
        wait_until(lambda: hung.closes == 1, timeout=5, message="hung env closed")
        assert pool.stats()["pool/hung_calls"] == 1
        assert pool.reset(env_ids=[0], options={"task_id": "long"})[0].ok  # a fresh worker
        assert hung.builds == 2
        assert not pool.step(["a"], env_ids=[0])[0].done


def test_hung_reset_counts_as_a_failed_launch() -> None:
    factory = FakeFactory(reset_latency=5.0)
    config = PoolConfig(reset_timeout=0.3, launch_attempts=2)
    start = time.monotonic()
    with EnvPool(factory, num_envs=1, config=config) as pool:
        (result,) = pool.reset()
        assert isinstance(result.error, EnvRetiredError) and "hung" in str(result.error)
        assert pool.stats()["pool/hung_calls"] == 2
    assert time.monotonic() - start < 4.0


def test_pool_config_rejects_bad_timeouts() -> None:
    with pytest.raises(ValueError, match="step_timeout"):
        PoolConfig(step_timeout=0)
    assert PoolConfig(step_timeout=None, reset_timeout=None).step_timeout is None
