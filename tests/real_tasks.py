"""OSWorld's own task files, read at test time from shared/osworld_tasks (never copied here).

Where the folder is comes from ``osworld_data`` (beside the checkout, as in the developers' and
CI's checkouts). Tests that run real tasks skip, saying why, where it is absent.

They run on local desktops, or in the docker provider's containers with
``OSWORLD_TASKS_DESKTOP=docker`` (the image ``osworld-gym/desktop:latest``, which
scripts/run_tests.sh builds when it runs as root): the README's test command runs the
``osworld_tasks`` stage on both.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
from osworld_data import require_osworld_tasks

from osworld_gym.env import OSWorldEnv
from osworld_gym.providers.base import ProviderConfig

SCREEN = (1280, 720)
DESKTOP_VARIABLE = "OSWORLD_TASKS_DESKTOP"
DESKTOPS = ("local", "docker")


def desktop_kind() -> str:
    """Where the real tasks run: ``local`` (the default) or ``docker``."""
    kind = os.environ.get(DESKTOP_VARIABLE) or "local"
    if kind not in DESKTOPS:
        raise ValueError(f"${DESKTOP_VARIABLE} must be one of {DESKTOPS}, not {kind!r}")
    return kind


def kind_marks() -> list[pytest.MarkDecorator]:
    """Marks of the tests on these desktops beyond their own: ``docker`` in the containers.

    The launch guard (``launch_guard``) fails a test that starts a docker desktop without it.
    """
    return [pytest.mark.docker] if os.environ.get(DESKTOP_VARIABLE) == "docker" else []


def real_provider(
    *,
    host_ports: tuple[int, ...] = (),
    session: str | None = None,
    screen_size: tuple[int, int] = SCREEN,
) -> ProviderConfig:
    """The desktops the real tasks run on (``desktop_kind()``).

    Args:
        host_ports: Ports of this host's loopback the desktop may reach (a page server).
        session: The desktop's session; None: the env's choice for its tasks.
        screen_size: The screen (default ``SCREEN``).
    """
    settings: dict[str, Any] = {
        "screen_size": screen_size,
        "host_ports": host_ports,
        "session": session,
    }
    if desktop_kind() == "docker":
        from osworld_gym.providers.docker.provider import DockerProviderConfig

        return DockerProviderConfig(**settings)
    from osworld_gym.providers.local.provider import LocalProviderConfig

    return LocalProviderConfig(**settings)


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
    options.setdefault("provider", real_provider())
    return OSWorldEnv(**options)
