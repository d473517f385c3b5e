"""Guests reached through SSH tunnels, and tokens kept out of every environment (real engine).

A "remote" engine is the local one reached at ``ssh://root@127.0.0.1:<port>`` through a real
sshd on loopback, with ``guest_transport="ssh"`` (a loopback engine host alone would select
direct loopback connections). Its containers share this host's network, so what the guest
binds is read from this host's ``/proc/net/tcp``.
"""

from __future__ import annotations

import logging
import shutil
import socket
import time
from pathlib import Path

import pytest
import requests
from sshd_helpers import running_sshd, ssh_home

from osworld_gym.errors import GuestError, ProviderError
from osworld_gym.guest.client import ClientConfig, GuestClient
from osworld_gym.providers.docker import provider as docker_provider
from osworld_gym.providers.docker.provider import (
    TOKEN_FILE,
    DockerProvider,
    DockerProviderConfig,
    ownership_labels,
)
from osworld_gym.providers.ports import reserve_port
from osworld_gym.providers.ssh_tunnel import SSHConfig, SSHConnection

SCREEN = (800, 600)
READY_TIMEOUT = 30.0
# Lists the PIDs whose environment holds the token given as argv[1] (this one excluded).
ENVIRON_SCAN = """
import os, sys
me = os.getpid()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        environ = open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        continue
    if int(pid) != me and sys.argv[1].encode() in environ:
        print(pid)
"""


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of this host's TCP sockets listening on ``port``."""
    addresses = set()
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            # The kernel prints each 32-bit word in host (little-endian) order.
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, size, 4))
            family = socket.AF_INET if size == 4 else socket.AF_INET6
            addresses.add(socket.inet_ntop(family, words))
    return addresses


def _get_until_ok(url: str) -> requests.Response:
    """GET ``url`` until it answers (a server starting in the desktop), within a deadline."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def _pids_holding(client: GuestClient, token: str) -> list[str]:
    return client.execute(["python3", "-c", ENVIRON_SCAN, token]).output.split()


def test_guests_of_an_ssh_engine_are_reached_through_tunnels(
    guest_image: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    our_containers,
) -> None:
    with running_sshd(tmp_path / "sshd") as server:
        monkeypatch.setenv("HOME", str(ssh_home(tmp_path / "home", server)))
        config = DockerProviderConfig(
            image=guest_image,
            base_url=f"ssh://root@127.0.0.1:{server.port}",
            guest_transport="ssh",
            screen_size=SCREEN,
            cpus=1.0,
            memory="1g",
        )
        provider = DockerProvider(config)
        # The engine's own login: its URL and ~/.ssh/config, host key from known_hosts.
        assert provider.guest_ssh == SSHConfig(
            host="127.0.0.1", port=server.port, username="root", key_filename=str(server.client_key)
        )
        with caplog.at_level(logging.WARNING), provider.launch() as desktop:
            # Polls of the booting guest were refused quietly (no warning or error per poll).
            assert caplog.records == []
            tunnels = desktop.tunnels
            assert sorted(tunnels) == ["cdp", "guest", "vlc"]
            assert len({id(tunnel.connection) for tunnel in tunnels.values()}) == 1
            assert desktop.endpoint == f"http://127.0.0.1:{tunnels['guest'].local_port}"
            assert tunnels["guest"].remote == ("127.0.0.1", desktop.port)
            # The guest listens on the engine host's loopback only.
            assert _listening_addresses(desktop.port) == {"127.0.0.1"}
            client = desktop.client
            assert client.info().screen_size == SCREEN
            assert client.screenshot().to_array().shape == (SCREEN[1], SCREEN[0], 3)

            # Service ports go through their own tunnels: serve the VLC port in the desktop.
            vlc = desktop.service_ports["vlc"]
            assert desktop.service_urls == {
                "cdp": f"http://127.0.0.1:{tunnels['cdp'].local_port}",
                "vlc": f"http://127.0.0.1:{tunnels['vlc'].local_port}",
            }
            client.execute(
                f"python3 -m http.server --bind 127.0.0.1 --directory /etc {vlc} >/dev/null 2>&1 &",
                shell=True,
            )
            answer = _get_until_ok(desktop.service_urls["vlc"] + "/hostname")
            assert answer.status_code == 200 and answer.text.strip()

            # A reset recreates the container behind the same tunnels.
            endpoint, first = desktop.endpoint, desktop.container_name
            desktop.reset()
            assert desktop.endpoint == endpoint and desktop.container_name != first
            assert client.execute("echo again", shell=True).output == "again\n"
            connection = tunnels["guest"].connection
            assert connection.active
        assert desktop.tunnels == {} and not connection.active
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", tunnels["guest"].local_port), timeout=2)
    assert our_containers() == []


def test_the_token_is_in_no_environment(guest_image: str, our_containers) -> None:
    provider = DockerProvider(DockerProviderConfig(image=guest_image, screen_size=SCREEN))
    with provider.launch() as desktop:
        token = desktop.token
        assert token
        container = desktop.container
        container.reload()  # what `docker inspect` shows
        assert token not in repr(container.attrs["Config"])
        assert f"OSWORLD_GUEST_TOKEN_FILE={TOKEN_FILE}" in container.attrs["Config"]["Env"]
        client = desktop.client
        assert token not in client.execute("env", shell=True).output
        assert _pids_holding(client, token) == []  # PID 1 (docker-init) included
        # The entrypoint removed the file once it had read it (more in test_docker_isolation).
        assert client.execute(["test", "-e", TOKEN_FILE]).returncode == 1
    assert our_containers() == []


@pytest.mark.slow  # a container each; the default suite keeps the main paths
def test_a_token_passed_by_variable_reaches_no_desktop_program(
    guest_image: str, docker_engine, our_containers
) -> None:
    token = "variable-token-123"
    with reserve_port() as port:
        container = docker_engine.containers.run(
            guest_image,
            detach=True,
            init=True,
            network_mode="host",
            labels=ownership_labels("variable-token"),
            environment={
                "OSWORLD_GUEST_TOKEN": token,
                "OSWORLD_GUEST_PORT": str(port.port),
                "OSWORLD_SCREEN": "640x480",
            },
        )
        try:
            config = ClientConfig(connect_timeout=1.0, timeout=10.0, retries=0)
            with GuestClient(f"http://127.0.0.1:{port.port}", token=token, config=config) as c:
                deadline = time.monotonic() + READY_TIMEOUT
                while True:
                    try:
                        c.info(refresh=True)
                        break
                    except GuestError:  # still booting; the deadline bounds the wait
                        if time.monotonic() >= deadline:
                            raise
                        time.sleep(0.1)
                # Only docker-init holds it (the engine starts it with the container's
                # environment), and it is root's: the desktop's user cannot read it.
                assert _pids_holding(c, token) == []
                assert token not in c.execute("env", shell=True).output
        finally:
            container.remove(force=True)
    assert our_containers() == []


@pytest.mark.slow  # a container each; the default suite keeps the main paths
def test_a_missing_token_file_stops_the_desktop(guest_image: str, docker_engine) -> None:
    container = docker_engine.containers.run(
        guest_image,
        detach=True,
        network_mode="host",
        labels=ownership_labels("missing-token"),
        environment={
            "OSWORLD_GUEST_TOKEN_FILE": "/run/osworld-gym/none",
            "OSWORLD_GUEST_PORT": "1",
        },
    )
    try:
        assert container.wait(timeout=READY_TIMEOUT)["StatusCode"] == 1
        assert b"token file /run/osworld-gym/none is missing" in container.logs()
    finally:
        container.remove(force=True)


def test_a_guest_that_ignores_its_token_is_refused(
    guest_image: str, monkeypatch: pytest.MonkeyPatch, our_containers
) -> None:
    """An image older than OSWORLD_GUEST_TOKEN_FILE would run its guest without a token."""
    real_spec = docker_provider.container_spec

    def old_image_spec(*args: object, **kwargs: object) -> dict:
        spec = real_spec(*args, **kwargs)  # type: ignore[arg-type]
        del spec["environment"]["OSWORLD_GUEST_TOKEN_FILE"]
        return spec

    monkeypatch.setattr(docker_provider, "container_spec", old_image_spec)
    provider = DockerProvider(DockerProviderConfig(image=guest_image, screen_size=SCREEN))
    with pytest.raises(ProviderError, match="answered 200 without its token"):
        provider.launch()
    assert our_containers() == []


def test_plain_http_across_the_network_is_logged(
    guest_image: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = DockerProviderConfig(
        image=guest_image, guest_transport="direct", guest_host="192.0.2.7"
    )
    assert config.guest_bind_host == "0.0.0.0"
    with caplog.at_level(logging.WARNING, logger="osworld_gym.providers.docker.provider"):
        DockerProvider(config)
    assert "tokens cross the network in clear text" in caplog.text


@pytest.mark.slow  # a container each; the default suite keeps the main paths
def test_an_engine_login_through_its_proxy_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ProxyCommand of ~/.ssh/config carries the tunnels' connection, as for the SDK's."""
    if shutil.which("socat") is None:
        pytest.skip("socat is not installed")
    with running_sshd(tmp_path / "sshd") as server:
        home = ssh_home(tmp_path / "home", server)
        with open(home / ".ssh" / "config", "a") as config:
            config.write("  ProxyCommand socat - TCP:%h:%p\n")
        monkeypatch.setenv("HOME", str(home))
        ssh = SSHConfig.from_openssh_config(f"ssh://127.0.0.1:{server.port}")
        assert ssh.proxy_command == f"socat - TCP:127.0.0.1:{server.port}"
        assert ssh.username == "root"
        connection = SSHConnection(ssh)
        try:
            assert connection.run("echo through the proxy").output == "through the proxy\n"
        finally:
            connection.close()
        assert not connection.active
