"""Bad task files of any shape fail at load time with a TaskFormatError naming the file (issue 38).

Two reports started this: a getter ``command`` given as an object loaded and then scored a
silent 0.0, and a task file nested 900 levels deep raised a bare ``RecursionError`` naming no
file, in ``errors="collect"`` mode too, so that one file kept a whole folder from loading. The
properties below replace one value anywhere in real task files (OSWorld's, and the bundled
suites') with a value of another JSON type, or bury it deep in arrays and objects: loading
either succeeds, and what loaded can be used, or raises TaskFormatError naming the file; never
anything else.
"""

from __future__ import annotations

import json
import pickle
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from osworld_data import needs_osworld_tasks, task_files
from tasks_support import edited, make_list_task, make_task, write_examples, write_json

from osworld_gym.evaluation.getters import GETTERS
from osworld_gym.tasks import GETTER_TYPES, TaskFormatError, TaskSet, load_tasks
from osworld_gym.tasks.answer_keys import answer_key_leaks
from osworld_gym.tasks.frozen import MAX_DEPTH, too_deep
from osworld_gym.tasks.requirements import task_requirements

BASE = make_task("abc")
BUNDLED = Path(__file__).resolve().parents[2] / "envs"
BUNDLED_FILES = sorted(BUNDLED.glob("*/examples/*/*.json"))
REAL_FILES = task_files("examples/*/*.json") + task_files("examples_windows/*/*.json")

FUZZ = settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,  # the same examples every run: a CI failure reproduces locally
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def nested(levels: int, inner: str = "1") -> str:
    """JSON text of ``inner`` inside ``levels`` arrays (``json.dumps`` itself would recurse)."""
    return "[" * levels + inner + "]" * levels


def deep_task_text(levels: int) -> str:
    """A valid task but for an extra field nested ``levels`` deep."""
    text = json.dumps(edited(BASE, "_note", "HERE"))
    return text.replace('"HERE"', nested(levels))


# --- the reported cases ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "field"),
    [
        (edited(BASE, "evaluator.result.command", {"cmd": "ls"}), "evaluator.result.command"),
        (
            edited(make_list_task("abc"), "evaluator.result.0.command", {"cmd": "ls"}),
            "evaluator.result[0].command",
        ),
        (
            edited(BASE, "config.0.parameters.command", {"cmd": "ls"}),
            "config[0].parameters.command",
        ),
        (
            edited(BASE, "config.0", {"type": "command", "parameters": {"command": {}}}),
            "config[0].parameters.command",
        ),
        (
            edited(
                BASE, "evaluator.postconfig", [{"type": "execute", "parameters": {"command": {}}}]
            ),
            "evaluator.postconfig[0].parameters.command",
        ),
    ],
    ids=["getter", "list getter", "execute step", "command step", "postconfig step"],
)
def test_command_given_as_an_object_is_refused_at_load(
    tmp_path: Path, task: dict[str, Any], field: str
) -> None:
    path = write_json(tmp_path / "abc.json", task)
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    assert info.value.path == path and info.value.field == field
    assert str(info.value).startswith(f"{path}: {field}: expected a non-empty string or ")


@pytest.mark.parametrize("levels", [MAX_DEPTH, 900, 100_000])
def test_deep_nesting_names_the_file(tmp_path: Path, levels: int) -> None:
    path = tmp_path / "abc.json"
    path.write_text(deep_task_text(levels), encoding="utf-8")
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    assert info.value.path == path
    assert str(info.value).startswith(f"{path}: ")
    assert f"nested more than {MAX_DEPTH} levels deep" in info.value.reason
    if levels < 10_000:  # deeper still, json's own parser gives up first: no field then
        assert info.value.field == "_note[0][0]..."


def test_nesting_up_to_the_limit_loads(tmp_path: Path) -> None:
    path = tmp_path / "abc.json"
    path.write_text(deep_task_text(MAX_DEPTH - 1), encoding="utf-8")  # the task object is one
    (task,) = load_tasks(path)
    assert too_deep(task.raw) is None and too_deep(task.raw, MAX_DEPTH - 1) is not None


def test_collect_skips_bad_files_and_loads_the_rest(tmp_path: Path) -> None:
    write_examples(
        tmp_path,
        {
            "os": [
                make_task("good-1"),
                edited(BASE, "evaluator.result.command", {"cmd": "ls"}),
                make_task("good-2"),
            ],
            "chrome": [make_task("good-3")],
        },
    )
    (tmp_path / "examples" / "os" / "deep.json").write_text(deep_task_text(900))
    (tmp_path / "examples" / "os" / "deeper.json").write_text(deep_task_text(100_000))
    (tmp_path / "examples" / "os" / "huge.json").write_text('{"id": ' + "9" * 5000 + "}")
    with pytest.raises(TaskFormatError, match=r"^examples/os/abc.json: evaluator.result.command"):
        load_tasks(tmp_path)
    tasks = load_tasks(tmp_path, errors="collect")
    assert tasks.ids == ("good-3", "good-1", "good-2")
    assert [p.path for p in tasks.problems] == [
        "examples/os/abc.json",
        "examples/os/deep.json",
        "examples/os/deeper.json",
        "examples/os/huge.json",
    ]
    for path, message in tasks.problems:
        assert message.startswith(f"{path}: ")
    assert "nested more than" in tasks.problems[1].message
    assert "nested more than" in tasks.problems[2].message
    assert "invalid JSON" in tasks.problems[3].message


def test_deep_or_cyclic_dicts_are_refused() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(TaskFormatError, match=r"^tasks\[1\]: hint.a.a...: nested more than"):
        load_tasks([make_task("fine"), edited(BASE, "hint", deep)])
    cyclic = make_task("abc")
    cyclic["evaluator"]["options"] = {"self": cyclic}
    collected = load_tasks([make_task("fine"), cyclic], errors="collect")
    assert collected.ids == ("fine",)
    assert collected.problems[0].message.startswith("tasks[1]: evaluator.options.self...: nested")


# --- getter configs --------------------------------------------------------------------------

# (getter config, field named in the message, fragment of the reason)
GETTER_CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    "url_dashPart json without key": (
        {"type": "url_dashPart", "partIndex": -2, "returnType": "json"},
        "evaluator.result.key",
        'required when returnType is "json"',
    ),
    "url_dashPart returnType unknown": (
        {"type": "url_dashPart", "partIndex": 1, "returnType": "xml"},
        "evaluator.result.returnType",
        'expected "string" or "json", got "xml"',
    ),
    "url_dashPart partIndex not a number": (
        {"type": "url_dashPart", "partIndex": "two", "returnType": "string"},
        "evaluator.result.partIndex",
        "an integer (or a string holding one)",
    ),
    "parse_keys a string": (
        {"type": "active_tab_url_parse", "parse_keys": "q"},
        "evaluator.result.parse_keys",
        "a list of strings",
    ),
    "rule_relativeTime without from": (
        {"type": "rule_relativeTime", "rules": {"relativeTime": {}, "expected": {}}},
        "evaluator.result.rules.relativeTime.from",
        "required parameter is missing",
    ),
    "html_parse object of lists": (
        {"type": "active_tab_html_parse", "category": "class", "class_singleObject": {"a": []}},
        "evaluator.result.class_singleObject.a",
        "expected a string, got []",
    ),
    "slide_index a list": (
        {"type": "audio_in_slide", "ppt_file_path": "/a.pptx", "slide_index": [0], "dest": "a"},
        "evaluator.result.slide_index",
        "got [0]",
    ),
    "info_from_website infos not objects": (
        {"type": "info_from_website", "url": "https://a", "infos": ["#id"]},
        "evaluator.result.infos[0]",
        'expected an object, got "#id"',
    ),
    "vscode_config dest missing": (
        {"type": "vscode_config", "vscode_extension_command": "x", "path": "/p"},
        "evaluator.result.dest",
        "required parameter is missing",
    ),
}


@pytest.mark.parametrize(("getter", "field", "fragment"), GETTER_CASES.values(), ids=GETTER_CASES)
def test_malformed_getter_configs(getter: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(TaskFormatError) as info:
        load_tasks(edited(BASE, "evaluator.result", getter))
    assert (info.value.field, info.value.origin) == (field, "<dict>")
    assert fragment in info.value.reason


def test_getter_configs_with_extra_keys_and_osworld_spellings_load() -> None:
    getters = [
        {"type": "vm_command_line", "command": ["ls"], "shell": "true", "note": "kept"},
        {"type": "vm_file", "path": ["/a", "/b"], "dest": ["a", "b"], "multi": "true"},
        {"type": "url_dashPart", "partIndex": "-2", "returnType": "string"},
        {"type": "googledrive_file", "settings_file": "s.yml", "path_list": [["a"]]},
        {"type": "rule", "rules": [{"include": ["a"]}]},
    ]
    tasks = load_tasks(
        [edited(BASE, "evaluator.result", g) | {"id": f"t{i}"} for i, g in enumerate(getters)]
    )
    assert len(tasks) == len(getters)


def test_checked_getter_types_are_getters_this_package_has() -> None:
    assert set(GETTER_TYPES) <= set(GETTERS)


# --- properties over real task files ---------------------------------------------------------

SENTINEL = "\x00osworld-gym-sentinel\x00"

SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "number": st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    "string": st.text(max_size=12),
}
JSON_VALUES = st.recursive(
    st.one_of(*SCALARS.values()),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    **SCALARS,
    "array": st.lists(JSON_VALUES, max_size=3),
    "object": st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3),
}
"""Values of each JSON type (OSWorld's files hold nothing else: no NaN, no infinities)."""


def json_type(value: Any) -> str:
    """The JSON type of a value: null, boolean, number, string, array or object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def positions(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value in a JSON document, the document itself included."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += positions(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += positions(item, (*path, index))
    return found


def value_at(document: Any, path: tuple[Any, ...]) -> Any:
    """The value at ``path`` in ``document``."""
    node = document
    for key in path:
        node = node[key]
    return node


def replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of ``document`` with the value at ``path`` replaced (the whole one for ``()``)."""
    if not path:
        return value
    result = json.loads(json.dumps(document))
    value_at(result, path[:-1])[path[-1]] = value
    return result


@st.composite
def mutated_files(draw: st.DrawFn, files: list[Path]) -> tuple[Path, str]:
    """A task file and its text with one value replaced by another type, or nested deeply."""
    source = draw(st.sampled_from(files))
    document = json.loads(source.read_text(encoding="utf-8"))
    path = draw(st.sampled_from(positions(document)))
    original = value_at(document, path)
    if draw(st.booleans()):
        other = draw(st.sampled_from(sorted(set(BY_TYPE) - {json_type(original)})))
        value = draw(BY_TYPE[other])
        return source, json.dumps(replaced(document, path, value))
    # The original value under many levels of arrays or objects, up to past json's own limit.
    levels = draw(st.sampled_from([MAX_DEPTH - 5, MAX_DEPTH, 900, 2000, 50_000]))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"k": ', "}")]))
    text = json.dumps(replaced(document, path, SENTINEL))
    deep = opener * levels + json.dumps(original) + closer * levels
    return source, text.replace(json.dumps(SENTINEL), deep)


def use(tasks: TaskSet) -> None:
    """What reports, envs and pools do with loaded tasks: none of it may fail either."""
    for task in tasks:
        task.needs  # noqa: B018 - computing it is the check
        task_requirements(task)
        answer_key_leaks(task)
        assert task.to_dict() == json.loads(json.dumps(task.raw))
        assert pickle.loads(pickle.dumps(task)) == task
        hash(task)


def check_mutated(source: Path, text: str) -> None:
    """Load ``text`` as ``source``'s file: success, or a TaskFormatError naming the file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "examples" / source.parent.name / source.name
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
        try:
            tasks = load_tasks(path)
        except TaskFormatError as e:
            assert path.name in str(e), str(e)
        else:
            use(tasks)
        collected = load_tasks(Path(folder), errors="collect")
        use(collected)
        label = path.relative_to(folder).as_posix()
        for problem in collected.problems:
            assert problem.path == label and problem.message.startswith(f"{label}: ")


@needs_osworld_tasks
@FUZZ
@given(mutated_files(REAL_FILES or [Path("absent")]))  # skipped then: sampled_from needs one
@pytest.mark.heavy  # hypothesis over every task file
def test_mutated_osworld_task_files_load_or_name_the_file(mutated: tuple[Path, str]) -> None:
    check_mutated(*mutated)


@FUZZ
@given(mutated_files(BUNDLED_FILES))
@pytest.mark.heavy  # hypothesis over every task file
def test_mutated_bundled_task_files_load_or_name_the_file(mutated: tuple[Path, str]) -> None:
    check_mutated(*mutated)
