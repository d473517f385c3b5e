"""The ``remote`` provider: attach to guest servers that already run elsewhere.

The provider is given a list of guest URLs (VMs, containers or machines started by other
means), each optionally behind an SSH server. Every desktop claims one URL for its lifetime:
launching hands out the first unclaimed one, closing releases it. Claims are ``flock`` locks on
files in a lock folder, so envs in different processes on this host (a pool, Ray workers) never
share a guest; a lock dies with its process. A pool of N envs therefore needs N URLs.

A reset runs the configured reset strategy (``osworld_gym.providers.remote.reset``) and waits until
the guest answers again.

Example:
    >>> config = RemoteProviderConfig(
    ...     urls=("http://10.0.0.5:5000", "http://10.0.0.6:5000"),
    ...     token="s3cret",
    ...     reset=CommandReset("virsh snapshot-revert vm{index} clean", where="ssh"),
    ...     ssh=SSHConfig("vmhost.example", username="me"),
    ... )
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from osworld_gym.errors import DesktopDiedError, GuestError, ProviderError
from osworld_gym.guest.client import ClientConfig, GuestClient
from osworld_gym.providers.base import Desktop, Provider, ProviderConfig
from osworld_gym.providers.remote.reset import (
    CommandReset,
    GuestScriptReset,
    NoReset,
    ResetStrategy,
)
from osworld_gym.providers.ssh_tunnel import SSHConfig, SSHTunnel

logger = logging.getLogger(__name__)

_PROBE_CLIENT = ClientConfig(connect_timeout=2.0, timeout=3.0, retries=0)

__all__ = [
    "CommandReset",
    "GuestScriptReset",
    "NoReset",
    "RemoteDesktop",
    "RemoteGuest",
    "RemoteProvider",
    "RemoteProviderConfig",
    "ResetStrategy",
    "SSHConfig",
]


@dataclass(frozen=True)
class RemoteGuest:
    """One guest server, with settings that differ from the provider's shared ones.

    Attributes:
        url: ``http://host:port`` of the guest; behind SSH, as the SSH server reaches it
            (``http://127.0.0.1:5000`` for a guest on the SSH server itself).
        token: The guest's token (default: the provider's).
        ssh: The SSH server to tunnel through (default: the provider's).
    """

    url: str
    token: str | None = field(default=None, repr=False)
    ssh: SSHConfig | None = None


@dataclass(frozen=True)
class RemoteProviderConfig(ProviderConfig):
    """Settings of the ``remote`` provider.

    Attributes:
        urls: The guests, as URLs or ``RemoteGuest`` entries; one desktop per entry.
        token: Token shared by the guests (a ``RemoteGuest`` may override it).
        ssh: Reach the guests through this SSH server (a local port forward per desktop).
        reset: How a reset restores the desktop (default ``NoReset``).
        check_screen_size: Refuse a guest whose screen differs from ``screen_size`` (ours
            reports it in ``/health``, OSWorld's answers ``/screen_size``). Turned off, the env
            resizes screenshots to ``screen_size`` but actions still land at guest pixels.
        lock_dir: Folder of the claim locks (default: a per-user folder in the temp folder);
            processes that share guests must share it.
    """

    urls: tuple[str | RemoteGuest, ...] = ()
    token: str | None = field(default=None, repr=False)
    ssh: SSHConfig | None = None
    reset: ResetStrategy = NoReset()
    check_screen_size: bool = True
    lock_dir: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.urls, str):
            raise ValueError("urls must be a sequence of URLs, not one string")
        object.__setattr__(self, "urls", tuple(self.urls))
        if not isinstance(self.reset, ResetStrategy):
            raise ValueError(f"reset must have a reset(desktop) method, got {self.reset!r}")
        for guest in self.guests():
            parts = urlsplit(guest.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"expected a guest URL like http://host:5000, got {guest.url!r}")
            if guest.ssh is not None and parts.scheme != "http":
                raise ValueError(f"only http:// guests can be reached through SSH: {guest.url!r}")
        if isinstance(self.reset, CommandReset) and self.reset.where == "ssh":
            if any(guest.ssh is None for guest in self.guests()):
                raise ValueError("CommandReset(where='ssh') needs an SSH server for every guest")

    def guests(self) -> list[RemoteGuest]:
        """Every entry of ``urls`` with the shared settings filled in."""
        resolved = []
        for entry in self.urls:
            guest = entry if isinstance(entry, RemoteGuest) else RemoteGuest(str(entry))
            resolved.append(
                RemoteGuest(
                    url=guest.url,
                    token=guest.token if guest.token is not None else self.token,
                    ssh=guest.ssh if guest.ssh is not None else self.ssh,
                )
            )
        return resolved


class RemoteProvider(Provider):
    """Hands out ``RemoteDesktop`` instances, one per configured guest."""

    name = "remote"

    def __init__(self, config: RemoteProviderConfig) -> None:
        super().__init__(config)
        self.config: RemoteProviderConfig
        if not config.urls:
            raise ProviderError(
                "the remote provider needs the URLs of running guests: "
                "RemoteProviderConfig(urls=('http://host:5000', ...), token=...)"
            )
        self.lock_dir = Path(
            config.lock_dir or Path(tempfile.gettempdir()) / f"osworld-gym-remote-{os.getuid()}"
        )

    def _launch_impl(self) -> RemoteDesktop:
        guests = self.config.guests()
        self.lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for index, guest in enumerate(guests):
            claim = _Claim.take(self.lock_dir / f"{_claim_key(guest)}.lock")
            if claim is None:
                continue
            try:
                return RemoteDesktop(self.config, index, guest, claim)
            except BaseException:
                claim.release()
                raise
        raise ProviderError(
            f"all {len(guests)} remote guests are in use by other desktops "
            f"({', '.join(g.url for g in guests)}): each env needs a guest of its own, so a "
            f"pool of N envs needs N URLs"
        )


def _claim_key(guest: RemoteGuest) -> str:
    via = f"{guest.ssh.host}:{guest.ssh.port}" if guest.ssh else ""
    return hashlib.sha256(f"{via}|{guest.url.rstrip('/')}".encode()).hexdigest()[:24]


class _Claim:
    """An exclusive ``flock`` on a file: released by ``release()`` or when the process ends."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def take(cls, path: Path) -> _Claim | None:
        """Lock ``path``; None when another desktop holds it."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return cls(fd, path)

    def release(self) -> None:
        """Give the guest back (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _release(claim: _Claim, tunnel: SSHTunnel | None) -> None:
    """Close the tunnel and release the claim (also run by the GC finalizer)."""
    if tunnel is not None:
        tunnel.close()
    claim.release()


class RemoteDesktop(Desktop):
    """A claimed remote guest. Built by ``RemoteProvider``.

    Attributes:
        index: The guest's position in the provider's list.
        url: The guest's URL as configured.
        tunnel: The SSH tunnel in use, if any.
    """

    def __init__(
        self, config: RemoteProviderConfig, index: int, guest: RemoteGuest, claim: _Claim
    ) -> None:
        super().__init__()
        self.config = config
        self.index = index
        self.url = guest.url.rstrip("/")
        self._token = guest.token
        parts = urlsplit(self.url)
        self.guest_host = parts.hostname or ""
        self.guest_port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tunnel: SSHTunnel | None = None
        if guest.ssh is not None:
            self.tunnel = SSHTunnel(guest.ssh, self.guest_host, self.guest_port)
            self._endpoint = f"http://127.0.0.1:{self.tunnel.local_port}{parts.path}".rstrip("/")
        else:
            self._endpoint = self.url
        self._finalizer = weakref.finalize(self, _release, claim, self.tunnel)
        try:
            self._wait_for_guest()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        via = f" via {self.tunnel!r}" if self.tunnel else ""
        return f"RemoteDesktop({self.index}: {self.url}{via})"

    @property
    def endpoint(self) -> str:
        """Where this host reaches the guest (the tunnel's local end when tunnelled)."""
        return self._endpoint

    @property
    def token(self) -> str | None:
        """The guest's token."""
        return self._token

    @property
    def client_config(self) -> ClientConfig:
        """Client settings from the provider config."""
        return self.config.client

    def _reset_impl(self) -> None:
        self.config.reset.reset(self)
        # The strategy may have restarted the guest (a VM revert): drop pooled connections.
        if self._client is not None:
            self._client.close()
            self._client = None
        self._wait_for_guest()

    def _check_impl(self) -> None:
        try:
            self.client.info(refresh=True)
        except GuestError as e:
            raise DesktopDiedError("guest", None, str(e)) from e

    def _close_impl(self) -> None:
        self._finalizer()

    def logs(self) -> str:
        """Nothing local to show: the guest's logs live on its own machine."""
        return f"(remote guest {self.url}; its logs are on its machine)"

    def _wait_for_guest(self) -> None:
        # Short timeouts while waiting: a guest behind a NAT or a tunnel may accept the
        # connection long before it answers.
        probe = GuestClient(self.endpoint, token=self.token, config=_PROBE_CLIENT)
        try:
            info = probe.wait_until_ready(self.config.boot_timeout)
        except GuestError as e:
            raise ProviderError(f"remote guest {self.url} does not answer: {e}") from e
        finally:
            probe.close()
        if self.config.check_screen_size:
            self._check_screen_size(info.screen_size)

    def _check_screen_size(self, size: tuple[int, int] | None) -> None:
        """Refuse a guest whose screen is not the configured one.

        Observations would be resized to the configured size while actions land at the
        guest's own pixels: clicks would miss, and tasks score 0 for no visible reason.
        """
        width, height = self.config.screen_size
        if size is None:
            logger.warning(
                "remote guest %s does not report its screen size; assuming %dx%d",
                self.url,
                width,
                height,
            )
            return
        if tuple(size) != (width, height):
            raise ProviderError(
                f"remote guest {self.url} has a {size[0]}x{size[1]} screen; the provider is "
                f"configured for {width}x{height}: set screen_size=({size[0]}, {size[1]}) "
                f"(osworld-gym run: --screen-size {size[0]}x{size[1]}), or "
                f"check_screen_size=False to accept the mismatch"
            )
