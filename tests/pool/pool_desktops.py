"""Helpers for pool tests on real `local` desktops (importable as ``pool_desktops``)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import psutil

from osworld_gym.actions import Done, Fail, TypeText, Wait
from osworld_gym.pool import EnvSpec
from osworld_gym.pool.policy import PolicyRequest
from osworld_gym.providers.local.provider import LocalProviderConfig

SCREEN = (800, 600)

# Bundled terminal tasks (desktop-basics) and a scripted solution for some of them.
SOLUTIONS = {
    "os-write-file-content": "printf 'Welcome to the build server\\nMaintenance: Sundays "
    "02:00-04:00\\n' > ~/Documents/motd.txt\n",
    "os-create-project-tree": "mkdir -p ~/projects/webapp/src ~/projects/webapp/tests "
    "~/projects/webapp/docs && touch ~/projects/webapp/README.md\n",
}
UNSOLVED = ["os-count-error-lines", "os-chmod-script"]
INFEASIBLE = "os-infeasible-network-share"


def spec(work_dir: Path, **kwargs: Any) -> EnvSpec:
    """OSWorldEnv on the bundled suite, small screens, desktops under ``work_dir``."""
    settings: dict[str, Any] = {
        "tasks": "desktop-basics",
        "action_format": "structured",
        "screen_size": SCREEN,
        "max_steps": 3,
        "provider": LocalProviderConfig(screen_size=SCREEN, work_dir=str(work_dir)),
    }
    settings.update(kwargs)
    return EnvSpec(kwargs=settings)


def scripted_policy(requests: list[PolicyRequest]) -> list[Any]:
    """Solve the tasks in SOLUTIONS, give up on the infeasible one, wait then stop otherwise."""
    actions: list[Any] = []
    for request in requests:
        solution = SOLUTIONS.get(request.task_id)
        if request.task_id == INFEASIBLE:
            actions.append(Fail())
        elif request.step == 0:
            actions.append(TypeText(text=solution) if solution else Wait(seconds=0.1))
        else:
            actions.append(Done())
    return actions


def desktop_pids(env: Any) -> dict[str, int] | None:
    """Core PIDs of an OSWorldEnv's desktop (None before its first reset)."""
    desktop = env.unwrapped._desktop
    if desktop is None:
        return None
    return {name: desktop.component_pid(name) for name in ("xvfb", "guest")}


def kill(pid: int) -> bool:
    """SIGKILL one of our desktop's processes; False if it was already gone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def processes_under(work_dir: Path) -> list[psutil.Process]:
    """Live processes whose HOME or working folder is inside ``work_dir`` (our desktops)."""
    prefix = str(work_dir)
    found = []
    for proc in psutil.process_iter(["cwd", "environ"]):
        try:
            home = (proc.info["environ"] or {}).get("HOME", "")
            cwd = proc.info["cwd"] or ""
            if (home.startswith(prefix) or cwd.startswith(prefix)) and (
                proc.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(proc)
        except (psutil.Error, AttributeError):  # gone while we looked
            continue
    return found
