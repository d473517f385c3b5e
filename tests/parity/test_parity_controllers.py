"""OSWorld's own host controllers driving our guest server on a real desktop.

OSWorld's ``PythonController`` (screenshots, files, pyautogui code through ``/execute``,
computer_13 actions, queries) and ``SetupController`` (the task-setup steps that need no
network) run in the side venv against a sandboxed local desktop, without a token, as OSWorld's
host would talk to its VM. Each call's answer is checked, and so is its effect on the desktop,
read back through our own client.
"""

from __future__ import annotations

import base64
import collections.abc
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_helpers import launch_desktop, wait_until
from fixture_marks import needs
from PIL import Image

from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = [pytest.mark.parity, pytest.mark.desktop]

HERE = Path(__file__).parent
DRIVER = HERE / "osworld_controllers.py"
CALL_TIMEOUT_S = 240.0


@pytest.fixture(scope="module")
@needs("desktop")
def desktop() -> collections.abc.Iterator[LocalDesktop]:
    with launch_desktop(use_token=False) as launched:
        yield launched


class Controllers:
    """Calls into OSWorld's controllers, one driver process per batch of calls."""

    def __init__(self, python: Path, desktop: LocalDesktop, cache_dir: Path) -> None:
        self.python, self.desktop, self.cache_dir = python, desktop, cache_dir

    def run(self, *calls: tuple[str, str, list[Any], dict[str, Any]]) -> list[Any]:
        """Make the calls in order; return their values (bytes decoded); fail on an exception."""
        host, port = self.desktop.endpoint.removeprefix("http://").rsplit(":", 1)
        request = {
            "ip": host,
            "port": int(port),
            "screen": list(self.desktop.client.info().screen_size or (0, 0)),
            "cache_dir": str(self.cache_dir),
            "calls": [
                {"on": on, "method": method, "args": args, "kwargs": kwargs}
                for on, method, args, kwargs in calls
            ],
        }
        done = subprocess.run(
            [str(self.python), str(DRIVER)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        answers = json.loads(done.stdout)
        values = []
        for call, answer in zip(calls, answers, strict=True):
            assert answer["ok"], f"{call[1]} raised {answer['type']}: {answer['traceback']}"
            values.append(_unwire(answer["value"]))
        return values

    def one(self, on: str, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.run((on, method, list(args), kwargs))[0]


def _unwire(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"bytes_b64"}:
        return base64.b64decode(value["bytes_b64"])
    if isinstance(value, dict):
        return {k: _unwire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwire(v) for v in value]
    return value


@pytest.fixture(scope="module")
def osworld_controllers(
    osworld_python: Path, desktop: LocalDesktop, tmp_path_factory: pytest.TempPathFactory
) -> Controllers:
    return Controllers(osworld_python, desktop, tmp_path_factory.mktemp("osworld-cache"))


def _sh(desktop: LocalDesktop, command: str) -> str:
    return desktop.client.execute(command, shell=True).output


def _pointer(desktop: LocalDesktop) -> tuple[int, int]:
    fields = dict(part.split(":") for part in _sh(desktop, "xdotool getmouselocation").split()[:2])
    return int(fields["x"]), int(fields["y"])


def _windows(desktop: LocalDesktop) -> str:
    return _sh(desktop, "wmctrl -l")


# --- PythonController ---------------------------------------------------------------------


def test_screenshot_and_screen_size(
    osworld_controllers: Controllers, desktop: LocalDesktop
) -> None:
    shot, size, platform = osworld_controllers.run(
        ("python", "get_screenshot", [], {}),
        ("python", "get_vm_screen_size", [], {}),
        ("python", "get_vm_platform", [], {}),
    )
    width, height = desktop.client.info().screen_size or (0, 0)
    image = Image.open(io.BytesIO(shot))
    assert image.format == "PNG" and image.size == (width, height)
    assert size == {"width": width, "height": height}
    assert platform == "Linux"


def test_pyautogui_code_and_computer_13_moves_land(
    osworld_controllers: Controllers, desktop: LocalDesktop
) -> None:
    answer = osworld_controllers.one(
        "python", "execute_python_command", "pyautogui.moveTo(123, 45)"
    )
    assert answer["returncode"] == 0, answer
    assert _pointer(desktop) == (123, 45)
    osworld_controllers.one(
        "python", "execute_action", {"action_type": "MOVE_TO", "parameters": {"x": 300, "y": 200}}
    )
    assert _pointer(desktop) == (300, 200)


def test_computer_13_typing_reaches_a_window_and_get_file_reads_it(
    osworld_controllers: Controllers, desktop: LocalDesktop
) -> None:
    desktop.client.launch(
        [
            "xterm",
            "-title",
            "osw-typing",
            "-e",
            "sh",
            "-c",
            'IFS= read -r l; printf %s "$l" > ~/typed.txt',
        ]
    )
    wait_until(lambda: "osw-typing" in _windows(desktop), message="the xterm")
    osworld_controllers.one("setup", "_activate_window_setup", "osw-typing")
    osworld_controllers.run(
        (
            "python",
            "execute_action",
            [{"action_type": "TYPING", "parameters": {"text": "hello, world"}}],
            {},
        ),
        (
            "python",
            "execute_action",
            [{"action_type": "PRESS", "parameters": {"key": "enter"}}],
            {},
        ),
    )
    wait_until(lambda: _sh(desktop, "cat ~/typed.txt 2>/dev/null"), message="the typed line")
    assert osworld_controllers.one("python", "get_file", "/home/user/typed.txt") == b"hello, world"
    assert osworld_controllers.one("python", "get_file", "/home/user/no-such-file") is None


def test_computer_13_hotkey_opens_the_terminal_as_on_osworlds_ubuntu(
    osworld_controllers: Controllers, desktop: LocalDesktop
) -> None:
    hotkey = {"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "alt", "t"]}}
    osworld_controllers.one("python", "execute_action", hotkey)
    wait_until(
        lambda: "gnome-terminal" in _sh(desktop, "wmctrl -lx").lower(),
        timeout=30,
        message="the terminal Ctrl+Alt+T opens",
    )
    assert isinstance(osworld_controllers.one("python", "get_terminal_output"), str)


def test_bash_scripts_directory_tree_and_accessibility_tree(
    osworld_controllers: Controllers, desktop: LocalDesktop
) -> None:
    script, tree, a11y = osworld_controllers.run(
        ("python", "run_bash_script", ["echo out; echo err >&2; exit 3"], {}),
        ("python", "get_vm_directory_tree", ["/home/user"], {}),
        ("python", "get_accessibility_tree", [], {}),
    )
    assert script["returncode"] == 3 and "out" in script["output"] and "err" in script["output"]
    assert tree["name"] == "user" and tree["type"] == "directory"
    assert {"Desktop", "Documents"} <= {child["name"] for child in tree["children"]}
    assert isinstance(a11y, str) and a11y.lstrip().startswith("<")


# --- SetupController ----------------------------------------------------------------------


def test_execute_command_and_upload_steps(
    osworld_controllers: Controllers, desktop: LocalDesktop, tmp_path: Path
) -> None:
    local = tmp_path / "notes.txt"
    local.write_text("uploaded by OSWorld's controller\n")
    made = ["sh", "-c", "echo made > ~/Desktop/made.txt"]
    touch = "touch ~/Desktop/touched.txt"
    upload = [{"local_path": str(local), "path": "/home/user/Documents/notes.txt"}]
    steps = [
        {"type": "execute", "parameters": {"command": made}},
        {"type": "command", "parameters": {"command": touch, "shell": True}},
        {"type": "upload_file", "parameters": {"files": upload}},
        {"type": "sleep", "parameters": {"seconds": 0.1}},
    ]  # fmt: skip
    assert osworld_controllers.one("setup", "setup", steps) is True
    assert desktop.client.download("~/Desktop/made.txt") == b"made\n"
    assert desktop.client.download("~/Desktop/touched.txt") == b""
    assert desktop.client.download("~/Documents/notes.txt") == local.read_bytes()


def test_launch_activate_close_and_open_steps(
    osworld_controllers: Controllers, desktop: LocalDesktop
) -> None:
    desktop.client.upload("~/Documents/opened.txt", b"open me\n")
    launch = [{"type": "launch", "parameters": {"command": ["xterm", "-title", "osw-launched"]}}]
    assert osworld_controllers.one("setup", "setup", launch) is True
    wait_until(lambda: "osw-launched" in _windows(desktop), message="the launched xterm")
    osworld_controllers.one("setup", "setup", [
        {"type": "activate_window", "parameters": {"window_name": "osw-launched"}},
        {"type": "close_window", "parameters": {"window_name": "osw-launched"}},
    ])  # fmt: skip
    wait_until(lambda: "osw-launched" not in _windows(desktop), message="the xterm to close")
    # OSWorld's open step returns once the guest has the file's window open.
    opened = [{"type": "open", "parameters": {"path": "/home/user/Documents/opened.txt"}}]
    assert osworld_controllers.one("setup", "setup", opened) is True
    assert "opened.txt" in _windows(desktop)


def test_a_failing_step_raises_as_in_osworld(osworld_controllers: Controllers) -> None:
    missing = [{"type": "open", "parameters": {"path": "/home/user/no-such-file.txt"}}]
    host, port = osworld_controllers.desktop.endpoint.removeprefix("http://").rsplit(":", 1)
    request = {
        "ip": host,
        "port": int(port),
        "screen": [640, 480],
        "cache_dir": str(osworld_controllers.cache_dir),
        "calls": [{"on": "setup", "method": "setup", "args": [missing], "kwargs": {}}],
    }
    done = subprocess.run(
        [str(osworld_controllers.python), str(DRIVER)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT_S,
        check=True,
    )
    (answer,) = json.loads(done.stdout)
    assert not answer["ok"] and "Setup step 1 failed" in answer["message"]
