"""The lease desk: lending, waiting, concurrent leases that never see each other's results.

Logic is tested on the pool tests' fake env; the trainer-facing contract (desktops launched
once and reset per episode, concurrent coroutines scoring their own tasks, a killed desktop
ending only its own episode) on real ``local`` desktops of the ``ui-basics`` suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from pathlib import Path

import pool_desktops
import pytest
from fixture_marks import needs
from pool_fakes import FakeFactory

from osworld_gym import load_tasks
from osworld_gym.errors import ResetNeededError
from osworld_gym.integrations import DesktopLeases, LeaseError, LeaseResetError
from osworld_gym.integrations.lease import close_shared_leases
from osworld_gym.policies.oracles.ui_basics import (
    SCREEN_SIZE,
    SUITE,
    distractor_answer,
    oracle_responses,
)
from osworld_gym.pool import EnvSpec, EnvState, PoolConfig
from osworld_gym.providers.local.provider import LocalProviderConfig


def _desk(factory: FakeFactory, size: int, **config: object) -> DesktopLeases:
    return DesktopLeases(factory, size, config=PoolConfig(**config))  # type: ignore[arg-type]


# --- lending -----------------------------------------------------------------------------------


def test_acquire_waits_while_all_are_lent_and_release_wakes_the_waiter() -> None:
    with _desk(FakeFactory(), 1) as desk:
        first = desk.acquire()
        got: list[int] = []
        waiter = threading.Thread(target=lambda: got.append(desk.acquire(timeout=10).env_id))
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive() and not got, "the second acquire must wait"
        assert desk.stats()["leases/waiting"] == 1
        first.release()
        waiter.join(10)
        assert got == [first.env_id]
        with pytest.raises(LeaseError, match="released"):
            first.reset("short")


def test_acquire_timeout_and_a_closed_desk_raise_lease_error() -> None:
    desk = _desk(FakeFactory(), 1)
    lease = desk.acquire()
    with pytest.raises(LeaseError, match="within 0.2 s"):
        desk.acquire(timeout=0.2)
    assert desk.stats()["leases/waiting"] == 0, "a timed-out waiter is withdrawn"
    lease.release()
    assert desk.available == 1, "the id was not lost to the withdrawn waiter"

    blocked = desk.acquire()
    errors: list[BaseException] = []

    def wait_for_one() -> None:
        try:
            desk.acquire()
        except LeaseError as e:
            errors.append(e)

    waiter = threading.Thread(target=wait_for_one)
    waiter.start()
    deadline = time.monotonic() + 10
    while desk.stats()["leases/waiting"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    desk.close()
    waiter.join(10)
    assert errors and "closed" in str(errors[0])
    blocked.release()  # after close: a no-op, not an error
    with pytest.raises(LeaseError, match="closed"):
        desk.acquire()


def test_async_waiters_on_two_event_loops_are_served_in_turn() -> None:
    with _desk(FakeFactory(), 1) as desk:
        lease = desk.acquire()
        served: list[str] = []

        def borrower(name: str) -> None:
            async def run() -> None:
                got = await desk.aacquire(timeout=20)
                served.append(name)
                await got.areset("short")
                got.release()

            asyncio.run(run())

        threads = [threading.Thread(target=borrower, args=(n,)) for n in ("a", "b")]
        for thread in threads:
            thread.start()
        lease.release()
        for thread in threads:
            thread.join(30)
        assert sorted(served) == ["a", "b"]


def test_cancelled_aacquire_does_not_lose_the_env() -> None:
    with _desk(FakeFactory(), 1) as desk:
        lease = desk.acquire()

        async def give_up() -> None:
            task = asyncio.ensure_future(desk.aacquire())
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(give_up())
        lease.release()
        assert desk.available == 1
        desk.acquire(timeout=5).release()


# --- concurrency: each lease gets its own results ------------------------------------------------


def test_many_coroutines_stepping_different_leases_get_their_own_results() -> None:
    """32 trajectories over 4 leases, steps of random latency finishing out of order."""
    factory = FakeFactory(step_latency=0.0, lengths={f"t{i}": 3 + i % 4 for i in range(8)})
    with _desk(factory, 4) as desk:
        rng = random.Random(0)

        async def trajectory(k: int) -> tuple[str, int]:
            task_id = f"t{k % 8}"
            async with await desk.aacquire(timeout=60) as lease:
                result = await lease.areset(task_id)
                assert result.info["task_id"] == task_id and result.env_id == lease.env_id
                steps = 0
                while not result.done:
                    await asyncio.sleep(rng.random() * 0.01)  # the policy's turn
                    result = await lease.astep("noop")
                    steps += 1
                    assert result.env_id == lease.env_id
                    assert result.info["task_id"] == task_id, "another lease's result"
                    assert result.info["step"] == steps
                return task_id, steps

        async def main() -> list[tuple[str, int]]:
            return await asyncio.gather(*(trajectory(k) for k in range(32)))

        done = asyncio.run(main())
        assert all(steps == factory.lengths[task] for task, steps in done)
        stats = desk.stats()
        assert stats["leases/lent"] == 32 and stats["leases/available"] == 4
        assert factory.builds == 4, "envs are built once, not per trajectory"


def test_threads_stepping_different_leases_get_their_own_results() -> None:
    factory = FakeFactory(step_latency=0.005, lengths={"a": 4, "b": 6})
    with _desk(factory, 2) as desk:
        failures: list[str] = []

        def run(task_id: str) -> None:
            for _ in range(3):
                with desk.acquire(timeout=60) as lease:
                    result = lease.reset(task_id)
                    while not result.done:
                        result = lease.step("noop")
                        if result.info["task_id"] != task_id:
                            failures.append(f"{task_id} got {result.info['task_id']}")

        threads = [threading.Thread(target=run, args=(t,)) for t in ("a", "b", "a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not failures


# --- faults and misuse ------------------------------------------------------------------------


def test_a_step_abandoned_by_cancellation_is_drained_and_the_desktop_relaunched() -> None:
    factory = FakeFactory(step_latency=0.5, lengths={"long": 5})
    with _desk(factory, 1) as desk:

        async def abandon() -> None:
            lease = await desk.aacquire()
            await lease.areset("long")
            step = asyncio.ensure_future(lease.astep("noop"))
            await asyncio.sleep(0.05)
            step.cancel()
            with pytest.raises(asyncio.CancelledError):
                await step
            assert desk.pool.env_state(lease.env_id) is EnvState.PENDING
            lease.release(broken=True)

        asyncio.run(abandon())
        lease = desk.acquire(timeout=10)  # served once the abandoned step has come back
        assert desk.pool.env_state(lease.env_id) is not EnvState.PENDING
        assert factory.closes == 1, "a broken lease stops its env's desktop"
        assert lease.reset("long").ok
        assert desk.stats()["leases/relaunches"] == 1


def test_infra_fault_truncates_and_the_next_reset_works() -> None:
    factory = FakeFactory(lengths={"long": 5}, infra_on_steps=frozenset({2}))
    with _desk(factory, 1) as desk, desk.acquire() as lease:
        lease.reset("long")
        lease.step("noop")
        result = lease.step("noop")
        assert result.truncated and result.infra_error
        with pytest.raises(ResetNeededError):
            lease.step("noop")
        assert lease.reset("long").ok


def test_bad_task_id_raises_lease_reset_error_and_keeps_the_env() -> None:
    with _desk(FakeFactory(), 1) as desk:
        with desk.acquire() as lease:
            with pytest.raises(LeaseResetError) as caught:
                lease.reset("no-such-task")
            assert not caught.value.retired
        assert desk.available == 1


def test_envs_whose_desktop_never_launches_are_retired_and_acquire_says_so() -> None:
    factory = FakeFactory(launch_failures=100)
    with _desk(factory, 1, launch_attempts=2) as desk:
        lease = desk.acquire()
        with pytest.raises(LeaseResetError) as caught:
            lease.reset("short")
        assert caught.value.retired
        lease.release()
        with pytest.raises(LeaseError, match="retired"):
            desk.acquire(timeout=1)


def test_shared_desks_are_one_per_configuration_and_close_at_request() -> None:
    spec = EnvSpec("pool_fakes:FakeEnv", {})  # only the key matters here: nothing is reset
    other = EnvSpec("pool_fakes:FakeEnv", {"x": 1})
    try:
        first = DesktopLeases.shared(spec, 1)
        assert DesktopLeases.shared(spec, 1) is first
        assert DesktopLeases.shared(other, 1) is not first
    finally:
        close_shared_leases()
    assert first.closed
    assert DesktopLeases.shared(spec, 1) is not first
    close_shared_leases()


# --- real desktops ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
@needs("desktop")
def ui_desk(tmp_path_factory: pytest.TempPathFactory) -> DesktopLeases:
    work_dir: Path = tmp_path_factory.mktemp("lease-desktops")
    kwargs = {
        "tasks": SUITE,
        "screen_size": SCREEN_SIZE,
        "provider": LocalProviderConfig(screen_size=SCREEN_SIZE, work_dir=str(work_dir)),
    }
    desk = DesktopLeases(kwargs, 2, config=PoolConfig(screenshot_format="png"))
    yield desk
    desk.close()
    assert not pool_desktops.processes_under(work_dir), "the desk left desktops behind"


@pytest.mark.desktop
def test_concurrent_trajectories_on_real_desktops_score_their_own_tasks(
    ui_desk: DesktopLeases,
) -> None:
    tasks = load_tasks(SUITE)
    ids = ["click-colour-01", "click-label-02", "type-word-01", "find-ok-01"]
    ids = [i for i in ids if i in tasks.ids] or tasks.ids[:4]

    async def episode(task_id: str, correct: bool) -> tuple[str, float, int]:
        answers = oracle_responses(task_id) if correct else [distractor_answer(tasks[task_id])]
        async with await ui_desk.aacquire(timeout=300) as lease:
            result = await lease.areset(task_id)
            assert result.screenshot and result.screenshot.startswith(b"\x89PNG")
            for answer in answers:
                if result.done:
                    break
                result = await lease.astep(answer)
                assert result.info["task_id"] == task_id
            if not result.done:
                result = await lease.astep("Action: finished(content='')")
            return task_id, float(result.info.get("score") or 0.0), lease.env_id

    async def main() -> list[tuple[str, float, int]]:
        runs = [episode(t, True) for t in ids] + [episode(t, False) for t in ids]
        return await asyncio.gather(*runs)

    results = asyncio.run(main())
    assert [score for _, score, _ in results] == [1.0] * len(ids) + [0.0] * len(ids)
    stats = ui_desk.stats()
    assert stats["pool/resets"] >= 2 * len(ids)
    assert stats["pool/launch_failures"] == 0
    # One desktop launch per env (``restarts`` counts launches) for all the episodes.
    assert ui_desk.pool.stats(include_envs=True)["env/restarts"] == ui_desk.size


@pytest.mark.desktop
def test_a_desktop_killed_mid_episode_ends_only_that_episode(ui_desk: DesktopLeases) -> None:
    task_id = "click-colour-01"
    with ui_desk.acquire(timeout=300) as victim, ui_desk.acquire(timeout=300) as bystander:
        victim.reset(task_id)
        bystander.reset(task_id)
        pids = ui_desk.pool.call(pool_desktops.desktop_pids, env_ids=[victim.env_id])[0]
        assert pool_desktops.kill(pids["xvfb"])
        result = victim.step("Action: wait()")
        assert result.truncated and result.infra_error, result.info
        answers = oracle_responses(task_id)
        for answer in answers:
            ok = bystander.step(answer)
        assert ok.info["score"] == 1.0, "the other desktop was not touched"
        # The killed one relaunches at its next reset and scores again.
        result = victim.reset(task_id)
        for answer in answers:
            result = victim.step(answer)
        assert result.info["score"] == 1.0


def test_shared_desks_tell_task_sets_apart_by_content() -> None:
    suite = load_tasks(SUITE)
    first, second = suite.filter(domain="click_colour"), suite.filter(domain="find_ok")
    try:
        desk = DesktopLeases.shared({"tasks": first}, 1)
        again = load_tasks(SUITE).filter(domain="click_colour")  # equal content, new object
        assert DesktopLeases.shared({"tasks": again}, 1) is desk
        assert DesktopLeases.shared({"tasks": second}, 1) is not desk
    finally:
        close_shared_leases()


def test_the_last_returned_env_is_lent_first() -> None:
    factory = FakeFactory()
    with _desk(factory, 4) as desk:
        for _ in range(5):
            with desk.acquire() as lease:
                lease.reset("short")
        assert factory.builds == 1, "one trajectory at a time needs one env"


def test_a_step_cancelled_as_it_is_sent_never_reaches_the_next_borrower() -> None:
    """Cancel at once, release at once: the next borrower must find no call in flight."""
    factory = FakeFactory(step_latency=0.02, lengths={"long": 1000})
    with _desk(factory, 1) as desk:

        async def churn() -> None:
            for _ in range(50):
                lease = await desk.aacquire(timeout=30)
                if lease.done:
                    await lease.areset("long")
                step = asyncio.ensure_future(lease.astep("noop"))
                await asyncio.sleep(0)  # the step is on its way to the pool's loop
                step.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await step
                lease.release()
                again = await desk.aacquire(timeout=30)
                assert desk.pool.env_state(again.env_id) is not EnvState.PENDING
                again.release()

        asyncio.run(churn())
