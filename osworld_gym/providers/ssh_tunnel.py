"""SSH connections and local port forwards (paramiko), for desktops behind an SSH server.

:class:`SSHTunnel` listens on ``127.0.0.1:<free port>`` and carries every connection made to it
through one SSH connection to ``remote_host:remote_port`` as seen from the SSH server (a
``direct-tcpip`` channel, what ``ssh -L`` does). The same connection runs shell commands
(:meth:`SSHTunnel.run`), e.g. a snapshot-revert command on the VM host. A dropped SSH
connection is re-established on the next forwarded connection.

paramiko is imported lazily: ``pip install 'osworld-gym[ssh]'``.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from osworld_gym.errors import DependencyNotInstalled, ProviderError

if TYPE_CHECKING:
    import paramiko

logger = logging.getLogger(__name__)

_CHUNK = 65536


def _paramiko() -> Any:
    try:
        import paramiko
    except ImportError as e:
        raise DependencyNotInstalled(
            "SSH tunnels need paramiko: pip install 'osworld-gym[ssh]'"
        ) from e
    return paramiko


@dataclass(frozen=True)
class SSHConfig:
    """How to reach an SSH server.

    Host keys are checked: the server's key must be in ``known_hosts`` (or the user's and
    the system's known-hosts files when it is None) unless ``trust_unknown_hosts`` is set.

    Attributes:
        host: Address of the SSH server.
        port: Its TCP port.
        username: Login name (default: the current user).
        key_filename: Private key file; None uses the SSH agent and the default keys.
        password: Password, or the key file's passphrase.
        known_hosts: A known-hosts file holding the server's host key.
        trust_unknown_hosts: Accept a server whose key is not known (logged as a warning).
        connect_timeout: Seconds for the TCP connection and the SSH handshake.
        keepalive: Seconds between keep-alive packets (0: none), so idle tunnels survive
            stateful firewalls and dead servers are noticed.
    """

    host: str
    port: int = 22
    username: str | None = None
    key_filename: str | None = None
    password: str | None = field(default=None, repr=False)
    known_hosts: str | None = None
    trust_unknown_hosts: bool = False
    connect_timeout: float = 10.0
    keepalive: float = 15.0

    @classmethod
    def from_url(cls, url: str, **settings: Any) -> SSHConfig:
        """Parse ``ssh://[user@]host[:port]``; keyword arguments set the other fields."""
        parts = urlsplit(url)
        if parts.scheme != "ssh" or not parts.hostname:
            raise ValueError(f"expected ssh://[user@]host[:port], got {url!r}")
        return cls(
            host=parts.hostname,
            port=parts.port or 22,
            username=unquote(parts.username) if parts.username else None,
            **settings,
        )

    def connect(self) -> paramiko.SSHClient:
        """Open an authenticated SSH connection.

        Raises:
            ProviderError: the server could not be reached, its host key is unknown or
                changed, or authentication failed.
        """
        paramiko = _paramiko()
        client = paramiko.SSHClient()
        if self.known_hosts:
            client.load_host_keys(self.known_hosts)
        else:
            client.load_system_host_keys()
        if self.trust_unknown_hosts:
            client.set_missing_host_key_policy(_log_unknown_host_policy(paramiko))
        else:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                self.host,
                port=self.port,
                username=self.username,
                key_filename=self.key_filename,
                password=self.password,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                allow_agent=self.key_filename is None,
                look_for_keys=self.key_filename is None,
            )
        except (paramiko.SSHException, OSError) as e:
            client.close()
            raise ProviderError(
                f"SSH connection to {self.username or ''}@{self.host}:{self.port} failed: "
                f"{type(e).__name__}: {e}"
            ) from e
        transport = client.get_transport()
        if transport is not None and self.keepalive > 0:
            transport.set_keepalive(int(max(self.keepalive, 1)))
        return client


def _log_unknown_host_policy(paramiko: Any) -> Any:
    """A policy that accepts an unknown host key and logs it (paramiko's warns instead)."""

    class LogUnknownHost(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]
        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            logger.warning(
                "accepting unknown %s host key of %s (fingerprint %s)",
                key.get_name(),
                hostname,
                key.fingerprint if hasattr(key, "fingerprint") else key.get_fingerprint().hex(),
            )

    return LogUnknownHost()


@dataclass(frozen=True)
class CommandOutput:
    """Result of a command run over SSH."""

    returncode: int
    output: str


class SSHTunnel:
    """A local port forward through an SSH server, started in the constructor.

    Args:
        ssh: The SSH server.
        remote_host: Destination host as the SSH server sees it (often ``127.0.0.1``).
        remote_port: Destination port.
        bind_host: Local address to listen on (loopback).

    Attributes:
        local_port: The local port that forwards to the destination.
    """

    def __init__(
        self, ssh: SSHConfig, remote_host: str, remote_port: int, bind_host: str = "127.0.0.1"
    ) -> None:
        self.ssh = ssh
        self.remote = (remote_host, remote_port)
        self._lock = threading.Lock()
        self._client: paramiko.SSHClient | None = ssh.connect()
        # Binding port 0 lets the kernel pick a free port that we hold from now on: no race.
        self._listener = socket.create_server((bind_host, 0))
        self.local_port: int = self._listener.getsockname()[1]
        self._wake_read, self._wake_write = os.pipe()
        self._closed = False
        self._pairs: set[tuple[socket.socket, Any]] = set()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(
            target=self._accept_loop, name=f"ssh-tunnel-{self.local_port}", daemon=True
        )
        self._acceptor.start()
        logger.info(
            "SSH tunnel 127.0.0.1:%d -> %s:%d via %s:%d",
            self.local_port,
            remote_host,
            remote_port,
            ssh.host,
            ssh.port,
        )

    def __repr__(self) -> str:
        return (
            f"SSHTunnel(127.0.0.1:{self.local_port} -> {self.remote[0]}:{self.remote[1]} "
            f"via {self.ssh.host}:{self.ssh.port})"
        )

    @property
    def active(self) -> bool:
        """True while the SSH connection is up."""
        client = self._client
        transport = client.get_transport() if client is not None else None
        return transport is not None and transport.is_active()

    def run(self, command: str, *, timeout: float = 300.0) -> CommandOutput:
        """Run a shell command on the SSH server; return its exit status and output.

        Raises:
            ProviderError: the command could not be started or did not finish in time.
        """
        paramiko = _paramiko()
        transport = self._transport()
        try:
            channel = transport.open_session(timeout=self.ssh.connect_timeout)
            channel.set_combine_stderr(True)
            channel.settimeout(timeout)
            channel.exec_command(command)
            output = bytearray()
            deadline = time.monotonic() + timeout
            while True:
                chunk = channel.recv(_CHUNK)
                if not chunk:
                    break
                output += chunk
                if time.monotonic() > deadline:
                    raise TimeoutError
            status = channel.recv_exit_status()
            channel.close()
        except TimeoutError as e:
            raise ProviderError(f"SSH command did not finish in {timeout:g} s: {command}") from e
        except (paramiko.SSHException, OSError) as e:
            raise ProviderError(f"SSH command failed to run ({e}): {command}") from e
        return CommandOutput(status, output.decode(errors="replace"))

    def close(self) -> None:
        """Stop listening, drop every forwarded connection and the SSH connection."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pairs = list(self._pairs)
        os.write(self._wake_write, b"x")
        self._acceptor.join(timeout=5.0)
        for sock, channel in pairs:
            _close_quietly(sock)
            _close_quietly(channel)
        for thread in self._threads:
            thread.join(timeout=5.0)
        self._listener.close()
        os.close(self._wake_read)
        os.close(self._wake_write)
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> SSHTunnel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals -------------------------------------------------------------------------

    def _transport(self) -> paramiko.Transport:
        """The live SSH transport, reconnecting once if the connection dropped."""
        with self._lock:
            if self._closed:
                raise ProviderError(f"{self!r} is closed")
            transport = self._client.get_transport() if self._client is not None else None
            if transport is None or not transport.is_active():
                logger.warning("SSH connection to %s:%d lost; reconnecting", *self._server())
                if self._client is not None:
                    self._client.close()
                self._client = None
                self._client = self.ssh.connect()
                transport = self._client.get_transport()
            assert transport is not None
            return transport

    def _server(self) -> tuple[str, int]:
        return self.ssh.host, self.ssh.port

    def _accept_loop(self) -> None:
        while True:
            ready, _, _ = select.select([self._listener, self._wake_read], [], [])
            if self._wake_read in ready:
                return
            try:
                sock, peer = self._listener.accept()
            except OSError:
                continue
            thread = threading.Thread(
                target=self._forward, args=(sock, peer), name="ssh-tunnel-conn", daemon=True
            )
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()

    def _forward(self, sock: socket.socket, peer: tuple[str, int]) -> None:
        paramiko = _paramiko()
        try:
            channel = self._transport().open_channel(
                "direct-tcpip", self.remote, peer, timeout=self.ssh.connect_timeout
            )
        except (paramiko.SSHException, ProviderError, OSError) as e:
            logger.warning("%r: cannot open a channel: %s", self, e)
            _close_quietly(sock)
            return
        with self._lock:
            if self._closed:
                _close_quietly(sock)
                _close_quietly(channel)
                return
            self._pairs.add((sock, channel))
        try:
            _pump(sock, channel)
        finally:
            with self._lock:
                self._pairs.discard((sock, channel))
            _close_quietly(sock)
            _close_quietly(channel)


def _pump(sock: socket.socket, channel: Any) -> None:
    """Copy bytes both ways until either side closes."""
    try:
        while True:
            ready, _, _ = select.select([sock, channel], [], [])
            if sock in ready:
                data = sock.recv(_CHUNK)
                if not data:
                    return
                channel.sendall(data)
            if channel in ready:
                data = channel.recv(_CHUNK)
                if not data:
                    return
                sock.sendall(data)
    except (OSError, ValueError, EOFError):  # a side went away (or the tunnel is shutting down)
        return


def _close_quietly(thing: Any) -> None:
    try:
        thing.close()
    except OSError:
        pass
