"""OSWorld's task files that need GNOME's desktop, on a ``session="gnome"`` desktop.

Local desktops, or the guest image's containers (``OSWORLD_TASKS_DESKTOP=docker``). Solved
through the desktop as an agent would: the dock's context menu, not ``gsettings``.
"""

from __future__ import annotations

import collections.abc

import gymnasium as gym
import pytest
from desktop_helpers import run_episode
from fixture_marks import needs
from osworld_data import require_osworld_tasks
from real_tasks import (
    SCREEN,
    desktop_kind,
    kind_marks,
    real_env,
    real_provider,
    real_task,
    task_id,
)

from osworld_gym.actions import Click, Done, Hotkey, Move, RightClick, TypeText, Wait
from osworld_gym.env import OSWorldEnv
from osworld_gym.providers.desktop import gnome_session

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.osworld_tasks,
    pytest.mark.skipif(
        desktop_kind() == "local" and gnome_session.available() is not None,
        reason=f"no GNOME session here: {gnome_session.available()}",
    ),
    *kind_marks(),
]

# os: "set my current time zone to UTC+0", scored by `timedatectl status`; its setup clicks the
# middle of the screen and launches no app.
SET_UTC = "b6781586"
REMOVE_FAVORITE = "ec4e3f68"  # setup pins thunderbird, vim, google-chrome; unpin vim
# os: make 132x43 the terminal's size for good; checked by `stty size` in a new terminal, which
# GNOME opens at its profile's size (openbox maximized it: 57x211 whatever the profile said).
TERMINAL_SIZE = "13584542"
TERMINAL_PROFILE = (  # GNOME Terminal's default profile, as on any new HOME
    "org.gnome.Terminal.Legacy.Profile:"
    "/org/gnome/terminal/legacy/profiles:/:b1dcc9dd-5262-4d8d-a863-c897e6d979b9/"
)
# The dock (1280x720): vim's icon first, as the dock lays out that setup's favorites; its
# context menu opens to the right, "Unpin" its second item.
VIM_ICON = (35, 65)
MENU = (slice(40, 125), slice(85, 280))
UNPIN = (116, 107)


@pytest.fixture(scope="module")
@needs("desktop")
def env(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[OSWorldEnv]:
    provider = real_provider(session="gnome")
    cache = tmp_path_factory.mktemp("cache")
    with real_env(
        [real_task("os", REMOVE_FAVORITE), real_task("os", SET_UTC)],
        provider=provider,
        cache_dir=str(cache),
    ) as environment:
        yield environment


def test_remove_an_app_from_the_docks_favorites_through_its_menu(env: OSWorldEnv) -> None:
    task = task_id(env, REMOVE_FAVORITE)
    env.reset(options={"task_id": task})
    env.step(Move(x=VIM_ICON[0], y=VIM_ICON[1]))
    env.step(RightClick(x=VIM_ICON[0], y=VIM_ICON[1]))
    obs, *_ = env.step(Wait(seconds=1.0))
    menu = obs["screenshot"][MENU].astype(int)
    assert menu.mean() > 200, "the dock's context menu did not open"  # GNOME's light menu
    env.step(Click(x=UNPIN[0], y=UNPIN[1]))
    env.step(Wait(seconds=0.5))
    _, reward, terminated, _, info = env.step(Done())
    assert terminated and info["infra_error"] is None
    assert reward == 1.0
    # Untouched, vim stays pinned.
    assert run_episode(env, task, [Done()]) == 0.0


CHROME = "99146c54"  # chrome: the setup launches google-chrome


def test_osworld_task_files_run_on_the_gnome_desktop_by_default(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = require_osworld_tasks()
    with gym.make(
        "OSWorld-v0",
        tasks=str(folder),
        provider=real_provider(),  # its session left open: the env picks
        screen_size=SCREEN,
        action_format="structured",
        offline=True,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    ) as made:
        env = made.unwrapped
        assert env.provider.config.session == "gnome"
        obs, _ = env.reset(options={"task_id": task_id(env, SET_UTC)})
        frame = obs["screenshot"].astype(int)
        top_bar = frame[:20, 200:1000]  # Yaru's top bar: near black across the screen
        dock = frame[100:600, :30]  # the dock on the left: dark, with the pinned apps' icons
        wallpaper = frame[300:600, 400:1000]
        assert top_bar.mean() < 40 and dock.mean() < wallpaper.mean(), "no top bar or dock"
        assert dock.std() > 10, "the dock has no icons"
        client = env._desktop.client
        theme = client.execute(["gsettings", "get", "org.gnome.desktop.interface", "gtk-theme"])
        assert theme.output == "'Yaru'\n"
        assert "240.00*" in client.execute(["xrandr"]).output  # the X server's fast mode
        env.reset(options={"task_id": task_id(env, CHROME)})
        titles = client.execute(["wmctrl", "-l"]).output
        assert "Google Chrome" in titles and "Chromium" not in titles, titles


def test_set_the_time_zone_with_timedatectl_in_a_terminal(env: OSWorldEnv) -> None:
    task = task_id(env, SET_UTC)
    assert run_episode(env, task, [Done()]) == 0.0  # the desktop does not start at UTC+0
    env.reset(options={"task_id": task})
    env.step(Hotkey(keys=["ctrl", "alt", "t"]))
    env.step(Wait(seconds=1.0))
    env.step(TypeText(text="timedatectl set-timezone Etc/UTC\n"))
    env.step(Wait(seconds=0.5))
    _, reward, terminated, _, info = env.step(Done())
    assert terminated and info["infra_error"] is None
    assert reward == 1.0


def test_make_132x43_the_terminals_size_in_its_profile(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # At OSWorld's 1920x1080: a 43-row terminal is taller than a 720-line screen's work area.
    screen = (1920, 1080)
    with real_env(
        [real_task("os", TERMINAL_SIZE)],
        provider=real_provider(session="gnome", screen_size=screen),
        screen_size=screen,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    ) as env:
        _make_132x43_the_terminals_size(env)


def _make_132x43_the_terminals_size(env: OSWorldEnv) -> None:
    task = task_id(env, TERMINAL_SIZE)
    assert run_episode(env, task, [Done()]) == 0.0  # GNOME Terminal opens at 80x24
    env.reset(options={"task_id": task})
    env.step(Hotkey(keys=["ctrl", "alt", "t"]))
    env.step(Wait(seconds=1.0))
    env.step(
        TypeText(
            text=f"gsettings set {TERMINAL_PROFILE} default-size-columns 132 && "
            f"gsettings set {TERMINAL_PROFILE} default-size-rows 43 && exit\n"
        )
    )
    env.step(Wait(seconds=0.5))
    _, reward, terminated, _, info = env.step(Done())
    assert terminated and info["infra_error"] is None
    assert reward == 1.0
