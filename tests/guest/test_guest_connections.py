"""No client without the token can starve the one with it; connections that idle are closed.

A guest server is started here on a desktop's display as its own process, under the file limit
of a qemu image (1,024), and attacked with idle and half-sent connections while an
authenticated client works. Also: the token reaches no program the guest starts, HEAD and
OPTIONS answer, and a 401 says how to authenticate.
"""

from __future__ import annotations

import collections.abc
import contextlib
import os
import resource
import secrets
import selectors
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from desktop_helpers import launch_desktop, wait_until
from fixture_marks import needs

from osworld_gym.providers.local.provider import LocalDesktop

pytestmark = pytest.mark.desktop

FILE_LIMIT = 1024


@pytest.fixture(scope="module")
@needs("desktop")
def desktop() -> collections.abc.Iterator[LocalDesktop]:
    with launch_desktop() as launched:
        yield launched


class Guest:
    """A guest server process of this test's own on a desktop's display."""

    def __init__(self, display: str, folder: Path, *args: str, file_limit: int = FILE_LIMIT):
        self.token = secrets.token_urlsafe(16)
        token_file = folder / "token"
        token_file.write_text(self.token)
        port_file = folder / "port"
        port_file.unlink(missing_ok=True)

        def limit_files() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (file_limit, file_limit))

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "osworld_gym.guest", "--display", display, "--port", "0"]
            + ["--port-file", str(port_file), "--token-file", str(token_file)]
            + ["--state-dir", str(folder / "state"), "--log-level", "WARNING", *args],
            preexec_fn=limit_files,  # noqa: PLW1509 - only setrlimit, before exec
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_until(lambda: port_file.exists() or self.proc.poll() is not None, message="port")
        assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
        self.port = int(port_file.read_text())
        self.url = f"http://127.0.0.1:{self.port}"
        self.headers = {"Authorization": f"Bearer {self.token}"}

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@contextlib.contextmanager
def guest_process(
    desktop: LocalDesktop, tmp_path: Path, *args: str
) -> collections.abc.Iterator[Guest]:
    guest = Guest(desktop.display, tmp_path, *args)
    try:
        yield guest
    finally:
        guest.stop()


class IdleHorde:
    """Holds ``count`` connections that never send a request (or send half a head).

    A thread re-opens every connection the server closes, so the server faces ``count`` idle
    strangers the whole time.
    """

    def __init__(self, port: int, count: int, partial_every: int = 10) -> None:
        self.port, self.count, self.partial_every = port, count, partial_every
        self.selector = selectors.DefaultSelector()
        self.opened = 0
        self.closed_by_server = 0
        self._stop = threading.Event()
        for _ in range(count):
            self._open()
        self._thread = threading.Thread(target=self._keep_up, daemon=True)
        self._thread.start()

    def _open(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        if self.opened % self.partial_every == 0:
            sock.sendall(b"GET /screenshot HTTP/1.1\r\nHost: x\r\n")  # a head never finished
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ)
        self.opened += 1

    def _keep_up(self) -> None:
        while not self._stop.is_set():
            for key, _ in self.selector.select(timeout=0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.selector.unregister(sock)
                    sock.close()
                    self.closed_by_server += 1
                    if not self._stop.is_set():
                        with contextlib.suppress(OSError):
                            self._open()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()


@pytest.fixture()
def many_files() -> collections.abc.Iterator[None]:
    """This test process holds over a thousand sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, 8192) if hard != resource.RLIM_INFINITY else 8192
    if wanted < 2 * FILE_LIMIT:
        pytest.skip(f"this process may open only {hard} files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_thousand_idle_strangers_do_not_starve_the_client(
    desktop: LocalDesktop, tmp_path: Path, many_files: None
) -> None:
    with guest_process(desktop, tmp_path) as guest:
        horde = IdleHorde(guest.port, 1000)
        try:
            # The guest holds no thread per idle connection, and never runs out of files.
            assert guest.threads() < 20
            assert guest.open_fds() <= FILE_LIMIT
            session = requests.Session()
            slowest = 0.0
            for i in range(30):
                start = time.monotonic()
                if i % 3 == 2:  # a new connection each time: the client must get in too
                    answer = requests.get(
                        guest.url + "/platform",
                        headers={**guest.headers, "Connection": "close"},
                        timeout=2,
                    )
                else:
                    url = guest.url + "/screenshot"
                    answer = session.get(url, headers=guest.headers, timeout=2)
                slowest = max(slowest, time.monotonic() - start)
                assert answer.status_code == 200, answer.text
            assert slowest < 2.0
            assert guest.threads() < 20
            assert guest.proc.poll() is None
            # Past the cap (1,024 less a reserve) the oldest strangers were pushed out.
            assert horde.closed_by_server > 0
        finally:
            horde.close()
        session.close()


def read_response(sock: socket.socket) -> bytes:
    """One whole response (head and ``Content-Length`` body) from a raw socket.

    Reads byte by byte up to the body, so a response that follows stays in the socket.
    """
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        assert byte, f"connection closed mid-response: {head!r}"
        head += byte
    lines = head.split(b"\r\n")
    length = next(
        int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length:")
    )
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        assert chunk, "connection closed mid-body"
        body += chunk
    return head + body


def test_heads_that_never_finish_are_closed_at_the_header_timeout(
    desktop: LocalDesktop, tmp_path: Path
) -> None:
    with guest_process(desktop, tmp_path, "--header-timeout", "1", "--idle-timeout", "3") as g:
        silent = socket.create_connection(("127.0.0.1", g.port), timeout=10)
        partial = socket.create_connection(("127.0.0.1", g.port), timeout=10)
        partial.sendall(b"POST /execute HTTP/1.1\r\n")
        # A client that authenticated keeps its connection between requests for longer.
        trusted = socket.create_connection(("127.0.0.1", g.port), timeout=10)
        head = f"GET /platform HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {g.token}\r\n\r\n"
        trusted.sendall(head.encode())
        assert read_response(trusted).startswith(b"HTTP/1.1 200")
        start = time.monotonic()
        for sock in (silent, partial):
            assert sock.recv(4096) in (b"",), "the server closes without answering"
        assert 0.9 <= time.monotonic() - start < 5
        trusted.sendall(head.encode())  # still open after the strangers' timeout
        assert read_response(trusted).startswith(b"HTTP/1.1 200")
        assert trusted.recv(4096) == b""  # closed once idle for the idle timeout
        for sock in (silent, partial, trusted):
            sock.close()


def test_a_burst_of_connects_needs_no_syn_retry(desktop: LocalDesktop, tmp_path: Path) -> None:
    with guest_process(desktop, tmp_path) as guest:
        barrier = threading.Barrier(64)
        times: list[float] = []

        def connect() -> None:
            barrier.wait()
            start = time.monotonic()
            with socket.create_connection(("127.0.0.1", guest.port), timeout=10):
                times.append(time.monotonic() - start)

        threads = [threading.Thread(target=connect) for _ in range(64)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(times) == 64
        assert max(times) < 0.9  # a full backlog drops SYNs: the retry comes after 1 s


def test_head_options_and_the_401_challenge(desktop: LocalDesktop, tmp_path: Path) -> None:
    with guest_process(desktop, tmp_path) as guest:
        head = requests.head(guest.url + "/platform", headers=guest.headers, timeout=10)
        get = requests.get(guest.url + "/platform", headers=guest.headers, timeout=10)
        assert head.status_code == 200 and head.content == b""
        assert head.headers["Content-Length"] == get.headers["Content-Length"]
        options = requests.options(guest.url + "/screenshot", headers=guest.headers, timeout=10)
        assert options.status_code == 200
        assert options.headers["Allow"] == "GET, HEAD, OPTIONS"
        missing = requests.options(guest.url + "/nowhere", headers=guest.headers, timeout=10)
        assert missing.status_code == 404
        refused = requests.post(guest.url + "/execute", json={"command": "true"}, timeout=10)
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith("Bearer ")


def test_the_token_reaches_no_program_the_guest_starts(
    desktop: LocalDesktop, tmp_path: Path
) -> None:
    token = secrets.token_urlsafe(16)
    read, write = os.pipe()
    os.write(write, token.encode())
    os.close(write)
    port_file = tmp_path / "port"
    env = {**os.environ, "OSWORLD_GYM_GUEST_TOKEN": "from-the-environment"}
    by_fd = subprocess.Popen(
        [sys.executable, "-m", "osworld_gym.guest", "--display", desktop.display, "--port", "0"]
        + ["--port-file", str(port_file), "--token-fd", str(read)]
        + ["--state-dir", str(tmp_path / "state"), "--log-level", "WARNING"],
        pass_fds=(read,),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(read)
    try:
        wait_until(port_file.exists, message="the guest's port file")
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        headers = {"Authorization": f"Bearer {token}"}
        command = {"command": "env"}
        answer = requests.post(url + "/execute", json=command, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        output = answer.json()["output"]
        assert "DISPLAY=" in output
        assert token not in output and "from-the-environment" not in output
        assert "GUEST_TOKEN" not in output
        # The variable's token is overridden by the descriptor's.
        wrong = {"Authorization": "Bearer from-the-environment"}
        assert requests.get(url + "/platform", headers=wrong, timeout=10).status_code == 401
    finally:
        by_fd.terminate()
        by_fd.wait(timeout=10)


def test_pipelined_requests_and_garbage_lines_are_answered(
    desktop: LocalDesktop, tmp_path: Path
) -> None:
    with guest_process(desktop, tmp_path) as guest:
        with socket.create_connection(("127.0.0.1", guest.port), timeout=10) as sock:
            head = (
                f"GET /platform HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {guest.token}\r\n\r\n"
            )
            sock.sendall(head.encode() * 3)  # three requests in one write
            for _ in range(3):
                assert read_response(sock).endswith(b"Linux")
        with socket.create_connection(("127.0.0.1", guest.port), timeout=10) as sock:
            sock.sendall(b"garbage\r\n")  # one word: no headers will follow
            answer = read_response(sock)  # answered and closed rather than left waiting
            assert answer.startswith(b"HTTP/1.1 400") and b"Bad request syntax" in answer
            assert sock.recv(4096) == b""
        with socket.create_connection(("127.0.0.1", guest.port), timeout=10) as sock:
            sock.sendall(b"GET /" + b"x" * 70000)  # a head larger than the cap
            assert sock.recv(4096).startswith(b"HTTP/1.1 4")
        assert guest.proc.poll() is None


def _client_ports(guest_port: int) -> set[int]:
    """Local ports of this machine's established connections to ``guest_port``."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state = fields[1], fields[2], fields[3]
        if state == "01" and int(remote.split(":")[1], 16) == guest_port:
            ports.add(int(local.split(":")[1], 16))
    return ports


def test_the_client_reconnects_before_the_guest_would_drop_an_idle_connection(
    desktop: LocalDesktop, tmp_path: Path
) -> None:
    from osworld_gym.guest.client import ClientConfig, GuestClient

    with guest_process(desktop, tmp_path) as guest:
        client = GuestClient(guest.url, token=guest.token, config=ClientConfig(max_idle=0.3))
        try:
            client.execute(["true"])
            first = _client_ports(guest.port)
            client.execute(["true"])  # within max_idle: the same connection
            assert _client_ports(guest.port) == first and len(first) == 1
            time.sleep(0.5)  # the client's idle allowance passing is the condition under test
            client.execute(["true"])
            second = _client_ports(guest.port)
            assert len(second) == 1 and second != first
        finally:
            client.close()


def test_running_out_of_files_pushes_out_strangers_without_spinning(
    desktop: LocalDesktop, tmp_path: Path, many_files: None
) -> None:
    # A cap above what the file limit allows: accept() itself fails with EMFILE.
    guest = Guest(desktop.display, tmp_path, "--max-connections", "5000", file_limit=160)
    try:
        horde = IdleHorde(guest.port, 400)
        try:
            cpu_before = _cpu_seconds(guest.proc.pid)
            with requests.Session() as session:
                for _ in range(10):
                    answer = session.get(guest.url + "/platform", headers=guest.headers, timeout=2)
                    assert answer.status_code == 200
            wait_until(lambda: horde.closed_by_server > 0, message="strangers pushed out")
            start = time.monotonic()
            wait_until(lambda: time.monotonic() - start > 1.0, message="a second passing")
            # Not a busy loop on a listener it cannot accept from: well under a core.
            assert _cpu_seconds(guest.proc.pid) - cpu_before < 0.8 * (time.monotonic() - start + 1)
            assert guest.proc.poll() is None
        finally:
            horde.close()
    finally:
        guest.stop()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_request_framing_edge_cases(desktop: LocalDesktop, tmp_path: Path) -> None:
    with guest_process(desktop, tmp_path) as guest:
        auth = f"Authorization: Bearer {guest.token}\r\n"
        with socket.create_connection(("127.0.0.1", guest.port), timeout=10) as sock:
            # Empty lines before a request line are skipped, not answered or fatal.
            sock.sendall(f"\r\n\r\nGET /platform HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
            assert read_response(sock).endswith(b"Linux")
        for framing in (
            "Content-Length: 2\r\nContent-Length: 3\r\n",
            "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
        ):
            with socket.create_connection(("127.0.0.1", guest.port), timeout=10) as sock:
                head = f"POST /execute HTTP/1.1\r\nHost: x\r\n{auth}{framing}\r\n{{}}"
                sock.sendall(head.encode())
                answer = read_response(sock)
                assert answer.startswith(b"HTTP/1.1 400") and b"conflicting" in answer
        with socket.create_connection(("127.0.0.1", guest.port), timeout=10) as sock:
            sock.sendall(b"GARBAGE\r\n\r\n")  # errors keep a status line and headers
            assert read_response(sock).startswith(b"HTTP/1.1 400")
