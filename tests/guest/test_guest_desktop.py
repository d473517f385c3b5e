"""The guest server on a real local desktop: screenshots, typed input, apps, files, limits."""

from __future__ import annotations

import io
import json
import socket
import time

import numpy as np
import pytest
import requests
from desktop_helpers import SMALL_SCREEN, wait_until
from PIL import Image

from osworld_gym.errors import GuestAuthError, GuestHTTPError
from osworld_gym.guest import protocol
from osworld_gym.guest.client import GuestClient
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop


def _pixel(desktop: LocalDesktop, x: int, y: int, **options: object) -> tuple[int, ...]:
    array = desktop.client.screenshot(format="raw", **options).to_array()
    return tuple(int(v) for v in array[y, x])


def _xterm(
    desktop: LocalDesktop, title: str, color: str = "white", geometry: str = "80x24+0+0"
) -> None:
    desktop.client.launch(
        ["xterm", "-title", title, "-bg", color, "-fg", "black", "-geometry", geometry]
    )
    wait_until(
        lambda: title in desktop.client.execute(["wmctrl", "-l"]).output, message=f"xterm {title!r}"
    )
    desktop.client.activate_window(title)


def _read(desktop: LocalDesktop, path: str) -> bytes | None:
    try:
        return desktop.client.download(path)
    except GuestHTTPError as e:
        assert e.status == 404
        return None


class TestScreenshot:
    def test_size_matches_configured_screen(self, desktop: LocalDesktop) -> None:
        for fmt, ctype in (("png", "image/png"), ("jpeg", "image/jpeg")):
            shot = desktop.client.screenshot(format=fmt)
            assert shot.content_type == ctype
            with Image.open(io.BytesIO(shot.data)) as image:
                assert image.size == SMALL_SCREEN
        raw = desktop.client.screenshot(format="raw")
        assert len(raw.data) == SMALL_SCREEN[0] * SMALL_SCREEN[1] * 3
        assert raw.to_array().shape == (SMALL_SCREEN[1], SMALL_SCREEN[0], 3)

    def test_resize_to_pixel_budget(self, desktop: LocalDesktop) -> None:
        shot = desktop.client.screenshot(format="raw", max_pixels=320 * 180)
        assert (shot.width, shot.height) == (320, 180)
        assert shot.to_array().shape == (180, 320, 3)

    def test_shows_what_is_on_screen(self, clean_desktop: LocalDesktop) -> None:
        assert _pixel(clean_desktop, 200, 200, cursor=False) == (0, 0, 0)
        _xterm(clean_desktop, "green-term", color="#00ff00", geometry="40x10+100+100")
        wait_until(
            lambda: _pixel(clean_desktop, 200, 200, cursor=False) == (0, 255, 0),
            message="the green xterm on the screenshot",
        )

    def test_cursor_is_drawn_in(self, clean_desktop: LocalDesktop) -> None:
        clean_desktop.client.actions([{"kind": "move", "x": 600, "y": 400}])
        with_cursor = clean_desktop.client.screenshot(format="raw").to_array()
        without = clean_desktop.client.screenshot(format="raw", cursor=False).to_array()
        diff = np.argwhere((with_cursor != without).any(axis=2))
        assert len(diff) > 20  # the pointer's pixels
        assert (diff.min(axis=0) >= (395, 595)).all() and (diff.max(axis=0) <= (440, 640)).all()

    def test_settle_reports_a_still_screen(self, desktop: LocalDesktop) -> None:
        shot = desktop.client.screenshot(settle=True, settle_timeout=2.0, settle_quiet=0.1)
        assert shot.settled is True
        assert 0.1 <= shot.settle_seconds < 2.0


class TestTypedInput:
    def test_click_and_type_into_xterm(self, clean_desktop: LocalDesktop) -> None:
        client = clean_desktop.client
        _xterm(clean_desktop, "typing-term")
        before = client.screenshot(format="raw", cursor=False).to_array()
        client.actions(
            [
                {"kind": "click", "x": 100, "y": 100},
                {"kind": "type", "text": "printf '%s' 'Grüße, 世界 ✓ <ok>' > ~/typed.txt\n"},
            ]
        )
        wait_until(
            lambda: _read(clean_desktop, "~/typed.txt") == "Grüße, 世界 ✓ <ok>".encode(),
            message="xterm to write the typed text",
        )
        after = client.screenshot(format="raw", cursor=False).to_array()
        assert (before != after).any()

    def test_typing_into_editor_and_saving(self, clean_desktop: LocalDesktop) -> None:
        client = clean_desktop.client
        client.upload("~/Documents/note.txt", b"")
        client.launch(["mousepad", "~/Documents/note.txt"])
        wait_until(
            lambda: "note.txt" in client.execute(["wmctrl", "-l"]).output,
            timeout=30,
            message="the mousepad window",
        )
        client.activate_window("note.txt")
        text = "Hello, wörld — ñandú ✓ 你好\nsecond line\twith tab"
        client.actions(
            [
                {"kind": "click", "x": SMALL_SCREEN[0] // 2, "y": SMALL_SCREEN[1] // 2},
                {"kind": "type", "text": text},
                {"kind": "hotkey", "keys": ["ctrl", "s"]},
            ]
        )
        wait_until(
            lambda: _read(clean_desktop, "~/Documents/note.txt") == text.encode(),
            timeout=20,
            message="mousepad to save exactly the typed text",
        )

    def test_hotkeys_and_presses(self, clean_desktop: LocalDesktop) -> None:
        _xterm(clean_desktop, "keys-term")
        clean_desktop.client.actions(
            [
                {"kind": "type", "text": "echo abc"},
                {"kind": "press", "key": "backspace", "presses": 2},
                {"kind": "key_down", "key": "shift"},
                {"kind": "type", "text": "z"},
                {"kind": "key_up", "key": "shift"},
                {"kind": "type", "text": " > ~/keys.txt"},
                {"kind": "press", "key": "enter"},
            ]
        )
        wait_until(lambda: _read(clean_desktop, "~/keys.txt") == b"aZ\n", message="keys.txt")

    def test_every_pyautogui_key_can_be_pressed(self, clean_desktop: LocalDesktop) -> None:
        # Twice each, so that lock keys (caps, num, scroll) end where they started.
        keys = [{"kind": "press", "key": k, "presses": 2} for k in protocol.KEY_NAMES]
        assert clean_desktop.client.actions(keys)["executed"] == len(protocol.KEY_NAMES)

    def test_pointer_actions_move_the_pointer(self, desktop: LocalDesktop) -> None:
        client = desktop.client
        client.actions([{"kind": "drag", "x": 10, "y": 10, "to_x": 300, "to_y": 200}])
        assert client.cursor_position() == (300, 200)
        client.actions([{"kind": "scroll", "x": 50, "y": 60, "dy": -3}])
        assert client.cursor_position() == (50, 60)
        client.actions([{"kind": "mouse_down", "x": 70, "y": 80}, {"kind": "mouse_up"}])
        assert client.cursor_position() == (70, 80)

    def test_invalid_action_is_refused_and_nothing_runs(self, desktop: LocalDesktop) -> None:
        client = desktop.client
        client.actions([{"kind": "move", "x": 5, "y": 5}])
        bad = [{"kind": "move", "x": 50, "y": 50}, {"kind": "hotkey", "keys": ["ctrl", "nokey"]}]
        response = requests.post(
            f"{desktop.endpoint}/actions",
            json={"actions": bad},
            headers={"Authorization": f"Bearer {desktop.token}"},
            timeout=10,
        )
        assert response.status_code == 400
        assert "actions[1]" in response.json()["message"]
        assert client.cursor_position() == (5, 5)


class TestPyautoguiThroughExecute:
    def test_pyautogui_code_takes_effect(self, desktop: LocalDesktop) -> None:
        result = desktop.client.execute_python("pyautogui.moveTo(123, 456)")
        assert result.returncode == 0, result.error
        assert desktop.client.cursor_position() == (123, 456)

    def test_pyautogui_typing_reaches_an_app(self, clean_desktop: LocalDesktop) -> None:
        _xterm(clean_desktop, "pyautogui-term")
        code = "pyautogui.write('echo viapyautogui > ~/pg.txt'); pyautogui.press('enter')"
        assert clean_desktop.client.execute_python(code).returncode == 0
        wait_until(
            lambda: _read(clean_desktop, "~/pg.txt") == b"viapyautogui\n",
            message="pyautogui's typing",
        )


class TestRobustness:
    def _raw(self, desktop: LocalDesktop, payload: bytes) -> bytes:
        port = int(desktop.endpoint.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(payload)
            conn.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)

    @pytest.mark.parametrize(
        ("method", "path", "kwargs", "status"),
        [
            (
                "POST",
                "/execute",
                {"data": b"{not json", "headers": {"Content-Type": "application/json"}},
                400,
            ),
            ("POST", "/execute", {"json": [1, 2]}, 400),
            ("POST", "/execute", {"json": {"command": 42}}, 400),
            ("POST", "/execute", {"json": {"command": "echo 'unbalanced"}}, 400),
            ("POST", "/file", {"data": {}}, 400),
            ("POST", "/file", {"data": {"file_path": "/no/such/file"}}, 404),
            (
                "POST",
                "/setup/upload",
                {"data": b"--x\r\nbroken", "headers": {"Content-Type": "multipart/form-data"}},
                400,
            ),
            ("POST", "/setup/upload", {"data": {"file_path": "/tmp/x"}}, 400),
            ("POST", "/list_directory", {"json": {"path": "/no/such/dir"}}, 400),
            ("POST", "/window_size", {"data": {}}, 400),
            ("POST", "/setup/activate_window", {"json": {}}, 400),
            ("POST", "/setup/open_file", {"json": {"path": "/no/such/file.txt"}}, 404),
            ("POST", "/run_python", {"json": {}}, 400),
            ("POST", "/run_bash_script", {"json": {"script": "true", "timeout": "soon"}}, 400),
            ("POST", "/actions", {"json": {"actions": "click"}}, 400),
            ("GET", "/screenshot?format=gif", {}, 400),
            ("GET", "/screenshot?quality=abc", {}, 400),
            ("GET", "/execute", {}, 405),
            ("DELETE", "/file", {}, 405),
            ("GET", "/no/such/endpoint", {}, 404),
            ("POST", "/end_recording", {}, 400),
        ],
    )
    def test_malformed_requests_get_json_4xx(
        self, desktop: LocalDesktop, method: str, path: str, kwargs: dict, status: int
    ) -> None:
        headers = {"Authorization": f"Bearer {desktop.token}", **kwargs.pop("headers", {})}
        response = requests.request(
            method, desktop.endpoint + path, headers=headers, timeout=30, **kwargs
        )
        assert response.status_code == status, response.text
        assert response.headers["Content-Type"] == "application/json"
        assert response.json()["status"] == "error"
        assert desktop.client.screen_size() == SMALL_SCREEN

    def test_garbage_on_the_socket_does_not_stop_the_server(self, desktop: LocalDesktop) -> None:
        for payload in (
            b"\x00\x01\x02 garbage\r\n\r\n",
            b"GET\r\n\r\n",
            b"POST /execute HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
            b'POST /execute HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"short"',
        ):
            reply = self._raw(desktop, payload)
            # Lines that are not HTTP/1.x get an HTTP/0.9-style answer: the JSON body alone.
            assert reply.startswith(b"HTTP/1.") or json.loads(reply)["status"] == "error"
        assert desktop.client.screen_size() == SMALL_SCREEN

    def test_body_over_the_limit_is_refused(self, desktop: LocalDesktop) -> None:
        headers = {"Authorization": f"Bearer {desktop.token}"}
        response = requests.post(
            f"{desktop.endpoint}/execute",
            data=b"x" * (17 * 1024 * 1024),
            headers=headers,
            timeout=60,
        )
        assert response.status_code == 413
        assert desktop.client.screen_size() == SMALL_SCREEN

    def test_wrong_or_missing_token_is_refused(self, desktop: LocalDesktop) -> None:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": desktop.token}):
            response = requests.post(
                f"{desktop.endpoint}/execute",
                json={"command": ["true"]},
                headers=headers,
                timeout=10,
            )
            assert response.status_code == 401
            assert response.json()["status"] == "error"
        with pytest.raises(GuestAuthError):
            GuestClient(desktop.endpoint, token="wrong").screen_size()
        assert desktop.client.execute(["true"]).returncode == 0

    def test_execute_timeout_and_failures_are_reported(self, desktop: LocalDesktop) -> None:
        result = desktop.client.execute("echo out; echo err >&2; exit 3", shell=True)
        assert (result.output, result.error, result.returncode) == ("out\n", "err\n", 3)
        with pytest.raises(GuestHTTPError) as info:
            desktop.client.execute(["/no/such/program"])
        assert info.value.status == 500


def test_a_launched_program_that_quits_leaves_no_zombie(desktop: LocalDesktop) -> None:
    """OSWorld's checks find running apps with ``ps aux | grep``: a quit app must be gone."""
    client = desktop.client
    client.execute("printf '#!/bin/sh\\ntouch /tmp/quitter-ran\\n' > /tmp/quitter", shell=True)
    client.execute(["chmod", "+x", "/tmp/quitter"])
    client.launch(["/tmp/quitter"])
    wait_until(lambda: _read(desktop, "/tmp/quitter-ran") is not None, message="the program")

    def listed() -> str:
        return client.execute("ps -eo stat=,comm= | grep -w quitter || true", shell=True).output

    wait_until(lambda: not listed(), timeout=5, message="no quitter in the process list")


def test_recording_produces_an_mp4(desktop: LocalDesktop, tmp_path) -> None:
    client = desktop.client
    client.start_recording()
    with pytest.raises(GuestHTTPError) as info:
        client.start_recording()
    assert info.value.status == 400
    for x in range(0, 400, 40):  # something moving on screen, for a few frames
        client.actions([{"kind": "move", "x": x, "y": 100}])
        time.sleep(0.05)
    path = client.end_recording(tmp_path / "rec.mp4")
    data = path.read_bytes()
    assert len(data) > 1000 and data[4:8] == b"ftyp"
