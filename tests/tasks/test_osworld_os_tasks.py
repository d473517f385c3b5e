"""OSWorld's own `os` tasks on sandboxed local desktops: set up, solved through the desktop, scored.

Each task file is read from shared/osworld_tasks; the solutions are written here, as an agent
would act (a terminal opened with Ctrl+Alt+T, commands typed into it). Unsolved, each scores what
OSWorld's evaluator gives the untouched state.
"""

from __future__ import annotations

import collections.abc
from pathlib import Path

import pytest
from desktop_helpers import run_episode
from fixture_marks import needs
from real_tasks import kind_marks, real_env, real_task, task_id

from osworld_gym.actions import Done, Fail, Hotkey, TypeText, Wait
from osworld_gym.env import OSWorldEnv

pytestmark = [pytest.mark.desktop, pytest.mark.apps, *kind_marks()]

RENAME_DIRECTORY = "e0df059f"  # sudo mkdir ~/Desktop/todo_list_Jan_1 in setup; rename it
LARGER_TEXT = "3ce045a0"  # checked with gsettings and bc
COPY_HIERARCHY = "4783cc41"  # infeasible; its setup makes /home/user/Desktop/dir1/dir2
MAX_VOLUME = "28cc3b7e"  # checked with pulseaudio --start and pactl's first sink volume


def in_terminal(*commands: str) -> list:
    """Open a terminal the way OSWorld's desktop offers it and type ``commands`` into it."""
    steps: list = [Hotkey(keys=("ctrl", "alt", "t")), Wait(seconds=1.0)]
    steps += [TypeText(text=f"{command}\n") for command in commands]
    return [*steps, Wait(seconds=1.0), Done()]


@pytest.fixture(scope="module")
@needs("desktop", "apps")
def env(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[OSWorldEnv]:
    ids = (RENAME_DIRECTORY, LARGER_TEXT, COPY_HIERARCHY, MAX_VOLUME)
    tasks = [real_task("os", task) for task in ids]
    cache = tmp_path_factory.mktemp("cache")
    with real_env(tasks, cache_dir=str(cache)) as environment:
        yield environment


def _home(env: OSWorldEnv) -> Path:
    return env.unwrapped._desktop.home


def test_rename_a_directory_made_with_sudo_in_home_user(env: OSWorldEnv) -> None:
    task = task_id(env, RENAME_DIRECTORY)
    host_paths = [Path(f"/home/user/Desktop/todo_list_Jan_{n}") for n in (1, 2)]
    assert not any(path.exists() for path in host_paths)
    steps = in_terminal("mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2")
    assert run_episode(env, task, steps) == 1.0
    assert (_home(env) / "Desktop" / "todo_list_Jan_2").is_dir()
    # The setup's `sudo mkdir` and the agent's `mv` reached the desktop's home only.
    assert not any(path.exists() for path in host_paths)
    assert run_episode(env, task, [Done()]) == 0.0


def test_larger_text_through_gsettings(env: OSWorldEnv) -> None:
    task = task_id(env, LARGER_TEXT)
    steps = in_terminal("gsettings set org.gnome.desktop.interface text-scaling-factor 1.25")
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [Done()]) == 0.0  # a reset forgets the setting


def test_infeasible_task_setup_stays_in_the_desktop(env: OSWorldEnv) -> None:
    task = task_id(env, COPY_HIERARCHY)
    host = Path("/home/user/Desktop/dir1")
    assert not host.exists()
    env.reset(options={"task_id": task})
    assert (_home(env) / "Desktop" / "dir1" / "dir2").is_dir()
    assert not host.exists()
    assert env.step(Fail())[1] == 1.0  # OSWorld's infeasible rule: FAIL scores 1
    assert run_episode(env, task, [Done()]) == 0.0
    assert not host.exists()


def test_turn_the_volume_up_to_the_maximum(env: OSWorldEnv) -> None:
    task = task_id(env, MAX_VOLUME)
    # The sound server starts below the maximum, as on OSWorld's VM: doing nothing scores 0.
    assert run_episode(env, task, [Done()]) == 0.0
    steps = in_terminal("pulseaudio --start", "pactl set-sink-volume @DEFAULT_SINK@ 100%")
    assert run_episode(env, task, steps) == 1.0
