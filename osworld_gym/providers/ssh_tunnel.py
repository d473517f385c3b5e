"""SSH connections and local port forwards (paramiko), for desktops behind an SSH server.

``SSHTunnel`` listens on ``127.0.0.1:<free port>`` and carries every connection made to it
through one SSH connection to ``remote_host:remote_port`` as seen from the SSH server (a
``direct-tcpip`` channel, what ``ssh -L`` does). The same connection runs shell commands
(``SSHTunnel.run()``), e.g. a snapshot-revert command on the VM host. A dropped SSH
connection is re-established on the next forwarded connection. Several tunnels can share one
``SSHConnection`` (a desktop's guest and service ports: one login, one TCP connection).

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
# Our SSH transports log here instead of paramiko.transport (set_log_channel).
TRANSPORT_LOG = f"{__name__}.paramiko"
# paramiko's line for a channel the server could not connect (SSH open-failure code 2).
_REFUSED_CHANNEL = " open FAILED: "
_REFUSED_REASON = ": Connect failed"


class _DropRefusedChannels(logging.Filter):
    """Drops paramiko's ERROR line for each channel the SSH server could not connect.

    A tunnel's driver polls a guest that is still starting many times (each poll a refused
    channel); the tunnel logs those at DEBUG itself.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (_REFUSED_CHANNEL in message and message.endswith(_REFUSED_REASON))


logging.getLogger(TRANSPORT_LOG).addFilter(_DropRefusedChannels())


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
        proxy_command: An OpenSSH ``ProxyCommand`` whose stdin/stdout carry the connection
            (e.g. through a jump host), instead of a TCP connection to ``host:port``.
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
    proxy_command: str | None = None

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

    @classmethod
    def from_openssh_config(
        cls, url: str, config_file: str | os.PathLike[str] = "~/.ssh/config", **settings: Any
    ) -> SSHConfig:
        """Parse ``ssh://[user@]host[:port]`` as the docker SDK does for ``ssh://`` engines.

        The ``Host`` entry of ``config_file`` that matches the URL's host supplies
        ``HostName``, ``Port`` and ``User`` (where the URL has none), ``IdentityFile`` (the
        first that exists; without one the SSH agent and the default keys are tried) and
        ``ProxyCommand``; host keys come from ``~/.ssh/known_hosts``. So a connection made
        from this config logs in where the SDK's own does.

        Args:
            url: The ``ssh://`` URL.
            config_file: The OpenSSH client configuration (ignored when missing).
            settings: Other fields, which take precedence.
        """
        paramiko = _paramiko()
        parts = urlsplit(url)
        if parts.scheme != "ssh" or not parts.hostname:
            raise ValueError(f"expected ssh://[user@]host[:port], got {url!r}")
        found: dict[str, Any] = {}
        path = os.path.expanduser(os.fspath(config_file))
        if os.path.isfile(path):
            # The URL's user and port come first, as ssh's -l and -p do: the first value
            # obtained wins, and ProxyCommand's %r and %p then expand to them.
            username = unquote(parts.username) if parts.username else None
            given = "".join(
                f"  {option} {value}\n"
                for option, value in (("User", username), ("Port", parts.port))
                if value
            )
            with open(path) as f:
                text = f.read()
            if given:
                text = f"Host {parts.hostname}\n{given}{text}"
            found = dict(paramiko.SSHConfig.from_text(text).lookup(parts.hostname))
        values: dict[str, Any] = {
            "host": found.get("hostname", parts.hostname),
            "port": parts.port or int(found.get("port", 22)),
            "username": unquote(parts.username) if parts.username else found.get("user"),
            "key_filename": _first_existing(found.get("identityfile", [])),
            "proxy_command": found.get("proxycommand"),
        }
        values.update(settings)
        return cls(**values)

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
        sock = None
        try:
            if self.proxy_command:
                sock = paramiko.ProxyCommand(self.proxy_command)
            client.connect(
                self.host,
                port=self.port,
                sock=sock,
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
            if sock is not None:
                sock.close()  # ends the proxy command
            raise ProviderError(
                f"SSH connection to {self.username or ''}@{self.host}:{self.port} failed: "
                f"{type(e).__name__}: {e}"
            ) from e
        transport = client.get_transport()
        if transport is not None:
            transport.set_log_channel(TRANSPORT_LOG)
            if self.keepalive > 0:
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


class SSHConnection:
    """One SSH connection, re-established when it dropped; tunnels can share it.

    Args:
        ssh: The SSH server; connected to in the constructor.
    """

    def __init__(self, ssh: SSHConfig) -> None:
        self.ssh = ssh
        self._lock = threading.Lock()
        self._closed = False
        self._client: paramiko.SSHClient | None = ssh.connect()

    def __repr__(self) -> str:
        return f"SSHConnection({self.ssh.username or ''}@{self.ssh.host}:{self.ssh.port})"

    @property
    def active(self) -> bool:
        """True while the SSH connection is up."""
        client = self._client
        transport = client.get_transport() if client is not None else None
        return transport is not None and transport.is_active()

    def transport(self) -> paramiko.Transport:
        """The live SSH transport, reconnecting once if the connection dropped.

        Raises:
            ProviderError: the connection is closed, or reconnecting failed.
        """
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

    def run(self, command: str, *, timeout: float = 300.0) -> CommandOutput:
        """Run a shell command on the SSH server; return its exit status and output.

        Raises:
            ProviderError: the command could not be started or did not finish in time.
        """
        paramiko = _paramiko()
        transport = self.transport()
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
        """Close the SSH connection (every channel on it ends). Safe to call twice."""
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _server(self) -> tuple[str, int]:
        return self.ssh.host, self.ssh.port


class SSHTunnel:
    """A local port forward through an SSH server, started in the constructor.

    Args:
        ssh: The SSH server (the tunnel opens its own connection and closes it with itself),
            or an open ``SSHConnection`` to share (left open by ``close()``).
        remote_host: Destination host as the SSH server sees it (often ``127.0.0.1``).
        remote_port: Destination port.
        bind_host: Local address to listen on (loopback).

    Attributes:
        local_port: The local port that forwards to the destination.
        connection: The SSH connection the forwarded connections go through.
    """

    def __init__(
        self,
        ssh: SSHConfig | SSHConnection,
        remote_host: str,
        remote_port: int,
        bind_host: str = "127.0.0.1",
    ) -> None:
        self._owns_connection = not isinstance(ssh, SSHConnection)
        self.connection = SSHConnection(ssh) if isinstance(ssh, SSHConfig) else ssh
        self.ssh = self.connection.ssh
        self.remote = (remote_host, remote_port)
        self._lock = threading.Lock()
        try:
            # Binding port 0 lets the kernel pick a free port that we hold from now on: no race.
            self._listener = socket.create_server((bind_host, 0))
        except OSError:
            if self._owns_connection:
                self.connection.close()
            raise
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
            self.ssh.host,
            self.ssh.port,
        )

    def __repr__(self) -> str:
        return (
            f"SSHTunnel(127.0.0.1:{self.local_port} -> {self.remote[0]}:{self.remote[1]} "
            f"via {self.ssh.host}:{self.ssh.port})"
        )

    @property
    def active(self) -> bool:
        """True while the SSH connection is up."""
        return self.connection.active

    @property
    def _client(self) -> paramiko.SSHClient | None:
        """The SSH client of the connection (tests drop its transport to simulate a cut)."""
        return self.connection._client

    def run(self, command: str, *, timeout: float = 300.0) -> CommandOutput:
        """Run a shell command on the SSH server (see ``SSHConnection.run()``)."""
        with self._lock:
            if self._closed:
                raise ProviderError(f"{self!r} is closed")
        return self.connection.run(command, timeout=timeout)

    def close(self) -> None:
        """Stop listening, drop every forwarded connection, and the SSH connection if owned."""
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
        if self._owns_connection:
            self.connection.close()

    def __enter__(self) -> SSHTunnel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals -------------------------------------------------------------------------

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
            channel = self.connection.transport().open_channel(
                "direct-tcpip", self.remote, peer, timeout=self.ssh.connect_timeout
            )
        except paramiko.ChannelException as e:
            # The server could not connect to the destination: nothing listens there (yet),
            # as while a desktop boots and its driver polls. The client sees a closed socket.
            logger.debug("%r: the destination refused: %s", self, e)
            _close_quietly(sock)
            return
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


def _first_existing(paths: list[str]) -> str | None:
    """The first of ``paths`` (``~`` expanded) that is a file, or None."""
    for path in paths:
        expanded = os.path.expanduser(path)
        if os.path.isfile(expanded):
            return expanded
    return None


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
