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
