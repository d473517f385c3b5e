"""Finding a desktop's processes: by the marker in their environment, and by descent."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from desktop_helpers import wait_until

from osworld_gym.providers import processes

# A marked shell whose child runs without the marker, as a Chromium process does once it has
# written its title over its environment; the grandchild inherits the scrubbed environment.
_UNMARKED_CHILD = f"env -u {processes.MARKER_VARIABLE} sh -c 'sleep 600 & wait' & wait"


@pytest.fixture
def marker() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    processes.kill_marked(value, timeout=1.0)


def _spawn(marker: str, command: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, **{processes.MARKER_VARIABLE: marker})
    return subprocess.Popen(["sh", "-c", command], env=env)


def _tree(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        found.append(pending.pop())
        pending.extend(processes.children(found[-1]))
    return sorted(found)


def test_descendants_without_the_marker_are_found(marker: str) -> None:
    shell = _spawn(marker, _UNMARKED_CHILD)
    tree = _full_tree(shell)
    unmarked = [pid for pid in tree if processes.marker_entry(marker) not in _environ(pid)]
    assert len(unmarked) == 2  # the scrubbed shell and its sleep
    assert processes.find_marked(marker) == tree
    assert processes.kill_marked(marker, timeout=1.0) == []
    assert processes.wait_gone(tree, 2.0) == []
    shell.wait(timeout=5)


def test_excluded_processes_are_left_out_but_not_their_descendants(marker: str) -> None:
    shell = _spawn(marker, _UNMARKED_CHILD)
    tree = _full_tree(shell)
    assert processes.find_marked(marker, exclude=[shell.pid]) == [p for p in tree if p != shell.pid]
    processes.kill_marked(marker, exclude=[shell.pid], timeout=1.0)
    # Never signalled: it exits by itself, its job done, once its descendants are gone.
    assert shell.wait(timeout=5) == 0


def test_unrelated_processes_are_never_found(marker: str) -> None:
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        _spawn(marker, "sleep 600")
        wait_until(lambda: processes.find_marked(marker), message="the marked sleep")
        assert stranger.pid not in processes.find_marked(marker)
        assert os.getpid() not in processes.find_marked(marker)
    finally:
        stranger.kill()
        stranger.wait()


def _full_tree(shell: subprocess.Popen[bytes]) -> list[int]:
    """The shell of ``_UNMARKED_CHILD`` and its two descendants, once all three run."""
    wait_until(lambda: len(_tree(shell.pid)) == 3, message="the three processes")
    return _tree(shell.pid)


def _environ(pid: int) -> bytes:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read()


def test_still_running_tells_the_same_process_from_a_zombie_or_a_reused_pid() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    started = processes.start_time(child.pid)
    assert started is not None and processes.still_running(child.pid, started)
    assert not processes.still_running(child.pid, str(int(started) + 1))  # another start
    child.kill()
    wait_until(lambda: processes.state(child.pid) == "Z", message="a zombie")
    assert not processes.still_running(child.pid, started)  # not reaped yet, but gone
    child.wait(timeout=5)
    assert not processes.still_running(child.pid, started)


_BIND_AND_WAIT = (
    "import socket, sys, time\n"
    "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()\n"
    "print('bound', flush=True)\n"
    "time.sleep(600)\n"
)


def test_a_killed_processes_socket_goes_once_released_a_live_one_stays(tmp_path) -> None:
    """A SIGKILLed app's socket file is removed even if it is still bound for a moment (the
    leftover-pipe failure on a loaded host); a live server's socket is never removed."""
    killed, live = str(tmp_path / "killed.sock"), str(tmp_path / "live.sock")
    servers = [
        subprocess.Popen([sys.executable, "-c", _BIND_AND_WAIT, path], stdout=subprocess.PIPE)
        for path in (killed, live)
    ]
    try:
        for server in servers:
            assert server.stdout is not None and server.stdout.readline().strip() == b"bound"
        servers[0].kill()  # not reaped yet: a zombie may still count as holding it
        removed = processes.remove_sockets_once_released([killed, live], timeout=5.0)
        assert removed == [killed]
        assert not os.path.lexists(killed)
        assert os.path.exists(live)
    finally:
        for server in servers:
            server.kill()
            server.wait(timeout=30)


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root")
def test_a_live_socket_of_another_network_namespace_stays(tmp_path) -> None:
    """A server bound in another network namespace (a desktop launched under `unshare --net`)
    is missing from this namespace's /proc/net/unix; its socket file is still never removed,
    while the same file with nobody listening is. (Another process's reaper deleted such an X
    server's socket, and the desktop died at start: "bwrap: Can't find source path".)"""
    path = str(tmp_path / "X0")
    server = subprocess.Popen(
        ["unshare", "--net", sys.executable, "-c", _BIND_AND_WAIT, path], stdout=subprocess.PIPE
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == b"bound"
        assert path not in processes.bound_sockets()  # what fooled the reaper
        assert not processes.remove_stale_socket(path)
        assert os.path.exists(path)
    finally:
        server.kill()
        server.wait(timeout=30)
    assert processes.remove_stale_socket(path)  # the server is gone: the file goes
    assert not os.path.lexists(path)
