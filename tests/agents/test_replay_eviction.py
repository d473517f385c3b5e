"""Replay byte budget: the largest-task eviction policy, empty triggers, per-task gauges and
loading states saved before these existed."""

from __future__ import annotations

import logging

import pytest
from osworld_agents.arpo import ReplayBuffer, ReplayConfig
from test_arpo_replay import SHOT, filled_buffer, make_group, make_trajectory, stored_names

from osworld_gym.pool import StepRecord, Trajectory

KIB = 1024


def sized(task: str, name: str, nbytes: int) -> Trajectory:
    """A stored-size-``nbytes`` success of ``task`` (one screenshot of that many bytes)."""
    step = StepRecord(b"s" * nbytes, "click", text="Action: click()")
    return Trajectory(task, 0, instruction=name, steps=[step], score=1.0, terminated=True)


def fill(buffer: ReplayBuffer, order: list[tuple[str, int]]) -> None:
    """Add successes named ``<task><n>`` of the given sizes, in order."""
    counts: dict[str, int] = {}
    for task, nbytes in order:
        n = counts.get(task, 0)
        counts[task] = n + 1
        buffer.add(sized(task, f"{task}{n}", nbytes))


# The done-when scenario: the hard task is solved once, early; two easy tasks are solved every
# iteration afterwards until the budget (10 KiB) forces evictions.
HARD_THEN_EASY = [("hard", KIB)] + [(t, KIB) for _ in range(6) for t in ("easy1", "easy2")]


def test_hard_tasks_single_success_survives_while_easy_tasks_hold_many() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_bytes=10 * KIB), seed=0)
    fill(buffer, HARD_THEN_EASY)
    assert buffer.nbytes <= 10 * KIB
    assert buffer.stats()["replay/evicted"] == 3
    assert buffer.task_sizes() == {"hard": 1, "easy1": 4, "easy2": 5}
    assert "hard0" in stored_names(buffer)  # its only success, and the oldest entry of all
    # ... so an all-failed group of the hard task still gets it.
    injection = buffer.inject(make_group("hard", [0.0] * 4))
    assert injection.injected and injection.group.trajectories[0].instruction == "hard0"


def test_oldest_policy_loses_that_success_first() -> None:
    """The comparison the default exists for: the old policy drops ``hard0`` at once."""
    buffer = ReplayBuffer(ReplayConfig(max_bytes=10 * KIB, eviction="oldest"), seed=0)
    fill(buffer, HARD_THEN_EASY)
    assert "hard" not in buffer.task_sizes()
    injection = buffer.inject(make_group("hard", [0.0] * 4))
    assert not injection.injected and injection.empty_trigger


def test_victim_is_the_task_with_most_bytes_not_most_entries() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_bytes=12 * KIB), seed=0)
    # "many": 4 entries of 1 KiB (4 KiB); "big": 2 entries of 3 KiB (6 KiB); "one": 2 KiB.
    fill(buffer, [("many", KIB)] * 4 + [("big", 3 * KIB)] * 2 + [("one", 2 * KIB)])
    assert buffer.nbytes == 12 * KIB
    buffer.add(sized("many", "many4", KIB))  # 13 KiB: one entry must go
    assert buffer.task_sizes() == {"many": 5, "big": 1, "one": 1}
    assert "big0" not in stored_names(buffer) and "big1" in stored_names(buffer)
    assert buffer.task_bytes() == {"many": 5 * KIB, "big": 3 * KIB, "one": 2 * KIB}


def test_tie_on_bytes_evicts_from_the_task_with_the_older_oldest_entry() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_bytes=4 * KIB), seed=0)
    fill(buffer, [("b", KIB), ("a", KIB), ("a", KIB), ("b", KIB)])
    buffer.add(sized("c", "c0", KIB))
    # a and b both hold 2 KiB; b's oldest entry (b0) was stored first.
    assert stored_names(buffer) == ["a0", "a1", "b1", "c0"]


def test_when_every_task_holds_one_the_oldest_goes(caplog: pytest.LogCaptureFixture) -> None:
    buffer = ReplayBuffer(ReplayConfig(max_bytes=3 * KIB), seed=0)
    fill(buffer, [("a", KIB), ("b", KIB), ("c", KIB)])
    with caplog.at_level(logging.INFO, logger="osworld_agents.arpo.replay"):
        buffer.add(sized("d", "d0", 2 * KIB))  # 5 KiB, one entry per task: a, then b go
    assert stored_names(buffer) == ["c0", "d0"]
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert "evicted 2 entries (a x1, b x1)" in line
    assert "lost their only success: a, b" in line


def test_budget_eviction_logs_one_info_summary(caplog: pytest.LogCaptureFixture) -> None:
    buffer = ReplayBuffer(ReplayConfig(capacity_per_task=3, max_bytes=10 * KIB), seed=0)
    with caplog.at_level(logging.INFO, logger="osworld_agents.arpo.replay"):
        fill(buffer, [("a", KIB)] * 5)  # capacity evictions only: no INFO line
        assert not [r for r in caplog.records if r.levelno >= logging.INFO]
        fill(buffer, [("b", 4 * KIB), ("c", 2 * KIB), ("b", 2 * KIB)])
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert line == (
        "replay: byte budget 10.0 KiB full, 'largest-task' evicted 1 entry (b x1); 3 task(s) "
        "hold 7.0 KiB, per task 2.0 KiB..3.0 KiB (largest share 30.0% of the budget), "
        "2 at their last success"
    )


def test_gauges_show_the_budget_per_task() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_bytes=10 * KIB), seed=0)
    fill(buffer, [("a", KIB), ("a", 3 * KIB), ("b", 2 * KIB)])
    gauges = buffer.gauges()
    assert gauges == {
        "replay/size": 3,
        "replay/tasks": 2,
        "replay/bytes": 6 * KIB,
        "replay/task_bytes_max": 4 * KIB,
        "replay/task_bytes_min": 2 * KIB,
        "replay/task_share_max": 0.4,
        "replay/budget_used": 0.6,
        "replay/single_tasks": 1,
        "replay/evicted": 0,
    }
    unbounded = ReplayBuffer(ReplayConfig(max_bytes=None), seed=0).gauges()
    assert unbounded["replay/task_share_max"] == unbounded["replay/budget_used"] == 0.0
    assert unbounded["replay/task_bytes_max"] == unbounded["replay/task_bytes_min"] == 0


def test_empty_triggers_are_counted_and_flagged() -> None:
    buffer = ReplayBuffer(seed=0)
    buffer.add(make_trajectory("solved", 1.0, "s0"))
    with_signal = buffer.inject(make_group("nothing", [0.0, 1.0]))
    empty = buffer.inject(make_group("nothing", [0.0, 0.0]))
    served = buffer.inject(make_group("solved", [0.0, 0.0]))
    assert (with_signal.triggered, with_signal.injected, with_signal.empty_trigger) == (
        False,
        False,
        False,
    )
    assert (empty.triggered, empty.injected, empty.empty_trigger) == (True, False, True)
    assert (served.triggered, served.injected, served.empty_trigger) == (True, True, False)
    assert buffer.stats()["replay/empty_triggers"] == 1
    assert buffer.stats()["replay/injections"] == 1


def test_state_saved_before_the_eviction_policy_loads_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A checkpoint of the first bounded buffer: no ``eviction`` key, no empty-trigger count."""
    old = filled_buffer().state_dict()
    del old["config"]["eviction"]
    del old["counters"]["empty_triggers"]
    config = ReplayConfig(capacity_per_task=3, max_bytes=10 * SHOT)
    restored = ReplayBuffer(config)
    with caplog.at_level(logging.WARNING, logger="osworld_agents.arpo.replay"):
        restored.load_state_dict(old)
    assert not caplog.records  # same settings: no "another config" warning
    assert restored.stats() == {**filled_buffer().stats(), "replay/empty_triggers": 0}
    assert restored.task_bytes() == filled_buffer().task_bytes()
    # A real difference still warns.
    with caplog.at_level(logging.WARNING, logger="osworld_agents.arpo.replay"):
        ReplayBuffer(ReplayConfig(capacity_per_task=2)).load_state_dict(old)
    assert "another config" in caplog.text


def test_loading_under_a_smaller_budget_evicts_by_the_policy() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_bytes=None), seed=0)
    fill(buffer, HARD_THEN_EASY)
    smaller = ReplayBuffer(ReplayConfig(max_bytes=5 * KIB))
    smaller.load_state_dict(buffer.state_dict())
    assert smaller.task_sizes() == {"hard": 1, "easy1": 2, "easy2": 2}
    assert smaller.nbytes == 5 * KIB
