"""OSWorld's own task files, read at test time from shared/osworld_tasks (never copied here).

The folder sits beside the repository (``<repo>/../shared/osworld_tasks``), as in the
developers' and CI's checkouts. Tests that run real tasks skip, saying why, where it is absent.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from osworld_gym.env import OSWorldEnv

OSWORLD_TASKS = Path(__file__).resolve().parents[1].parent / "shared" / "osworld_tasks"
SCREEN = (1280, 720)


def real_task(domain: str, task_id: str) -> dict[str, Any]:
    """The task file ``examples/<domain>/<task_id>.json`` (an id prefix is enough)."""
    folder = OSWORLD_TASKS / "examples" / domain
    if not folder.is_dir():
        pytest.skip(f"OSWorld's task files are not at {OSWORLD_TASKS}")
    matches = sorted(folder.glob(f"{task_id}*.json"))
    assert len(matches) == 1, f"{domain}/{task_id}: {len(matches)} task files match"
    return json.loads(matches[0].read_text())


def task_id(env: OSWorldEnv, prefix: str) -> str:
    """The id of the env's task that starts with ``prefix``."""
    return next(task.id for task in env.unwrapped.tasks if task.id.startswith(prefix))


def shell(env: OSWorldEnv, command: str) -> str:
    """What ``command`` prints in the env's desktop (a shell line)."""
    return env.unwrapped._desktop.client.execute(command, shell=True).output


def with_urls(task: dict[str, Any], replacements: dict[str, str]) -> dict[str, Any]:
    """A copy of ``task`` with URLs replaced everywhere (live sites -> loopback pages)."""
    text = json.dumps(copy.deepcopy(task))
    for old, new in replacements.items():
        text = text.replace(old, new)
    return json.loads(text)


def real_env(tasks: list[dict[str, Any]], **kwargs: Any) -> OSWorldEnv:
    """An env over real task dicts: structured actions, a small screen, no downloads."""
    options: dict[str, Any] = {
        "tasks": tasks,
        "action_format": "structured",
        "screen_size": SCREEN,
        "max_steps": 15,
        "offline": True,
    }
    options.update(kwargs)
    return OSWorldEnv(**options)
