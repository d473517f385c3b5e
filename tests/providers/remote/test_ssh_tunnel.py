"""SSHTunnel against a real OpenSSH server on loopback: forwarding, commands, host-key checks."""

from __future__ import annotations

import collections.abc
import dataclasses
import http.server
import subprocess
import threading
from pathlib import Path

import pytest
import requests

from osworld_gym.errors import ProviderError
from osworld_gym.providers.ssh_tunnel import SSHConfig, SSHTunnel

pytest.importorskip("paramiko")


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = f"hello from {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def web_server() -> collections.abc.Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_forwards_http_and_runs_commands(sshd: SSHConfig, web_server: int) -> None:
    with SSHTunnel(sshd, "127.0.0.1", web_server) as tunnel:
        assert tunnel.local_port != web_server
        with requests.Session() as session:  # several requests over one kept-alive connection
            for path in ("/a", "/b", "/c"):
                url = f"http://127.0.0.1:{tunnel.local_port}{path}"
                assert session.get(url, timeout=10).text == f"hello from {path}"
        # parallel connections, each its own channel
        results: list[str] = []
        threads = [
            threading.Thread(
                target=lambda i=i: results.append(
                    requests.get(f"http://127.0.0.1:{tunnel.local_port}/{i}", timeout=10).text
                )
            )
            for i in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == sorted(f"hello from /{i}" for i in range(6))
        done = tunnel.run("echo out; echo err >&2; exit 3")
        assert done.returncode == 3 and "out" in done.output and "err" in done.output
        port = tunnel.local_port
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/", timeout=5)


def test_reconnects_after_the_ssh_connection_drops(sshd: SSHConfig, web_server: int) -> None:
    with SSHTunnel(sshd, "127.0.0.1", web_server) as tunnel:
        assert tunnel.active
        tunnel._client.get_transport().close()  # the SSH connection goes away
        assert not tunnel.active
        url = f"http://127.0.0.1:{tunnel.local_port}/again"
        assert requests.get(url, timeout=10).text == "hello from /again"
        assert tunnel.active


def test_unknown_host_key_is_refused(sshd: SSHConfig, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(ProviderError, match="not found in known_hosts|Server"):
        SSHTunnel(dataclasses.replace(sshd, known_hosts=str(empty)), "127.0.0.1", 9)
    # explicitly trusted, the same server is accepted
    trusting = dataclasses.replace(sshd, known_hosts=str(empty), trust_unknown_hosts=True)
    with SSHTunnel(trusting, "127.0.0.1", 9) as tunnel:
        assert tunnel.run("true").returncode == 0


def test_wrong_key_is_refused(sshd: SSHConfig, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    with pytest.raises(ProviderError, match="Authentication failed"):
        SSHTunnel(dataclasses.replace(sshd, key_filename=str(other)), "127.0.0.1", 9)


def test_closed_destination_drops_the_connection(sshd: SSHConfig) -> None:
    with SSHTunnel(sshd, "127.0.0.1", 9) as tunnel:  # nothing listens on port 9
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{tunnel.local_port}/", timeout=10)


def test_from_url() -> None:
    config = SSHConfig.from_url("ssh://me@example.org:2222", key_filename="/k")
    assert (config.host, config.port, config.username, config.key_filename) == (
        "example.org",
        2222,
        "me",
        "/k",
    )
    assert SSHConfig.from_url("ssh://example.org").port == 22
    with pytest.raises(ValueError):
        SSHConfig.from_url("http://example.org")
