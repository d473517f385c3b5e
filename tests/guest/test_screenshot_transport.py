"""Raw screenshots of a real local desktop: through shared memory or HTTP, the same pixels.

The local provider points each desktop's client at the guest's /dev/shm (a sandboxed guest's
private tmpfs, reached through /proc), or at a folder of the desktop's own in the host's
/dev/shm without a sandbox; any failure falls back to the HTTP body.
"""

from __future__ import annotations

import collections.abc
import threading
from pathlib import Path

import numpy as np
import pytest
import requests
import urllib3.connection
from desktop_helpers import SMALL_SCREEN, launch_desktop, wait_until

from osworld_gym.guest.capture import SEGMENT_PREFIX
from osworld_gym.guest.client import GuestClient
from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop

GREEN = (0, 255, 0)


def _http_client(desktop: LocalDesktop) -> GuestClient:
    """A second client of the desktop's guest that takes frames over HTTP only."""
    return GuestClient(desktop.endpoint, token=desktop.token)


def _segments(desktop: LocalDesktop) -> list[str]:
    """The shared frame files the guest sees in its /dev/shm."""
    listing = desktop.client.execute(["ls", "-1", "/dev/shm"]).output.split()
    return [name for name in listing if name.startswith(SEGMENT_PREFIX)]


@pytest.fixture(scope="module")
def green_desktop(desktop: LocalDesktop) -> collections.abc.Iterator[LocalDesktop]:
    """The module's desktop with a still green xterm in the top-left corner."""
    desktop.reset()
    desktop.client.launch(
        ["xterm", "-title", "green", "-bg", "#00ff00", "-geometry", "40x10+100+100"]
    )

    def green_shown() -> bool:
        array = desktop.client.screenshot(format="raw", cursor=False).to_array()
        return tuple(int(v) for v in array[200, 200]) == GREEN

    wait_until(green_shown, message="the green xterm")
    yield desktop


def test_shared_frames_match_http_and_png(green_desktop: LocalDesktop) -> None:
    desktop = green_desktop
    shared = desktop.client.screenshot(format="raw", cursor=False)
    assert _segments(desktop), "the raw frame did not go through shared memory"
    with _http_client(desktop) as http:
        over_http = http.screenshot(format="raw", cursor=False).to_array()
        png = http.screenshot(format="png", cursor=False).to_array()
    array = shared.to_array()
    assert array.shape == (SMALL_SCREEN[1], SMALL_SCREEN[0], 3)
    assert np.array_equal(array, over_http)
    assert np.array_equal(array, png)
    assert array.flags.writeable  # the client's own copy, not a view of the shared file
    small = desktop.client.screenshot(format="raw", cursor=False, max_pixels=320 * 180)
    assert (small.width, small.height) == (320, 180) and small.to_array().shape == (180, 320, 3)


def test_frames_in_flight_never_share_a_file(green_desktop: LocalDesktop) -> None:
    """Concurrent requests of different sizes: a shared file would hand one the other's frame."""
    desktop = green_desktop
    budgets = [0, 640 * 360, 320 * 180, 160 * 90, 480 * 270, 800 * 450]
    with _http_client(desktop) as http:
        expected = {
            b: http.screenshot(format="raw", cursor=False, max_pixels=b).to_array() for b in budgets
        }
    errors: list[str] = []

    def shoot(budget: int) -> None:
        for _ in range(6):
            got = desktop.client.screenshot(format="raw", cursor=False, max_pixels=budget)
            if not np.array_equal(got.to_array(), expected[budget]):
                errors.append(f"max_pixels={budget}: another frame")

    threads = [threading.Thread(target=shoot, args=(b,)) for b in budgets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert 1 <= len(_segments(desktop)) <= 4  # the pool's limit; the rest went over HTTP


def test_lost_files_fall_back_to_http_and_are_made_again(green_desktop: LocalDesktop) -> None:
    desktop = green_desktop
    desktop.client.screenshot(format="raw")
    desktop.client.execute(["sh", "-c", f"rm -f /dev/shm/{SEGMENT_PREFIX}*"])
    array = desktop.client.screenshot(format="raw", cursor=False).to_array()
    assert tuple(int(v) for v in array[200, 200]) == GREEN
    desktop.client.screenshot(format="raw")
    assert _segments(desktop)


def test_guest_refuses_files_that_are_not_segments(green_desktop: LocalDesktop) -> None:
    desktop = green_desktop
    headers = {"Authorization": f"Bearer {desktop.token}"}
    url = f"{desktop.endpoint}/screenshot"
    answer = requests.get(url, params={"format": "raw", "shm": "/etc/passwd"}, headers=headers)
    assert answer.status_code == 409
    segment = f"/dev/shm/{SEGMENT_PREFIX}{'0' * 32}"
    answer = requests.get(url, params={"format": "raw", "shm": segment}, headers=headers)
    assert answer.status_code == 409 and "not there" in answer.json()["message"]
    answer = requests.get(url, params={"format": "png", "shm": segment}, headers=headers)
    assert answer.status_code == 400


def test_raw_frames_keep_one_connection(
    green_desktop: LocalDesktop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the body at once (or an empty one, through shared memory) keeps it alive."""
    connects = []
    connect = urllib3.connection.HTTPConnection.connect

    def counting(self: urllib3.connection.HTTPConnection) -> None:
        connects.append(self)
        connect(self)

    with _http_client(green_desktop) as http:
        for client in (green_desktop.client, http):
            client.screenshot(format="raw")
            monkeypatch.setattr(urllib3.connection.HTTPConnection, "connect", counting)
            for _ in range(5):
                client.screenshot(format="raw").to_array()
            monkeypatch.undo()
    assert not connects


def test_without_a_sandbox_frames_live_in_a_folder_that_close_removes() -> None:
    with launch_desktop(sandbox=False) as desktop:
        folder = desktop.frames_dir
        assert folder is not None and folder.parent == Path("/dev/shm")
        array = desktop.client.screenshot(format="raw").to_array()
        assert array.shape == (SMALL_SCREEN[1], SMALL_SCREEN[0], 3)
        assert any(p.name.startswith(SEGMENT_PREFIX) for p in folder.iterdir())
    assert not folder.exists()


def test_shared_frames_can_be_turned_off() -> None:
    with launch_desktop(shared_frames=False) as desktop:
        array = desktop.client.screenshot(format="raw").to_array()
        assert array.shape == (SMALL_SCREEN[1], SMALL_SCREEN[0], 3)
        assert not _segments(desktop)
