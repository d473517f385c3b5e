"""Task dicts for fake desktops (importable as ``fake_tasks``; see ``fake_provider``).

Each is scored by the real evaluator from what the fake desktop holds: files the setup wrote
in its home, and the pyautogui calls the actions made (the double's input log, read with a
``vm_command_line`` getter as any command output is).
"""

from __future__ import annotations

from typing import Any

READ_INPUTS = 'cat "$OSWORLD_DOUBLE_INPUTS" 2>/dev/null || true'


def typed_task(task_id: str = "type-hello", word: str = "hello") -> dict[str, Any]:
    """Setup writes ``~/Desktop/state.txt``; solved when that file is there and ``word`` typed."""
    return {
        "id": task_id,
        "snapshot": "os",
        "source": "test",
        "related_apps": ["os"],
        "instruction": f"Type {word}.",
        "config": [
            {
                "type": "execute",
                "parameters": {"command": "printf ready > ~/Desktop/state.txt", "shell": True},
            }
        ],
        "evaluator": {
            "func": ["exact_match", "check_include_exclude"],
            "conj": "and",
            "result": [
                {"type": "vm_command_line", "command": "cat ~/Desktop/state.txt", "shell": True},
                {"type": "vm_command_line", "command": READ_INPUTS, "shell": True},
            ],
            "expected": [
                {"type": "rule", "rules": {"expected": "ready"}},
                {"type": "rule", "rules": {"include": [f'["{word}"]'], "exclude": []}},
            ],
        },
    }


def infeasible_task(task_id: str = "impossible") -> dict[str, Any]:
    """A task OSWorld scores 1 when the agent says FAIL (``infeasible``)."""
    return {
        "id": task_id,
        "snapshot": "os",
        "source": "test",
        "related_apps": ["os"],
        "instruction": "Mount the network share (there is none).",
        "config": [],
        "evaluator": {"func": "infeasible"},
    }


TASKS = [typed_task(), typed_task("type-world", "world"), infeasible_task()]
