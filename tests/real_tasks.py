"""OSWorld's own task files, read at test time from shared/osworld_tasks (never copied here).

Where the folder is comes from ``osworld_data`` (beside the checkout, as in the developers' and
CI's checkouts). Tests that run real tasks skip, saying why, where it is absent.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from osworld_data import require_osworld_tasks

from osworld_gym.env import OSWorldEnv

SCREEN = (1280, 720)


def real_task(domain: str, task_id: str) -> dict[str, Any]:
    """The task file ``examples/<domain>/<task_id>.json`` (an id prefix is enough)."""
    folder = require_osworld_tasks() / "examples" / domain
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
