"""Replay buffer: insertion rule, per-task FIFO, byte budget, injection, persistence."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from osworld_agents.arpo import Injection, ReplayBuffer, ReplayConfig, needs_replay

from osworld_gym.pool import StepRecord, Trajectory, TrajectoryGroup

SHOT = 100  # bytes of each fake screenshot


def make_trajectory(
    task: str,
    score: float | None,
    name: str = "",
    *,
    rollout: int = 0,
    extra: dict[str, object] | None = None,
    **fields: object,
) -> Trajectory:
    step = StepRecord(b"s" * SHOT, "click", text="Action: click()", extra=dict(extra or {}))
    return Trajectory(
        task, rollout, instruction=name, steps=[step], score=score, terminated=True, **fields
    )


def make_group(task: str, scores: list[float]) -> TrajectoryGroup:
    return TrajectoryGroup(
        task, [make_trajectory(task, s, f"{task}-r{i}", rollout=i) for i, s in enumerate(scores)]
    )


def stored_names(buffer: ReplayBuffer) -> list[str]:
    return [e["trajectory"].instruction for e in buffer.state_dict()["entries"]]


# -- insertion -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "fields", "stored"),
    [
        (1.0, {}, True),
        (0.11, {}, True),
        (0.1, {}, False),  # strictly above the threshold
        (0.0, {}, False),
        (None, {}, False),
        (1.0, {"infra_error": "vm crashed"}, False),
        (1.0, {"error": "reset failed"}, False),
    ],
)
def test_only_trainable_successes_are_stored(
    score: float | None, fields: dict[str, object], stored: bool
) -> None:
    buffer = ReplayBuffer(seed=0)
    assert buffer.add(make_trajectory("t", score, **fields)) is stored
    assert len(buffer) == int(stored)


def test_threshold_is_configurable() -> None:
    buffer = ReplayBuffer(ReplayConfig(success_threshold=0.5), seed=0)
    assert buffer.add_group(make_group("t", [0.4, 0.6, 1.0])) == 2


def test_per_task_fifo_evicts_oldest() -> None:
    buffer = ReplayBuffer(ReplayConfig(capacity_per_task=3, max_bytes=None), seed=0)
    for i in range(5):
        buffer.add(make_trajectory("a", 1.0, f"a{i}"))
    buffer.add(make_trajectory("b", 1.0, "b0"))
    assert stored_names(buffer) == ["a2", "a3", "a4", "b0"]
    assert buffer.task_sizes() == {"a": 3, "b": 1}
    assert buffer.nbytes == 4 * SHOT
    assert buffer.stats()["replay/evicted"] == 2


def test_oldest_policy_evicts_oldest_across_tasks() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_bytes=3 * SHOT, eviction="oldest"), seed=0)
    for name in ("a0", "b0", "a1"):
        buffer.add(make_trajectory(name[0], 1.0, name))
    assert buffer.nbytes == 3 * SHOT
    buffer.add(make_trajectory("c", 1.0, "c0"))
    assert stored_names(buffer) == ["b0", "a1", "c0"]  # a0 was the oldest overall
    buffer.add(make_trajectory("c", 1.0, "c1"))
    assert stored_names(buffer) == ["a1", "c0", "c1"]
    assert buffer.task_sizes() == {"a": 1, "c": 2}
    assert buffer.nbytes == 3 * SHOT


def test_episode_larger_than_budget_is_rejected_without_flushing() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_bytes=SHOT + 10), seed=0)
    buffer.add(make_trajectory("a", 1.0, "a0"))
    big = make_trajectory("b", 1.0, "big", final_screenshot=b"f" * 50)
    assert buffer.add(big) is False
    assert stored_names(buffer) == ["a0"]


def test_token_lists_become_compact_read_only_arrays() -> None:
    extra = {"token_ids": [1, 2, 151_000], "logprobs": [-0.5, -1.0, -2.0], "request": "r1"}
    original = make_trajectory("t", 1.0, extra=extra)
    buffer = ReplayBuffer(seed=0)
    buffer.add(original)
    stored = buffer.state_dict()["entries"][0]["trajectory"]
    token_ids, logprobs = stored.steps[0].extra["token_ids"], stored.steps[0].extra["logprobs"]
    assert token_ids.dtype == np.int32 and token_ids.tolist() == [1, 2, 151_000]
    assert logprobs.dtype == np.float32
    assert not token_ids.flags.writeable
    assert stored.steps[0].extra["request"] == "r1"
    assert buffer.nbytes == SHOT + 3 * 4 + 3 * 4
    assert original.steps[0].extra["token_ids"] == [1, 2, 151_000]  # caller's copy untouched


def test_none_logprobs_left_alone() -> None:
    buffer = ReplayBuffer(seed=0)
    buffer.add(make_trajectory("t", 1.0, extra={"token_ids": (5, 6), "logprobs": None}))
    stored = buffer.state_dict()["entries"][0]["trajectory"]
    assert stored.steps[0].extra["logprobs"] is None
    assert stored.steps[0].extra["token_ids"].tolist() == [5, 6]


# -- injection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "triggered"),
    [
        ([0.0] * 8, True),
        ([0.1] * 4, True),  # std 0, mean 0.1 < 0.2
        ([0.0, 0.1, 0.0, 0.0], True),  # population std 0.0433 (the N-1 std would be 0.05)
        ([0.0, 0.12, 0.0, 0.0], False),  # population std 0.052, mean 0.03
        ([0.0, 1.0, 0.0, 0.0], False),
        ([0.3] * 4, False),  # flat but mean >= 0.2
        ([], False),
    ],
)
def test_trigger_rule(scores: list[float], triggered: bool) -> None:
    assert needs_replay(scores) is triggered


def test_trigger_thresholds_configurable_and_none_counts_as_zero() -> None:
    assert needs_replay([None, None])
    assert not needs_replay([0.0, 0.0], max_mean=0.0)
    assert needs_replay([0.0, 0.2], max_std=0.2, max_mean=0.2)


def test_injection_replaces_first_rollout_with_a_copy() -> None:
    buffer = ReplayBuffer(seed=0)
    buffer.add(make_trajectory("t", 1.0, "success"))
    group = make_group("t", [0.0, 0.0, 0.0, 0.0])
    result = buffer.inject(group)
    assert isinstance(result, Injection) and result.injected
    assert result.replayed == (True, False, False, False)
    new = result.group.trajectories
    assert new[0].instruction == "success" and new[0].score == 1.0 and new[0].rollout == 0
    assert new[1:] == group.trajectories[1:]
    assert [t.instruction for t in group.trajectories] == ["t-r0", "t-r1", "t-r2", "t-r3"]
    assert buffer.stats()["replay/injections"] == 1
    # Mutating the handed-out copy must not touch what is stored.
    new[0].rollout = 99
    new[0].steps.clear()
    assert buffer.sample("t")[0].steps and buffer.sample("t")[0].rollout == 0


def test_no_injection_when_group_has_signal() -> None:
    buffer = ReplayBuffer(seed=0)
    buffer.add(make_trajectory("t", 1.0, "success"))
    group = make_group("t", [0.0, 1.0, 0.0, 0.0])
    state = buffer.state_dict()["rng_state"]
    result = buffer.inject(group)
    assert result.group is group and not result.injected
    assert result.replayed == (False,) * 4
    assert buffer.state_dict()["rng_state"] == state  # no draw consumed
    assert buffer.stats()["replay/injections"] == 0


def test_no_injection_when_task_has_nothing_stored() -> None:
    buffer = ReplayBuffer(seed=0)
    buffer.add(make_trajectory("other", 1.0))
    group = make_group("t", [0.0] * 4)
    result = buffer.inject(group)
    assert result.group is group and not result.injected


def test_draws_are_uniform_with_replacement_from_own_rng() -> None:
    buffer = ReplayBuffer(seed=123)
    for name in ("x", "y"):
        buffer.add(make_trajectory("t", 1.0, name))
    draws = [t.instruction for t in buffer.sample("t", k=200)]
    assert len(draws) == 200
    assert set(draws) == {"x", "y"}
    assert 60 < draws.count("x") < 140
    # The buffer's RNG alone decides, as random.Random(seed).choices would.
    expected = random.Random(123).choices(["x", "y"], k=200)
    assert draws == expected
    random.seed(0)  # global random state plays no part
    other = ReplayBuffer(seed=123)
    for name in ("x", "y"):
        other.add(make_trajectory("t", 1.0, name))
    assert [t.instruction for t in other.sample("t", k=200)] == expected


def test_insertion_after_injection_uses_original_groups() -> None:
    buffer = ReplayBuffer(seed=0)
    buffer.add(make_trajectory("t", 1.0, "old-success"))
    original = make_group("t", [0.0, 0.0])
    injected = buffer.inject(original)
    assert buffer.add_group(original) == 0  # the failures: nothing new stored
    assert injected.injected and len(buffer) == 1


def test_disabled_buffer_is_a_no_op() -> None:
    buffer = ReplayBuffer(ReplayConfig(enabled=False), seed=0)
    assert buffer.add(make_trajectory("t", 1.0)) is False
    assert len(buffer) == 0 and buffer.nbytes == 0
    group = make_group("t", [0.0] * 4)
    assert buffer.inject(group).group is group
    assert buffer.sample("t") == []


def test_invalid_config() -> None:
    with pytest.raises(ValueError):
        ReplayConfig(capacity_per_task=0)
    with pytest.raises(ValueError):
        ReplayConfig(max_bytes=-1)
    with pytest.raises(ValueError, match="eviction"):
        ReplayConfig(eviction="newest")  # type: ignore[arg-type]


# -- persistence ---------------------------------------------------------------------------


def filled_buffer(seed: int = 7) -> ReplayBuffer:
    buffer = ReplayBuffer(ReplayConfig(capacity_per_task=3, max_bytes=10 * SHOT), seed=seed)
    for i in range(12):
        task = "abc"[i % 3]
        buffer.add(make_trajectory(task, 1.0, f"{task}{i}", extra={"token_ids": [i, i + 1]}))
    buffer.sample("a", k=5)  # advance the RNG past its initial state
    buffer.inject(make_group("b", [0.0, 0.0]))
    return buffer


def draws(buffer: ReplayBuffer) -> list[str]:
    names = [t.instruction for task in "abcab" for t in buffer.sample(task, k=3)]
    names += [buffer.inject(make_group("c", [0.0] * 3)).group.trajectories[0].instruction]
    return names


def test_save_load_restores_entries_bytes_and_rng(tmp_path: Path) -> None:
    buffer = filled_buffer()
    path = tmp_path / "replay.pkl"
    buffer.save(path)
    restored = ReplayBuffer(ReplayConfig(capacity_per_task=3, max_bytes=10 * SHOT), seed=999)
    restored.load(path)
    assert stored_names(restored) == stored_names(buffer)
    assert restored.task_sizes() == buffer.task_sizes()
    assert restored.nbytes == buffer.nbytes
    assert restored.stats() == buffer.stats()
    assert draws(restored) == draws(buffer)
    # And the check has teeth: a buffer with its own seed draws differently.
    assert draws(filled_buffer(seed=8)) != draws(filled_buffer())
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_state_dict_round_trip_in_memory() -> None:
    buffer = filled_buffer()
    restored = ReplayBuffer(ReplayConfig(capacity_per_task=3, max_bytes=10 * SHOT))
    restored.load_state_dict(buffer.state_dict())
    restored.add(make_trajectory("d", 1.0, "d0"))
    buffer.add(make_trajectory("d", 1.0, "d0"))
    assert stored_names(restored) == stored_names(buffer)
    assert draws(restored) == draws(buffer)


def test_rng_state_survives_json_style_lists() -> None:
    buffer = filled_buffer()
    state = buffer.state_dict()
    version, internal, gauss = state["rng_state"]
    state["rng_state"] = [version, list(internal), gauss]
    restored = ReplayBuffer(ReplayConfig(capacity_per_task=3, max_bytes=10 * SHOT))
    restored.load_state_dict(state)
    assert draws(restored) == draws(buffer)


def test_load_applies_current_limits() -> None:
    restored = ReplayBuffer(ReplayConfig(capacity_per_task=1, max_bytes=None))
    restored.load_state_dict(filled_buffer().state_dict())
    assert restored.task_sizes() == {"a": 1, "b": 1, "c": 1}


def test_load_rejects_foreign_state() -> None:
    with pytest.raises(ValueError, match="replay buffer state"):
        ReplayBuffer().load_state_dict({"format": "something else", "version": 1})
