"""How the docker provider reaches guests and hands them their token, without an engine.

Guests of a remote engine bind the engine host's loopback and are reached through SSH
tunnels; plain HTTP across the network only with ``guest_transport="direct"``. The token
goes into the container as a file, never as an environment variable.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from osworld_gym.providers.docker.provider import (
    TOKEN_FILE,
    DockerProviderConfig,
    container_spec,
    token_archive,
)
from osworld_gym.providers.ssh_tunnel import SSHConfig

LABELS = {"osworld-gym.run": "r1"}
ENGINE_SSH = SSHConfig(host="10.1.2.3", username="ops")


@pytest.fixture(autouse=True)
def _no_docker_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine is what each test says, not the caller's DOCKER_HOST."""
    monkeypatch.delenv("DOCKER_HOST", raising=False)


@pytest.mark.parametrize(
    "base_url",
    [None, "unix:///var/run/docker.sock", "tcp://127.0.0.1:2375", "ssh://root@localhost:2222"],
)
def test_local_engines_are_reached_directly_on_loopback(base_url: str | None) -> None:
    config = DockerProviderConfig(base_url=base_url)
    assert config.transport == "direct"
    assert (config.reaches_guest_at, config.guest_bind_host) == ("127.0.0.1", "127.0.0.1")
    assert config.ssh_for_guests() is None


def test_ssh_engines_tunnel_to_guests_on_the_engines_loopback() -> None:
    config = DockerProviderConfig(base_url="ssh://ops@10.1.2.3:2200")
    assert config.transport == "ssh"
    assert (config.reaches_guest_at, config.guest_bind_host) == ("127.0.0.1", "127.0.0.1")
    spec = container_spec(config, name="c0", port=24001, token="t", labels=LABELS)
    assert spec["environment"]["OSWORLD_GUEST_HOST"] == "127.0.0.1"


def test_official_image_of_a_remote_engine_publishes_every_port_on_loopback() -> None:
    config = DockerProviderConfig.for_official("/vm/Ubuntu.qcow2", base_url="ssh://ops@10.1.2.3")
    services = {"cdp": 24002, "chrome_debugging": 24003, "vlc": 24004}
    spec = container_spec(
        config, name="c0", port=24001, token=None, labels=LABELS, service_ports=services
    )
    assert spec["ports"] == {
        "5000/tcp": ("127.0.0.1", 24001),
        "9222/tcp": ("127.0.0.1", 24002),
        "8080/tcp": ("127.0.0.1", 24004),
    }


def test_tcp_engines_need_an_ssh_server_or_an_explicit_direct() -> None:
    with pytest.raises(ValueError, match="guest_ssh.*guest_transport='direct'"):
        DockerProviderConfig(base_url="tcp://10.1.2.3:2375")
    tunnelled = DockerProviderConfig(base_url="tcp://10.1.2.3:2375", guest_ssh=ENGINE_SSH)
    assert tunnelled.transport == "ssh" and tunnelled.guest_bind_host == "127.0.0.1"
    assert tunnelled.ssh_for_guests() is ENGINE_SSH
    direct = DockerProviderConfig(base_url="tcp://10.1.2.3:2375", guest_transport="direct")
    assert (direct.reaches_guest_at, direct.guest_bind_host) == ("10.1.2.3", "0.0.0.0")


def test_docker_host_counts_as_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "ssh://ops@10.1.2.3")
    assert DockerProviderConfig().transport == "ssh"
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.1.2.3:2375")
    with pytest.raises(ValueError, match="is remote"):
        DockerProviderConfig()


def test_guest_host_off_loopback_is_plain_http_only_when_asked() -> None:
    with pytest.raises(ValueError, match="not a loopback address"):
        DockerProviderConfig(base_url="ssh://ops@10.1.2.3", guest_host="10.9.9.9")
    asked = DockerProviderConfig(guest_transport="direct", guest_host="10.9.9.9")
    assert (asked.reaches_guest_at, asked.guest_bind_host) == ("10.9.9.9", "0.0.0.0")
    with pytest.raises(ValueError, match="guest_host is for guest_transport='direct'"):
        DockerProviderConfig(base_url="ssh://ops@10.1.2.3", guest_transport="ssh", guest_host="h")


def test_ssh_transport_needs_a_server_to_go_through() -> None:
    with pytest.raises(ValueError, match="needs guest_ssh"):
        DockerProviderConfig(guest_transport="ssh")
    forced = DockerProviderConfig(guest_transport="ssh", guest_ssh=ENGINE_SSH)
    assert forced.transport == "ssh" and forced.ssh_for_guests() is ENGINE_SSH
    with pytest.raises(ValueError, match="guest_transport must be"):
        DockerProviderConfig(guest_transport="https")  # type: ignore[arg-type]


def test_ssh_engine_login_is_read_as_the_docker_sdk_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("paramiko")
    key = tmp_path / ".ssh" / "engine_key"
    key.parent.mkdir()
    key.write_text("not read here")
    (tmp_path / ".ssh" / "config").write_text(
        "Host engine\n"
        "  HostName 10.1.2.3\n  Port 2200\n  User ops\n"
        f"  IdentityFile {tmp_path / '.ssh' / 'missing_key'}\n  IdentityFile ~/.ssh/engine_key\n"
        "  ProxyCommand ssh -W %h:%p jump\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    ssh = DockerProviderConfig(base_url="ssh://engine").ssh_for_guests()
    assert ssh == SSHConfig(
        host="10.1.2.3",
        port=2200,
        username="ops",
        key_filename=str(key),
        proxy_command="ssh -W 10.1.2.3:2200 jump",
    )
    # The URL's own user and port win over the file's, as in the SDK.
    ssh = DockerProviderConfig(base_url="ssh://root@engine:22").ssh_for_guests()
    assert ssh is not None and (ssh.username, ssh.port) == ("root", 22)
    # Without a config file: the URL alone, the agent and the default keys.
    monkeypatch.setenv("HOME", str(tmp_path / "empty"))
    ssh = DockerProviderConfig(base_url="ssh://ops@10.1.2.3").ssh_for_guests()
    assert ssh == SSHConfig(host="10.1.2.3", port=22, username="ops")


def test_token_archive_holds_a_file_only_root_reads() -> None:
    with tarfile.open(fileobj=io.BytesIO(token_archive("s3cret")), mode="r") as tar:
        folder, entry = tar.getmembers()
        assert "/" + folder.name == str(Path(TOKEN_FILE).parent) and folder.isdir()
        assert "/" + entry.name == TOKEN_FILE and entry.isfile()
        assert (folder.mode, entry.mode) == (0o700, 0o600)
        # Root's: the entrypoint reads it and removes it; the desktop's user never can.
        assert {folder.uid, folder.gid, entry.uid, entry.gid} == {0}
        extracted = tar.extractfile(entry)
        assert extracted is not None and extracted.read() == b"s3cret"
