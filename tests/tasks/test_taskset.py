"""TaskSet: lookup by id with suggestions, slicing, filtering, seeded sampling."""

from __future__ import annotations

import random

import numpy as np
import pytest
from tasks_support import make_task

from osworld_gym.errors import OSWorldGymError
from osworld_gym.tasks import Task, TaskFormatError, TaskSet, UnknownTaskError, load_tasks

IDS = [
    "0a0faba3-5580-44df-965d-f562a99b291c",
    "0b17a146-2934-46c7-8727-73ff6b6483e8",
    "1f18aa87-af6f-41ef-9853-cdb8f32ebdea",
    "2373b66a-092d-44cb-bfd7-82e86e7a3b4d",
    "bedcedc4-4d72-425e-ad62-21960b11fe0d",
]


@pytest.fixture()
def tasks() -> TaskSet:
    data = [make_task(i) for i in IDS]
    data[2]["evaluator"] = {"func": "infeasible"}
    return load_tasks(data)


def test_sequence_and_lookup(tasks: TaskSet) -> None:
    assert len(tasks) == 5 and tasks.ids == tuple(IDS)
    assert tasks[0].id == IDS[0] and tasks[-1].id == IDS[-1]
    assert tasks[IDS[3]] is tasks[3]
    assert isinstance(tasks[1:3], TaskSet) and tasks[1:3].ids == tuple(IDS[1:3])
    assert IDS[0] in tasks and tasks[0] in tasks and "nope" not in tasks
    assert tasks.get("nope") is None and tasks.get(IDS[1]) is tasks[1]
    assert list(tasks) == [tasks[i] for i in range(5)]
    assert tasks.index(tasks[2]) == 2
    assert repr(tasks) == "TaskSet(5 tasks; domains: none)"


def test_unknown_id_suggests_close_matches(tasks: TaskSet) -> None:
    typo = IDS[3].replace("092d", "029d")
    with pytest.raises(UnknownTaskError) as info:
        tasks[typo]
    error = info.value
    assert isinstance(error, KeyError) and isinstance(error, OSWorldGymError)
    assert error.suggestions[0] == IDS[3]
    assert str(error) == (
        f"unknown task id {typo!r}; did you mean {IDS[3]!r}?; available: " + ", ".join(IDS)
    )


def test_abbreviated_id_suggests_the_full_one(tasks: TaskSet) -> None:
    with pytest.raises(UnknownTaskError) as info:
        tasks["2373b66a"]
    assert info.value.suggestions == (IDS[3],)


def test_many_choices_are_counted_not_listed() -> None:
    many = load_tasks([make_task(f"task-{i}") for i in range(20)])
    with pytest.raises(UnknownTaskError) as info:
        many["task-x"]
    assert "20 task ids available" in str(info.value)


def test_filter(tasks: TaskSet) -> None:
    assert tasks.filter(infeasible=True).ids == (IDS[2],)
    assert len(tasks.filter(infeasible=False)) == 4
    assert tasks.filter(lambda t: t.id.startswith("0")).ids == tuple(IDS[:2])
    assert tasks.filter(ids=[IDS[4], IDS[0]]).ids == (IDS[4], IDS[0])
    with pytest.raises(UnknownTaskError):
        tasks.filter(ids=["missing"])


@pytest.mark.parametrize(
    "make_rng", [np.random.default_rng, random.Random], ids=["numpy", "random"]
)
def test_seeded_sampling_is_reproducible(tasks: TaskSet, make_rng) -> None:
    first = [tasks.sample(make_rng(7)).id for _ in range(3)]
    assert len(set(first)) == 1  # same seed, same task
    rng_a, rng_b = make_rng(123), make_rng(123)
    draws_a = [tasks.sample(rng_a).id for _ in range(50)]
    draws_b = [tasks.sample(rng_b).id for _ in range(50)]
    assert draws_a == draws_b and set(draws_a) == set(IDS)  # reproducible and covering
    order = tasks.shuffled(make_rng(5))
    assert order == tasks.shuffled(make_rng(5)) and sorted(order.ids) == sorted(IDS)
    assert order != tasks.shuffled(make_rng(6)) or order != tasks


def test_sampling_needs_an_owned_rng(tasks: TaskSet) -> None:
    with pytest.raises(TypeError, match="numpy.random.Generator .* random.Random"):
        tasks.sample(None)
    with pytest.raises(TypeError):
        tasks.sample(np.random.RandomState(0))
    with pytest.raises(ValueError, match="empty TaskSet"):
        TaskSet().sample(random.Random(0))


def test_constructor_rejects_duplicate_ids(tasks: TaskSet) -> None:
    with pytest.raises(TaskFormatError, match="duplicate task id"):
        TaskSet([tasks[0], tasks[1], tasks[0]])


def test_equality_and_hash(tasks: TaskSet) -> None:
    again = load_tasks([t.to_dict() for t in tasks])
    assert again == tasks and hash(again) == hash(tasks)
    assert tasks != tasks[:2] and tasks != list(tasks)


def test_domains_and_counts() -> None:
    tasks = TaskSet(
        Task.from_dict(make_task(f"t{i}"), domain=d) for i, d in enumerate(["b", "a", "b"])
    )
    assert tasks.domains == ("b", "a")
    assert tasks.domain_counts() == {"b": 2, "a": 1}
    assert tasks.filter(domain="b").ids == ("t0", "t2")
