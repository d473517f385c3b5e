"""No bundled task leaves its answer key where the agent can reach it (issue 35, item 2).

The check (``osworld_gym.tasks.answer_keys.answer_key_leaks()``) runs over every task of every
bundled suite, and on old-style tasks that uploaded their reference into ``~/.expected/`` and
read it back with ``vm_file``, which it must refuse.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from osworld_gym.tasks import Task, load_tasks
from osworld_gym.tasks.answer_keys import HOST_GETTERS, answer_key_leaks, guest_path
from osworld_gym.tasks.loading import available_suites

SUITES = available_suites()
BUNDLED = [task for suite in SUITES for task in load_tasks(suite)]
CLOUD = {"type": "cloud_file", "dest": "gold.xlsx"}
ASSETS = "../../assets/editor-append-line"


def upload(*pairs: tuple[str, str]) -> dict[str, Any]:
    files = [{"local_path": local, "path": path} for local, path in pairs]
    return {"type": "upload_file", "parameters": {"files": files}}


def old_style_append_line() -> dict[str, Any]:
    """``editor-append-line`` as it was: the reference uploaded and read back from the desktop."""
    return {
        "id": "editor-append-line",
        "instruction": "Add the line - green tea to ~/Documents/shopping.txt and save it.",
        "config": [
            upload(
                (f"{ASSETS}/shopping.txt", "~/Documents/shopping.txt"),
                (f"{ASSETS}/shopping_expected.txt", "~/.expected/shopping.txt"),
            ),
            {"type": "open", "parameters": {"path": "~/Documents/shopping.txt"}},
        ],
        "evaluator": {
            "func": "compare_text_file",
            "result": {"type": "vm_file", "path": "~/Documents/shopping.txt", "dest": "s.txt"},
            "expected": {"type": "vm_file", "path": "~/.expected/shopping.txt", "dest": "e.txt"},
        },
    }  # fmt: skip


def task_at(data: dict[str, Any], task_dir: Path | None = None) -> Task:
    task = Task.from_dict(data)
    return task if task_dir is None else dataclasses.replace(task, path=task_dir / "t.json")


def with_expected(data: dict[str, Any], expected: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    data["evaluator"]["expected"] = expected
    return data


def test_the_old_style_task_is_refused() -> None:
    (leak,) = answer_key_leaks(task_at(old_style_append_line()))
    assert leak == (
        "evaluator.expected (vm_file) reads /home/user/.expected/shopping.txt from the desktop, "
        "which config[0] put there"
    )


@pytest.mark.parametrize(
    "expected",
    [
        {"type": "vm_file", "path": "/home/user/.expected/shopping.txt", "dest": "e.txt"},
        {"type": "vm_file", "path": "$HOME/.expected/./shopping.txt", "dest": "e.txt"},
        {"type": "vm_command_line", "command": "cat ~/.expected/shopping.txt", "shell": True},
        {"type": "content_from_vm_file", "path": "/home/user/.expected/shopping.txt"},
        {
            "type": "vm_file",
            "multi": True,
            "path": ["/tmp/other", "~/.expected/shopping.txt"],
            "dest": ["o", "e"],
            "gives": [1],
        },
    ],
    ids=["home spelt out", "$HOME and a dot", "command line", "another guest getter", "multi"],
)
def test_any_desktop_getter_reading_an_uploaded_file_is_refused(expected: Any) -> None:
    task = task_at(with_expected(old_style_append_line(), expected))
    assert any("/home/user/.expected/shopping.txt" in leak for leak in answer_key_leaks(task))


def test_a_host_reference_that_setup_also_uploads_is_refused(tmp_path: Path) -> None:
    # The same host file as the reference and as an upload (spelt differently): the agent has it.
    data = old_style_append_line()
    local = {
        "type": "cloud_file",
        "local_path": f"../x/{ASSETS}/shopping_expected.txt",
        "dest": "e",
    }
    (leak,) = answer_key_leaks(task_at(with_expected(data, local), tmp_path / "a" / "b"))
    assert "compares against" in leak and "/home/user/.expected/shopping.txt" in leak


def test_a_downloaded_reference_url_is_refused() -> None:
    url = "https://h.example/gold.xlsx"
    data = old_style_append_line()
    data["config"] = [{"type": "download", "parameters": {"files": [{"url": url, "path": "/g"}]}}]
    (leak,) = answer_key_leaks(task_at(with_expected(data, {**CLOUD, "path": url})))
    assert (
        leak
        == f"evaluator.expected compares against {url}, which config[0] puts into the desktop at /g"
    )


def test_host_references_and_rules_pass(tmp_path: Path) -> None:
    data = old_style_append_line()
    data["config"][0]["parameters"]["files"].pop()  # the reference stays on the host
    local = {"type": "cloud_file", "local_path": f"{ASSETS}/shopping_expected.txt", "dest": "e"}
    assert answer_key_leaks(task_at(with_expected(data, local), tmp_path)) == []
    rule = {"type": "rule", "rules": {"expected": "~/.expected/shopping.txt"}}
    assert answer_key_leaks(task_at(with_expected(old_style_append_line(), rule))) == []
    # Postconfig runs after the agent's last action: what it places is out of the agent's reach.
    late = with_expected(data, old_style_append_line()["evaluator"]["expected"])
    late["evaluator"]["postconfig"] = old_style_append_line()["config"][:1]
    assert answer_key_leaks(task_at(late)) == []


@pytest.mark.parametrize(
    ("path", "normal"),
    [
        ("~", "/home/user"),
        ("~/a/../b", "/home/user/b"),
        ("${HOME}/x", "/home/user/x"),
        ("Desktop/x", "/home/user/Desktop/x"),
        ("/tmp//x", "/tmp/x"),
    ],
)
def test_guest_paths_have_one_spelling(path: str, normal: str) -> None:
    assert guest_path(path) == normal


def test_every_bundled_suite_is_checked() -> None:
    assert {"desktop-basics", "ui-basics"} <= set(SUITES)
    assert len(BUNDLED) >= 70


@pytest.mark.parametrize("task", BUNDLED, ids=[f"{t.domain}/{t.id}" for t in BUNDLED])
def test_no_bundled_task_leaves_its_answer_key_in_the_desktop(task: Task) -> None:
    assert answer_key_leaks(task) == []
    # Stricter than the leak check, for our own suites: a reference is a rule or a host file,
    # so nothing the setup (or the agent) writes in the desktop can stand in for it.
    for check in task.evaluator.checks:
        assert check.expected is None or check.expected.type in HOST_GETTERS, check
        if check.expected is not None and check.expected.type == "cloud_file":
            assert "local_path" in check.expected.params  # offline: no URL
            assert task.task_dir is not None
            assert (task.task_dir / check.expected.params["local_path"]).is_file()


REFERENCED = [
    (task, check.expected.params["local_path"])
    for task in BUNDLED
    for check in task.evaluator.checks
    if check.expected is not None and "local_path" in check.expected.params
]


@pytest.mark.parametrize(("task", "local"), REFERENCED, ids=[t.id for t, _ in REFERENCED])
def test_the_check_refuses_each_bundled_task_in_its_old_form(task: Task, local: str) -> None:
    # Upload the task's reference into the desktop and read it back, as the suite used to:
    # the check must catch it in every task whose reference it protects.
    data = task.to_dict()
    hidden = "~/.expected/" + Path(local).name
    data["config"] = [upload((local, hidden)), *data["config"]]
    expected = data["evaluator"]["expected"]
    slots = expected if isinstance(expected, list) else [expected]
    old = [
        {"type": "vm_file", "path": hidden, "dest": item["dest"]}
        if item is not None and item.get("local_path") == local
        else item
        for item in slots
    ]
    data["evaluator"]["expected"] = old if isinstance(expected, list) else old[0]
    leaks = answer_key_leaks(task_at(data, task.task_dir))
    assert any(guest_path(hidden) in leak for leak in leaks)
