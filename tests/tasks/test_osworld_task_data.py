"""Every real OSWorld task loads, and the loaded data agrees with the spec's statistics."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks

from osworld_gym.tasks import GetterSpec, Task, TaskSet, load_tasks

pytestmark = needs_osworld_tasks

UBUNTU_DOMAINS = {
    "chrome": 46,
    "gimp": 26,
    "libreoffice_calc": 47,
    "libreoffice_impress": 47,
    "libreoffice_writer": 23,
    "multi_apps": 101,
    "os": 24,
    "thunderbird": 15,
    "vlc": 17,
    "vs_code": 23,
}
WINDOWS_DOMAINS = {"excel": 11, "multi_app": 22, "ppt": 7, "word": 9}
INFEASIBLE_PER_DOMAIN = {
    "chrome": 3,
    "gimp": 10,
    "libreoffice_calc": 1,
    "libreoffice_writer": 1,
    "multi_apps": 1,
    "os": 5,
    "thunderbird": 1,
    "vlc": 2,
    "vs_code": 5,
}


def _task_files(folder: str) -> list[Path]:
    return sorted((OSWORLD_TASKS / folder).glob("*/*.json"))


@pytest.fixture(scope="module")
def ubuntu() -> TaskSet:
    return load_tasks(OSWORLD_TASKS)


@pytest.fixture(scope="module")
def windows() -> TaskSet:
    return load_tasks(OSWORLD_TASKS / "examples_windows")


@pytest.mark.parametrize(
    "path",
    _task_files("examples") + _task_files("examples_windows"),
    ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.stem[:8]}",
)
def test_every_task_file_loads_and_round_trips(path: Path) -> None:
    original = json.loads(path.read_text(encoding="utf-8"))
    (task,) = load_tasks(path)
    assert task.id == path.stem == original["id"]
    assert task.domain == path.parent.name
    assert task.instruction == original["instruction"]
    assert task.to_dict() == original
    assert json.dumps(task.raw) == json.dumps(original)  # same keys, same order
    assert task.path == path.resolve()


def test_ubuntu_folder_counts_per_domain(ubuntu: TaskSet) -> None:
    assert len(ubuntu) == 369
    assert ubuntu.domain_counts() == UBUNTU_DOMAINS
    assert ubuntu.domains == tuple(sorted(UBUNTU_DOMAINS))


def test_test_all_index_loads_the_same_tasks(ubuntu: TaskSet) -> None:
    indexed = load_tasks(OSWORLD_TASKS / "test_all.json")
    index = json.loads((OSWORLD_TASKS / "test_all.json").read_text())
    assert indexed.ids == tuple(i for ids in index.values() for i in ids)  # index order
    assert {t.id: t for t in indexed} == {t.id: t for t in ubuntu}
    assert indexed.domain_counts() == UBUNTU_DOMAINS


@pytest.mark.parametrize(
    ("index", "count"),
    [("test_small.json", 39), ("test_nogdrive.json", 361), ("test_infeasible.json", 28)],
)
def test_other_index_files(index: str, count: int) -> None:
    assert len(load_tasks(OSWORLD_TASKS / index)) == count


def test_windows_tasks_load_from_their_own_folder(windows: TaskSet, ubuntu: TaskSet) -> None:
    assert len(windows) == 49
    assert windows.domain_counts() == WINDOWS_DOMAINS
    # They reuse Ubuntu ids, which is why a folder load reads examples/ only.
    assert set(windows.ids) <= set(ubuntu.ids)


def test_infeasible_tasks(ubuntu: TaskSet) -> None:
    infeasible = ubuntu.filter(infeasible=True)
    assert len(infeasible) == 29
    assert infeasible.domain_counts() == INFEASIBLE_PER_DOMAIN
    listed = load_tasks(OSWORLD_TASKS / "test_infeasible.json")
    assert set(infeasible.ids) - set(listed.ids) == {"480bcfea-d68f-4aaa-a0a9-2589ef319381"}
    for task in infeasible:
        assert task.evaluator.funcs == ("infeasible",)
        assert task.evaluator.checks == ()
        assert task.needs.infeasible and not task.needs.metrics and not task.needs.getters


def test_list_func_tasks_have_parallel_tuples(ubuntu: TaskSet) -> None:
    listed = [t for t in ubuntu if t.evaluator.is_list]
    assert len(listed) == 51
    assert Counter(t.evaluator.conj for t in listed) == {"and": 26, "or": 25}
    for task in listed:
        spec = task.evaluator
        assert len(spec.funcs) == len(spec.results) == len(spec.expected) == len(spec.options)
        assert all(isinstance(r, GetterSpec) for r in spec.results)
        raw = task.raw["evaluator"]
        assert list(spec.funcs) == raw["func"]
        assert [r.config for r in spec.results] == raw["result"]


def test_single_func_tasks_have_one_slot(ubuntu: TaskSet) -> None:
    for task in ubuntu:
        spec = task.evaluator
        if not spec.is_list and not spec.infeasible:
            raw = task.raw["evaluator"]
            assert spec.funcs == (raw["func"],)
            assert spec.results[0] is not None and spec.results[0].config == raw["result"]
            assert spec.options[0] == raw.get("options", {})


def test_needs_match_the_spec_statistics(ubuntu: TaskSet) -> None:
    metric_uses = Counter(c.func for t in ubuntu for c in t.evaluator.checks)
    getter_uses = Counter(g.type for t in ubuntu for g in t.evaluator.getters())
    # docs/design/evaluators.md#metrics counts infeasible as a metric
    assert sum(metric_uses.values()) + 29 == 438
    assert len(set().union(*(t.needs.metrics for t in ubuntu))) + 1 == 111
    # docs/design/evaluators.md#getters
    assert sum(getter_uses.values()) == 809 and len(getter_uses) == 47
    assert metric_uses["compare_table"] == 62 and getter_uses["vm_file"] == 261
    config = Counter(s.type for t in ubuntu for s in t.config)
    post = Counter(s.type for t in ubuntu for s in t.evaluator.postconfig)
    # docs/design/task-format.md#setup-steps
    assert (config["download"], post["download"]) == (278, 16)
    assert (config["execute"], post["execute"]) == (154, 204)
    assert (config["sleep"], post["sleep"]) == (14, 294)
    # docs/design/task-format.md#task-statistics
    assert sum("download" in t.needs.setup_steps for t in ubuntu) == 264


def test_top_level_flags_and_stray_fields(ubuntu: TaskSet) -> None:
    assert sum(t.proxy for t in ubuntu) == 52
    fixed = {t.id for t in ubuntu if t.fixed_ip}
    assert len(fixed) == 8
    assert set(ubuntu.ids) - set(load_tasks(OSWORLD_TASKS / "test_nogdrive.json").ids) == fixed
    assert Counter(t.possibility_of_env_change for t in ubuntu) == {
        "low": 363,
        "medium": 4,
        "high": 2,
    }
    assert sum(t.hint is not None for t in ubuntu) == 4
    assert sum("env_may_change" in t.raw for t in ubuntu) == 1
    assert sum("_config_note" in t.raw["evaluator"] for t in ubuntu) == 1
    assert sum(isinstance(t.source, tuple) for t in ubuntu) == 1


def test_shell_written_as_a_string_is_accepted(ubuntu: TaskSet) -> None:
    # OSWorld's guest tests the value for truth, so "true" means true; 4 tasks write it.
    steps = {
        (t.id, i)
        for t in ubuntu
        for i, s in enumerate(t.config + t.evaluator.postconfig)
        if s.parameters.get("shell") == "true"
    }
    assert len(steps) == 5 and len({task_id for task_id, _ in steps}) == 4


def test_domain_and_ids_filters_on_real_data(ubuntu: TaskSet) -> None:
    os_tasks = load_tasks(OSWORLD_TASKS, domain="os")
    assert len(os_tasks) == 24 and os_tasks.domains == ("os",)
    picked = [ubuntu[5].id, ubuntu[0].id]
    assert load_tasks(OSWORLD_TASKS / "test_all.json", ids=picked).ids == tuple(picked)
    assert isinstance(ubuntu[picked[0]], Task)
