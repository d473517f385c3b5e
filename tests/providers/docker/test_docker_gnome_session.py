"""The guest image's GNOME session (``OSWORLD_SESSION=gnome``), as OSWorld's Ubuntu VM.

The same session as a local desktop's ``session="gnome"`` (tests/tasks/test_osworld_gnome_tasks.py):
OSWorld's task files pick it by default, the desktop shows the top bar, the dock and Yaru, and
OSWorld's tasks that need GNOME are solved in a container as an agent would. The in-place reset
(``reset_mode="session"``) starts the whole session again: nothing of an episode's shell,
settings, time zone or HOME reaches the next.
"""

from __future__ import annotations

import collections.abc
import time

import gymnasium as gym
import numpy as np
import pytest
from desktop_helpers import run_episode, wait_until
from osworld_data import require_osworld_tasks
from real_tasks import SCREEN, real_env, real_task, task_id

from osworld_gym.actions import Click, Done, Hotkey, Move, RightClick, TypeText, Wait
from osworld_gym.env import OSWorldEnv
from osworld_gym.providers.docker_provider import (
    DockerDesktop,
    DockerProvider,
    DockerProviderConfig,
)

SET_UTC = "b6781586"  # os: "set my current time zone to UTC+0" (timedatectl); no app
REMOVE_FAVORITE = "ec4e3f68"  # os: setup pins thunderbird, vim, google-chrome; unpin vim
CHROME = "99146c54"  # chrome: the setup launches google-chrome
# The dock (1280x720), as on a local GNOME desktop: vim's icon first, its menu's "Unpin".
VIM_ICON = (35, 65)
MENU = (slice(40, 125), slice(85, 280))
UNPIN = (116, 107)


def _looks_like_gnome(frame: np.ndarray) -> None:
    frame = frame.astype(int)
    top_bar = frame[:20, 200:1000]  # Yaru's top bar: near black across the screen
    dock = frame[100:600, :30]  # the dock on the left: dark, with the pinned apps' icons
    wallpaper = frame[300:600, 400:1000]
    assert top_bar.mean() < 40 and dock.mean() < wallpaper.mean(), "no top bar or dock"
    assert dock.std() > 10, "the dock has no icons"


@pytest.mark.osworld_tasks
def test_osworld_task_files_run_on_the_images_gnome_session_by_default(
    guest_image: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with gym.make(
        "OSWorld-v0",
        tasks=str(require_osworld_tasks()),
        provider=DockerProviderConfig(image=guest_image, screen_size=SCREEN),
        screen_size=SCREEN,
        action_format="structured",
        offline=True,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    ) as made:
        env = made.unwrapped
        assert env.provider.config.session == "gnome"
        obs, _ = env.reset(options={"task_id": task_id(env, SET_UTC)})
        _looks_like_gnome(obs["screenshot"])
        client = env._desktop.client
        theme = client.execute(["gsettings", "get", "org.gnome.desktop.interface", "gtk-theme"])
        assert theme.output == "'Yaru'\n"
        assert "240.00*" in client.execute("xrandr", shell=True).output  # the fast mode
        env.reset(options={"task_id": task_id(env, CHROME)})
        titles = client.execute(["wmctrl", "-l"]).output
        assert "Google Chrome" in titles and "Chromium" not in titles, titles


@pytest.fixture(scope="module")
def gnome_env(
    guest_image: str, tmp_path_factory: pytest.TempPathFactory
) -> collections.abc.Iterator[OSWorldEnv]:
    provider = DockerProviderConfig(image=guest_image, screen_size=SCREEN, session="gnome")
    with real_env(
        [real_task("os", REMOVE_FAVORITE), real_task("os", SET_UTC)],
        provider=provider,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    ) as env:
        yield env


@pytest.mark.osworld_tasks
def test_remove_an_app_from_the_docks_favorites_in_a_container(gnome_env: OSWorldEnv) -> None:
    task = task_id(gnome_env, REMOVE_FAVORITE)
    gnome_env.reset(options={"task_id": task})
    gnome_env.step(Move(x=VIM_ICON[0], y=VIM_ICON[1]))
    gnome_env.step(RightClick(x=VIM_ICON[0], y=VIM_ICON[1]))
    obs, *_ = gnome_env.step(Wait(seconds=1.0))
    assert obs["screenshot"][MENU].astype(int).mean() > 200, "the dock's menu did not open"
    gnome_env.step(Click(x=UNPIN[0], y=UNPIN[1]))
    gnome_env.step(Wait(seconds=0.5))
    _, reward, terminated, _, info = gnome_env.step(Done())
    assert terminated and info["infra_error"] is None
    assert reward == 1.0
    assert run_episode(gnome_env, task, [Done()]) == 0.0  # untouched, vim stays pinned


@pytest.mark.osworld_tasks
def test_set_the_time_zone_with_timedatectl_in_a_container(gnome_env: OSWorldEnv) -> None:
    task = task_id(gnome_env, SET_UTC)
    assert run_episode(gnome_env, task, [Done()]) == 0.0  # the desktop does not start at UTC+0
    gnome_env.reset(options={"task_id": task})
    gnome_env.step(Hotkey(keys=["ctrl", "alt", "t"]))
    gnome_env.step(Wait(seconds=1.0))
    gnome_env.step(TypeText(text="timedatectl set-timezone Etc/UTC\n"))
    gnome_env.step(Wait(seconds=0.5))
    _, reward, terminated, _, info = gnome_env.step(Done())
    assert terminated and info["infra_error"] is None
    assert reward == 1.0


@pytest.fixture()
def gnome_desktop(guest_image: str) -> collections.abc.Iterator[DockerDesktop]:
    config = DockerProviderConfig(
        image=guest_image, screen_size=(1024, 768), session="gnome", reset_mode="session"
    )
    with DockerProvider(config).launch() as desktop:
        yield desktop  # type: ignore[misc]


def test_an_in_place_reset_starts_a_new_gnome_session(gnome_desktop: DockerDesktop) -> None:
    client = gnome_desktop.client

    def shell(command: str) -> str:
        return client.execute(command, shell=True).output

    def shell_pid() -> str:
        return shell("pgrep -x gnome-shell").strip()

    fresh = {
        "theme": shell("gsettings get org.gnome.desktop.interface gtk-theme"),
        "zone": shell("timedatectl show -p Timezone --value"),
    }
    assert fresh == {"theme": "'Yaru'\n", "zone": "Asia/Hong_Kong\n"}
    first_shell = shell_pid()
    assert first_shell, "no GNOME Shell"
    # What a policy could plant for the next episode: settings, the time zone, HOME's GNOME
    # files (the settings database itself), a terminal left open.
    shell(
        "gsettings set org.gnome.desktop.interface gtk-theme Adwaita; "
        "gsettings set org.gnome.shell favorite-apps \"['vim.desktop']\"; "
        "timedatectl set-timezone Etc/UTC; echo planted >> ~/.config/dconf/user"
    )
    client.launch(["gnome-terminal"])
    wait_until(lambda: "Terminal" in shell("wmctrl -l"), interval=0.1, message="a terminal window")

    start = time.perf_counter()
    gnome_desktop.reset()
    elapsed = time.perf_counter() - start
    assert elapsed < 15, f"the in-place reset took {elapsed:.1f} s"

    assert shell_pid() not in ("", first_shell), "GNOME Shell was not started again"
    assert shell("gsettings get org.gnome.desktop.interface gtk-theme") == fresh["theme"]
    assert "'google-chrome.desktop'" in shell("gsettings get org.gnome.shell favorite-apps")
    assert shell("timedatectl show -p Timezone --value") == fresh["zone"]
    assert "planted" not in shell("cat ~/.config/dconf/user")
    assert "Terminal" not in shell("wmctrl -l")
    assert "240.00*" in shell("xrandr")
    frame = client.screenshot().to_array()
    assert frame.shape[:2] == (768, 1024)
    assert frame[:20, 200:800].astype(int).mean() < 40, "no top bar after the reset"
