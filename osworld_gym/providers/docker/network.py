"""A container's network namespace, and the host ports that reach into it.

On a local engine, our desktops' containers run with ``network_mode="none"``: a loopback of
their own and nothing else, so the host's loopback services (a vLLM server, Ray's dashboard)
and the other desktops' guests are out of their reach. This host reaches the guest server and
OSWorld's service ports in a container through a
``PortForwarder`` that enters the container's namespace
(``/proc/<pid>/ns/net`` of its main process; root, or ``CAP_SYS_ADMIN`` and ``CAP_SYS_PTRACE``).
A new container is a new namespace: each gets a forwarder of its own, closed when it goes.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from osworld_gym.errors import ProviderError
from osworld_gym.providers.netns import PortForwarder

logger = logging.getLogger(__name__)

_NEEDS_ROOT = (
    "entering a container's network namespace needs root (CAP_SYS_ADMIN and CAP_SYS_PTRACE); "
    "run as root, or set DockerProviderConfig(network='host') to share the host's network "
    "(no isolation: the desktop reaches the host's loopback services)"
)


def open_netns(container: Any) -> int:
    """An open descriptor (close-on-exec) of a running container's network namespace.

    Raises:
        ProviderError: the container does not run, this process may not open its namespace,
            or the engine's PID for it names another process here (this process runs in
            another PID namespace than the engine).
    """
    container.reload()
    state = container.attrs.get("State", {})
    pid = int(state.get("Pid") or 0)
    if not state.get("Running") or pid <= 0:
        raise ProviderError(f"container {container.name} is not running")
    try:
        fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except PermissionError as e:
        raise ProviderError(f"{container.name}: {_NEEDS_ROOT} ({e})") from e
    except FileNotFoundError as e:
        raise ProviderError(f"container {container.name} is not running (PID {pid} gone)") from e
    try:
        _check_owner(container, pid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_owner(container: Any, pid: int) -> None:
    """Refuse a PID that is not the container's here (read after the open: no reuse race).

    The engine reports PIDs of its own PID namespace; this process sees the same numbers only
    when it shares that namespace. The container's cgroup path holds its ID in both docker's
    cgroup drivers (``/docker/<id>``, ``docker-<id>.scope``).
    """
    try:
        cgroups = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError as e:
        raise ProviderError(f"container {container.name} is not running (PID {pid}: {e})") from e
    if container.id not in cgroups:
        raise ProviderError(
            f"PID {pid} of container {container.name} is another process here: this process "
            "does not share the Docker engine's PID namespace, so it cannot enter the "
            "container's network; set DockerProviderConfig(network='host')"
        )


def forward_into(
    container: Any, inbound: tuple[int, ...], outbound: tuple[int, ...] = ()
) -> PortForwarder:
    """Relay this host's loopback ports ``inbound`` to the same ports in ``container``.

    Args:
        container: A running container with a network namespace of its own.
        inbound: Ports listened on on this host's loopback, each relayed to the same port on
            the container's loopback.
        outbound: Ports listened on on the container's loopback, each relayed to the same
            port on this host's loopback (what the desktop may reach of the host).

    Raises:
        ProviderError: the namespace cannot be entered or a port cannot be bound.
    """
    fd = open_netns(container)
    try:
        return PortForwarder(fd, inbound, outbound)
    except PermissionError as e:
        raise ProviderError(f"{container.name}: {_NEEDS_ROOT} ({e})") from e
    except OSError as e:
        raise ProviderError(f"cannot relay ports {inbound} into {container.name}: {e}") from e
    finally:
        os.close(fd)  # the forwarder keeps a duplicate
