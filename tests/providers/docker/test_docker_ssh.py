"""A Docker engine reached at an ssh:// URL (paramiko), through a real SSH server on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from sshd_helpers import running_sshd, ssh_home

from osworld_gym.actions import Done, TypeText
from osworld_gym.env import OSWorldEnv
from osworld_gym.errors import ProviderError
from osworld_gym.providers.docker.provider import DockerProvider, DockerProviderConfig

SCREEN = (800, 600)
TASK = "os-write-file-content"
SOLUTION = (
    "printf 'Welcome to the build server\\nMaintenance: Sundays 02:00-04:00\\n'"
    " > ~/Documents/motd.txt\n"
)


def test_one_episode_through_an_ssh_engine(
    guest_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, our_containers
) -> None:
    with running_sshd(tmp_path / "sshd") as server:
        base_url = f"ssh://root@127.0.0.1:{server.port}"
        # An unknown host key is refused, as ssh would.
        monkeypatch.setenv("HOME", str(ssh_home(tmp_path / "stranger", server, trust=False)))
        with pytest.raises(ProviderError, match="not found in known_hosts"):
            DockerProvider(DockerProviderConfig(image=guest_image, base_url=base_url))

        monkeypatch.setenv("HOME", str(ssh_home(tmp_path / "home", server)))
        provider = DockerProviderConfig(image=guest_image, base_url=base_url, screen_size=SCREEN)
        with OSWorldEnv(
            provider=provider,
            tasks="desktop-basics",
            action_format="structured",
            screen_size=SCREEN,
            max_steps=3,
            offline=True,
        ) as env:
            engine = env.unwrapped.provider.client
            assert engine.api.base_url.startswith("http+docker://ssh")
            env.reset(options={"task_id": TASK})
            assert len(our_containers()) == 1
            env.step(TypeText(text=SOLUTION))
            _, reward, terminated, _, info = env.step(Done())
            assert terminated and info["infra_error"] is None and reward == 1.0
        log = server.log.read_text(errors="replace")
        assert "Accepted publickey for root" in log
    assert our_containers() == []
