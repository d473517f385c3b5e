"""OSWorld's task files that need GNOME's desktop, on a ``session="gnome"`` local desktop.

Solved through the desktop as an agent would: the dock's context menu, not ``gsettings``.
"""

from __future__ import annotations

import collections.abc

import pytest
from desktop_helpers import run_episode
from real_tasks import SCREEN, real_env, real_task, task_id

from osworld_gym.actions import Click, Done, Move, RightClick, Wait
from osworld_gym.env import OSWorldEnv
from osworld_gym.providers import gnome_session
from osworld_gym.providers.local import LocalProviderConfig

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.osworld_tasks,
    pytest.mark.skipif(
        gnome_session.available() is not None,
        reason=f"no GNOME session here: {gnome_session.available()}",
    ),
]

REMOVE_FAVORITE = "ec4e3f68"  # setup pins thunderbird, vim, google-chrome; unpin vim
# The dock (1280x720): vim's icon first, as the dock lays out that setup's favorites; its
# context menu opens to the right, "Unpin" its second item.
VIM_ICON = (35, 65)
MENU = (slice(40, 125), slice(85, 280))
UNPIN = (116, 107)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[OSWorldEnv]:
    provider = LocalProviderConfig(screen_size=SCREEN, session="gnome")
    cache = tmp_path_factory.mktemp("cache")
    with real_env(
        [real_task("os", REMOVE_FAVORITE)], provider=provider, cache_dir=str(cache)
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
