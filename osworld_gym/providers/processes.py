"""Finding and stopping the processes of one desktop by the marker in their environment.

Every process a desktop starts (X server, window manager, guest, and every app the guest
launches, even those that daemonise with ``setsid`` or double forks) inherits the environment
variable ``OSWORLD_GYM_DESKTOP=<id>``. Scanning ``/proc/*/environ`` for it finds them by PID;
nothing is ever matched by program name.

The environment is not enough on its own: ``/proc/<pid>/environ`` shows the memory where the
environment started, and programs that set their process title write over it (every process of
Chromium does, its browser process included). So the processes descended from a marked one
count as the desktop's too. On a sandboxed desktop that closes the gap: an orphan there is
adopted by the sandbox's init, which is marked.

Folders left on disk are found by an ownership record instead (``make_owned_folder()``): a
folder named with ``FOLDER_PREFIX`` holds ``OWNER_FILE``, naming the process that
made it (PID, kernel start time, boot and PID namespace, so a reused PID never passes for the
owner) and the marker of the desktop whose processes use it. ``remove_dead_folders()`` stops
the processes of, and deletes, the folders whose owner is gone; a folder without a readable
record, one not ours, or one whose owner is alive or cannot be judged from here is never
touched.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MARKER_VARIABLE = "OSWORLD_GYM_DESKTOP"
FOLDER_PREFIX = "osworld-gym-"  # every folder osworld-gym leaves in a temp or work folder
OWNER_FILE = ".osworld-gym-owner.json"  # the ownership record inside such a folder
_OWNER_KIND = "osworld-gym folder"  # tells our record from any other file of that name
_REMOVE_TIMEOUT = 2.0  # seconds a dead folder may take to disappear (a reaper may race us)


def marker_entry(marker: str) -> bytes:
    """The exact ``environ`` entry that tags a desktop's processes."""
    return f"{MARKER_VARIABLE}={marker}".encode()


def find_marked(marker: str, *, exclude: Iterable[int] = ()) -> list[int]:
    """PIDs of a desktop's live processes: marked ones and their descendants (module doc).

    ``exclude`` leaves processes out of the answer but not their descendants: a kept guest's
    apps are still found. The calling process is never in the answer.
    """
    wanted = marker_entry(marker)
    parents: dict[int, int] = {}
    marked = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        fields = _stat_fields(pid)
        if fields is None or fields[0] in (b"Z", b"X"):
            continue  # gone, or a zombie waiting to be reaped
        parents[pid] = int(fields[1])
        try:
            environ = _read(f"/proc/{name}/environ", whole=True)
        except OSError:  # gone, or not ours to read
            continue
        if wanted in environ.split(b"\0"):
            marked.append(pid)
    kids: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        kids.setdefault(parent, []).append(pid)
    found: set[int] = set()
    pending = [pid for pid in marked if pid != os.getpid()]
    while pending:
        pid = pending.pop()
        if pid not in found:
            found.add(pid)
            pending.extend(kids.get(pid, ()))
    found -= {os.getpid(), *exclude}
    return sorted(pid for pid in found if is_alive(pid))


def _read(path: str, *, whole: bool = False) -> bytes:
    """A ``/proc`` file's content, without a buffered file object (scans read thousands).

    One read, enough for ``stat`` (under 1 KB); ``whole`` reads to the end (``environ``).

    Raises:
        OSError: The file cannot be read (the process is gone, or not ours).
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 8192)]
        while whole and chunks[-1]:
            chunks.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(chunks)


def cpu_ticks(pid: int) -> int | None:
    """CPU time ``pid`` has used so far (user and system, in clock ticks), None when gone."""
    fields = _stat_fields(pid)
    # Fields 14 and 15 of stat (man 5 proc), counted here from field 3.
    return None if fields is None else int(fields[11]) + int(fields[12])


def _stat_fields(pid: int) -> list[bytes] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state first), or None."""
    try:
        stat = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def children(pid: int) -> list[int]:
    """PIDs of the live children of ``pid``, oldest first."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        # Field 4 of stat is the parent, field 22 the start time (man 5 proc).
        if fields is not None and int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
            found.append((int(fields[19]), int(name)))
    return [child for _, child in sorted(found)]


def sandbox_chain(pid: int) -> list[int]:
    """``pid`` (a ``bwrap``) and the processes that carry its command, outermost first.

    bubblewrap keeps a process outside the sandbox that waits for the one inside; with a new PID
    namespace and no ``--as-pid-1`` there is a ``bwrap`` init between them. Each ``bwrap`` in
    the chain started the next one first, so the oldest child is followed (later children of an
    init are orphans it adopted). Returns the chain as far as it exists yet.
    """
    chain = [pid]
    while command_name(chain[-1]) == b"bwrap":
        kids = children(chain[-1])
        if not kids:
            break
        chain.append(kids[0])
    return chain


def command_name(pid: int) -> bytes | None:
    """The command name of ``pid`` (``comm``, at most 15 bytes), or None when it is gone."""
    try:
        stat = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    return stat[stat.find(b"(") + 1 : stat.rfind(b")")]


def is_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = _read(f"/proc/{pid}/stat")
    except OSError:
        return False
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state not in (b"Z", b"X")


def still_running(pid: int, started: str | None) -> bool:
    """True while the process that had ``started`` as ``start_time()`` runs as ``pid``.

    A reused PID (another start time) and a zombie waiting to be reaped count as gone.
    """
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in (b"Z", b"X") and fields[19].decode() == started


def start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks after boot), or None when it is gone."""
    fields = _stat_fields(pid)
    # Field 22 of stat; the fields here start at field 3 (the state).
    return fields[19].decode() if fields is not None else None


def terminate(pids: Iterable[int], *, timeout: float = 5.0) -> list[int]:
    """SIGTERM the processes, wait (bounded) for them to exit, SIGKILL what remains.

    Returns:
        PIDs that were still alive after SIGKILL and a second wait (normally none).
    """
    pending = [pid for pid in pids if _signal(pid, signal.SIGTERM)]
    pending = wait_gone(pending, timeout)
    for pid in pending:
        _signal(pid, signal.SIGKILL)
    return wait_gone(pending, 2.0)


def kill_marked(marker: str, *, exclude: Iterable[int] = (), timeout: float = 5.0) -> list[int]:
    """Stop every process of a desktop; repeats while new ones appear (forks during teardown)."""
    excluded = set(exclude)
    survivors: list[int] = []
    for _ in range(5):
        pids = find_marked(marker, exclude=excluded)
        if not pids:
            return survivors
        survivors = terminate(pids, timeout=timeout)
    return find_marked(marker, exclude=excluded)


def state(pid: int) -> str | None:
    """The scheduler state of ``pid`` (``"R"``, ``"S"``, ``"T"`` stopped, ...), None if gone.

    A stopped process (``"T"``, or ``"t"`` under a tracer) is alive but serves no one.
    """
    fields = _stat_fields(pid)
    return None if not fields else fields[0].decode("ascii", "replace")


def wait_gone(pids: list[int], timeout: float, poll: float = 0.02) -> list[int]:
    """Wait until none of ``pids`` is alive or the deadline passes; return the living."""
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if is_alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(poll)
        alive = [pid for pid in alive if is_alive(pid)]
    return alive


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


# --- folders owned by a process ------------------------------------------------------------


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _pid_namespace() -> int | None:
    """The inode of this process's PID namespace: PIDs mean something only within one."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def owner_record(marker: str | None = None) -> dict[str, Any]:
    """The ownership record naming this process (and the desktop ``marker``, if any)."""
    pid = os.getpid()
    return {
        "kind": _OWNER_KIND,
        "pid": pid,
        "start": start_time(pid),
        "boot": _boot_id(),
        "host": socket.gethostname(),
        "pid_namespace": _pid_namespace(),
        "marker": marker,
    }


def write_owner(folder: Path, record: Mapping[str, Any]) -> None:
    """Write ``record`` into ``folder`` atomically (a reader sees the old one or the new one)."""
    tmp = folder / f"{OWNER_FILE}.tmp"
    tmp.write_text(json.dumps(dict(record)))
    tmp.replace(folder / OWNER_FILE)


def make_owned_folder(
    prefix: str = FOLDER_PREFIX, *, parent: str | Path | None = None, marker: str | None = None
) -> Path:
    """A new private folder (``tempfile.mkdtemp``) recorded as this process's.

    Args:
        prefix: Start of its name; must start with ``FOLDER_PREFIX`` to be swept.
        parent: Where to make it (default: the temp folder).
        marker: The desktop whose processes use the folder: they are stopped before the
            folder of a dead owner is deleted.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    # Until the record exists a sweep skips the folder as not ours: never deleted under us.
    write_owner(folder, owner_record(marker))
    return folder


def read_owner(folder: Path) -> dict[str, Any] | None:
    """The ownership record of ``folder``, or None when it has none (or not one of ours)."""
    try:
        record = json.loads((folder / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("kind") != _OWNER_KIND:
        return None
    if not isinstance(record.get("pid"), int):
        return None
    return record


def owner_alive(record: Mapping[str, Any]) -> bool | None:
    """Whether the process a record names still runs; None when it cannot be told from here.

    Another host or another PID namespace (a container sharing the folder) cannot be
    checked: its PIDs are not ours to look up.
    """
    if record.get("host") != socket.gethostname():
        return None
    if record.get("pid_namespace") != _pid_namespace():
        return None
    if record.get("boot") != _boot_id():
        return False  # the machine rebooted since: every process of that boot is gone
    pid = record["pid"]
    return start_time(pid) == record.get("start") and is_alive(pid)


def _owned_by_us(folder: Path) -> bool:
    """A real folder (not a link) of this user: the only kind a sweep may delete."""
    try:
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def live_markers(parents: Iterable[str | Path], *, prefix: str = FOLDER_PREFIX) -> set[str]:
    """The markers recorded in the folders of ``parents`` whose owner may still run.

    A desktop records its marker in its folders before it makes anything else named by it
    (its cgroups): what no live folder names belongs to no starting or running desktop here.
    """
    markers = set()
    for parent in parents:
        try:
            names = [name for name in os.listdir(parent) if name.startswith(prefix)]
        except OSError:
            continue
        for name in names:
            record = read_owner(Path(parent, name))
            if record is not None and owner_alive(record) is not False:
                if isinstance(record.get("marker"), str):
                    markers.add(record["marker"])
    return markers


def remove_dead_folders(
    parent: str | Path | None = None, *, prefix: str = FOLDER_PREFIX
) -> list[Path]:
    """Stop the processes of, and delete, the folders in ``parent`` whose owner is gone.

    Only folders whose name starts with ``prefix`` and that hold our ownership record are
    considered, and only those whose owner is known to be dead are touched: concurrent
    drivers never delete each other's folders.

    Args:
        parent: Folder to sweep (default: the temp folder).
        prefix: Name prefix of the folders to consider.

    Returns:
        The folders removed.
    """
    root = Path(parent if parent is not None else tempfile.gettempdir())
    try:
        names = [name for name in os.listdir(root) if name.startswith(prefix)]
    except OSError:
        return []
    removed = []
    for name in names:
        folder = root / name
        record = read_owner(folder) if _owned_by_us(folder) else None
        if record is None or owner_alive(record) is not False:
            continue
        logger.info("removing %s, left by process %s", folder, record["pid"])
        if isinstance(record.get("marker"), str):
            kill_marked(record["marker"], timeout=3.0)
        _remove_stale_x_files(record)
        if remove_tree(folder):
            removed.append(folder)
    return removed


def _remove_stale_x_files(record: Mapping[str, Any]) -> None:
    """Delete the dead X server's lock and socket that the record's ``x_server`` names.

    An X server removes them itself when it exits, unless it is killed with SIGKILL; they are
    in the host's ``/tmp``, where X clients look. A stale socket also costs its display number:
    ``Xvfb -displayfd`` skips numbers whose socket file exists. Each goes only when it is
    certainly stale: the server is gone, the lock still names it, no socket is bound at the
    socket's path (another server may have taken the display since).
    """
    entry = record.get("x_server")
    if not isinstance(entry, dict):
        return
    try:
        pid, lock, sock = int(entry["pid"]), str(entry["lock"]), str(entry["socket"])
    except (KeyError, TypeError, ValueError):
        return
    if is_alive(pid) and start_time(pid) == entry.get("start"):
        return
    try:
        with open(lock) as f:
            if int(f.read().strip() or 0) == pid:
                os.unlink(lock)
    except (OSError, ValueError):
        pass  # none (Xvfb -displayfd makes no lock), or another server's
    remove_stale_socket(sock)


def remove_stale_socket(path: str) -> bool:
    """Delete the socket file at ``path`` (this user's) if no live socket is bound there.

    Returns:
        True when it was deleted.
    """
    try:
        info = os.lstat(path)
        if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
            return False
        # A server that takes the path makes a new socket file (it unlinks the old one and
        # binds): the same file after the look at the bound sockets is still the dead one's.
        if path in bound_sockets() or os.lstat(path).st_ino != info.st_ino:
            return False
        # /proc/net/unix lists only this network namespace's sockets: a server started in
        # another (a desktop launched under `unshare --net`) is alive and missing from it.
        if _accepts_connections(path):
            return False
        os.unlink(path)
    except OSError:
        return False  # gone meanwhile
    return True


def _accepts_connections(path: str) -> bool:
    """Whether a server listens at the socket file ``path``, in any network namespace.

    Refused (or gone) means no listener; anything else (accepted, a full backlog, a timeout)
    counts as alive, so a live server's socket is never taken for a dead one's.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        except OSError:
            return True
    return True


def remove_sockets_once_released(paths: Iterable[str], timeout: float = 2.0) -> list[str]:
    """Delete the socket files of killed processes, once nothing has them bound any more.

    A process killed a moment ago still holds its sockets bound while the kernel tears it down
    (longer on a loaded host), and ``remove_stale_socket`` leaves a bound socket alone: wait,
    up to ``timeout`` seconds, for the paths to come unbound first.

    Returns:
        The paths that were deleted.
    """
    pending = set(paths)
    deadline = time.monotonic() + timeout
    while pending & bound_sockets() and time.monotonic() < deadline:
        time.sleep(0.02)
    return [path for path in sorted(pending) if remove_stale_socket(path)]


def bound_sockets() -> set[str]:
    """Paths of the Unix sockets that live processes have bound (``/proc/net/unix``)."""
    return set(_unix_sockets().values())


def _unix_sockets() -> dict[int, str]:
    """Socket inode -> path of every bound Unix socket with a path (``/proc/net/unix``)."""
    try:
        with open("/proc/net/unix") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return {}
    return {int(fields[6]): fields[7] for fields in map(str.split, lines) if len(fields) >= 8}


def socket_paths(pids: Iterable[int]) -> set[str]:
    """Paths of the Unix sockets that the processes hold open (bound ones have a path)."""
    inodes = set()
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or not ours to read
        for name in names:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{name}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    by_inode = _unix_sockets()
    return {by_inode[inode] for inode in inodes if inode in by_inode}


def remove_tree(folder: Path, timeout: float = _REMOVE_TIMEOUT) -> bool:
    """Delete ``folder`` and everything in it; True when it is gone.

    Retries until the deadline: another process (a reaper, a second sweep) may be deleting it
    at the same time, and entries an app made read-only need their folder's permission back.
    """
    deadline = time.monotonic() + timeout
    unmount(folder)  # a desktop's size-capped disk (desktop_limits.mount_capped)
    while True:
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            return True
        if time.monotonic() >= deadline:
            logger.warning("could not delete %s", folder)
            return False
        _make_writable(folder)
        time.sleep(0.05)


def unmount(folder: Path) -> None:
    """Detach a file system mounted at ``folder`` (its files go with it); nothing if none."""
    try:
        if not os.path.ismount(folder):
            return
    except OSError:
        return
    done = subprocess.run(
        ["umount", "--lazy", str(folder)], capture_output=True, timeout=30, check=False
    )
    if done.returncode != 0:
        logger.warning("cannot unmount %s: %s", folder, done.stderr.decode().strip())


def _make_writable(folder: Path) -> None:
    """Give this user write and search permission on every folder under ``folder``."""
    try:
        os.chmod(folder, stat.S_IRWXU)  # before the walk, which must list it
    except OSError:
        return
    for path, dirs, _ in os.walk(folder):
        for name in [path, *(os.path.join(path, d) for d in dirs)]:
            try:
                if not os.path.islink(name):
                    os.chmod(name, stat.S_IRWXU)
            except OSError:
                pass
