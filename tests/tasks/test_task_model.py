"""Task objects: deep immutability, OSWorld's evaluator shapes, ``needs`` and round trips."""

from __future__ import annotations

import copy
import dataclasses
import doctest
import json
import pickle

import pytest
from tasks_support import DELETE, edited, make_list_task, make_task

import osworld_gym.tasks as tasks_package
from osworld_gym.tasks import (
    EvaluatorSpec,
    FrozenDict,
    FrozenList,
    GetterSpec,
    SetupStep,
    Task,
    TaskFormatError,
    freeze,
    frozen,
    load_tasks,
    placeholders,
    schema,
    thaw,
)


def _task(data: dict) -> Task:
    (task,) = load_tasks(data)
    return task


# --- frozen data ---------------------------------------------------------------------------


def test_frozen_values_behave_like_json() -> None:
    data = {"a": [1, {"b": None}], "c": "x"}
    value = freeze(data)
    assert isinstance(value, dict) and isinstance(value["a"], list)
    assert isinstance(value, FrozenDict) and isinstance(value["a"][1], FrozenDict)
    assert value == data and json.dumps(value) == json.dumps(data)
    assert hash(value) == hash(freeze(copy.deepcopy(data)))
    assert pickle.loads(pickle.dumps(value)) == data
    assert isinstance(pickle.loads(pickle.dumps(value))["a"], FrozenList)
    assert copy.deepcopy(value) is value
    assert thaw(value) == data and type(thaw(value)["a"]) is list
    assert value["a"] + [2] == [1, {"b": None}, 2]  # a sum is a new, plain list


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.__setitem__("c", 1),
        lambda d: d.pop("c"),
        lambda d: d.update(c=1),
        lambda d: d.setdefault("z", 1),
        lambda d: d.clear(),
        lambda d: d.__delitem__("c"),
        lambda d: d["a"].append(2),
        lambda d: d["a"].__setitem__(0, 2),
        lambda d: d["a"].sort(),
        lambda d: d["a"].extend([1]),
        lambda d: d["a"][1].__setitem__("b", 1),
    ],
)
def test_frozen_values_refuse_mutation(mutate) -> None:
    value = freeze({"a": [1, {"b": None}], "c": "x"})
    with pytest.raises(TypeError, match="immutable .*thaw"):
        mutate(value)
    assert value == {"a": [1, {"b": None}], "c": "x"}


def test_task_objects_are_frozen_dataclasses() -> None:
    task = _task(make_task("a"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.id = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        task.config[0].parameters["command"].append("x")
    assert isinstance(task.config, tuple) and isinstance(task.related_apps, tuple)
    assert hash(task) == hash(_task(make_task("a")))
    assert pickle.loads(pickle.dumps(task)) == task


def test_raw_keeps_the_original_verbatim() -> None:
    data = make_task("a", _config_note="kept", env_may_change=True)
    data["evaluator"]["_note"] = [1, 2]
    task = _task(data)
    assert task.raw == data and task.to_dict() == data
    assert json.dumps(task.raw) == json.dumps(data)
    task.to_dict()["id"] = "changed"  # a fresh, mutable copy
    assert task.raw["id"] == "a"
    data["id"] = "mutated after loading"
    assert task.id == task.raw["id"] == "a"


# --- evaluator semantics -------------------------------------------------------------------


def test_single_func_becomes_one_slot() -> None:
    spec = _task(make_task("a")).evaluator
    assert spec.funcs == ("exact_match",) and spec.is_list is False and spec.conj == "and"
    assert spec.results == (
        GetterSpec("vm_command_line", freeze({"command": "echo hi", "shell": True})),
    )
    assert spec.results[0].config == {
        "type": "vm_command_line",
        "command": "echo hi",
        "shell": True,
    }
    assert spec.results[0].to_dict() == spec.results[0].config
    assert spec.expected[0] is not None and spec.expected[0].params["rules"] == {"expected": "hi\n"}
    assert spec.options == ({},)
    assert not spec.infeasible


def test_list_func_becomes_parallel_tuples() -> None:
    spec = _task(make_list_task("a")).evaluator
    assert spec.funcs == ("check_include_exclude", "exact_match") and spec.is_list
    assert spec.conj == "or"
    assert [r.type for r in spec.results] == ["vm_command_line", "vm_file"]
    assert spec.expected[0] is not None and spec.expected[1] is None  # null stays None
    assert spec.options == ({}, {})  # null becomes {}, as OSWorld's `opt if opt else {}`
    (first, second) = spec.checks
    assert (first.func, first.result, first.expected) == (
        "check_include_exclude",
        spec.results[0],
        spec.expected[0],
    )
    assert second.expected is None and second.options == {}


def test_list_defaults() -> None:
    data = make_list_task("a")
    for key in ("conj", "expected", "options"):
        data = edited(data, f"evaluator.{key}", DELETE)
    spec = _task(data).evaluator
    assert spec.conj == "and"  # OSWorld's default
    assert spec.expected == (None, None) and spec.options == ({}, {})
    one = _task(
        make_list_task(
            "b",
            func=["exact_match"],
            result=[{"type": "rule", "rules": {}}],
            expected=[],
            options=[],
        )
    ).evaluator
    assert one.is_list and one.funcs == ("exact_match",) and one.expected == (None,)


def test_empty_expected_object_means_none() -> None:
    spec = _task(edited(make_task("a"), "evaluator.expected", {})).evaluator
    assert spec.expected == (None,)


def test_infeasible_task() -> None:
    task = _task(
        {"id": "x", "instruction": "Do the impossible.", "evaluator": {"func": "infeasible"}}
    )
    assert task.infeasible and task.evaluator.infeasible
    assert task.evaluator.funcs == ("infeasible",) and task.evaluator.checks == ()
    assert task.evaluator.results == (None,) and task.evaluator.options == ({},)
    assert task.config == () and task.snapshot == "" and task.possibility_of_env_change is None


def test_postconfig_steps() -> None:
    data = edited(
        make_task("a"),
        "evaluator.postconfig",
        [
            {"type": "activate_window", "parameters": {"window_name": "x.xlsx", "strict": True}},
            {"type": "sleep", "parameters": {"seconds": 1}},
        ],
    )
    spec = _task(data).evaluator
    assert [s.type for s in spec.postconfig] == ["activate_window", "sleep"]
    assert spec.postconfig[0].to_dict() == data["evaluator"]["postconfig"][0]
    assert spec.postconfig[0] == SetupStep(
        "activate_window", freeze({"window_name": "x.xlsx", "strict": True})
    )


# --- needs ---------------------------------------------------------------------------------


def test_needs_summarises_steps_getters_metrics_and_urls() -> None:
    data = make_list_task("a")
    data["config"].append(
        {
            "type": "download",
            "parameters": {"files": [{"url": "https://hf.co/a.xlsx", "path": "/home/user/a.xlsx"}]},
        }
    )
    data["evaluator"]["expected"][1] = {
        "type": "cloud_file",
        "path": ["https://hf.co/b", "https://hf.co/c"],
        "dest": ["b", "c"],
        "multi": True,
    }
    data["evaluator"]["postconfig"] = [{"type": "close_window", "parameters": {"window_name": "x"}}]
    data["proxy"] = True
    needs = _task(data).needs
    assert needs.setup_steps == {"execute", "sleep", "download", "close_window"}
    assert needs.getters == {"vm_command_line", "vm_file", "rule", "cloud_file"}
    assert needs.metrics == {"check_include_exclude", "exact_match"}
    assert needs.urls == {"https://hf.co/a.xlsx", "https://hf.co/b", "https://hf.co/c"}
    assert needs.proxy and not needs.fixed_ip and not needs.infeasible


# --- constructors, repr, docs --------------------------------------------------------------


def test_from_dict_names_its_origin() -> None:
    with pytest.raises(TaskFormatError, match=r"^mine: evaluator: required field is missing"):
        Task.from_dict(edited(make_task("a"), "evaluator", DELETE), origin="mine")
    assert Task.from_dict(make_task("a"), domain="os").domain == "os"


def test_repr_is_short() -> None:
    task = _task(make_task("a", instruction="x" * 200))
    assert repr(task).startswith("Task(id='a', domain=None, instruction='xxx")
    assert len(repr(task)) < 120


def test_evaluator_spec_defaults() -> None:
    spec = EvaluatorSpec(("infeasible",))
    assert spec.infeasible and spec.conj == "and" and spec.postconfig == ()


@pytest.mark.parametrize("module", [tasks_package, frozen, placeholders, schema])
def test_docstring_examples(module) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
