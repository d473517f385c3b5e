"""The docker provider's ``reset_mode="session"``: a reset inside the running container."""

from __future__ import annotations

import collections.abc
import logging
import time

import pytest
from desktop_helpers import run_episode, wait_until

from osworld_gym.actions import Done
from osworld_gym.env import OSWorldEnv
from osworld_gym.guest.client import GuestClient
from osworld_gym.policies.oracles.desktop_basics_system import ORACLES as SYSTEM_ORACLES
from osworld_gym.providers.docker.provider import (
    DockerDesktop,
    DockerProvider,
    DockerProviderConfig,
)

SCREEN = (1024, 768)
TASK_SCREEN = (1280, 720)  # the oracles' coordinates are for this size


@pytest.fixture()
def desktop(guest_image: str, our_containers: object) -> collections.abc.Iterator[DockerDesktop]:
    config = DockerProviderConfig(image=guest_image, screen_size=SCREEN, reset_mode="session")
    with DockerProvider(config).launch() as desktop:
        yield desktop  # type: ignore[misc]


def live_processes(client: GuestClient) -> list[str]:
    """Command names of the container's processes that are not zombies."""
    rows = client.execute("ps -eo stat=,comm=", shell=True).output.splitlines()
    return [row.split(None, 1)[1] for row in rows if not row.lstrip().startswith("Z")]


def wait_for_process(client: GuestClient, name: str) -> None:
    wait_until(lambda: name in live_processes(client), interval=0.1, message=f"{name} to start")


def test_session_reset_keeps_the_container_and_guest(desktop: DockerDesktop) -> None:
    client = desktop.client
    name, endpoint, token = desktop.container_name, desktop.endpoint, desktop.token
    client.execute(
        "echo dirty > ~/dirty.txt; echo x > ~/Documents/trace.txt; echo t > /tmp/dirty-tmp; "
        "mkdir -p ~/.config/dirty-app; echo password | sudo -S touch ~/root-owned",
        shell=True,
    )
    assert "root-owned" in client.execute("ls ~", shell=True).output
    client.launch(["xterm"])
    wait_for_process(client, "xterm")

    start = time.perf_counter()
    desktop.reset()
    elapsed = time.perf_counter() - start
    assert elapsed < 10, f"session reset took {elapsed:.1f} s"

    # Reset in place (no fallback): same container, same guest endpoint and token; the client
    # handed out before the reset still works.
    assert desktop.container_name == name
    assert (desktop.endpoint, desktop.token) == (endpoint, token)
    assert desktop.client is client
    assert client.info(refresh=True).screen_size == SCREEN
    with GuestClient(endpoint, token="wrong") as stranger:
        with pytest.raises(Exception, match="401|token|nauthor"):
            stranger.execute("true", shell=True)

    listing = client.execute("ls -A ~; ls -A ~/Documents ~/.config /tmp", shell=True).output
    for trace in ("dirty.txt", "trace.txt", "root-owned", "dirty-app", "dirty-tmp"):
        assert trace not in listing
    # What the image ships in HOME is back, owned by the user.
    shipped = client.execute("stat -c '%U %n' ~/.bashrc ~/Desktop ~/.config/openbox", shell=True)
    assert shipped.output.split("\n")[:3] == [
        "user /home/user/.bashrc",
        "user /home/user/Desktop",
        "user /home/user/.config/openbox",
    ]
    processes = live_processes(client)
    assert "xterm" not in processes
    for daemon in ("Xvfb", "openbox", "dbus-daemon"):
        assert daemon in processes
    assert "openbox" in client.execute("wmctrl -m", shell=True).output.lower()
    # Apps start again, in the fresh session.
    client.launch(["xterm"])
    wait_for_process(client, "xterm")


def test_a_failed_session_reset_recreates_the_container(
    desktop: DockerDesktop, caplog: pytest.LogCaptureFixture
) -> None:
    client = desktop.client
    first = desktop.container_name
    client.execute("echo dirty > ~/dirty.txt", shell=True)
    # Without its HOME snapshot the in-place reset cannot make the desktop fresh.
    removed = desktop.container.exec_run(["rm", "/var/lib/osworld-gym/home.tar"], user="0")
    assert removed.exit_code == 0
    with caplog.at_level(logging.WARNING, logger="osworld_gym.providers.docker.provider"):
        desktop.reset()
    assert "session reset" in caplog.text and "no HOME snapshot" in caplog.text
    assert desktop.container_name != first
    assert "dirty" not in client.execute("ls ~", shell=True).output
    # The new container has its snapshot: the next reset is in place again.
    second = desktop.container_name
    desktop.reset()
    assert desktop.container_name == second


def test_session_reset_rejects_the_official_image() -> None:
    with pytest.raises(ValueError, match="reset_mode"):
        DockerProviderConfig(official=True, vm_image_path="/x.qcow2", reset_mode="session")
    with pytest.raises(ValueError, match="reset_mode"):
        DockerProviderConfig(reset_mode="reboot")  # type: ignore[arg-type]


def test_bundled_task_after_session_resets(guest_image: str, our_containers: object) -> None:
    provider = DockerProviderConfig(
        image=guest_image, screen_size=TASK_SCREEN, reset_mode="session"
    )
    with OSWorldEnv(
        provider=provider,
        tasks="desktop-basics",
        action_format="structured",
        screen_size=TASK_SCREEN,
        max_steps=30,
        offline=True,
    ) as env:
        env.reset(options={"task_id": "os-chmod-script"})  # launches the desktop
        desktop = env.unwrapped._desktop
        name = desktop.container_name
        steps = SYSTEM_ORACLES["os-chmod-script"]
        assert run_episode(env, "os-chmod-script", steps) == 1.0  # after a session reset
        assert run_episode(env, "os-chmod-script", [Done()]) == 0.0  # after another one
        assert env.unwrapped._desktop is desktop and desktop.container_name == name
        assert desktop.resets == 2
