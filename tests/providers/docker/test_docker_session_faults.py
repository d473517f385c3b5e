"""A container's window manager or session bus dying mid-episode ends the episode as a fault.

The docker provider cannot poll processes inside the container cheaply; the guest reports
them in each screenshot, and the env truncates the episode with an infrastructure error.
"""

from __future__ import annotations

import pytest

from osworld_gym.actions import Done, Wait
from osworld_gym.env import OSWorldEnv
from osworld_gym.providers.docker.provider import DockerProviderConfig

pytestmark = pytest.mark.desktop


@pytest.mark.parametrize(
    ("component", "program"),
    [("wm", "openbox"), pytest.param("dbus", "dbus-daemon", marks=pytest.mark.slow)],
)
def test_a_dead_session_part_in_a_container_ends_the_episode(
    guest_image: str, our_containers: object, component: str, program: str
) -> None:
    provider = DockerProviderConfig(image=guest_image, screen_size=(1280, 720))
    with OSWorldEnv(
        provider=provider,
        tasks="desktop-basics",
        action_format="structured",
        screen_size=(1280, 720),
        offline=True,
    ) as env:
        env.reset(options={"task_id": "os-chmod-script"})
        _, _, _, truncated, info = env.step(Wait(seconds=0.1))
        assert not truncated and info["infra_error"] is None
        container = env.unwrapped._desktop.container
        assert container.exec_run(["pkill", "-KILL", "-x", program]).exit_code == 0
        _, reward, terminated, truncated, info = env.step(Wait(seconds=0.1))
        assert (reward, terminated, truncated) == (0.0, False, True)
        assert f"DesktopDiedError: desktop component {component!r}" in info["infra_error"]
        env.reset(options={"task_id": "os-chmod-script"})  # a fresh container
        _, _, _, truncated, info = env.step(Done())
        assert info["infra_error"] is None
