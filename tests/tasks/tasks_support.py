"""Shared helpers for the task-layer tests: a valid task builder, edits by path, file writers.

A plain module (not conftest magic): tests import what they use.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

DELETE = object()
"""Value for ``edited()`` that removes the key instead of setting it."""


def make_task(task_id: str = "task-1", **top: Any) -> dict[str, Any]:
    """A small valid task in OSWorld's format; keyword arguments replace top-level fields."""
    task: dict[str, Any] = {
        "id": task_id,
        "snapshot": "os",
        "instruction": "Print hi in the terminal.",
        "source": "https://example.org/question",
        "config": [
            {"type": "execute", "parameters": {"command": ["echo", "{SCREEN_WIDTH_HALF}"]}},
            {"type": "sleep", "parameters": {"seconds": 0.5}},
        ],
        "trajectory": "trajectories/",
        "related_apps": ["os"],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": "echo hi", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": "hi\n"}},
        },
        "proxy": False,
        "fixed_ip": False,
        "possibility_of_env_change": "low",
    }
    task.update(top)
    return task


def make_list_task(task_id: str = "task-list", **evaluator: Any) -> dict[str, Any]:
    """A valid task whose ``func`` is a list of two metrics; keywords replace evaluator keys."""
    spec: dict[str, Any] = {
        "func": ["check_include_exclude", "exact_match"],
        "conj": "or",
        "result": [
            {"type": "vm_command_line", "command": "ls"},
            {"type": "vm_file", "path": "/tmp/a.txt", "dest": "a.txt"},
        ],
        "expected": [{"type": "rule", "rules": {"include": ["a"]}}, None],
        "options": [{}, None],
    }
    spec.update(evaluator)
    return make_task(task_id, evaluator=spec)


def edited(task: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``task`` with the value at dotted ``path`` (``config.0.type``) replaced."""
    task = copy.deepcopy(task)
    *parents, last = path.split(".")
    node: Any = task
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    key: Any = int(last) if isinstance(node, list) else last
    if value is DELETE:
        del node[key]
    else:
        node[key] = value
    return task


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as JSON (creating folders) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def write_examples(root: Path, tasks: dict[str, list[dict[str, Any]]]) -> Path:
    """An ``evaluation_examples``-style folder: ``root/examples/<domain>/<id>.json``."""
    for domain, items in tasks.items():
        for task in items:
            write_json(root / "examples" / domain / f"{task['id']}.json", task)
    return root
