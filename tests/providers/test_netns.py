"""The port forwarder between the host and a network namespace of its own (real sockets)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from osworld_gym.providers import processes
from osworld_gym.providers.netns import PortForwarder
from osworld_gym.providers.ports import reserve_port

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

_ECHO = """
import socket, sys, threading
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen()
print("ready", flush=True)
def echo(conn):
    while True:
        data = conn.recv(65536)
        if not data:
            conn.close()
            return
        conn.sendall(data)
while True:
    conn, _ = server.accept()
    threading.Thread(target=echo, args=(conn,), daemon=True).start()
"""


@contextmanager
def _namespace_with_echo(port: int) -> Iterator[int]:
    """A network namespace of its own with an echo server on ``port``; yields its fd."""
    argv = [
        # --die-with-parent: killing bwrap below takes the echo server and its init with it.
        "bwrap", "--die-with-parent", "--unshare-net", "--unshare-pid", "--unshare-user",
        "--ro-bind", "/", "/",
        "--dev", "/dev", "--proc", "/proc", "--", sys.executable, "-c", _ECHO, str(port),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        inner = processes.sandbox_chain(proc.pid)[-1]
        fd = os.open(f"/proc/{inner}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)
    finally:
        proc.kill()
        proc.wait()


def _round_trip(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        received = bytearray()

        def send() -> None:
            conn.sendall(payload)
            conn.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send)
        sender.start()
        while chunk := conn.recv(1 << 20):
            received += chunk
        sender.join()
        return bytes(received)


def test_the_host_reaches_a_port_inside_and_nothing_else_leaks() -> None:
    reservation = reserve_port()
    port = reservation.port
    try:
        with _namespace_with_echo(port) as netns:
            # Nothing listens on the host's side before the forwarder does.
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            forwarder = PortForwarder(netns, inbound=(port,))
            try:
                assert _round_trip(port, b"hello") == b"hello"
                big = os.urandom(8 << 20)  # more than the buffers: back-pressure both ways
                assert _round_trip(port, big) == big
                results: list[bytes] = []

                def one(i: int) -> None:
                    results.append(_round_trip(port, b"%d" % i))

                threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                assert sorted(results) == sorted(b"%d" % i for i in range(8))
            finally:
                forwarder.close()
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
    finally:
        reservation.release()


def test_inside_reaches_only_the_host_ports_it_was_given() -> None:
    given, other = reserve_port(), reserve_port()
    servers = []
    try:
        for reservation in (given, other):
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", reservation.port))
            server.listen()
            servers.append(server)
        with _namespace_with_echo(reserve_port().port) as netns:
            forwarder = PortForwarder(netns, inbound=(), outbound=(given.port,))
            try:
                probe = (
                    "import socket,sys\n"
                    "for port in sys.argv[1:]:\n"
                    "    try:\n"
                    "        socket.create_connection(('127.0.0.1', int(port)), timeout=2)\n"
                    "        print(port, 'open')\n"
                    "    except OSError:\n"
                    "        print(port, 'closed')\n"
                )
                done = subprocess.run(
                    [
                        "nsenter",
                        f"--net=/proc/self/fd/{netns}",
                        sys.executable,
                        "-c",
                        probe,
                        str(given.port),
                        str(other.port),
                    ],  # fmt: skip
                    pass_fds=(netns,),
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=False,
                )
                assert done.stdout.split("\n")[:2] == [
                    f"{given.port} open",
                    f"{other.port} closed",
                ], done.stderr
            finally:
                forwarder.close()
    finally:
        for server in servers:
            server.close()
        given.release()
        other.release()


def test_a_port_nobody_listens_on_inside_closes_the_connection() -> None:
    reservation = reserve_port()
    try:
        with _namespace_with_echo(reserve_port().port) as netns:
            forwarder = PortForwarder(netns, inbound=(reservation.port,))
            try:
                start = time.monotonic()
                with socket.create_connection(("127.0.0.1", reservation.port), timeout=5) as c:
                    assert c.recv(10) == b""
                assert time.monotonic() - start < 5
            finally:
                forwarder.close()
    finally:
        reservation.release()
