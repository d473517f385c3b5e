"""A `docker` desktop is a guest (issue 35): the token stays with the guest, each container has
a network of its own.

Each test acts as a desktop program would: commands run inside as the desktop's user through
the guest (and as root through ``sudo``, which OSWorld's tasks use with the password
``password``), and check what an optimizing agent must not get: the guest's token, the host's
loopback services, another desktop's guest.
"""

from __future__ import annotations

import collections.abc
import contextlib
import gc
import os
import shlex
import socket
import threading

import gymnasium as gym
import pytest
from desktop_helpers import run_episode

import osworld_gym  # noqa: F401 - registers OSWorld-v0
from osworld_gym.actions import Done
from osworld_gym.guest.client import GuestClient
from osworld_gym.policies.oracles.desktop_basics_system import ORACLES as SYSTEM_ORACLES
from osworld_gym.providers.docker.provider import (
    TOKEN_FILE,
    DockerDesktop,
    DockerProvider,
    DockerProviderConfig,
)
from osworld_gym.providers.ports import reserve_port

SCREEN = (800, 600)
SUDO = "echo password | sudo -S -p '' "  # root in the container, as OSWorld's tasks get it
FORWARDER_THREAD = "osworld-gym-port-forwarder"
# Prints how a TCP connection to argv[1]:argv[2] ends: the first line the peer answers (to
# argv[3], sent first if given), or the error's name (ConnectionRefusedError, ...).
CONNECT = """
import errno, socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5) as s:
        s.sendall(sys.argv[3].encode() if len(sys.argv) > 3 else b"")
        print("connected", s.makefile().readline().strip())
except OSError as e:
    print(type(e).__name__, errno.errorcode.get(e.errno, e.errno))
"""
HEALTH = "GET /health HTTP/1.0\r\n\r\n"  # a guest's answer without a token: 401
HOST_SECRET = "host loopback service"


def _sh(desktop: DockerDesktop, command: str, *, root: bool = False) -> tuple[int, str, str]:
    """Run ``command`` in the desktop as its user (or as root through sudo)."""
    if root:
        command = SUDO + "sh -c " + shlex.quote(command)
    result = desktop.client.execute(command, shell=True)
    return result.returncode, result.output, result.error


def _connect(desktop: DockerDesktop, host: str, port: int, send: str = "") -> str:
    command = f"python3 -c {shlex.quote(CONNECT)} {host} {port}"
    if send:
        command += f" {shlex.quote(send)}"
    code, out, err = _sh(desktop, command)
    assert code == 0, err
    return out.strip()


def _guest_pid(desktop: DockerDesktop) -> str:
    code, out, _ = _sh(desktop, "pgrep -f 'osworld_gym[.]guest'")
    assert code == 0 and len(out.split()) == 1, out
    return out.strip()


def _open_fds() -> dict[str, str]:
    """This process's descriptors and what each is open on."""
    links = {}
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            links[fd] = os.readlink(f"/proc/self/fd/{fd}")
    return links


def _forwarders() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == FORWARDER_THREAD]


def _netns_fds() -> int:
    """This process's open descriptors of network namespaces (a relay holds two)."""
    return sum(link.startswith("net:[") for link in _open_fds().values())


@contextlib.contextmanager
def _host_service() -> collections.abc.Iterator[int]:
    """A TCP service on this host (all addresses, loopback included) that greets each caller."""
    with reserve_port() as reservation:
        server = socket.create_server(("0.0.0.0", reservation.port))
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    peer, _ = server.accept()
                except OSError:  # closed: the test is over
                    return
                with peer:
                    peer.sendall(f"{HOST_SECRET}\n".encode())

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield reservation.port
        finally:
            stop.set()
            server.shutdown(socket.SHUT_RDWR)
            server.close()
            thread.join(timeout=5)


def _host_address() -> str | None:
    """An address of this host off loopback, if it has one (the route a desktop must lack)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: picks the route, sends nothing
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


@pytest.fixture()
def provider(guest_image: str, our_containers: object) -> DockerProvider:
    return DockerProvider(
        DockerProviderConfig(image=guest_image, screen_size=SCREEN, cpus=1.0, memory="1g")
    )


def test_the_token_is_found_nowhere_inside(provider: DockerProvider) -> None:
    with provider.launch() as desktop:
        token = desktop.token
        assert token
        container = desktop.container
        container.reload()  # what `docker inspect` shows
        assert token not in repr(container.attrs["Config"])
        # Files, environments and command lines of every process, as the desktop's user and as
        # root. (The token goes to grep in two halves through a pipe, so no command line holds
        # it whole.)
        half = len(token) // 2
        search = (
            f"a='{token[:half]}'; b='{token[half:]}'; printf '%s%s\\n' \"$a\" \"$b\" | "
            "grep -rlsF --binary-files=text -f /dev/stdin /run /tmp /var/tmp /home /dev/shm "
            "/etc /root /var/lib/osworld-gym /proc/[0-9]*/environ /proc/[0-9]*/cmdline; "
            "echo searched"
        )
        for root in (False, True):
            code, out, err = _sh(desktop, search, root=root)
            assert (code, out.strip()) == (0, "searched"), (root, out, err)
        # The search would find it: planted in a file, it shows.
        plant = f"a='{token[:half]}'; b='{token[half:]}'; printf '%s%s' \"$a\" \"$b\" > /tmp/p"
        assert _sh(desktop, f"{plant}; {search}")[1].split() == ["/tmp/p", "searched"]
        # The entrypoint removed the file it came in; the guest got it on a descriptor.
        assert _sh(desktop, f"test -e {TOKEN_FILE}", root=True)[0] == 1
        code, out, _ = _sh(desktop, f"tr '\\0' ' ' < /proc/{_guest_pid(desktop)}/cmdline")
        assert code == 0 and "--token-fd 3" in out


def test_the_guests_memory_is_closed(provider: DockerProvider) -> None:
    with provider.launch() as desktop:
        pid = _guest_pid(desktop)
        attach = f"import ctypes; print(ctypes.CDLL(None).ptrace(16, {pid}, 0, 0))"  # ATTACH
        for root in (False, True):  # root in a container lacks CAP_SYS_PTRACE
            for target in (f"/proc/{pid}/mem", f"/proc/{pid}/environ"):
                code, _, err = _sh(desktop, f"head -c 1 {target} > /dev/null", root=root)
                assert code != 0 and "Permission denied" in err, (root, target, err)
            code, out, err = _sh(desktop, f'python3 -c "{attach}"', root=root)
            assert code == 0 and out.strip() == "-1", (root, out, err)
        assert "TracerPid:\t0" in _sh(desktop, f"cat /proc/{pid}/status")[1]


def test_the_hosts_services_are_out_of_reach(guest_image: str, our_containers: object) -> None:
    config = DockerProviderConfig(image=guest_image, screen_size=SCREEN, cpus=1.0, memory="1g")
    with _host_service() as port:
        assert socket.create_connection(("127.0.0.1", port), timeout=5).recv(100)  # it serves
        with DockerProvider(config).launch() as desktop:
            assert _connect(desktop, "127.0.0.1", port) == "ConnectionRefusedError ECONNREFUSED"
            address = _host_address()
            if address is not None:  # no route off the container's own loopback
                assert _connect(desktop, address, port) == "OSError ENETUNREACH"
        # Ports named in host_ports, and only those, are relayed out to the host's loopback.
        allowed = DockerProviderConfig(
            image=guest_image, screen_size=SCREEN, cpus=1.0, memory="1g", host_ports=(port,)
        )
        with DockerProvider(allowed).launch() as desktop:
            assert _connect(desktop, "127.0.0.1", port) == f"connected {HOST_SECRET}"


def test_other_desktops_are_out_of_reach(provider: DockerProvider) -> None:
    with provider.launch() as first, provider.launch() as second:
        assert first.port != second.port and first.private_network  # the env warns by it
        for port in (second.port, *second.service_ports.values()):
            refused = _connect(first, "127.0.0.1", port, HEALTH)
            assert refused == "ConnectionRefusedError ECONNREFUSED"
        # Each still answers this host, through its own relay.
        assert first.client.execute("hostname", shell=True).output == "osworld-desktop\n"
        assert second.client.execute("echo 2", shell=True).output == "2\n"


def test_network_host_keeps_the_shared_network(guest_image: str, our_containers: object) -> None:
    config = DockerProviderConfig(
        image=guest_image, screen_size=SCREEN, cpus=1.0, memory="1g", network="host"
    )
    provider = DockerProvider(config)
    with provider.launch() as first, provider.launch() as second:
        container = first.container
        container.reload()
        assert container.attrs["HostConfig"]["NetworkMode"] == "host"
        assert _forwarders() == [] and not first.private_network
        # The old behaviour: desktops reach each other's guests (which want their tokens).
        reached = _connect(first, "127.0.0.1", second.port, HEALTH)
        assert reached.startswith("connected HTTP/1.") and " 401 " in reached, reached
        with GuestClient(second.endpoint, token="wrong") as stranger:
            with pytest.raises(Exception, match="401|token|nauthor"):
                stranger.execute("true", shell=True)


def test_the_env_works_over_resets_and_leaks_nothing(
    guest_image: str, our_containers: object
) -> None:
    task = "os-chmod-script"
    gc.collect()  # descriptors of earlier tests' dropped objects
    fds, threads = _open_fds(), set(threading.enumerate())
    env = gym.make(
        "OSWorld-v0",
        provider=DockerProviderConfig(image=guest_image, screen_size=SCREEN),
        tasks="desktop-basics",
        action_format="structured",
        screen_size=SCREEN,
        max_steps=5,
        offline=True,
    )
    try:
        containers: set[str] = set()
        for steps, score in [(SYSTEM_ORACLES[task], 1.0), ([Done()], 0.0)] * 2:
            assert run_episode(env, task, steps) == score
            # Each reset made a new container with a relay of its own; the old ones are gone.
            assert len(_forwarders()) == 1 and _netns_fds() == 2
            name = env.unwrapped._desktop.container_name  # type: ignore[attr-defined]
            assert name not in containers
            containers.add(name)
    finally:
        env.close()
    assert _forwarders() == [] and _netns_fds() == 0
    # The provider's engine client keeps a pool of connections until it goes.
    del env
    gc.collect()
    assert _open_fds() == fds
    assert set(threading.enumerate()) == threads
