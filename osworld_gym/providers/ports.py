"""Free TCP ports for desktops, reserved without races between threads and processes.

A port that a probe ``bind`` finds free can be taken by someone else before the desktop binds
it (a container's guest, a QEMU port forward). Every reservation therefore also holds an
exclusive ``flock`` on ``<lock_dir>/<port>.lock`` for as long as it lives: other osworld-gym
processes on the host skip locked ports, and the kernel drops the lock when the holder exits,
even by SIGKILL, so no reservation outlives its process. Ports come from a range below the
kernel's ephemeral range (default 20000-32767), so outgoing connections do not take them
either.

Lock files do not pile up: a reservation removes its file when released, and every
reservation also removes the files of holders that died (``sweep_stale_locks()``). A file
is only ever removed by whoever holds its lock, and a lock counts only while its file is still
the one at the path: whoever locked a file that was removed meanwhile tries again on the path.

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
_SUFFIX = ".lock"
# Tries to lock the file at a path that keeps being removed under us: each retry means
# another process removed the file between our open and our lock, so a few suffice.
_RELOCK_TRIES = 8


def default_lock_dir() -> Path:
    """The host-wide folder of port lock files (shared by every user's osworld-gym)."""
    return Path(tempfile.gettempdir()) / "osworld-gym-ports"


class PortReservation:
    """A port kept for one user until ``release()`` (or process exit).

    Attributes:
        port: The reserved TCP port.
        host: The address it was probed on.
    """

    def __init__(self, port: int, host: str, lock_fd: int, lock_path: Path) -> None:
        self.port = port
        self.host = host
        self._lock_fd = lock_fd
        self._lock_path = lock_path

    @property
    def released(self) -> bool:
        """True once ``release()`` ran."""
        return self._lock_fd < 0

    def release(self) -> None:
        """Give the port back and remove its lock file. Safe to call twice."""
        if self._lock_fd < 0:
            return
        fd, self._lock_fd = self._lock_fd, -1
        _unlock_and_remove(fd, self._lock_path)

    def __enter__(self) -> PortReservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        if getattr(self, "_lock_fd", -1) >= 0:
            try:
                self.release()
            except Exception:  # noqa: BLE001 - at interpreter exit; the kernel drops the lock
                pass  # and the next reservation's sweep removes the file

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


def _lock_path(lock_dir: Path, port: int) -> Path:
    return lock_dir / f"{port}{_SUFFIX}"


def _open_lock_file(path: Path) -> int | None:
    """A read-only descriptor of the lock file at ``path``, made if missing; None if unusable.

    Read-only and without ``O_CREAT`` on an existing file: in a shared sticky folder another
    user's file can be opened that way (for ``flock``) where ``O_RDWR`` or ``O_CREAT`` would be
    refused (``fs.protected_regular``). ``O_NOFOLLOW``: a link planted there is not followed.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
    for _ in range(_RELOCK_TRIES):
        try:
            return os.open(path, flags)
        except FileNotFoundError:
            pass
        except OSError as e:  # a link, another user's unreadable file: not a port for us
            logger.debug("cannot open port lock %s: %s", path, e)
            return None
        try:
            return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue  # made by someone else between our two opens: open theirs
        except OSError as e:
            logger.debug("cannot make port lock %s: %s", path, e)
            return None
    return None


def _still_at(fd: int, path: Path) -> bool:
    """Whether the file open as ``fd`` is still the one at ``path`` (not removed, not replaced)."""
    try:
        at_path = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (at_path.st_dev, at_path.st_ino)


def _lock(lock_dir: Path, port: int) -> int | None:
    """An open descriptor holding the port's flock, or None if another process holds it.

    The lock counts only if its file is still at the path once locked: a holder removes its
    file on release, so a file opened just before that removal can be locked after it, while
    a third process makes and locks a new file at the path. Whoever finds its file gone tries
    the path again, so at most one lock per path is ever valid.
    """
    path = _lock_path(lock_dir, port)
    for _ in range(_RELOCK_TRIES):
        fd = _open_lock_file(path)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _still_at(fd, path):
                return fd
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # locked a removed file: try the one at the path now
    logger.debug("port lock %s kept being replaced; skipping port %d", path, port)
    return None


def _unlock_and_remove(fd: int, path: Path) -> None:
    """Remove the lock file held as ``fd`` (while still holding it), then drop the lock.

    Removing first is what keeps the protocol safe: nobody else holds this file, so nobody
    else removes or replaces the path meanwhile, and whoever locks the file after us finds
    it gone and tries again.
    """
    try:
        if _still_at(fd, path):
            path.unlink()
    except OSError as e:  # another user's leftover in the sticky folder: theirs to remove
        logger.debug("cannot remove port lock %s: %s", path, e)
    finally:
        os.close(fd)  # drops the flock


def sweep_stale_locks(lock_dir: str | Path | None = None) -> int:
    """Remove the lock files nobody holds (their holders released them badly or died).

    A holder killed by SIGKILL loses its lock with its process but leaves its file. Files
    held by live reservations are left alone: they cannot be locked.

    Args:
        lock_dir: Folder of the lock files (default ``default_lock_dir()``).

    Returns:
        How many files were removed.
    """
    folder = Path(lock_dir) if lock_dir is not None else default_lock_dir()
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    removed = 0
    for name in names:
        stem = name.removesuffix(_SUFFIX)
        if stem == name or not stem.isdigit():
            continue  # not a port lock file: not ours to remove
        fd = _lock(folder, int(stem))
        if fd is not None:
            _unlock_and_remove(fd, _lock_path(folder, int(stem)))
            removed += 1
    if removed:
        logger.debug("removed %d stale port lock files from %s", removed, folder)
    return removed


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
        lock_dir: Folder of the lock files (default ``default_lock_dir()``); all processes
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
    sweep_stale_locks(folder)
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
            _unlock_and_remove(fd, _lock_path(folder, port))
            raise
        if free:
            logger.debug("reserved port %d on %s", port, host)
            return PortReservation(port, host, fd, _lock_path(folder, port))
        _unlock_and_remove(fd, _lock_path(folder, port))
    raise ProviderError(
        f"no free TCP port on {host} in {low}-{high} after {_ATTEMPTS} tries; "
        "free some ports or pass another port_range"
    )


def reserve_ports(count: int, host: str = "127.0.0.1", **kwargs: object) -> list[PortReservation]:
    """Reserve ``count`` distinct ports (all or none).

    Args:
        count: How many ports.
        host: Address they must be free on.
        **kwargs: Passed to ``reserve_port()``.
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
