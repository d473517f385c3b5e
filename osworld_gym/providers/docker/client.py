"""Connecting to a Docker engine through the docker SDK (imported lazily).

``connect()`` returns a ``docker.DockerClient`` for the local engine (``DOCKER_HOST`` or
the default socket) or for a given base URL: ``unix://``, ``tcp://`` or ``ssh://user@host[:port]``.
SSH engines go through paramiko (the SDK's own support): the login uses the SSH agent, the
default keys, or an ``IdentityFile`` from ``~/.ssh/config``, and the host key must be in
``~/.ssh/known_hosts`` (unknown hosts are rejected).

The SDK is an optional dependency: ``pip install 'osworld-gym[docker]'``.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from osworld_gym.errors import DependencyNotInstalled, ProviderError
from osworld_gym.extras import install_command

if TYPE_CHECKING:
    import docker

INSTALL_HINT = install_command("docker")
ENGINE_HINT = (
    "start one with `bash scripts/start_docker.sh` (as root), or point DOCKER_HOST / "
    "base_url at a running engine"
)


def docker_sdk() -> Any:
    """The ``docker`` module, or ``DependencyNotInstalled`` with the install command."""
    try:
        import docker
    except ImportError as e:
        raise DependencyNotInstalled(
            f"the docker provider needs the docker SDK: {INSTALL_HINT}"
        ) from e
    return docker


def connect(base_url: str | None = None, *, timeout: float = 60.0) -> docker.DockerClient:
    """A client for the engine at ``base_url`` (None: the environment's engine), checked alive.

    Args:
        base_url: ``unix:///var/run/docker.sock``, ``tcp://host:2375``, ``ssh://user@host:22``,
            or None for ``DOCKER_HOST`` / the default socket.
        timeout: Seconds for each API call.

    Raises:
        DependencyNotInstalled: the docker SDK (or paramiko for ``ssh://``) is missing.
        ProviderError: no engine answers at that address; the message says how to start one.
    """
    sdk = docker_sdk()
    if base_url and base_url.startswith("ssh://"):
        try:
            import paramiko  # noqa: F401 - the SDK's ssh:// transport needs it
        except ImportError as e:
            raise DependencyNotInstalled(
                f"ssh:// Docker engines need paramiko: {INSTALL_HINT}"
            ) from e
    where = base_url or "the default engine (DOCKER_HOST or /var/run/docker.sock)"
    try:
        if base_url:
            client = sdk.DockerClient(base_url=base_url, timeout=int(timeout), version="auto")
        else:
            client = sdk.from_env(timeout=int(timeout), version="auto")
        client.ping()
    except sdk.errors.DockerException as e:
        raise ProviderError(f"no Docker engine answers at {where}: {e}; {ENGINE_HINT}") from e
    except Exception as e:  # paramiko/socket errors surface unwrapped from the SSH transport
        raise ProviderError(f"cannot reach the Docker engine at {where}: {e!r}") from e
    return client


def engine_host(base_url: str | None) -> str | None:
    """The host name of a remote engine's URL, or None for a local one (unix socket)."""
    if not base_url or base_url.startswith(("unix://", "npipe://", "fd://")):
        return None
    return urlsplit(base_url).hostname


def is_loopback(host: str | None) -> bool:
    """True for None (a local engine), ``localhost`` and loopback addresses."""
    if host is None or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
