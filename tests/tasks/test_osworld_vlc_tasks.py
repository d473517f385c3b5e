"""OSWorld's own `vlc` tasks on a sandboxed local desktop: set up, solved, scored from vlcrc.

Each task file is read from shared/osworld_tasks; the tasks start VLC through the desktop's
wrapper, and their checks read ``~/.config/vlc/vlcrc``. The solutions are written here as an
agent would act: VLC's preferences through its GUI, or a terminal (Ctrl+Alt+T) with VLC closed
first, since VLC rewrites vlcrc when it saves its settings.

A new profile's VLC opens with its "Privacy and Network Access Policy" dialog; the solutions
answer it with "Continue", as an agent would, which also writes vlcrc.
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

RECORDINGS_FOLDER = "8ba5ae7a"  # input-record-path, read from vlcrc with VLC running
MAX_VOLUME = "9195653c"  # qt-max-volume; postconfig: pkill vlc, relaunch, read vlcrc
PRIVACY_DIALOG = "Privacy and Network Access Policy"


@pytest.fixture(scope="module")
@needs("desktop", "apps")
def env(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[OSWorldEnv]:
    tasks = [real_task("vlc", task) for task in (RECORDINGS_FOLDER, MAX_VOLUME)]
    cache = tmp_path_factory.mktemp("cache")
    with real_env(tasks, cache_dir=str(cache)) as environment:
        yield environment


def _privacy_dialog_shown(env: OSWorldEnv) -> bool:
    return PRIVACY_DIALOG in shell(env, "wmctrl -l")


def _preferences_closed(env: OSWorldEnv) -> bool:
    return "Simple Preferences" not in shell(env, "wmctrl -l")


def _terminal_open(env: OSWorldEnv) -> bool:
    return "gnome-terminal" in shell(env, "wmctrl -lx").lower()


def _vlc_gone(env: OSWorldEnv) -> bool:
    """No live VLC process (a reaped-late zombie has written everything it would)."""
    return not shell(env, "ps -eo stat=,comm= | grep -v '^Z' | grep -w vlc || true").strip()


CONTINUE = Click(x=460, y=349)  # the privacy dialog's "Continue"
# Unsolved but for the privacy dialog: vlcrc exists, each setting commented out at its default.
UNTOUCHED = [_privacy_dialog_shown, CONTINUE, Wait(seconds=0.5), Done()]


def test_recordings_folder_through_the_preferences(env: OSWorldEnv) -> None:
    task = task_id(env, RECORDINGS_FOLDER)
    steps = [
        _privacy_dialog_shown,
        CONTINUE,
        Hotkey(keys=("ctrl", "p")),  # Simple Preferences
        Wait(seconds=1.0),
        Click(x=676, y=66),  # "Input / Codecs"
        Wait(seconds=0.5),
        Click(x=717, y=498),  # "Record directory or filename"
        TypeText(text="/home/user/Desktop"),
        Click(x=904, y=699),  # "Save": VLC writes vlcrc, then closes the dialog
        _preferences_closed,
        Done(),
    ]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, [Done()]) == 0.0  # no vlcrc yet
    assert run_episode(env, task, UNTOUCHED) == 0.0


def test_max_volume_in_vlcrc_with_vlc_closed(env: OSWorldEnv) -> None:
    task = task_id(env, MAX_VOLUME)
    sed = "sed -i 's/^#*qt-max-volume=.*/qt-max-volume=200/' ~/.config/vlc/vlcrc"
    steps = [
        _privacy_dialog_shown,
        CONTINUE,  # writes vlcrc, every setting commented out at its default
        Hotkey(keys=("ctrl", "q")),  # quit VLC before editing the file it owns
        _vlc_gone,
        Hotkey(keys=("ctrl", "alt", "t")),
        _terminal_open,
        TypeText(text=f"{sed}\n"),
        Wait(seconds=1.0),
        Done(),
    ]
    assert run_episode(env, task, steps) == 1.0
    assert run_episode(env, task, UNTOUCHED) == 0.0
