"""A task that launches an app the desktop lacks fails `reset` at once, naming the app.

Not three relaunches and ``TooManyRestartsError``: the guest says which program is missing
(OSWorld's 500 answer plus ``missing_command``), and the setup interpreter turns that into a
``TaskSetupError`` on the first attempt. OSWorld's own guest's message is understood too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
from desktop_helpers import SMALL_SCREEN

from osworld_gym.env import OSWorldEnv
from osworld_gym.errors import GuestHTTPError, TaskSetupError
from osworld_gym.providers.local.provider import LocalDesktop
from osworld_gym.task_setup.downloads import AssetCache
from osworld_gym.task_setup.interpreter import SetupContext, SetupInterpreter

MISSING = "osworld-gym-no-such-app"


class FakeClient:
    """A guest client whose launch fails as a guest answers it."""

    def __init__(self, body: object) -> None:
        self.body, self.launches = body, 0

    def launch(self, command: Any, *, shell: bool = False) -> None:
        self.launches += 1
        raise GuestHTTPError("/setup/launch", 500, self.body)


def interpreter(client: FakeClient, tmp_path: Path) -> SetupInterpreter:
    context = SetupContext(client=client, task_id="t1", cache=AssetCache(tmp_path))  # type: ignore[arg-type]
    return SetupInterpreter(context, sleep=lambda s: None)


@pytest.mark.parametrize(
    "body",
    [
        {"status": "error", "message": "[Errno 2] No such file or directory: 'vlc'"},  # OSWorld
        {"status": "error", "message": "could not start", "missing_command": "vlc"},  # ours
    ],
)
def test_a_missing_program_is_a_task_setup_error_at_once(body: object, tmp_path: Path) -> None:
    client = FakeClient(body)
    with pytest.raises(TaskSetupError, match=r"t1: the desktop has no VLC \(vlc\) to launch"):
        interpreter(client, tmp_path).run([{"type": "launch", "parameters": {"command": ["vlc"]}}])
    assert client.launches == 1


def test_other_launch_failures_stay_guest_faults(tmp_path: Path) -> None:
    client = FakeClient({"status": "error", "message": "out of memory"})
    with pytest.raises(GuestHTTPError):
        interpreter(client, tmp_path).run([{"type": "launch", "parameters": {"command": ["x"]}}])
    assert client.launches == 3  # the step's retries, as before


def missing_app_task(command: Any, shell: bool = False) -> dict[str, Any]:
    return {
        "id": "launch-missing",
        "instruction": "use the app",
        "config": [{"type": "launch", "parameters": {"command": command, "shell": shell}}],
        "evaluator": {"func": "infeasible"},
    }


@pytest.mark.desktop
@pytest.mark.parametrize(
    ("command", "shell"),
    [([MISSING, "--flag"], False), (f"VLC_VERBOSE=-1 {MISSING} --no-audio 'a b.mp4'", True)],
)
def test_reset_names_the_missing_app_on_the_first_attempt(command: Any, shell: bool) -> None:
    env = OSWorldEnv(tasks=[missing_app_task(command, shell)], screen_size=SMALL_SCREEN)
    try:
        with pytest.raises(TaskSetupError, match=MISSING):
            env.reset(options={"task_id": "launch-missing"})
        assert env.provider.launches == 1  # no relaunch
        assert env.restarts == 1
    finally:
        env.close()


@pytest.mark.desktop
def test_the_guest_answers_osworlds_shape_with_the_missing_command(
    clean_desktop: LocalDesktop,
) -> None:
    headers = {"Content-Type": "application/json"}
    if clean_desktop.token:
        headers["Authorization"] = f"Bearer {clean_desktop.token}"
    url = clean_desktop.endpoint + "/setup/launch"
    for payload in (
        {"command": [MISSING], "shell": False},
        {"command": f"X=1 {MISSING} --x", "shell": True},
    ):
        answer = requests.post(url, headers=headers, data=json.dumps(payload), timeout=30)
        assert answer.status_code == 500
        body = answer.json()
        assert body["status"] == "error" and body["missing_command"] == MISSING
        assert f"No such file or directory: '{MISSING}'" in body["message"]
    builtin = {"command": "cd /tmp && true", "shell": True}  # a shell builtin is no program
    answer = requests.post(url, headers=headers, data=json.dumps(builtin), timeout=30)
    assert answer.status_code == 200 and answer.text.endswith("launched successfully")
