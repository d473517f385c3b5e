"""Port reservations leave no lock files behind and stay exclusive while files come and go.

Released reservations remove their lock files; files of holders killed by SIGKILL are removed
by the next reservation's sweep. The removal must not break mutual exclusion: a process that
opened a file just before its holder removed it must not take the port along with whoever makes
the next file (the concurrency test below finds that race when the inode check is missing).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from osworld_gym.errors import ProviderError
from osworld_gym.providers.ports import (
    _lock,
    is_port_free,
    reserve_port,
    reserve_ports,
    sweep_stale_locks,
)

# Below the default range, so no desktop of another test session holds these ports.
LOW_PORTS = range(19000, 20000)

# One worker: reserve a port of a tiny range, claim it in a claims folder with O_EXCL (a
# second holder of the same port at the same time finds the claim there), release; repeat.
WORKER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from osworld_gym.errors import ProviderError
    from osworld_gym.providers.ports import reserve_port

    lock_dir, claims, low, high, rounds = sys.argv[1:6]
    deadline = time.monotonic() + 120
    done = 0
    while done < int(rounds):
        try:
            reservation = reserve_port(lock_dir=lock_dir, port_range=(int(low), int(high)))
        except ProviderError:  # every port held by the other workers for 400 tries
            if time.monotonic() > deadline:
                sys.exit(f"no port for 120 s after {done} rounds")
            continue
        claim = Path(claims) / str(reservation.port)
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            sys.exit(f"port {reservation.port} held twice at once")
        for _ in range(20):  # hold it a little, letting the others run
            os.sched_yield()
        os.close(fd)
        os.unlink(claim)
        reservation.release()
        done += 1
    print(done)
    """
)


def _free_ports(count: int) -> tuple[int, int]:
    """A range of ``count`` consecutive ports, all free now."""
    for low in range(LOW_PORTS.start, LOW_PORTS.stop - count):
        if all(is_port_free(port) for port in range(low, low + count)):
            return low, low + count - 1
    pytest.skip(f"no {count} consecutive free ports in {LOW_PORTS}")


def _lock_files(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".lock"))


def test_a_released_reservation_removes_its_lock_file(tmp_path: Path) -> None:
    held = reserve_ports(5, lock_dir=tmp_path, port_range=(21000, 21100))
    assert _lock_files(tmp_path) == sorted(f"{r.port}.lock" for r in held)
    for reservation in held:
        reservation.release()
        reservation.release()  # twice is harmless
    assert _lock_files(tmp_path) == []


@pytest.mark.heavy  # many processes
def test_processes_reserving_in_a_loop_never_share_a_port_and_leave_no_file(
    tmp_path: Path,
) -> None:
    """6 processes take and give back 4 ports 150 times each: never two holders at once.

    Without the inode check in ``_lock`` this fails in most runs (a port held twice).
    """
    locks, claims = tmp_path / "locks", tmp_path / "claims"
    claims.mkdir()
    low, high = _free_ports(4)
    argv = [sys.executable, "-c", WORKER, str(locks), str(claims), str(low), str(high), "150"]
    workers = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    results = [worker.communicate(timeout=240) for worker in workers]
    for worker, (out, err) in zip(workers, results, strict=True):
        assert worker.returncode == 0, err
        assert out.strip() == "150"
    assert os.listdir(claims) == []
    assert _lock_files(locks) == []


def test_a_killed_holders_file_is_removed_by_the_next_sweep(tmp_path: Path) -> None:
    low, _ = _free_ports(1)
    code = (
        "import sys; from osworld_gym.providers.ports import reserve_port; "
        f"r = reserve_port(lock_dir={str(tmp_path)!r}, port_range=({low}, {low})); "
        "print(r.port, flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and int(holder.stdout.readline()) == low
        assert sweep_stale_locks(tmp_path) == 0  # a live holder's file stays
        assert _lock_files(tmp_path) == [f"{low}.lock"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert _lock_files(tmp_path) == [f"{low}.lock"]  # the kernel dropped the lock, not the file
    assert sweep_stale_locks(tmp_path) == 1
    assert _lock_files(tmp_path) == []


def test_a_reservation_sweeps_stale_files_of_other_ports(tmp_path: Path) -> None:
    stale = [19990, 19991]
    for port in stale:  # what holders killed mid-reservation leave behind
        (tmp_path / f"{port}.lock").touch()
    (tmp_path / "notes.txt").touch()  # not a lock file: left alone
    with reserve_port(lock_dir=tmp_path, port_range=(21000, 21100)) as reservation:
        assert _lock_files(tmp_path) == [f"{reservation.port}.lock"]
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_a_lock_on_a_removed_file_does_not_count(tmp_path: Path) -> None:
    """The race the inode check closes, step by step in one process."""
    path = tmp_path / "21000.lock"
    first = _lock(tmp_path, 21000)
    assert first is not None
    late = os.open(path, os.O_RDONLY)  # a second process opened the file before the release
    try:
        path.unlink()  # the first holder releases: removes its file, then unlocks
        os.close(first)
        second = _lock(tmp_path, 21000)  # a third process makes a new file and locks it
        assert second is not None
        # The second process gets the lock on the old file, but it is no longer at the path:
        # _lock would try the path again, where the third process holds the new file.
        fcntl.flock(late, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert os.fstat(late).st_ino != os.stat(path).st_ino
        assert _lock(tmp_path, 21000) is None
        os.close(second)
    finally:
        os.close(late)


def test_no_free_port_still_raises(tmp_path: Path) -> None:
    low, _ = _free_ports(1)
    with reserve_port(lock_dir=tmp_path, port_range=(low, low)):
        with pytest.raises(ProviderError, match="no free TCP port"):
            reserve_port(lock_dir=tmp_path, port_range=(low, low))
    assert _lock_files(tmp_path) == []
