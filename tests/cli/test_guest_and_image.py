"""`osworld-gym serve-guest` on a real display, and `osworld-gym image build`'s front door."""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import osworld_gym, wait_for

from osworld_gym.guest.client import GuestClient
from osworld_gym.providers.local.provider import LocalDesktop


@pytest.mark.desktop
def test_serve_guest_serves_a_display(desktop: LocalDesktop, tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    script = shutil.which("osworld-gym")
    assert script
    server = subprocess.Popen(
        [script, "serve-guest", "--display", desktop.display, "--port", "0",
         "--port-file", str(port_file), "--log-level", "WARNING"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: port_file.is_file() and port_file.read_text().strip(), 30, "the port")
        client = GuestClient(f"http://127.0.0.1:{int(port_file.read_text())}")
        shot = client.screenshot()
        assert (shot.width, shot.height) == desktop.config.screen_size
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0, server.stdout.read() if server.stdout else ""


@pytest.mark.heavy  # the console script
def test_image_build_without_a_recipe_says_what_is_missing(tmp_path: Path) -> None:
    done = osworld_gym("image", "build", "--recipe-dir", str(tmp_path / "nowhere"), timeout=120)
    assert done.returncode == 1
    assert "no build_rootfs.sh" in done.stderr and "vm_images" in done.stderr
    assert "Traceback" not in done.stderr
    usage = osworld_gym("image", "build", "--help")
    assert usage.returncode == 0 and "--recipe-dir" in usage.stdout
