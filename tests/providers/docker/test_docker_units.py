"""Parts of the docker provider that need no engine: container settings, ownership, ports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from osworld_gym.errors import ProviderError
from osworld_gym.providers import make_provider
from osworld_gym.providers.docker.image import _content_hash
from osworld_gym.providers.docker.provider import (
    BOOT_LABEL,
    DESKTOP_HOSTNAME,
    OWNER_LABEL,
    PID_LABEL,
    PID_START_LABEL,
    TOKEN_FILE,
    DockerProviderConfig,
    container_spec,
    owner_is_alive,
    ownership_labels,
)
from osworld_gym.providers.ports import _lock, is_port_free, reserve_port, reserve_ports

REPO = Path(__file__).resolve().parents[3]
LABELS = {"osworld-gym.run": "r1"}


def test_our_image_runs_in_a_network_of_its_own_with_limits_and_token() -> None:
    config = DockerProviderConfig(screen_size=(1280, 720), cpus=1.5, memory="2g")
    spec = container_spec(config, name="c0", port=24001, token="s3cret", labels=LABELS)
    assert spec["image"] == "osworld-gym/desktop:latest"
    assert spec["network_mode"] == "none" and "ports" not in spec
    assert spec["hostname"] == DESKTOP_HOSTNAME
    assert spec["extra_hosts"] == {DESKTOP_HOSTNAME: "127.0.1.1"}
    assert spec["cap_drop"] == ["NET_RAW"]
    # The token itself goes in as a file (token_archive), never in the environment.
    assert spec["environment"] == {
        "OSWORLD_GUEST_HOST": "127.0.0.1",
        "OSWORLD_GUEST_PORT": "24001",
        "OSWORLD_SCREEN": "1280x720",
        "OSWORLD_BOOT_TIMEOUT": "60",
        "OSWORLD_SESSION": "minimal",  # a session left open, outside an env
        "OSWORLD_GUEST_TOKEN_FILE": TOKEN_FILE,
    }
    assert "s3cret" not in repr(spec)
    assert spec["nano_cpus"] == 1_500_000_000 and spec["mem_limit"] == "2g"
    assert spec["labels"] == LABELS and spec["init"] and spec["detach"]
    unlimited = container_spec(
        DockerProviderConfig(cpus=None, memory=None), name="c1", port=1, token=None, labels={}
    )
    assert "nano_cpus" not in unlimited and "mem_limit" not in unlimited
    assert "OSWORLD_GUEST_TOKEN_FILE" not in unlimited["environment"]
    gnome = container_spec(
        DockerProviderConfig(session="gnome"), name="c2", port=1, token=None, labels={}
    )
    assert gnome["environment"]["OSWORLD_SESSION"] == "gnome"


def test_host_network_when_asked_or_for_remote_engines() -> None:
    asked = DockerProviderConfig(network="host")
    remote = DockerProviderConfig(base_url="ssh://user@10.1.2.3")
    direct = DockerProviderConfig(
        base_url="tcp://10.1.2.3:2375", guest_transport="direct", guest_host="10.1.2.3"
    )
    for config in (asked, remote, direct):
        assert not config.private_network
        spec = container_spec(config, name="c0", port=24001, token=None, labels={})
        assert spec["network_mode"] == "host" and "hostname" not in spec
        assert spec["cap_drop"] == ["NET_RAW"]  # no sniffing of the host's loopback either
    assert DockerProviderConfig().private_network
    assert DockerProviderConfig(base_url="unix:///run/docker.sock").private_network
    with pytest.raises(ValueError, match="network must be one of"):
        DockerProviderConfig(network="bridge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="host_ports"):
        DockerProviderConfig(host_ports=(0,))


def test_remote_engines_bind_loopback_and_are_reached_through_ssh() -> None:
    # More cases in test_docker_transport_units.py.
    local = DockerProviderConfig(base_url="ssh://root@127.0.0.1:2222")
    assert (local.reaches_guest_at, local.guest_bind_host) == ("127.0.0.1", "127.0.0.1")
    assert local.transport == "direct"
    remote = DockerProviderConfig(base_url="ssh://user@10.1.2.3")
    assert (remote.reaches_guest_at, remote.guest_bind_host) == ("127.0.0.1", "127.0.0.1")
    assert remote.transport == "ssh"
    tunnelled = DockerProviderConfig(base_url="tcp://10.1.2.3:2375", guest_host="localhost")
    assert (tunnelled.reaches_guest_at, tunnelled.guest_bind_host) == ("localhost", "127.0.0.1")


@pytest.mark.parametrize("kvm", [True, False])
def test_official_image_settings_follow_osworld(tmp_path: Path, kvm: bool) -> None:
    qcow2 = tmp_path / "Ubuntu.qcow2"
    config = DockerProviderConfig.for_official(str(qcow2), kvm=kvm)
    assert config.boot_timeout == 300.0 and config.official
    spec = container_spec(config, name="c0", port=25000, token=None, labels=LABELS)
    assert spec["image"] == "happysixd/osworld-docker"
    assert spec["environment"]["DISK_SIZE"] == "32G"
    assert spec["environment"]["RAM_SIZE"] == "4G"
    assert spec["environment"]["CPU_CORES"] == "4"
    assert ("KVM" in spec["environment"]) is not kvm
    assert (spec.get("devices") == ["/dev/kvm:/dev/kvm:rwm"]) is kvm
    assert spec["cap_add"] == ["NET_ADMIN"]
    assert spec["volumes"] == {str(qcow2): {"bind": "/System.qcow2", "mode": "ro"}}
    assert spec["ports"] == {"5000/tcp": ("127.0.0.1", 25000)}
    assert "network_mode" not in spec  # published ports need the engine's bridge


def test_official_kvm_is_detected_only_for_local_engines(tmp_path: Path) -> None:
    local = DockerProviderConfig.for_official(str(tmp_path / "x.qcow2"))
    assert local.use_kvm() is Path("/dev/kvm").exists()
    remote = DockerProviderConfig.for_official("/vm/x.qcow2", base_url="ssh://u@10.0.0.9")
    assert remote.use_kvm() is False
    with pytest.raises(ValueError, match="vm_image_path"):
        container_spec(DockerProviderConfig(official=True), name="c", port=1, token=None, labels={})


def test_screen_size_mismatch_is_refused_before_connecting() -> None:
    with pytest.raises(ValueError, match="differs"):
        make_provider(DockerProviderConfig(screen_size=(800, 600)), screen_size=(1024, 768))


def test_ownership_labels_tell_live_dead_and_foreign_owners() -> None:
    labels = ownership_labels("run1")
    assert labels[PID_LABEL] == str(os.getpid()) and labels[PID_START_LABEL]
    assert owner_is_alive(labels) is True
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = {**labels, PID_LABEL: str(child.pid)}
    assert owner_is_alive(dead) is False
    # Same PID, another start time: the PID was reused by an unrelated process.
    assert owner_is_alive({**labels, PID_START_LABEL: "1"}) is False
    assert owner_is_alive({**labels, BOOT_LABEL: "another-boot"}) is False
    assert owner_is_alive({**labels, OWNER_LABEL: "another-host"}) is None


# --- ports ------------------------------------------------------------------------------------


def test_reserved_ports_are_distinct_free_and_released(tmp_path: Path) -> None:
    held = reserve_ports(20, lock_dir=tmp_path, port_range=(21000, 21100))
    ports = [r.port for r in held]
    assert len(set(ports)) == 20 and all(is_port_free(p) for p in ports)
    assert _lock(tmp_path, ports[0]) is None  # held: another descriptor cannot lock it
    held[0].release()
    fd = _lock(tmp_path, ports[0])
    assert fd is not None
    os.close(fd)
    for r in held:
        r.release()


def test_a_port_in_use_is_skipped(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert not is_port_free(port)
        free = port - 1 if is_port_free(port - 1) else port + 1
        for _ in range(20):  # only the busy port and a free neighbour to choose from
            span = (min(port, free), max(port, free))
            with reserve_port(port_range=span, lock_dir=tmp_path) as r:
                assert r.port == free


@pytest.mark.heavy  # many processes
def test_parallel_processes_never_get_the_same_port(tmp_path: Path) -> None:
    """8 processes reserve 15 ports each from a range of 200 at once: no port twice."""
    code = (
        "import sys; from osworld_gym.providers.ports import reserve_port; "
        f"held = [reserve_port(lock_dir={str(tmp_path)!r}, port_range=(22000, 22199)) "
        "for _ in range(15)]; "
        "print(' '.join(str(r.port) for r in held), flush=True); sys.stdin.read()"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    try:
        ports = [int(port) for p in procs for port in p.stdout.readline().split()]  # type: ignore[union-attr]
        assert len(ports) == 120 and len(set(ports)) == 120
    finally:
        for p in procs:
            p.communicate(timeout=30)


def test_a_killed_holder_releases_its_port(tmp_path: Path) -> None:
    # Below the default range, so no live desktop of another test session holds it.
    port = next(p for p in range(19000, 20000) if is_port_free(p))
    code = (
        "import sys, time; from osworld_gym.providers.ports import reserve_port; "
        f"r = reserve_port(lock_dir={str(tmp_path)!r}, port_range=({port}, {port})); "
        "print(r.port, flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and int(holder.stdout.readline()) == port
        with pytest.raises(ProviderError, match="no free TCP port"):
            reserve_port(lock_dir=tmp_path, port_range=(port, port))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The kernel dropped the flock with the process.
    with reserve_port(lock_dir=tmp_path, port_range=(port, port)) as r:
        assert r.port == port


# --- image content hash -----------------------------------------------------------------------


@pytest.mark.heavy  # builds wheels
def test_image_content_hash_is_stable_across_wheel_builds(tmp_path: Path) -> None:
    """Two bundles of the same sources hash the same (wheel timestamps differ); edits do not."""
    recipe = REPO / "vm_images" / "build_rootfs.sh"
    bundles = []
    for name in ("a", "b"):
        subprocess.run(
            ["bash", str(recipe), "--bundle", str(tmp_path / name)], check=True, timeout=120
        )
        bundles.append(tmp_path / name)
    first = _content_hash("base", "FROM x", bundles[0])
    assert first == _content_hash("base", "FROM x", bundles[1])
    assert first != _content_hash("other-base", "FROM x", bundles[0])
    script = bundles[1] / "rootfs" / "usr" / "local" / "bin" / "osworld-gym-desktop"
    script.write_text(script.read_text() + "\n# edited\n")
    assert first != _content_hash("base", "FROM x", bundles[1])


def test_mounts_under_a_folder_are_found_deepest_first(tmp_path: Path) -> None:
    from osworld_gym.providers.docker.image import mounts_under

    root = tmp_path / "rootfs"
    table = tmp_path / "mounts"
    table.write_text(
        f"proc {root}/proc proc rw 0 0\n"
        f"devpts {root}/dev/pts devpts rw 0 0\n"
        f"devtmpfs {root}/dev devtmpfs rw 0 0\n"
        f"tmpfs {root}-other tmpfs rw 0 0\n"  # a sibling with the same prefix is not inside
        f"tmpfs {root}/with\\040space tmpfs rw 0 0\n"
        "sysfs /sys sysfs rw 0 0\n"
    )
    found = mounts_under(root, table)
    assert found[0] == root / "dev" / "pts"
    assert set(found) == {root / "proc", root / "dev" / "pts", root / "dev", root / "with space"}


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_an_interrupted_builds_mounts_are_released(tmp_path: Path) -> None:
    """A rootfs build killed in its chroot leaves file systems mounted in the folder; the next
    build unmounts them before it runs (a tarball of the host's /sys was the symptom)."""
    from osworld_gym.providers.docker.image import _release_mounts_under, mounts_under

    root = tmp_path / "rootfs"
    (root / "proc").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(root / "proc")], check=True)
    try:
        assert mounts_under(root) == [root / "proc"]
        _release_mounts_under(root)
        assert mounts_under(root) == []
    finally:
        if mounts_under(root):
            subprocess.run(["umount", "--lazy", str(root / "proc")], check=False)
