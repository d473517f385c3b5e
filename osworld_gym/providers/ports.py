"""Free TCP ports for desktops, reserved without races between threads and processes.

A port that a probe ``bind`` finds free can be taken by someone else before the desktop binds
it (a container's guest, a QEMU port forward). Every reservation therefore also holds an
exclusive ``flock`` on ``<lock_dir>/<port>.lock`` for as long as it lives: other osworld-gym
processes on the host skip locked ports, and the kernel drops the lock when the holder exits,
even by SIGKILL, so no reservation outlives its process. Ports come from a range below the
kernel's ephemeral range (default 20000-32767), so outgoing connections do not take them
either.

Usage::

    with reserve_port() as reservation:
        start_guest(port=reservation.port)   # keep the reservation while the guest runs
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import random
import socket
import tempfile
from pathlib import Path

from osworld_gym.errors import ProviderError

logger = logging.getLogger(__name__)

DEFAULT_PORT_RANGE = (20000, 32767)
_ATTEMPTS = 400


def default_lock_dir() -> Path:
    """The host-wide folder of port lock files (shared by every user's osworld-gym)."""
    return Path(tempfile.gettempdir()) / "osworld-gym-ports"


class PortReservation:
    """A port kept for one user until :meth:`release` (or process exit).

    Attributes:
        port: The reserved TCP port.
        host: The address it was probed on.
    """

    def __init__(self, port: int, host: str, lock_fd: int) -> None:
        self.port = port
        self.host = host
        self._lock_fd = lock_fd

    @property
    def released(self) -> bool:
        """True once :meth:`release` ran."""
        return self._lock_fd < 0

    def release(self) -> None:
        """Give the port back. Safe to call twice."""
        if self._lock_fd < 0:
            return
        os.close(self._lock_fd)  # drops the flock
        self._lock_fd = -1

    def __enter__(self) -> PortReservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        if getattr(self, "_lock_fd", -1) >= 0:
            self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"PortReservation({self.host}:{self.port}, {state})"


def is_port_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if a TCP socket can bind ``host:port`` now (as a server would, SO_REUSEADDR set)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
                return False
            raise
    return True


def _lock(lock_dir: Path, port: int) -> int | None:
    """An open descriptor holding the port's flock, or None if another process holds it."""
    fd = os.open(lock_dir / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _prepare(lock_dir: Path) -> None:
    # World-writable and sticky like /tmp: users share the folder, not each other's files.
    if not lock_dir.exists():
        lock_dir.mkdir(parents=True, exist_ok=True)
        try:
            lock_dir.chmod(0o1777)
        except PermissionError:  # created by another user meanwhile
            pass


def reserve_port(
    host: str = "127.0.0.1",
    *,
    port_range: tuple[int, int] = DEFAULT_PORT_RANGE,
    lock_dir: str | Path | None = None,
    rng: random.Random | None = None,
) -> PortReservation:
    """Reserve a TCP port that is free on ``host`` and not reserved by anyone else.

    Args:
        host: Address the port must be free on.
        port_range: Inclusive (low, high) range to pick from.
        lock_dir: Folder of the lock files (default :func:`default_lock_dir`); all processes
            that must not collide have to use the same one.
        rng: Random source for the candidates (tests pass a seeded one).

    Raises:
        ProviderError: no free port found after a few hundred candidates.
    """
    low, high = port_range
    if not 1 <= low <= high <= 65535:
        raise ValueError(f"invalid port range {port_range}")
    folder = Path(lock_dir) if lock_dir is not None else default_lock_dir()
    _prepare(folder)
    rng = rng or random.Random()
    for _ in range(_ATTEMPTS):
        port = rng.randint(low, high)
        # flock conflicts between descriptors of one process too, so this also keeps
        # threads of the same process apart.
        fd = _lock(folder, port)
        if fd is None:
            continue
        try:
            free = is_port_free(port, host)
        except BaseException:
            os.close(fd)
            raise
        if free:
            logger.debug("reserved port %d on %s", port, host)
            return PortReservation(port, host, fd)
        os.close(fd)
    raise ProviderError(
        f"no free TCP port on {host} in {low}-{high} after {_ATTEMPTS} tries; "
        "free some ports or pass another port_range"
    )


def reserve_ports(count: int, host: str = "127.0.0.1", **kwargs: object) -> list[PortReservation]:
    """Reserve ``count`` distinct ports (all or none).

    Args:
        count: How many ports.
        host: Address they must be free on.
        **kwargs: Passed to :func:`reserve_port`.
    """
    reserved: list[PortReservation] = []
    try:
        for _ in range(count):
            reserved.append(reserve_port(host, **kwargs))  # type: ignore[arg-type]
    except BaseException:
        for reservation in reserved:
            reservation.release()
        raise
    return reserved
