"""The guest client: typed errors, bounded retries, and the fallback for official OSWorld guests."""

from __future__ import annotations

import collections.abc
import socket
import time

import pytest
from desktop_helpers import SMALL_SCREEN, launch_desktop, wait_until
from fixture_marks import needs

from osworld_gym.errors import (
    GuestHTTPError,
    GuestTimeoutError,
    GuestUnreachableError,
    UnsupportedByGuestError,
)
from osworld_gym.guest.client import ClientConfig, GuestClient
from osworld_gym.providers.local.provider import LocalDesktop


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_guest_raises_typed_error_after_bounded_retries() -> None:
    client = GuestClient(
        f"http://127.0.0.1:{_free_port()}", config=ClientConfig(retries=2, retry_backoff=0.01)
    )
    start = time.monotonic()
    with pytest.raises(GuestUnreachableError) as info:
        client.screen_size()
    assert info.value.endpoint == "/screen_size"
    assert time.monotonic() - start < 5
    with pytest.raises(GuestUnreachableError):
        client.execute(["true"])


def test_silent_guest_times_out() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()  # accepts connections but never answers
        client = GuestClient(
            f"http://127.0.0.1:{server.getsockname()[1]}",
            config=ClientConfig(timeout=0.3, retries=1, retry_backoff=0.01),
        )
        start = time.monotonic()
        with pytest.raises(GuestTimeoutError):
            client.screen_size()
        assert time.monotonic() - start < 5


def test_wait_until_ready_has_a_deadline() -> None:
    client = GuestClient(f"http://127.0.0.1:{_free_port()}", config=ClientConfig(retries=0))
    start = time.monotonic()
    with pytest.raises(GuestUnreachableError):
        client.wait_until_ready(0.5)
    assert time.monotonic() - start < 3


@pytest.fixture(scope="module")
@needs("desktop")
def official() -> collections.abc.Iterator[LocalDesktop]:
    with launch_desktop(official_guest=True, use_token=False) as desktop:
        yield desktop


@pytest.mark.desktop
class TestOfficialGuestFallback:
    """Against a guest without extensions (what an official OSWorld image runs)."""

    def test_detects_official_guest(self, official: LocalDesktop) -> None:
        info = official.client.info(refresh=True)
        assert info.extended is False
        with pytest.raises(UnsupportedByGuestError):
            official.client.require("actions")

    def test_actions_become_pyautogui_code(self, official: LocalDesktop) -> None:
        client = official.client
        client.actions([{"kind": "move", "x": 321, "y": 123}])
        assert client.cursor_position() == (321, 123)
        client.launch(["xterm", "-title", "official-term"])
        wait_until(lambda: "official-term" in client.execute(["wmctrl", "-l"]).output)
        client.activate_window("official-term")
        client.actions([{"kind": "type", "text": "echo 'a<b' > ~/o.txt\n"}])
        wait_until(lambda: _exists(client, "~/o.txt"), message="o.txt")
        assert client.download("~/o.txt") == b"a<b\n"

    def test_screenshot_options_applied_on_host(self, official: LocalDesktop) -> None:
        client = official.client
        jpeg = client.screenshot(format="jpeg")
        assert jpeg.content_type == "image/jpeg" and (jpeg.width, jpeg.height) == SMALL_SCREEN
        small = client.screenshot(format="raw", max_pixels=320 * 180)
        assert small.to_array().shape == (180, 320, 3)
        small_png = client.screenshot(format="png", max_pixels=320 * 180)
        assert (small_png.width, small_png.height) == (320, 180)
        assert small_png.to_array().shape == (180, 320, 3)
        settled = client.screenshot(settle=True, settle_timeout=3)
        assert settled.settled is True

    def test_execute_with_verification_waits_for_a_window(self, official: LocalDesktop) -> None:
        client = official.client
        launch = "xterm -title verified >/dev/null 2>&1 &"
        result = client.execute_with_verification(
            launch, shell=True, window_exists="verified", max_wait_time=20, check_interval=0.1
        )
        assert result.returncode == 0 and result.raw["verification"] == "passed"
        with pytest.raises(GuestHTTPError) as info:
            client.execute_with_verification(["true"], window_exists="never", max_wait_time=0.3)
        assert info.value.status == 500 and info.value.body["verification"] == "failed"

    def test_extension_endpoints_are_absent(self, official: LocalDesktop) -> None:
        with pytest.raises(GuestHTTPError) as info:
            official.client._json("POST", "/actions", idempotent=False, json={"actions": []})
        assert info.value.status == 404


def _exists(client: GuestClient, path: str) -> bool:
    try:
        client.download(path)
    except GuestHTTPError:
        return False
    return True
