"""Whole episodes in containers: bundled tasks (oracle 1.0, no-op 0.0) and a real OSWorld task."""

from __future__ import annotations

import collections.abc
import json
from pathlib import Path

import pytest
from desktop_helpers import run_episode
from osworld_data import require_osworld_tasks
from PIL import Image

from osworld_gym.actions import Done, Hotkey, TypeText, Wait
from osworld_gym.env import OSWorldEnv
from osworld_gym.policies.oracles.agent import play
from osworld_gym.policies.oracles.desktop_basics_system import ORACLES as SYSTEM_ORACLES
from osworld_gym.providers.docker.provider import DockerProviderConfig
from osworld_gym.tasks.placeholders import download_cache_name

SCREEN = (1280, 720)  # the oracles' coordinates are for this size
RESTORE_FROM_TRASH = "5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57"  # os: recover a poster from Trash
POSTER = "poster_party_night.webp"


@pytest.fixture(scope="module")
def bundled_env(guest_image: str) -> collections.abc.Iterator[OSWorldEnv]:
    provider = DockerProviderConfig(image=guest_image, screen_size=SCREEN)
    with OSWorldEnv(
        provider=provider,
        tasks="desktop-basics",
        action_format="structured",
        screen_size=SCREEN,
        max_steps=30,
        offline=True,
    ) as env:
        yield env


def test_terminal_task_files_live_under_home_user(bundled_env: OSWorldEnv) -> None:
    bundled_env.reset(options={"task_id": "os-chmod-script"})
    client = bundled_env.unwrapped._desktop.client
    stat = client.execute("stat -c '%U %a %n' ~/scripts/backup.sh", shell=True).output
    assert stat == "user 644 /home/user/scripts/backup.sh\n"
    steps = SYSTEM_ORACLES["os-chmod-script"]
    assert run_episode(bundled_env, "os-chmod-script", steps) == 1.0
    assert run_episode(bundled_env, "os-chmod-script", [Done()]) == 0.0


def test_libreoffice_task_in_a_container(bundled_env: OSWorldEnv) -> None:
    # The office scripts wait on the screen between keys: the oracle agent plays them.
    assert play(bundled_env, "calc-bold-header-row")[0] == 1.0
    assert run_episode(bundled_env, "calc-bold-header-row", [Done()]) == 0.0


def _osworld_task(task_id: str) -> dict:
    (match,) = require_osworld_tasks().glob(f"examples/*/{task_id}.json")
    return json.loads(match.read_text())


def test_osworld_task_with_cached_download_scores_one(guest_image: str, tmp_path: Path) -> None:
    """OSWorld's "recover the poster from the Trash": its download comes from a local cache."""
    task = _osworld_task(RESTORE_FROM_TRASH)
    (download,) = [step for step in task["config"] if step["type"] == "download"]
    (file,) = download["parameters"]["files"]
    cached = tmp_path / "cache" / task["id"] / download_cache_name(file["url"], file["path"])
    cached.parent.mkdir(parents=True)
    Image.new("RGB", (64, 48), (200, 40, 90)).save(cached, "WEBP")
    provider = DockerProviderConfig(image=guest_image, screen_size=SCREEN)
    with OSWorldEnv(
        provider=provider,
        tasks=[task],
        action_format="structured",
        screen_size=SCREEN,
        max_steps=6,
        offline=True,
        cache_dir=str(tmp_path / "cache"),
    ) as env:
        env.reset(options={"task_id": task["id"]})
        client = env.unwrapped._desktop.client
        # The setup downloaded (from the cache) and trashed the poster, as in OSWorld.
        trashed = client.execute("ls ~/.local/share/Trash/files", shell=True).output
        assert trashed == "poster_party_night.webp\n"
        assert client.download("/home/user/.local/share/Trash/files/poster_party_night.webp") == (
            cached.read_bytes()
        )
        solution = [
            [Hotkey(keys=("ctrl", "alt", "t"))],  # a terminal, as on Ubuntu
            [Wait(seconds=2)],
            # No gvfs in the image (`gio trash --restore` needs it): move the file back.
            [TypeText(text=f"mv ~/.local/share/Trash/files/{POSTER} ~/Desktop/\n")],
            [Wait(seconds=1)],
            Done(),
        ]
        reward = 0.0
        for step in solution:
            _, reward, terminated, truncated, info = env.step(step)
            assert info["infra_error"] is None, info["infra_error"]
            if terminated or truncated:
                break
        assert reward == 1.0
        # Doing nothing leaves the poster in the Trash.
        env.reset(options={"task_id": task["id"]})
        _, reward, *_ = env.step(Done())
        assert reward == 0.0


RENAME_DIRECTORY = "e0df059f-28a6-4169-924f-b9623e7184cc"  # os: sudo mkdir in setup; rename it


def test_osworld_task_writing_home_user_stays_in_the_container(
    guest_image: str, tmp_path: Path
) -> None:
    """OSWorld's "rename todo_list_Jan_1": its setup runs `sudo mkdir` under /home/user."""
    task = _osworld_task(RENAME_DIRECTORY)
    host_paths = [Path(f"/home/user/Desktop/todo_list_Jan_{n}") for n in (1, 2)]
    assert not any(path.exists() for path in host_paths)
    provider = DockerProviderConfig(image=guest_image, screen_size=SCREEN)
    with OSWorldEnv(
        provider=provider,
        tasks=[task],
        action_format="structured",
        screen_size=SCREEN,
        max_steps=8,
        offline=True,
        cache_dir=str(tmp_path / "cache"),
    ) as env:
        steps = [
            Hotkey(keys=("ctrl", "alt", "t")),
            Wait(seconds=2),
            TypeText(text="mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2\n"),
            Wait(seconds=1),
            Done(),
        ]
        assert run_episode(env, task["id"], steps) == 1.0
        assert run_episode(env, task["id"], [Done()]) == 0.0
    assert not any(path.exists() for path in host_paths)
