"""OSWorld's ``execute`` placeholders and the cache names of ``download`` steps."""

from __future__ import annotations

import uuid

import pytest
from osworld_data import OSWORLD_TASKS, needs_osworld_tasks

from osworld_gym.tasks import (
    PLACEHOLDERS,
    FrozenList,
    download_cache_name,
    load_tasks,
    placeholder_values,
    substitute_placeholders,
)

VALUES = placeholder_values(client_password="s3cret", screen_size=(1366, 769))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("{SCREEN_WIDTH}x{SCREEN_HEIGHT}", "1366x769"),
        ("{SCREEN_WIDTH_HALF},{SCREEN_HEIGHT_HALF}", "683,384"),  # halves round down
        ("echo {CLIENT_PASSWORD} | sudo -S ls", "echo s3cret | sudo -S ls"),
        ("python -c 'print({})' ${HOME} {OTHER}", "python -c 'print({})' ${HOME} {OTHER}"),
        (["xdotool", "{SCREEN_WIDTH_HALF}", "{SCREEN_HEIGHT_HALF}"], ["xdotool", "683", "384"]),
        (("a", "{CLIENT_PASSWORD}{CLIENT_PASSWORD}"), ["a", "s3crets3cret"]),
        ([], []),
    ],
)
def test_substitution(command, expected) -> None:
    assert substitute_placeholders(command, VALUES) == expected


def test_substitution_returns_new_plain_data() -> None:
    frozen = FrozenList(["echo", "{SCREEN_WIDTH}"])
    result = substitute_placeholders(frozen, VALUES)
    assert type(result) is list and result == ["echo", "1366"]
    assert frozen == ["echo", "{SCREEN_WIDTH}"]


def test_every_placeholder_has_a_value() -> None:
    assert tuple(VALUES) == PLACEHOLDERS
    assert not any(
        p in substitute_placeholders(" ".join(PLACEHOLDERS), VALUES) for p in PLACEHOLDERS
    )


def test_password_is_replaced_first_as_in_osworld() -> None:
    values = placeholder_values(client_password="{SCREEN_WIDTH}", screen_size=(10, 10))
    assert substitute_placeholders("{CLIENT_PASSWORD}", values) == "10"


def test_download_cache_name() -> None:
    url = "https://huggingface.co/datasets/x/resolve/main/a%20b.xlsx"
    name = download_cache_name(url, "/home/user/Desktop/a b.xlsx")
    assert name == f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_a b.xlsx"
    # os.path.basename on a Linux host, as OSWorld's host: a Windows path stays whole.
    assert download_cache_name(url, "C:\\Users\\User\\a.xlsx").endswith("_C:\\Users\\User\\a.xlsx")


@needs_osworld_tasks
def test_placeholders_in_real_tasks_are_all_known() -> None:
    tasks = load_tasks(OSWORLD_TASKS)
    commands = [
        step.parameters["command"]
        for task in tasks
        for step in task.config + task.evaluator.postconfig
        if step.type in ("execute", "command")
    ]
    filled = [substitute_placeholders(c, VALUES) for c in commands]
    assert sum(c != f for c, f in zip(commands, filled, strict=True)) > 0
    assert not any(p in str(f) for f in filled for p in PLACEHOLDERS)


@needs_osworld_tasks
def test_real_download_steps_have_cache_names() -> None:
    tasks = load_tasks(OSWORLD_TASKS / "test_small.json")
    names = {
        download_cache_name(f["url"], f["path"])
        for task in tasks
        for step in task.config
        if step.type == "download"
        for f in step.parameters["files"]
    }
    assert names and all(len(n.split("_", 1)[0]) == 36 for n in names)
