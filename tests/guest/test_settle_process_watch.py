"""ProcessWatch's verdicts (launched, working, stirring, background) on a fake procfs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from osworld_gym.guest import settle
from osworld_gym.guest.settle import EventSettler, ProcessWatch, presses_enter

DISPLAY = ":7"
_TICKS = os.sysconf("SC_CLK_TCK")


class FakeProc:
    """One process under a fake ``/proc``: its stat, schedstat and environ files."""

    def __init__(self, root: Path, pid: int, name: str, *, new: bool, display: str = DISPLAY):
        self.dir = root / str(pid)
        self.dir.mkdir()
        self.name = name
        # Started long ago, or well after any mark the test makes.
        now_ticks = int(time.clock_gettime(time.CLOCK_BOOTTIME) * _TICKS)
        self.start = now_ticks + 10_000 if new else 0
        self.main_ns = 0
        self.ticks = 0
        self.state = "S"
        (self.dir / "environ").write_bytes(f"HOME=/x\0DISPLAY={display}\0".encode())
        self.write()

    def write(self) -> None:
        fields = [self.state, *["0"] * 10, str(self.ticks), "0", *["0"] * 6, str(self.start), "0"]
        (self.dir / "stat").write_text(f"{os.getpid() + 1} ({self.name}) {' '.join(fields)}\n")
        (self.dir / "schedstat").write_text(f"{self.main_ns} 0 1\n")

    def end(self) -> None:
        """The process is gone: its folder too."""
        for child in self.dir.iterdir():
            child.unlink()
        self.dir.rmdir()

    def run(self, ms: float = 0.0, ticks: int = 0) -> None:
        self.main_ns += int(ms * 1e6)
        self.ticks += ticks
        self.write()


@pytest.fixture
def proc_root(tmp_path: Path) -> Path:
    return tmp_path


def test_an_idle_app_that_starts_working_holds_then_releases(proc_root: Path) -> None:
    app = FakeProc(proc_root, 100, "soffice.bin", new=False)
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    assert not watch.busy(10.5)  # baseline sample, idle
    app.run(ms=15)  # 15 ms of the 20 ms since: busy
    assert watch.busy(10.52).working == ("soffice.bin",)
    # Idle again: it holds BUSY_HOLD seconds, then releases.
    assert watch.busy(10.52 + settle.BUSY_HOLD / 2).working == ("soffice.bin",)
    assert not watch.busy(10.53 + settle.BUSY_HOLD)


def test_an_app_busy_before_the_action_is_background(proc_root: Path) -> None:
    spinner = FakeProc(proc_root, 101, "python3", new=False)
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    watch.busy(10.0)
    spinner.run(ms=500)  # spins the whole half second before the next action
    watch.mark(now=10.5)
    spinner.run(ms=20)
    sample = watch.busy(10.52)
    assert not sample and sample.stirring == ()


def test_a_new_process_counts_as_launched_from_first_sight(proc_root: Path) -> None:
    FakeProc(proc_root, 100, "bash", new=False)
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    watch.busy(10.0)
    FakeProc(proc_root, 102, "gimp", new=True)
    assert watch.busy(10.02).launched == ("gimp",)
    assert watch.busy(10.02 + settle.LAUNCH_HOLD + 0.01).launched == ()


def test_processes_of_other_displays_are_ignored(proc_root: Path) -> None:
    other = FakeProc(proc_root, 103, "chrome", new=True, display=":8")
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    other.run(ms=100, ticks=10)
    assert not watch.busy(10.02)


def test_worker_threads_count_through_clock_ticks(proc_root: Path) -> None:
    # LibreOffice's threaded import: the main thread waits while workers parse.
    app = FakeProc(proc_root, 100, "soffice.bin", new=False)
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    watch.busy(10.5)
    app.run(ms=0.1, ticks=4)  # 40 ms of thread time in 50 ms
    assert watch.busy(10.55).working == ("soffice.bin",)


def test_stirring_must_stand_out_from_the_background_rate(proc_root: Path) -> None:
    shell = FakeProc(proc_root, 100, "bash", new=False)
    app = FakeProc(proc_root, 101, "soffice.bin", new=False)
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    watch.busy(10.0)
    app.run(ms=20)  # 20 ms/s of idle timers before the action
    watch.mark(now=11.0)
    shell.run(ms=0.5)  # a still shell reads a command line: stirs
    app.run(ms=0.5)  # within its usual rate (0.5 ms in 20 ms < 4 x 20 ms/s x 20 ms)
    assert watch.busy(11.02).stirring == ("bash",)
    app.run(ms=3)  # far above it
    assert watch.busy(11.04).stirring == ("soffice.bin",)


def test_a_woken_process_still_waiting_for_a_cpu_stirs(proc_root: Path) -> None:
    # The kernel adds a run-queue wait to schedstat only when the wait ends: a dialog woken by a
    # click on a loaded host shows no work until it has run, and the screen was still.
    dialog = FakeProc(proc_root, 100, "xmessage", new=False)
    spinner = FakeProc(proc_root, 101, "busy-loop", new=False)
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    watch.busy(10.0)
    spinner.run(ms=900)  # busy before the action: background
    watch.mark(now=11.0)
    assert watch.busy(11.02).stirring == ()
    dialog.state = spinner.state = "R"
    dialog.write()
    spinner.run(ms=0)
    assert watch.busy(11.04).stirring == ("xmessage",)
    dialog.state = "S"
    dialog.run(ms=0.1)  # it ran (its wait is counted now) and sleeps again
    assert watch.busy(11.06).stirring == ()


def test_presses_enter_reads_typed_actions_and_pyautogui_code() -> None:
    assert presses_enter(b'{"actions": [{"kind": "press", "key": "Enter"}]}')
    assert presses_enter(b'{"actions": [{"kind": "type", "text": "ls\\n"}]}')
    assert presses_enter(b'{"command": "pyautogui.press(\'return\')"}')
    assert not presses_enter(b'{"actions": [{"kind": "type", "text": "hello"}]}')
    assert not presses_enter(b'{"actions": [{"kind": "click", "x": 1, "y": 2}]}')


def test_a_process_caught_in_execve_is_asked_again(proc_root: Path) -> None:
    # /proc/PID/environ reads empty while a fork execs: not "another display" for good.
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    child = FakeProc(proc_root, 104, "bash", new=True)
    (child.dir / "environ").write_bytes(b"")
    assert not watch.busy(10.01)
    (child.dir / "environ").write_bytes(f"DISPLAY={DISPLAY}\0".encode())
    child.name = "python3"
    child.write()
    assert watch.busy(10.02).launched == ("python3",)


def test_a_busy_process_that_ends_keeps_its_hold(proc_root: Path) -> None:
    # `work && app &`: the shell forks the app a moment after the work ends.
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    work = FakeProc(proc_root, 105, "python3", new=True)
    watch.busy(10.0)
    work.run(ms=20)
    assert watch.busy(10.02).launched == ("python3",)
    work.end()
    assert watch.busy(10.04).launched == ("python3",)
    assert not watch.busy(10.02 + settle.LAUNCH_HOLD + 0.01)


def test_a_process_that_ends_without_working_holds_nothing(proc_root: Path) -> None:
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    quick = FakeProc(proc_root, 106, "ls", new=True)
    assert watch.busy(10.0).launched == ("ls",)  # first sight
    quick.end()
    assert not watch.busy(10.02)


def test_a_zombie_that_worked_keeps_its_hold_once(proc_root: Path) -> None:
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    work = FakeProc(proc_root, 107, "make", new=True)
    watch.busy(10.0)
    work.run(ms=20)
    watch.busy(10.02)
    stat = work.dir / "stat"
    stat.write_text(stat.read_text().replace(") S ", ") Z "))
    assert watch.busy(10.04).launched == ("make",)
    work.end()
    assert watch.busy(10.06).launched == ("make",)  # recorded once, not twice
    assert not watch.busy(10.02 + settle.LAUNCH_HOLD + 0.01)


def test_a_process_that_ran_before_the_action_and_ends_is_reported_once(proc_root: Path) -> None:
    # A dialog answered by a click: its window stays until the X server closes its connection.
    dialog = FakeProc(proc_root, 108, "xmessage", new=False)
    shell = FakeProc(proc_root, 109, "sh", new=False)
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    watch.mark(now=10.0)
    assert watch.busy(10.0).ended == ()
    stat = dialog.dir / "stat"
    stat.write_text(stat.read_text().replace(") S ", ") Z "))  # a zombie: it ended
    assert watch.busy(10.02).ended == ("xmessage",)
    dialog.end()
    shell.end()
    sample = watch.busy(10.04)
    assert sample.ended == ("xmessage", "sh")  # the zombie counted once
    assert not sample  # holds nothing by itself: the settle asks the X server
    watch.forget_ended()  # a settle waited for them: the next observation need not
    assert watch.busy(10.06).ended == ()
    watch.mark(now=11.0)
    assert watch.busy(11.0).ended == ()  # a new action starts with none


def test_processes_started_by_the_action_or_ended_before_it_are_not_reported(
    proc_root: Path,
) -> None:
    early = FakeProc(proc_root, 110, "xterm", new=False)
    watch = ProcessWatch(DISPLAY, proc_root=str(proc_root))
    early.end()  # between the last observation and the action
    watch.mark(now=10.0)
    quick = FakeProc(proc_root, 111, "ls", new=True)
    other = FakeProc(proc_root, 112, "xeyes", new=False, display=":8")
    watch.busy(10.0)
    quick.end()
    other.end()
    assert watch.busy(10.02).ended == ()


def test_an_action_on_a_display_without_x_server_still_marks() -> None:
    # A dead desktop's acting requests must answer as before: no client list, nothing to hold.
    settler = EventSettler(":987")  # no such server (nor TCP port 6987)
    try:
        settler.mark_action(commits=True)
        assert settler._clients_at_mark is None
        assert settler._client_closed_since_mark()
    finally:
        settler.close()
