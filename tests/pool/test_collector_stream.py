"""Streaming collection: tasks fed while the collection runs, pulled lazily, tagged groups out."""

from __future__ import annotations

import threading

import pytest
from pool_fakes import FakeFactory

from osworld_gym.pool import EnvPool, EnvState
from osworld_gym.pool.collector import CollectorConfig, RolloutCollector, TaskFeed
from osworld_gym.pool.policy import PolicyRequest
from osworld_gym.pool.rollout import RolloutBook

DEADLINE = 30.0


def scripted(requests: list[PolicyRequest]) -> list[str]:
    return ["a" for _ in requests]


def test_groups_fed_while_running_come_back_tagged_and_the_stream_ends_on_close() -> None:
    with EnvPool(FakeFactory(step_latency=0.005), num_envs=3) as pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=2))
        feed = TaskFeed()
        feed.put("short", tag="first")
        feed.put({"task_id": "long"}, 3, tag="second")
        seen = []
        for tag, group in collector.stream(feed):
            seen.append((tag, group.task_id, [t.rollout for t in group.trajectories]))
            assert all(t.complete and len(t.steps) for t in group.trajectories)
            if tag == "first":  # the stream is running: feed more from another thread
                worker = threading.Thread(target=feed.put, args=("short", 1, "third"))
                worker.start()
                worker.join(DEADLINE)
            if len(seen) == 3:
                feed.close()  # nothing left in flight: the stream ends
        assert sorted(seen) == [
            ("first", "short", [0, 1]),
            ("second", "long", [0, 1, 2]),
            ("third", "short", [0]),
        ]
        assert collector.stats.episodes == 6 and pool.outstanding == 0
        assert len(collector.collect(["short"])) == 1  # the fixed-list API works after it


def test_an_open_empty_feed_idles_until_a_group_is_put() -> None:
    with EnvPool(FakeFactory(), num_envs=2) as pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=1))
        feed = TaskFeed()
        timer = threading.Timer(0.2, lambda: (feed.put("short", tag=1), feed.close()))
        timer.start()
        try:
            assert [tag for tag, _ in collector.stream(feed)] == [1]
        finally:
            timer.cancel()
        # Idle desktops count as such: the wait for the feed is desktop time with no episode.
        stats = collector.stats
        assert stats.wall_seconds >= 0.2 and stats.utilization < 0.5


def test_groups_are_pulled_only_when_an_env_frees() -> None:
    pending_at_calls: list[int] = []
    feed = TaskFeed()

    def watching(requests: list[PolicyRequest]) -> list[str]:
        pending_at_calls.append(feed.pending)
        return ["a" for _ in requests]

    with EnvPool(FakeFactory(), num_envs=1) as pool:
        collector = RolloutCollector(pool, watching, CollectorConfig(group_size=1))
        for tag in range(3):
            feed.put("short", tag=tag)
        feed.close()
        assert [tag for tag, _ in collector.stream(feed)] == [0, 1, 2]
    # "short" takes 2 steps: the one env pulls the next group only after finishing one.
    assert pending_at_calls == [2, 2, 1, 1, 0, 0]


def test_leaving_a_stream_early_keeps_the_pool_and_the_unpulled_groups() -> None:
    with EnvPool(FakeFactory(step_latency=0.01), num_envs=2) as pool:
        collector = RolloutCollector(pool, scripted, CollectorConfig(group_size=1))
        feed = TaskFeed()
        for tag in range(6):
            feed.put("long", tag=tag)
        for _ in collector.stream(feed):
            break
        assert pool.outstanding == 0
        assert all(pool.env_state(i) is not EnvState.PENDING for i in range(2))
        left = feed.pending
        assert 0 < left < 6 and not feed.closed  # the groups in flight were abandoned
        # The feed is free again: a new stream takes exactly the groups never pulled.
        feed.close()
        rest = [tag for tag, _ in RolloutCollector(pool, scripted).stream(feed)]
        assert rest == list(range(6 - left, 6)) and feed.pending == 0


def test_policy_errors_reach_the_consumer() -> None:
    def broken(requests: list[PolicyRequest]) -> list[str]:
        raise ZeroDivisionError("policy bug")

    with EnvPool(FakeFactory(), num_envs=2) as pool:
        feed = TaskFeed()
        feed.put("short", 2)
        with pytest.raises(ZeroDivisionError):
            list(RolloutCollector(pool, broken).stream(feed))
        assert pool.outstanding == 0


def test_feed_refuses_bad_input_and_a_second_collection() -> None:
    feed = TaskFeed()
    with pytest.raises(ValueError, match="task_id"):
        feed.put({"seed": 1})
    with pytest.raises(ValueError, match=">= 1"):
        feed.put("short", 0)
    feed.put("short", 1)
    with EnvPool(FakeFactory(), num_envs=1) as pool:
        first = RolloutCollector(pool, scripted).stream(feed)
        next(first)
        with pytest.raises(RuntimeError, match="already serves"):
            next(RolloutCollector(pool, scripted).stream(feed))
        first.close()
    feed.close()
    with pytest.raises(ValueError, match="closed"):
        feed.put("short", 1)


def test_book_adds_groups_and_keeps_the_fixed_list_behaviour() -> None:
    book = RolloutBook(["a"], 2)
    assert [r.group for r in book.queue] == [0, 0]
    assert book.add({"task_id": "b", "extra": 1}, 1, tag="b-tag") == 1
    assert [(r.group, r.rollout) for r in book.queue] == [(0, 0), (0, 1), (1, 0)]
    assert book.tags == [None, "b-tag"] and book.group_sizes == [2, 1]
    with pytest.raises(ValueError, match=">= 1"):
        book.add("c", 0)
    with pytest.raises(ValueError, match="group sizes"):
        RolloutBook(["a", "b"], [1])
