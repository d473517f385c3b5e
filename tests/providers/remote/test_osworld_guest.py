"""The client, the remote provider, the env and `osworld-gym run` against OSWorld's own guest
server (a double of it on loopback, ``osworld_guest_double``): real HTTP, real commands."""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import requests
from osworld_guest_double import APPEND_EVENT_BUG, OSWORLD_SCREEN, OSWorldGuestDouble, osworld_guest

import osworld_gym  # noqa: F401 - registers OSWorld-v0
from osworld_gym.actions import Click, Done
from osworld_gym.errors import ProviderError
from osworld_gym.guest.client import GuestClient
from osworld_gym.providers.remote.provider import (
    GuestScriptReset,
    RemoteProvider,
    RemoteProviderConfig,
)

TREE = ("projects/webapp/src", "projects/webapp/tests", "projects/webapp/docs")
EXPECTED_TREE = {
    "type": "directory",
    "name": "projects",
    "children": [
        {
            "type": "directory",
            "name": "webapp",
            "children": [
                {"type": "file", "name": "README.md"},
                {"type": "directory", "name": "docs", "children": []},
                {"type": "directory", "name": "src", "children": []},
                {"type": "directory", "name": "tests", "children": []},
            ],
        }
    ],
}
# The bundled os-create-project-tree task's setup and evaluator, without its terminal (the
# double has no display): the evaluator lists "~/projects" and expects the sorted tree.
TASK = {
    "id": "project-tree-on-osworld-guest",
    "snapshot": "os",
    "instruction": "Create ~/projects/webapp with src, tests, docs and an empty README.md.",
    "source": "test",
    "config": [
        {"type": "execute", "parameters": {"command": "mkdir -p ~/projects", "shell": True}}
    ],
    "related_apps": ["os"],
    "evaluator": {
        "func": ["exact_match", "exact_match"],
        "conj": "and",
        "result": [
            {"type": "list_directory", "path": "~/projects"},
            {
                "type": "vm_command_line",
                "command": "stat -c %s ~/projects/webapp/README.md",
                "shell": True,
            },
        ],
        "expected": [
            {"type": "rule", "rules": {"expected": EXPECTED_TREE}},
            {"type": "rule", "rules": {"expected": "0\n"}},
        ],
    },
}


@pytest.fixture()
def guest(tmp_path: Path) -> collections.abc.Iterator[OSWorldGuestDouble]:
    with osworld_guest(tmp_path / "guest") as double:
        yield double


def _make_tree(home: Path) -> None:
    """What the agent's terminal commands would leave behind."""
    for folder in TREE:
        (home / folder).mkdir(parents=True, exist_ok=True)
    (home / "projects/webapp/README.md").touch()


def _remote(guest: OSWorldGuestDouble, tmp_path: Path, **settings: Any) -> RemoteProviderConfig:
    settings.setdefault("screen_size", OSWORLD_SCREEN)
    return RemoteProviderConfig(
        urls=(guest.url,), boot_timeout=10.0, lock_dir=str(tmp_path / "locks"), **settings
    )


# --- the double answers as OSWorld's server does --------------------------------------------


def test_the_double_has_osworlds_quirks(guest: OSWorldGuestDouble) -> None:
    assert requests.get(guest.url + "/health", timeout=5).status_code == 404
    _make_tree(guest.home)
    listing = requests.post(guest.url + "/list_directory", json={"path": "~/projects"}, timeout=5)
    assert listing.status_code == 400  # no ~ expansion
    absolute = str(guest.home / "projects/webapp")
    tree = requests.post(guest.url + "/list_directory", json={"path": absolute}, timeout=5)
    names = [c["name"] for c in tree.json()["directory_tree"]["children"]]
    assert names != sorted(names)
    ran = requests.post(guest.url + "/run_bash_script", json={"script": "touch ~/ran"}, timeout=5)
    assert ran.status_code == 500 and ran.json()["output"] == APPEND_EVENT_BUG
    assert (guest.home / "ran").exists()


# --- the client -----------------------------------------------------------------------------


def test_client_discovers_the_official_guest_and_its_screen(guest: OSWorldGuestDouble) -> None:
    with GuestClient(guest.url) as client:
        info = client.info()
        assert (info.extended, info.screen_size) == (False, OSWORLD_SCREEN)
        shot = client.screenshot(format="raw", settle=True)
        assert shot.to_array().shape == (OSWORLD_SCREEN[1], OSWORLD_SCREEN[0], 3)
        assert shot.settled is True


def test_list_directory_expands_home_and_sorts(guest: OSWorldGuestDouble) -> None:
    _make_tree(guest.home)
    with GuestClient(guest.url) as client:
        assert client.home() == str(guest.home)
        assert client.list_directory("~/projects") == EXPECTED_TREE
        assert client.list_directory(str(guest.home / "projects")) == EXPECTED_TREE
        home = client.list_directory("~")
        assert [c["name"] for c in home["children"]] == ["Desktop", "projects"]


@pytest.mark.heavy  # the console script
def test_run_script_runs_once_with_its_result(guest: OSWorldGuestDouble) -> None:
    with GuestClient(guest.url) as client:
        # /run_bash_script itself: OSWorld's 500 is read as the (useless) result it carries.
        raw = client.run_bash_script("echo once >> ~/runs.log")
        assert raw["returncode"] == -1 and raw["output"] == APPEND_EVENT_BUG
        assert guest.bash_script_runs == 1
        # run_script goes through /execute on this server: the script's own status and output.
        result = client.run_script("echo out; echo err >&2; pwd; echo again >> runs.log; exit 3")
        assert result.returncode == 3
        assert result.output == f"out\nerr\n{guest.home}\n"
        assert (guest.home / "runs.log").read_text() == "once\nagain\n"
        assert guest.bash_script_runs == 1
        (guest.home / "work").mkdir()
        assert client.run_script("pwd", working_dir="~/work").output == f"{guest.home}/work\n"
        timed_out = client.run_script("sleep 5", timeout=0.5)
        assert timed_out.returncode == 124


def test_actions_files_and_launch(guest: OSWorldGuestDouble) -> None:
    with GuestClient(guest.url) as client:
        client.actions([{"kind": "click", "x": 300, "y": 400}])
        assert guest.inputs() == [["click", [300, 400], {"button": "left", "clicks": 1}]]
        client.upload("~/Desktop/notes.txt", b"hello")
        assert (guest.home / "Desktop/notes.txt").read_bytes() == b"hello"
        assert client.download("~/Desktop/notes.txt") == b"hello"
        client.launch(["mousepad"])
        assert guest.launched == [["mousepad"]]


# --- the remote provider ----------------------------------------------------------------------


def test_provider_refuses_a_guest_of_another_screen_size(
    guest: OSWorldGuestDouble, tmp_path: Path
) -> None:
    config = _remote(guest, tmp_path, screen_size=(1280, 720))
    with pytest.raises(ProviderError) as info:
        RemoteProvider(config).launch()
    message = str(info.value)
    assert "1920x1080 screen" in message and "configured for 1280x720" in message
    assert "screen_size=(1920, 1080)" in message and "--screen-size 1920x1080" in message
    RemoteProvider(_remote(guest, tmp_path)).launch().close()  # the claim was released


def test_guest_script_reset_on_osworlds_server(guest: OSWorldGuestDouble, tmp_path: Path) -> None:
    _make_tree(guest.home)
    config = _remote(guest, tmp_path, reset=GuestScriptReset("rm -rf ~/projects"))
    with RemoteProvider(config).launch() as desktop:
        desktop.reset()
        assert not (guest.home / "projects").exists()
    failing = dataclasses.replace(config, reset=GuestScriptReset("echo no; exit 5"))
    with RemoteProvider(failing).launch() as desktop:
        with pytest.raises(ProviderError, match="exited with 5 (.|\n)*no"):
            desktop.reset()
    assert guest.bash_script_runs == 0  # /execute, never the route that answers 500


# --- the env --------------------------------------------------------------------------------


def test_env_episode_on_osworlds_server(guest: OSWorldGuestDouble, tmp_path: Path) -> None:
    """Setup, a click, and OSWorld's scoring of a task that lists ``~/projects``: 1.0 once the
    tree exists, 0.0 after the guest's own reset removed it."""
    reset = GuestScriptReset("rm -rf ~/projects")
    env = gym.make(
        "OSWorld-v0",
        provider=_remote(guest, tmp_path, reset=reset),
        tasks=[TASK],
        action_format="structured",
        screen_size=OSWORLD_SCREEN,
        max_steps=5,
    )
    try:
        obs, info = env.reset(options={"task_id": TASK["id"]})
        assert obs["screenshot"].shape == (OSWORLD_SCREEN[1], OSWORLD_SCREEN[0], 3)
        assert (guest.home / "projects").is_dir()  # the setup step ran
        _, _, _, _, info = env.step(Click(x=300, y=400))
        assert info["infra_error"] is None and info["action_error"] is None
        assert guest.inputs()[-1][:2] == ["click", [300, 400]]  # at screen pixels, unscaled
        _make_tree(guest.home)
        _, reward, terminated, _, info = env.step(Done())
        assert (reward, terminated) == (1.0, True), info.get("evaluation")
        env.reset(options={"task_id": TASK["id"]})
        assert not (guest.home / "projects/webapp").exists()
        _, reward, terminated, _, _ = env.step(Done())
        assert (reward, terminated) == (0.0, True)
    finally:
        env.close()
    assert "/health" in guest.paths() and "/run_bash_script" not in guest.paths()


def test_env_refuses_a_mismatched_screen(guest: OSWorldGuestDouble, tmp_path: Path) -> None:
    env = gym.make(
        "OSWorld-v0",
        provider=_remote(guest, tmp_path, screen_size=(1280, 720)),
        tasks=[TASK],
        screen_size=(1280, 720),
        restart_attempts=0,
    )
    try:
        with pytest.raises(ProviderError, match="1920x1080 screen(.|\n)*1280x720"):
            env.reset(options={"task_id": TASK["id"]})
    finally:
        env.close()
    assert "/setup/execute" not in guest.paths() and "/execute" not in guest.paths()


# --- osworld-gym run --provider remote ------------------------------------------------------


def _osworld_gym(*args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("osworld-gym")
    assert script, "the osworld-gym console script is not installed"
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ((), "--guest-url http://HOST:5000"),
        (("--guest-url", "http://127.0.0.1:9", "--num-envs", "2"), "--num-envs 2 needs"),
        (("--guest-url", "127.0.0.1:9"), "guest URL"),
        (("--guest-url", "http://127.0.0.1:9", "--guest-token-env", "NO_SUCH_VAR_X"), "not set"),
    ],
)
@pytest.mark.heavy  # the console script
def test_run_remote_usage_errors(tmp_path: Path, extra: tuple[str, ...], expected: str) -> None:
    results = tmp_path / "results"
    done = _osworld_gym("run", "--provider", "remote", "--output-dir", str(results), *extra)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert not results.exists()  # nothing started


@pytest.mark.heavy  # the console script
def test_run_guest_url_for_another_provider_is_a_usage_error(tmp_path: Path) -> None:
    done = _osworld_gym("run", "--guest-url", "http://127.0.0.1:9", "--output-dir", str(tmp_path))
    assert done.returncode == 2 and "for --provider remote" in done.stderr


@pytest.mark.heavy  # the console script
def test_run_on_osworlds_server(guest: OSWorldGuestDouble, tmp_path: Path) -> None:
    """`osworld-gym run --provider remote --guest-url ...` scores a task on the guest."""
    task_file = tmp_path / f"{TASK['id']}.json"
    task_file.write_text(json.dumps(TASK))
    _make_tree(guest.home)
    results = tmp_path / "results"
    done = _osworld_gym(
        "run",
        *("--provider", "remote", "--guest-url", guest.url, "--tasks", str(task_file)),
        *("--agent", "noop", "--hard", "--max-steps", "1", "--screen-size", "1920x1080"),
        *("--output-dir", str(results), "--progress", "lines"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(next(results.rglob("summary.json")).read_text())
    assert summary["overall"]["success_rate"] == 1.0
    assert summary["settings"]["provider"] == "remote"
    assert "/health" in guest.paths()  # the run reached the guest
