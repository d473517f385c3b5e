"""A real OpenSSH server on a loopback port for tests (importable as ``sshd_helpers``).

The server needs root (privilege separation) and openssh-server; tests skip without them. It
accepts one generated client key for root. Tests reach it either through an
``SSHConfig`` (``SSHServer.ssh_config()``) or, for
the docker SDK's ``ssh://`` URLs, through a HOME whose ``~/.ssh`` says how to log in
(``ssh_home()``).
"""

from __future__ import annotations

import collections.abc
import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from osworld_gym.providers.ports import reserve_port
from osworld_gym.providers.ssh_tunnel import SSHConfig

SSHD = "/usr/sbin/sshd"
HOST = "127.0.0.1"
USER = "root"
START_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0


@dataclass(frozen=True)
class SSHServer:
    """A running test SSH server.

    Attributes:
        port: The loopback port it listens on.
        pid: The process id of ``sshd -D``.
        client_key: The private key authorized to log in as root.
        host_key_line: ``"<type> <base64>"`` of its host key.
        known_hosts: A known-hosts file that holds only this server.
        log: The server's log (``sshd -e`` at LogLevel VERBOSE).
    """

    port: int
    pid: int
    client_key: Path
    host_key_line: str
    known_hosts: Path
    log: Path

    def known_hosts_line(self) -> str:
        """Returns the known_hosts entry for this server, newline included."""
        return f"[{HOST}]:{self.port} {self.host_key_line}\n"

    def ssh_config(self) -> SSHConfig:
        """Returns a config that logs in as root with the client key.

        The host key is checked against ``known_hosts``.
        """
        return SSHConfig(
            host=HOST,
            port=self.port,
            username=USER,
            key_filename=str(self.client_key),
            known_hosts=str(self.known_hosts),
        )


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


def _write_config(folder: Path, port: int) -> Path:
    config = folder / "sshd_config"
    config.write_text(
        f"ListenAddress {HOST}\nPort {port}\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile none\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "PermitRootLogin prohibit-password\nStrictModes no\nAllowTcpForwarding yes\n"
        "LogLevel VERBOSE\n"
    )
    return config


def _wait_listening(proc: subprocess.Popen[bytes], log: Path, port: int) -> None:
    """Returns once sshd logs that it listens; fails the test if it exits or times out."""
    deadline = time.monotonic() + START_TIMEOUT
    while f"listening on {HOST} port {port}" not in log.read_text(errors="replace"):
        if proc.poll() is not None:
            pytest.fail(f"sshd exited ({proc.returncode}):\n{log.read_text(errors='replace')}")
        if time.monotonic() >= deadline:
            pytest.fail(
                f"sshd did not start in {START_TIMEOUT} s:\n{log.read_text(errors='replace')}"
            )
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stops the server by its PID: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def running_sshd(folder: Path) -> collections.abc.Iterator[SSHServer]:
    """Runs ``sshd -D`` on 127.0.0.1 with a fresh host key and one authorized client key.

    The port is reserved with ``reserve_port()`` and kept
    reserved while the server runs. Skips the test without root, openssh-server or paramiko.

    Args:
        folder: Where the keys, config, known-hosts file and log go (created if missing).

    Yields:
        The running server; it is stopped when the block exits.
    """
    pytest.importorskip("paramiko")
    if os.geteuid() != 0:
        pytest.skip("sshd needs root (privilege separation)")
    if not os.access(SSHD, os.X_OK) or not shutil.which("ssh-keygen"):
        pytest.skip("openssh-server is not installed (scripts/install_system_deps.sh)")
    folder.mkdir(parents=True, exist_ok=True)
    _keygen(folder / "host_key")
    _keygen(folder / "client_key")
    shutil.copy(folder / "client_key.pub", folder / "authorized_keys")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    log = folder / "sshd.log"
    with reserve_port(HOST) as reservation:
        port = reservation.port
        config = _write_config(folder, port)
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(config)],
                stdout=out,
                stderr=out,
                stdin=subprocess.DEVNULL,
            )
        try:
            _wait_listening(proc, log, port)
            host_key = " ".join((folder / "host_key.pub").read_text().split()[:2])
            server = SSHServer(
                port=port,
                pid=proc.pid,
                client_key=folder / "client_key",
                host_key_line=host_key,
                known_hosts=folder / "known_hosts",
                log=log,
            )
            server.known_hosts.write_text(server.known_hosts_line())
            yield server
        finally:
            _stop(proc)


def ssh_home(folder: Path, server: SSHServer, *, trust: bool = True) -> Path:
    """Writes a HOME whose ``~/.ssh`` tells paramiko (through the docker SDK) how to log in.

    Args:
        folder: The HOME folder (created if missing).
        server: The server to log in to, as root with its client key.
        trust: Whether ``~/.ssh/known_hosts`` holds the server's host key (else it is empty).

    Returns:
        ``folder``, to set as ``HOME``.
    """
    ssh = folder / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True, mode=0o700)
    (ssh / "config").write_text(f"Host {HOST}\n  User {USER}\n  IdentityFile {server.client_key}\n")
    (ssh / "known_hosts").write_text(server.known_hosts_line() if trust else "")
    return folder
