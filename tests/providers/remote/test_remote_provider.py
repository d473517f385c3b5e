"""The remote provider attached to real guest servers (local desktops), directly and over SSH."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest
from desktop_helpers import SMALL_SCREEN

import osworld_gym  # noqa: F401 - registers OSWorld-v0
from osworld_gym.actions import Done, TypeText
from osworld_gym.errors import ProviderError
from osworld_gym.guest.client import Screenshot
from osworld_gym.providers import make_provider
from osworld_gym.providers.local.provider import LocalDesktop
from osworld_gym.providers.remote.provider import (
    CommandReset,
    GuestScriptReset,
    RemoteDesktop,
    RemoteGuest,
    RemoteProvider,
    RemoteProviderConfig,
)
from osworld_gym.providers.ssh_tunnel import SSHConfig

pytestmark = pytest.mark.desktop


def _size(shot: Screenshot) -> tuple[int, int]:
    assert shot.to_array().shape == (shot.height, shot.width, 3)
    return shot.width, shot.height


def _config(guests: list[LocalDesktop], tmp_path: Path, **settings: object) -> RemoteProviderConfig:
    return RemoteProviderConfig(
        urls=tuple(RemoteGuest(g.endpoint, token=g.token) for g in guests),
        screen_size=SMALL_SCREEN,
        boot_timeout=20.0,
        lock_dir=str(tmp_path / "locks"),
        **settings,  # type: ignore[arg-type]
    )


def test_one_desktop_per_url_and_a_clear_error_when_all_are_taken(
    guests: list[LocalDesktop], tmp_path: Path
) -> None:
    provider = make_provider(_config(guests, tmp_path), screen_size=SMALL_SCREEN)
    assert isinstance(provider, RemoteProvider)
    first, second = provider.launch(), provider.launch()
    try:
        assert isinstance(first, RemoteDesktop) and isinstance(second, RemoteDesktop)
        assert {first.endpoint, second.endpoint} == {g.endpoint for g in guests}
        assert _size(first.client.screenshot()) == SMALL_SCREEN
        # another provider built from the same config (as each env of a pool builds its own)
        with pytest.raises(ProviderError, match="pool of N envs needs N URLs"):
            RemoteProvider(_config(guests, tmp_path)).launch()
        second.close()
        again = RemoteProvider(_config(guests, tmp_path)).launch()
        assert again.endpoint == second.endpoint
        again.close()
    finally:
        first.close()
        second.close()


def test_claims_hold_across_processes_and_die_with_them(
    guests: list[LocalDesktop], tmp_path: Path
) -> None:
    config = _config(guests[:1], tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from osworld_gym.providers.remote.provider import (
                    RemoteGuest, RemoteProvider, RemoteProviderConfig)
                config = RemoteProviderConfig(urls=(RemoteGuest({guests[0].endpoint!r},
                    token={guests[0].token!r}),), screen_size={SMALL_SCREEN!r},
                    lock_dir={config.lock_dir!r})
                desktop = RemoteProvider(config).launch()
                print("claimed", flush=True)
                sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "claimed"
        with pytest.raises(ProviderError, match="in use"):
            RemoteProvider(config).launch()
        holder.kill()  # no cleanup runs: the kernel drops the lock with the process
        holder.wait()
        RemoteProvider(config).launch().close()
    finally:
        holder.kill()
        holder.wait()


def test_wrong_token_and_wrong_screen_size_are_refused(
    guests: list[LocalDesktop], tmp_path: Path
) -> None:
    bad = _config(guests[:1], tmp_path, token="wrong")
    bad = dataclasses.replace(bad, urls=(guests[0].endpoint,))
    with pytest.raises(ProviderError, match="401|token"):
        RemoteProvider(bad).launch()
    wrong_size = dataclasses.replace(_config(guests[:1], tmp_path), screen_size=(800, 600))
    with pytest.raises(ProviderError, match="1280x720 screen"):
        RemoteProvider(wrong_size).launch()
    # the failed launches released their claims
    RemoteProvider(_config(guests[:1], tmp_path)).launch().close()


def test_unreachable_guest_fails_the_launch_in_time(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = RemoteProviderConfig(
        urls=(f"http://127.0.0.1:{port}",), boot_timeout=1.0, lock_dir=str(tmp_path)
    )
    with pytest.raises(ProviderError, match="does not answer"):
        RemoteProvider(config).launch()


def test_config_validation() -> None:
    with pytest.raises(ProviderError, match="needs the URLs"):
        RemoteProvider(RemoteProviderConfig())
    with pytest.raises(ValueError, match="sequence of URLs"):
        RemoteProviderConfig(urls="http://a:5000")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="guest URL"):
        RemoteProviderConfig(urls=("a:5000",))
    with pytest.raises(ValueError, match="needs an SSH server"):
        RemoteProviderConfig(urls=("http://a:5000",), reset=CommandReset("true", where="ssh"))
    with pytest.raises(ValueError, match="where must be"):
        CommandReset("true", where="moon")
    with pytest.raises(ValueError, match="needs guest URLs"):
        make_provider("remote")


def test_command_reset_runs_locally_with_the_guest_fields(
    guests: list[LocalDesktop], tmp_path: Path
) -> None:
    marker = tmp_path / "resets.txt"
    config = _config(
        guests[:1],
        tmp_path,
        reset=CommandReset(f"echo {{index}} {{port}} $OSWORLD_GYM_GUEST_URL >> {marker}"),
    )
    with RemoteProvider(config).launch() as desktop:
        desktop.reset()
        desktop.reset()
        port = guests[0].endpoint.rsplit(":", 1)[1]
        assert marker.read_text().splitlines() == [f"0 {port} {guests[0].endpoint}"] * 2
        assert desktop.resets == 2
    failing = dataclasses.replace(config, reset=CommandReset("echo broken >&2; exit 4"))
    with RemoteProvider(failing).launch() as desktop:
        with pytest.raises(ProviderError, match="exited with 4(.|\n)*broken"):
            desktop.reset()


def test_guest_script_reset(guests: list[LocalDesktop], tmp_path: Path) -> None:
    config = _config(guests[:1], tmp_path, reset=GuestScriptReset("rm -f ~/Desktop/left.txt"))
    with RemoteProvider(config).launch() as desktop:
        desktop.client.upload("/home/user/Desktop/left.txt", b"leftover")  # the guest's HOME
        assert (guests[0].home / "Desktop" / "left.txt").exists()
        desktop.reset()
        assert not (guests[0].home / "Desktop" / "left.txt").exists()
    failing = dataclasses.replace(config, reset=GuestScriptReset("exit 5"))
    with RemoteProvider(failing).launch() as desktop:
        with pytest.raises(ProviderError, match="exited with 5"):
            desktop.reset()


def test_through_an_ssh_tunnel_with_a_reset_command_on_the_ssh_server(
    guests: list[LocalDesktop], sshd: SSHConfig, tmp_path: Path
) -> None:
    marker = tmp_path / "reverted"
    config = _config(guests, tmp_path, ssh=sshd, reset=CommandReset(f"touch {marker}", where="ssh"))
    provider = RemoteProvider(config)
    with provider.launch() as desktop:
        assert desktop.tunnel is not None
        local_port = int(desktop.endpoint.rsplit(":", 1)[1])
        assert desktop.endpoint.startswith("http://127.0.0.1:")
        assert local_port not in {int(g.endpoint.rsplit(":", 1)[1]) for g in guests}
        assert _size(desktop.client.screenshot()) == SMALL_SCREEN
        result = desktop.client.execute("echo $HOME", shell=True)
        assert result.output.strip() == "/home/user"  # the guest desktop's sandboxed HOME
        desktop.reset()
        assert marker.exists()
        desktop.check()
    assert desktop.tunnel is not None and not desktop.tunnel.active


TASK = "os-create-project-tree"
SOLUTION = [
    TypeText(
        text="mkdir -p ~/projects/webapp/{src,tests,docs}; touch ~/projects/webapp/README.md\n"
    ),
    Done(),
]


def test_bundled_task_episode_through_ssh(
    guests: list[LocalDesktop], sshd: SSHConfig, tmp_path: Path
) -> None:
    """gym.make with the remote provider over SSH: the oracle scores 1.0; after the guest's own
    reset (a script that undoes the task), doing nothing scores 0.0."""
    reset = GuestScriptReset("pkill -x lxterminal || true; rm -rf ~/projects")
    config = _config(guests[1:], tmp_path, ssh=sshd, reset=reset)
    env = gym.make(
        "OSWorld-v0",
        provider=config,
        tasks="desktop-basics",
        action_format="structured",
        screen_size=SMALL_SCREEN,
        max_steps=5,
        offline=True,
    )
    try:
        obs, info = env.reset(options={"task_id": TASK})
        assert obs["screenshot"].shape == (SMALL_SCREEN[1], SMALL_SCREEN[0], 3)
        for action in SOLUTION:
            obs, reward, terminated, truncated, info = env.step(action)
            assert info["infra_error"] is None
        assert (reward, terminated) == (1.0, True)
        assert (guests[1].home / "projects" / "webapp" / "README.md").exists()
        env.reset(options={"task_id": TASK})
        assert not (guests[1].home / "projects" / "webapp").exists()
        obs, reward, terminated, truncated, info = env.step(Done())
        assert (reward, terminated) == (0.0, True)
    finally:
        env.close()
    assert os.listdir(tmp_path / "locks")  # lock files stay; the locks themselves are released
    RemoteProvider(config).launch().close()
