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
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable

MARKER_VARIABLE = "OSWORLD_GYM_DESKTOP"


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
            with open(f"/proc/{name}/environ", "rb") as f:
                entries = f.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if wanted in entries:
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


def _stat_fields(pid: int) -> list[bytes] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
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
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.find(b"(") + 1 : stat.rfind(b")")]


def is_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state not in (b"Z", b"X")


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
