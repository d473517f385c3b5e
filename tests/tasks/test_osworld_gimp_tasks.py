"""OSWorld's own `gimp` tasks on a sandboxed local desktop: set up, solved, scored from GIMP's rc.

Each task file is read from shared/osworld_tasks; the tasks launch GIMP 2.10 (Debian's), and
their postconfig presses Ctrl+Q and reads ``~/.config/GIMP/2.10/<gimprc|sessionrc>``, which GIMP
writes as it quits. The solutions are written here as an agent would act: GIMP's menus and
preferences through clicks on the 1280x720 screen (GIMP's window fills it). They quit GIMP
themselves and wait until it is gone: the postconfig gives GIMP only half a second to write its
files after its own Ctrl+Q, too little on a loaded host.
"""

from __future__ import annotations

import collections.abc

import pytest
from desktop_helpers import run_episode
from fixture_marks import needs
from real_tasks import kind_marks, real_env, real_task, shell, task_id

from osworld_gym.actions import Click, Done, Hotkey, TypeText, Wait
from osworld_gym.env import OSWorldEnv

pytestmark = [pytest.mark.desktop, pytest.mark.apps, pytest.mark.osworld_tasks, *kind_marks()]

UNDO_LEVELS = "7b7617bd"  # (undo-levels 100) in gimprc
HIDE_DOCKS = "d52d6308"  # (hide-docks yes) in sessionrc


@pytest.fixture(scope="module")
@needs("desktop", "apps")
def env(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[OSWorldEnv]:
    tasks = [real_task("gimp", task) for task in (UNDO_LEVELS, HIDE_DOCKS)]
    cache = tmp_path_factory.mktemp("cache")
    with real_env(tasks, cache_dir=str(cache)) as environment:
        yield environment


def gimp_window(env: OSWorldEnv) -> bool:
    return "GNU Image Manipulation Program" in shell(env, "wmctrl -l")


def gimp_on_screen(env: OSWorldEnv) -> bool:
    """GIMP's window lies on the screen (it places itself below a screen this small otherwise)."""
    for line in shell(env, "wmctrl -lG").splitlines():
        if "GNU Image Manipulation Program" in line:
            x, y, width = (int(value) for value in line.split()[2:5])
            return (x, y) < (10, 60) and width >= 1270
    return False


def preferences_window(env: OSWorldEnv) -> bool:
    return " Preferences" in shell(env, "wmctrl -l")


def preferences_closed(env: OSWorldEnv) -> bool:
    return not preferences_window(env)


def gimp_gone(env: OSWorldEnv) -> bool:
    """No live GIMP process (a zombie not yet reaped has written all it would)."""
    return not shell(env, "ps -eo stat=,comm= | grep -v '^Z' | grep -w gimp || true").strip()


QUIT = [Hotkey(keys=("ctrl", "q")), gimp_gone]


def test_undo_levels_through_the_preferences(env: OSWorldEnv) -> None:
    task = task_id(env, UNDO_LEVELS)
    steps = [
        gimp_window,
        gimp_on_screen,
        Wait(seconds=1.0),
        Click(x=55, y=31),  # "Edit"
        Wait(seconds=1.0),
        Click(x=106, y=624),  # "Preferences": it opens on System Resources
        preferences_window,
        Wait(seconds=1.0),
        Click(x=539, y=373, clicks=3),  # "Minimal number of undo levels"
        TypeText(text="100\t"),
        Click(x=753, y=688),  # "OK"
        preferences_closed,
        *QUIT,
        Done(),
    ]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [gimp_window, *QUIT, Done()]) == 0.0  # the default, 5


def test_hide_the_docks(env: OSWorldEnv) -> None:
    task = task_id(env, HIDE_DOCKS)
    steps = [
        gimp_window,
        Wait(seconds=1.0),
        Click(x=456, y=31),  # "Windows"
        Wait(seconds=1.0),
        Click(x=483, y=151),  # "Hide Docks"
        Wait(seconds=0.5),
        *QUIT,
        Done(),
    ]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [gimp_window, *QUIT, Done()]) == 0.0  # (hide-docks no)
