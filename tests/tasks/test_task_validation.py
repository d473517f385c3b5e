"""Malformed tasks fail with messages that name the file (or dict) and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tasks_support import (
    DELETE,
    edited,
    make_list_task,
    make_task,
    write_examples,
    write_json,
)

from osworld_gym.errors import OSWorldGymError
from osworld_gym.tasks import TaskFormatError, load_tasks

BASE = make_task("abc")
LIST = make_list_task("abc")
CLOUD = {"type": "cloud_file", "path": "https://h/gold.txt", "dest": "gold.txt"}
LOCAL = {"type": "cloud_file", "local_path": "../assets/gold.txt", "dest": "gold.txt"}

# (task, field named in the message, fragment of the reason)
MALFORMED: dict[str, tuple[dict[str, Any], str, str]] = {
    "id missing": (edited(BASE, "id", DELETE), "id", "required field is missing"),
    "id not a string": (edited(BASE, "id", 3), "id", "expected a non-empty string, got 3"),
    "instruction empty": (edited(BASE, "instruction", " "), "instruction", "non-empty string"),
    "evaluator missing": (edited(BASE, "evaluator", DELETE), "evaluator", "required field"),
    "evaluator not an object": (edited(BASE, "evaluator", []), "evaluator", "an object, got []"),
    "func a number": (
        edited(BASE, "evaluator.func", 3),
        "evaluator.func",
        "expected a string or a list of strings, got 3",
    ),
    "func missing": (edited(BASE, "evaluator.func", DELETE), "evaluator.func", "required"),
    "func not a name": (
        edited(BASE, "evaluator.func", "compare table"),
        "evaluator.func",
        "not a valid metric name",
    ),
    "func empty list": (edited(LIST, "evaluator.func", []), "evaluator.func", "at least one"),
    "func list item": (
        edited(LIST, "evaluator.func", ["exact_match", 3]),
        "evaluator.func[1]",
        "got 3",
    ),
    "infeasible in a list": (
        edited(LIST, "evaluator.func", ["infeasible", "exact_match"]),
        "evaluator.func[0]",
        "must be the whole func",
    ),
    "conj unknown": (edited(LIST, "evaluator.conj", "xor"), "evaluator.conj", '"and" or "or"'),
    "result missing": (
        edited(BASE, "evaluator.result", DELETE),
        "evaluator.result",
        'required unless func is "infeasible"',
    ),
    "result not an object": (edited(BASE, "evaluator.result", "x"), "evaluator.result", "getter"),
    "result without type": (
        edited(BASE, "evaluator.result.type", DELETE),
        "evaluator.result.type",
        "required field is missing",
    ),
    "getter type not a name": (
        edited(BASE, "evaluator.expected.type", "vm file"),
        "evaluator.expected.type",
        "not a valid getter name",
    ),
    "expected null": (edited(BASE, "evaluator.expected", None), "evaluator.expected", "got null"),
    "options a list for one func": (
        edited(BASE, "evaluator.options", [{}]),
        "evaluator.options",
        "a list only when func is a list",
    ),
    "list result not a list": (
        edited(LIST, "evaluator.result", {"type": "vm_file"}),
        "evaluator.result",
        "list of 2 getters",
    ),
    "list result too short": (
        edited(LIST, "evaluator.result", [{"type": "vm_file"}]),
        "evaluator.result",
        "expected 2 entries, one per func, got 1",
    ),
    "list result null entry": (
        edited(LIST, "evaluator.result.1", None),
        "evaluator.result[1]",
        "got null",
    ),
    "list expected too long": (
        edited(LIST, "evaluator.expected", [None, None, None]),
        "evaluator.expected",
        "expected 2 entries",
    ),
    "list expected entry": (
        edited(LIST, "evaluator.expected.0", {"rules": {}}),
        "evaluator.expected[0].type",
        "required",
    ),
    "cloud_file with path and local_path": (
        edited(BASE, "evaluator.expected", {**CLOUD, "local_path": "gold.txt"}),
        "evaluator.expected",
        'exactly one of "path" (a URL) and "local_path"',
    ),
    "cloud_file with neither": (
        edited(BASE, "evaluator.expected", {"type": "cloud_file", "dest": "gold.txt"}),
        "evaluator.expected",
        "exactly one of",
    ),
    "cloud_file without dest": (
        edited(BASE, "evaluator.expected", {"type": "cloud_file", "local_path": "gold.txt"}),
        "evaluator.expected.dest",
        "required field is missing",
    ),
    "cloud_file local_path a URL": (
        edited(BASE, "evaluator.expected", {**LOCAL, "local_path": "https://h/gold.txt"}),
        "evaluator.expected.local_path",
        "expected a host path, got the URL",
    ),
    "cloud_file multi local_path not a list": (
        edited(LIST, "evaluator.expected.1", {**LOCAL, "multi": True, "dest": ["g"]}),
        "evaluator.expected[1].local_path",
        "a non-empty list of non-empty strings",
    ),
    "list options a dict": (edited(LIST, "evaluator.options", {}), "evaluator.options", "list"),
    "list options entry": (edited(LIST, "evaluator.options.1", 3), "evaluator.options[1]", "got 3"),
    "config not a list": (edited(BASE, "config", {}), "config", "list of setup steps"),
    "step not an object": (edited(BASE, "config.0", "sleep 1"), "config[0]", "setup step object"),
    "step type missing": (edited(BASE, "config.0.type", DELETE), "config[0].type", "required"),
    "step type misspelt": (
        edited(BASE, "config.0.type", "exectue"),
        "config[0].type",
        "unknown setup step type 'exectue'; did you mean 'execute'?",
    ),
    "step parameters missing": (
        edited(BASE, "config.1.parameters", DELETE),
        "config[1].parameters",
        "use {} for a step without any",
    ),
    "step stray field": (edited(BASE, "config.0.note", "x"), "config[0].note", "only 'type'"),
    "parameter misspelt": (
        edited(BASE, "config.0.parameters.shel", True),
        "config[0].parameters.shel",
        "unknown parameter; did you mean 'shell'?",
    ),
    "required parameter missing": (
        edited(BASE, "config.0.parameters.command", DELETE),
        "config[0].parameters.command",
        "required parameter is missing",
    ),
    "empty command": (
        edited(BASE, "config.0.parameters.command", []),
        "config[0].parameters.command",
        "non-empty list of strings, got []",
    ),
    "shell written as false string": (
        edited(BASE, "config.0.parameters.shell", "false"),
        "config[0].parameters.shell",
        "OSWorld reads any non-empty string as true",
    ),
    "until with unknown key": (
        edited(BASE, "config.0.parameters.until", {"exit": 0}),
        "config[0].parameters.until.exit",
        "unknown parameter",
    ),
    "sleep negative": (
        edited(BASE, "config.1.parameters.seconds", -1),
        "config[1].parameters.seconds",
        "seconds >= 0",
    ),
    "sleep as text": (
        edited(BASE, "config.1.parameters.seconds", "2"),
        "config[1].parameters.seconds",
        'got "2"',
    ),
    "download file without url": (
        edited(BASE, "config.1", {"type": "download", "parameters": {"files": [{"path": "/a"}]}}),
        "config[1].parameters.files[0].url",
        "required parameter is missing",
    ),
    "postconfig step": (
        edited(BASE, "evaluator.postconfig", [{"type": "slep", "parameters": {}}]),
        "evaluator.postconfig[0].type",
        "did you mean 'sleep'?",
    ),
    # A getter's keys are read only when the task is scored, where a bad one scores 0 (issue 38).
    "getter command an object": (
        edited(BASE, "evaluator.result.command", {"argv": ["ls"]}),
        "evaluator.result.command",
        'a non-empty string or a non-empty list of strings, got {"argv": ["ls"]}',
    ),
    "list getter command an object": (
        edited(LIST, "evaluator.result.0.command", {}),
        "evaluator.result[0].command",
        "got {}",
    ),
    "step command an object": (
        edited(BASE, "config.0.parameters.command", {"argv": ["ls"]}),
        "config[0].parameters.command",
        'got {"argv": ["ls"]}',
    ),
    "getter command missing": (
        edited(BASE, "evaluator.result.command", DELETE),
        "evaluator.result.command",
        "required parameter is missing",
    ),
    "getter shell a number": (
        edited(BASE, "evaluator.result.shell", 1),
        "evaluator.result.shell",
        "expected true or false, got 1",
    ),
    "rule without rules": (
        edited(BASE, "evaluator.expected.rules", DELETE),
        "evaluator.expected.rules",
        "required parameter is missing",
    ),
    "vm_file dest an object": (
        edited(LIST, "evaluator.result.1.dest", {"name": "a.txt"}),
        "evaluator.result[1].dest",
        "expected a non-empty string",
    ),
    "vm_file multi path a string": (
        edited(LIST, "evaluator.result.1.multi", True),
        "evaluator.result[1].path",
        "a non-empty list of non-empty strings",
    ),
    "vm_file gives not indexes": (
        edited(LIST, "evaluator.result.1.gives", ["0"]),
        "evaluator.result[1].gives",
        'a list of integers, got ["0"]',
    ),
    "cloud_file multi a false string": (
        edited(BASE, "evaluator.expected", {**CLOUD, "multi": "false"}),
        "evaluator.expected.multi",
        "OSWorld reads any non-empty string as true",
    ),
    "proxy not a bool": (edited(BASE, "proxy", "yes"), "proxy", 'true or false, got "yes"'),
    "related_apps a string": (edited(BASE, "related_apps", "os"), "related_apps", "list"),
    "source a number": (edited(BASE, "source", 1), "source", "string or a list of strings"),
    "hint not a string": (edited(BASE, "hint", ["x"]), "hint", "expected a string"),
}


@pytest.mark.parametrize(("task", "field", "fragment"), MALFORMED.values(), ids=MALFORMED)
def test_malformed_task_file_names_file_and_field(
    tmp_path: Path, task: dict[str, Any], field: str, fragment: str
) -> None:
    write_json(tmp_path / "examples" / "os" / "abc.json", task)
    with pytest.raises(TaskFormatError) as info:
        load_tasks(tmp_path)
    error = info.value
    assert str(error).startswith(f"examples/os/abc.json: {field}: "), str(error)
    assert fragment in error.reason
    assert (error.origin, error.field) == ("examples/os/abc.json", field)
    assert error.path == tmp_path / "examples" / "os" / "abc.json"
    assert isinstance(error, OSWorldGymError) and isinstance(error, ValueError)


@pytest.mark.parametrize(("task", "field", "fragment"), MALFORMED.values(), ids=MALFORMED)
def test_malformed_task_dict_names_position_and_field(
    task: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(TaskFormatError, match=r"^tasks\[1\]: ") as info:
        load_tasks([make_task("fine"), task])
    assert info.value.field == field
    assert fragment in info.value.reason


def test_valid_variants_are_accepted() -> None:
    variants = [
        edited(BASE, "config", DELETE),  # one OSWorld task has no config
        edited(BASE, "evaluator.expected", {}),  # OSWorld ignores an empty expected
        edited(BASE, "evaluator.expected", DELETE),
        edited(BASE, "config.0.parameters.shell", "true"),  # as in 5 real tasks
        edited(BASE, "source", ["https://a", "https://b"]),
        edited(BASE, "_note", {"anything": [1, 2]}),  # unknown fields stay in raw
        edited(LIST, "evaluator.expected", []),  # OSWorld reads [] as "no expected values"
        edited(LIST, "evaluator.options", DELETE),
        {"id": "x", "instruction": "Give up.", "evaluator": {"func": "infeasible"}},
        edited(BASE, "evaluator.expected", CLOUD),
        edited(BASE, "evaluator.expected", LOCAL),  # a host file beside the task
        edited(
            LIST,
            "evaluator.expected.1",
            {**LOCAL, "multi": True, "local_path": ["a", "b"], "dest": ["a", "b"], "gives": [1]},
        ),
    ]
    tasks = load_tasks([edited(v, "id", f"t{i}") for i, v in enumerate(variants)])
    assert len(tasks) == len(variants)
    assert tasks[5].raw["_note"] == {"anything": [1, 2]}


def test_not_json_data_in_a_dict_is_reported() -> None:
    with pytest.raises(TaskFormatError, match=r"related_apps\[0\]: set is not JSON data"):
        load_tasks(edited(BASE, "related_apps", [{"os"}]))


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "examples" / "os" / "abc.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"id": "abc",\n "instruction": "x" "evaluator": {}}')
    with pytest.raises(TaskFormatError, match=r"^examples/os/abc.json: invalid JSON at line 2"):
        load_tasks(tmp_path)


def test_id_must_match_the_file_name(tmp_path: Path) -> None:
    write_json(tmp_path / "os" / "abd.json", make_task("abc"))
    with pytest.raises(TaskFormatError) as info:
        load_tasks(tmp_path)
    assert str(info.value).startswith('os/abd.json: id: "abc" differs from the file name')


def test_duplicate_ids_across_files_name_both(tmp_path: Path) -> None:
    write_examples(tmp_path, {"chrome": [make_task("same")], "os": [make_task("same")]})
    with pytest.raises(TaskFormatError) as info:
        load_tasks(tmp_path)
    assert str(info.value) == (
        "examples/os/same.json: id: duplicate task id 'same', already used by "
        "examples/chrome/same.json"
    )


def test_duplicate_ids_in_dicts() -> None:
    with pytest.raises(
        TaskFormatError, match=r"^tasks\[2\]: id: duplicate task id 'a'.*tasks\[0\]"
    ):
        load_tasks([make_task("a"), make_task("b"), make_task("a")])


def test_collect_returns_good_tasks_and_problems(tmp_path: Path) -> None:
    write_examples(
        tmp_path,
        {
            "chrome": [make_task("good-1"), make_task("dup")],
            "os": [edited(BASE, "evaluator.func", 3), make_task("good-2"), make_task("dup")],
        },
    )
    (tmp_path / "examples" / "os" / "broken.json").write_text("{")
    tasks = load_tasks(tmp_path, errors="collect")
    assert tasks.ids == ("dup", "good-1", "good-2")
    assert [p.path for p in tasks.problems] == [
        "examples/os/abc.json",
        "examples/os/broken.json",
        "examples/os/dup.json",
    ]
    path, message = tasks.problems[0]  # (path, message) pairs
    assert message == (
        "examples/os/abc.json: evaluator.func: expected a string or a list of strings, got 3"
    )
    assert "invalid JSON" in tasks.problems[1].message
    assert "duplicate task id 'dup'" in tasks.problems[2].message


def test_collect_with_dicts() -> None:
    tasks = load_tasks([make_task("a"), {"id": "b"}], errors="collect")
    assert tasks.ids == ("a",)
    assert tasks.problems[0] == ("tasks[1]", "tasks[1]: instruction: required field is missing")


def test_errors_argument_is_checked() -> None:
    with pytest.raises(ValueError, match="'raise' or 'collect'"):
        load_tasks([], errors="ignore")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ({"os": ["abc", "zzz"]}, "test_x.json: os[1]: no task file examples/os/zzz.json"),
        ({"os": ["abc", "abc"]}, "test_x.json: os[1]: task id 'abc' is listed twice (also at "),
        ({"os": ["abc", 7]}, "test_x.json: os[1]: expected a task id (a non-empty string), got 7"),
        ({"os": ["abc"], "chrome": "abc"}, "test_x.json: chrome: expected a list of task ids, got"),
    ],
)
def test_malformed_index_names_index_and_entry(
    tmp_path: Path, index: dict[str, Any], message: str
) -> None:
    write_examples(tmp_path, {"os": [make_task("abc")]})
    write_json(tmp_path / "test_x.json", index)
    with pytest.raises(TaskFormatError) as info:
        load_tasks(tmp_path / "test_x.json")
    assert str(info.value).startswith(message)
    collected = load_tasks(tmp_path / "test_x.json", errors="collect")
    assert collected.ids == ("abc",) and len(collected.problems) == 1


def test_index_dict_passed_in_memory_is_explained() -> None:
    with pytest.raises(TaskFormatError, match="looks like an index .*pass the index file's path"):
        load_tasks({"os": ["abc"]})


def test_message_shows_values_as_short_json() -> None:
    with pytest.raises(TaskFormatError) as info:
        load_tasks(edited(BASE, "evaluator.options", [{"type": "x" * 500}]))
    assert len(str(info.value)) < 200
    assert '[{"type": "xxx' in str(info.value)
    with pytest.raises(TaskFormatError, match="got null"):
        load_tasks(edited(BASE, "id", None))
